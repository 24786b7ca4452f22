package config

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Recycler is the [recycler] section: how the daemon's recycler puts
// finished tasks back in the queue (seed 004, "Recycler Loop Logic") and
// when it gives up on them. Every key is optional; RecyclerSettings fills
// in the defaults.
type Recycler struct {
	// EnabledFor says which task types the recycler recycles: re-runs a
	// task judged complete until completion_threshold reviews in a row.
	// "none" (the default): every finished run is reviewed once, and a
	// task whose run the evidence and the model find complete is verified
	// on that review. "all" (or "both", seed 004's name for it) or a list
	// of task types: those are recycled. "off": the recycler reviews
	// nothing.
	EnabledFor *EnabledFor `toml:"enabled_for,omitempty"`
	// IntervalSeconds is the time between two passes, each of which
	// recycles at most one task (seed 004's 30 s to 10 min slider).
	IntervalSeconds *int `toml:"interval_seconds,omitempty"`
	// CompletionThreshold is how many consecutive "fully complete" verdicts
	// finalize a task; FailureThreshold how many consecutive failures
	// block it (seed 004's streak counters).
	CompletionThreshold *int `toml:"completion_threshold,omitempty"`
	FailureThreshold    *int `toml:"failure_threshold,omitempty"`
	// StaleAfter is a Go duration ("15m"): a run with no activity for this
	// long is restarted (Level 2).
	StaleAfter string `toml:"stale_after,omitempty"`
	// BreakerAfter is how many consecutive model errors pause the
	// recycler, and BreakerCooldown (a Go duration) how long the pause
	// lasts: seed 004's circuit breaker for repeated LLM errors.
	BreakerAfter    *int   `toml:"breaker_after,omitempty"`
	BreakerCooldown string `toml:"breaker_cooldown,omitempty"`
	// AllowUnvalidated lets a task be verified on the model's word and a
	// diff where no [validation] command is configured. Unset (false): a
	// full_complete without validation becomes significant_progress, and
	// only tasks added with --no-change are verified without it.
	AllowUnvalidated *bool `toml:"allow_unvalidated,omitempty"`
}

// The words recycler.enabled_for may be instead of a list.
const (
	EnabledOff  = "off"
	EnabledNone = "none" // review every run once, recycle no type (the default)
	EnabledAll  = "all"
	EnabledBoth = "both" // seed 004's name for all: resources and scenarios
)

// MaxTaskTypeLen bounds one task type in recycler.enabled_for.
const MaxTaskTypeLen = 64

// EnabledFor is recycler.enabled_for: in the file either a string
// ("off", "all", "both") or an array of task types (["bug", "docs"]).
// It keeps the spelling it was read with, so a file re-encodes as it was
// written; Validate refuses a word or a type that makes no sense. The
// zero value is an empty list, which matches no task.
type EnabledFor struct {
	// Word is the string form as written; empty when the value is a list.
	Word string
	// Types is the list form; ignored when Word is set.
	Types []string
}

// EnabledForTypes is an enabled_for that matches the given task types.
func EnabledForTypes(types ...string) *EnabledFor {
	return &EnabledFor{Types: slices.Clone(types)}
}

// EnabledForWord is an enabled_for given as a word: EnabledOff,
// EnabledAll or EnabledBoth.
func EnabledForWord(word string) *EnabledFor { return &EnabledFor{Word: word} }

func (e EnabledFor) all() bool { return e.Word == EnabledAll || e.Word == EnabledBoth }

// Matches reports whether the recycler takes tasks of type taskType. A
// word other than "all" or "both" matches nothing.
func (e EnabledFor) Matches(taskType string) bool {
	if e.Word != "" {
		return e.all()
	}
	return slices.Contains(e.Types, taskType)
}

// Off reports whether the recycler takes no task at all: "off", an empty
// list, or a word Validate refuses.
func (e EnabledFor) Off() bool {
	if e.Word != "" {
		return !e.all() && e.Word != EnabledNone
	}
	return len(e.Types) == 0
}

// String returns the value as TOML writes it: "all" or ["bug", "docs"].
func (e EnabledFor) String() string {
	b, err := e.MarshalTOML()
	if err != nil {
		return fmt.Sprintf("%q", e.Word)
	}
	return string(b)
}

// MarshalTOML writes the word as a string and a list as an array, with
// the TOML library's own quoting.
func (e EnabledFor) MarshalTOML() ([]byte, error) {
	var v any = e.Word
	if e.Word == "" {
		v = e.Types
		if e.Types == nil {
			v = []string{}
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{"v": v}); err != nil {
		return nil, fmt.Errorf("encode recycler.enabled_for: %w", err)
	}
	return bytes.TrimSpace(bytes.TrimPrefix(buf.Bytes(), []byte("v = "))), nil
}

// UnmarshalTOML reads a string or an array of strings. Any other type,
// or an empty string, is an error; the words and types themselves are
// left to Validate, so that a bad one can still be loaded and replaced.
func (e *EnabledFor) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		if v != "" { // an empty word would read back as an empty list
			*e = EnabledFor{Word: v}
			return nil
		}
	case []any:
		types := make([]string, 0, len(v))
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return fmt.Errorf("recycler.enabled_for lists %s: list task types as strings, like [\"bug\", \"docs\"]", describeTOML(item))
			}
			types = append(types, s)
		}
		*e = EnabledFor{Types: types}
		return nil
	}
	return fmt.Errorf("recycler.enabled_for is %s: use \"off\", \"all\", or a list of task types like [\"bug\"]", describeTOML(v))
}

// describeTOML names a decoded TOML value for an error message.
func describeTOML(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case int64:
		return fmt.Sprintf("%d, a number", v)
	case float64:
		return fmt.Sprintf("%g, a number", v)
	case bool:
		return fmt.Sprintf("%t, a boolean", v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case time.Time:
		return "a date or time"
	}
	return fmt.Sprintf("a %T", v)
}

// validate returns the problems of enabled_for, naming key.
func (e EnabledFor) validate(key string) []string {
	if e.Word != "" {
		switch e.Word {
		case EnabledOff, EnabledNone, EnabledAll, EnabledBoth:
			return nil
		}
		return []string{fmt.Sprintf("%s is %q: use \"none\" (review each run once), \"all\", a list of task types like [\"bug\"], or \"off\"", key, e.Word)}
	}
	if len(e.Types) == 0 {
		return []string{fmt.Sprintf("%s is []: list at least one task type, like [\"bug\"], or use \"off\"", key)}
	}
	var problems []string
	for _, t := range e.Types {
		switch {
		case t == EnabledOff || t == EnabledNone || t == EnabledAll || t == EnabledBoth:
			problems = append(problems, fmt.Sprintf("%s lists %q: write %s = %q on its own, not inside a list", key, t, key, t))
		case t == "" || len(t) > MaxTaskTypeLen || strings.ContainsAny(t, ",\r\n"):
			problems = append(problems, fmt.Sprintf("%s lists %q: a task type is 1 to %d characters without commas or newlines", key, t, MaxTaskTypeLen))
		}
	}
	return problems
}

// Bounds of the [recycler] and [notify] values.
const (
	MinRecyclerIntervalSeconds = 30
	MaxRecyclerIntervalSeconds = 600
	MaxRecyclerThreshold       = 100 // completion_threshold, failure_threshold, breaker_after
	MinRecyclerDuration        = time.Minute
	MaxRecyclerDuration        = 24 * time.Hour
	MinNotifyTimeout           = time.Second
	MaxNotifyTimeout           = 10 * time.Minute
)

// The defaults RecyclerSettings and NotifySettings fill in.
const (
	DefaultRecyclerInterval    = 60 * time.Second
	DefaultCompletionThreshold = 3 // seed 004
	DefaultFailureThreshold    = 5 // seed 004
	DefaultStaleAfter          = 15 * time.Minute
	DefaultBreakerAfter        = 3
	DefaultBreakerCooldown     = 10 * time.Minute
	DefaultNotifyTimeout       = 30 * time.Second
)

// Validate returns the problems of the values present, each naming its
// key and what to use instead. It stands alone so that settings coming
// from elsewhere (the web board's form) are checked as the file is.
func (r *Recycler) Validate() []string {
	if r == nil {
		return nil
	}
	var problems []string
	if r.EnabledFor != nil {
		problems = append(problems, r.EnabledFor.validate("recycler.enabled_for")...)
	}
	problems = append(problems, intRange("recycler.interval_seconds", r.IntervalSeconds, MinRecyclerIntervalSeconds, MaxRecyclerIntervalSeconds)...)
	problems = append(problems, intRange("recycler.completion_threshold", r.CompletionThreshold, 1, MaxRecyclerThreshold)...)
	problems = append(problems, intRange("recycler.failure_threshold", r.FailureThreshold, 1, MaxRecyclerThreshold)...)
	problems = append(problems, durationRange("recycler.stale_after", r.StaleAfter, MinRecyclerDuration, MaxRecyclerDuration, "15m")...)
	problems = append(problems, intRange("recycler.breaker_after", r.BreakerAfter, 1, MaxRecyclerThreshold)...)
	problems = append(problems, durationRange("recycler.breaker_cooldown", r.BreakerCooldown, MinRecyclerDuration, MaxRecyclerDuration, "10m")...)
	return problems
}

func intRange(key string, v *int, lo, hi int) []string {
	if v == nil || (*v >= lo && *v <= hi) {
		return nil
	}
	return []string{fmt.Sprintf("%s is %d: use %d to %d", key, *v, lo, hi)}
}

func durationRange(key, v string, lo, hi time.Duration, example string) []string {
	if v == "" {
		return nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= lo && d <= hi {
		return nil
	}
	return []string{fmt.Sprintf("%s is %q: use a duration from %s to %s, like %q", key, v, shortDuration(lo), shortDuration(hi), example)}
}

// shortDuration writes d without the zero units time.Duration.String
// adds: "15m", "1h30m", "24h".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// validateRecycler checks [recycler] and [notify] as far as they are
// present.
func (c *Config) validateRecycler() []string {
	problems := c.Recycler.Validate()
	return append(problems, c.Notify.Validate()...)
}

// RecyclerSettings are the recycler's settings with the defaults filled
// in, in the units the recycler uses.
type RecyclerSettings struct {
	EnabledFor EnabledFor    // which task types are recycled
	Interval   time.Duration // between two passes
	// CompletionThreshold and FailureThreshold are the streaks that
	// finalize and block a task.
	CompletionThreshold int
	FailureThreshold    int
	StaleAfter          time.Duration // a run idle this long is restarted
	// BreakerAfter model errors in a row pause the recycler for
	// BreakerCooldown.
	BreakerAfter    int
	BreakerCooldown time.Duration
	// AllowUnvalidated lets a task be verified without a [validation]
	// command.
	AllowUnvalidated bool
}

// DefaultRecyclerSettings are the settings of a config without
// [recycler]: all tasks, every 60 s, finalized after 3 completions,
// blocked after 5 failures, restarted after 15 minutes without activity,
// paused for 10 minutes after 3 model errors in a row.
func DefaultRecyclerSettings() RecyclerSettings {
	return RecyclerSettings{
		EnabledFor:          EnabledFor{Word: EnabledNone},
		Interval:            DefaultRecyclerInterval,
		CompletionThreshold: DefaultCompletionThreshold,
		FailureThreshold:    DefaultFailureThreshold,
		StaleAfter:          DefaultStaleAfter,
		BreakerAfter:        DefaultBreakerAfter,
		BreakerCooldown:     DefaultBreakerCooldown,
	}
}

// RecyclerSettings resolves [recycler]: each key that is set and valid
// replaces its default; a value Validate refuses (in a config read
// unchecked) gives the default. A nil Config gives the defaults.
func (c *Config) RecyclerSettings() RecyclerSettings {
	s := DefaultRecyclerSettings()
	if c == nil || c.Recycler == nil {
		return s
	}
	r := c.Recycler
	if e := r.EnabledFor; e != nil && len(e.validate("")) == 0 {
		s.EnabledFor = EnabledFor{Word: e.Word, Types: slices.Clone(e.Types)}
	}
	if v := r.IntervalSeconds; v != nil && len(intRange("", v, MinRecyclerIntervalSeconds, MaxRecyclerIntervalSeconds)) == 0 {
		s.Interval = time.Duration(*v) * time.Second
	}
	pick := func(dst *int, v *int) {
		if v != nil && len(intRange("", v, 1, MaxRecyclerThreshold)) == 0 {
			*dst = *v
		}
	}
	pick(&s.CompletionThreshold, r.CompletionThreshold)
	pick(&s.FailureThreshold, r.FailureThreshold)
	pick(&s.BreakerAfter, r.BreakerAfter)
	pickDuration(&s.StaleAfter, r.StaleAfter, MinRecyclerDuration, MaxRecyclerDuration)
	pickDuration(&s.BreakerCooldown, r.BreakerCooldown, MinRecyclerDuration, MaxRecyclerDuration)
	if r.AllowUnvalidated != nil {
		s.AllowUnvalidated = *r.AllowUnvalidated
	}
	return s
}

func pickDuration(dst *time.Duration, v string, lo, hi time.Duration) {
	if d, err := time.ParseDuration(v); err == nil && d >= lo && d <= hi {
		*dst = d
	}
}

// Section returns s as a [recycler] section with every key set, for
// writing settings changed elsewhere (the web board) back to the file:
// set Config.Recycler to it, check Validate, then write Encode's bytes. The interval is
// rounded to whole seconds.
func (s RecyclerSettings) Section() *Recycler {
	e := EnabledFor{Word: s.EnabledFor.Word}
	if e.Word == "" {
		e.Types = slices.Clone(s.EnabledFor.Types)
	}
	return &Recycler{
		EnabledFor:          &e,
		IntervalSeconds:     ptrTo(int(s.Interval.Round(time.Second) / time.Second)),
		CompletionThreshold: ptrTo(s.CompletionThreshold),
		FailureThreshold:    ptrTo(s.FailureThreshold),
		StaleAfter:          shortDuration(s.StaleAfter),
		BreakerAfter:        ptrTo(s.BreakerAfter),
		BreakerCooldown:     shortDuration(s.BreakerCooldown),
		AllowUnvalidated:    allowUnvalidated(s.AllowUnvalidated),
	}
}

func ptrTo[T any](v T) *T { return &v }

// allowUnvalidated writes allow_unvalidated only when it is true: the
// default needs no line.
func allowUnvalidated(v bool) *bool {
	if v {
		return &v
	}
	return nil
}

// Notify is the [notify] section: how a person is told that a task ended
// verified, is blocked, or needs them. Secrets never live in the file:
// the webhook's bearer token is read from the variable WebhookTokenEnv
// names.
type Notify struct {
	// Command is run by sh -c with the event in CRA_TASK_ID,
	// CRA_TASK_STATUS, CRA_TASK_TITLE, CRA_TASK_NEED and CRA_TASK_EVENT.
	Command string `toml:"command,omitempty"`
	// Webhook is an http(s) URL the event is POSTed to as JSON.
	Webhook string `toml:"webhook,omitempty"`
	// WebhookTokenEnv names the environment variable whose value is sent
	// to the webhook as "Authorization: Bearer <value>".
	WebhookTokenEnv string `toml:"webhook_token_env,omitempty"`
	// Timeout bounds each notifier, as a Go duration; unset means 30 s.
	Timeout string `toml:"timeout,omitempty"`
}

// Validate returns the problems of the values present, each naming its
// key and the fix.
func (n *Notify) Validate() []string {
	if n == nil {
		return nil
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if n.Command != "" && strings.TrimSpace(n.Command) == "" {
		add("notify.command is blank: give a command for sh -c, like \"notify-send cra \\\"$CRA_TASK_TITLE\\\"\", or remove the key")
	}
	if n.Webhook != "" {
		u, err := url.Parse(n.Webhook)
		switch {
		case err != nil || !httpURL(n.Webhook):
			add("notify.webhook %q is not an http(s) URL: use one like \"https://example.org/hook\"", n.Webhook)
		case u.User != nil:
			add("notify.webhook carries a user or password: keep secrets out of the file, put the token in an environment variable and name it in notify.webhook_token_env")
		}
	}
	if n.WebhookTokenEnv != "" {
		switch {
		case !envNamePattern().MatchString(n.WebhookTokenEnv):
			add("notify.webhook_token_env %q is not an environment variable name (name the variable, e.g. CRA_NOTIFY_TOKEN, not the token)", n.WebhookTokenEnv)
		case n.Webhook == "":
			add("notify.webhook_token_env is set without notify.webhook: set the webhook too, or remove the key")
		}
	}
	problems = append(problems, durationRange("notify.timeout", n.Timeout, MinNotifyTimeout, MaxNotifyTimeout, "30s")...)
	return problems
}

// NotifySettings are the notifiers' settings with the default timeout
// filled in. TokenEnv is the variable's name; the caller reads its value.
type NotifySettings struct {
	Command  string
	Webhook  string
	TokenEnv string
	Timeout  time.Duration
}

// NotifySettings resolves [notify]. A timeout Validate refuses gives the
// default; a nil Config gives no notifier and the default timeout.
func (c *Config) NotifySettings() NotifySettings {
	s := NotifySettings{Timeout: DefaultNotifyTimeout}
	if c == nil || c.Notify == nil {
		return s
	}
	n := c.Notify
	s.Command = strings.TrimSpace(n.Command)
	s.Webhook = n.Webhook
	s.TokenEnv = n.WebhookTokenEnv
	pickDuration(&s.Timeout, n.Timeout, MinNotifyTimeout, MaxNotifyTimeout)
	return s
}
