package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// SettingsID is the identifier of the [event:user] line a settings change
// writes, so that every open board reloads them.
const SettingsID = "settings"

// Settings is GET and PUT /api/settings: the board's Recycler tab (seed
// 004, "Settings & Configuration"), kept in config.toml's [recycler] and
// [models.summarizer].
type Settings struct {
	Recycler   RecyclerSettings   `json:"recycler"`
	Summarizer SummarizerSettings `json:"summarizer"`
}

// RecyclerSettings are the recycler's keys the board changes.
type RecyclerSettings struct {
	// EnabledFor is "off", "all" (or "both"), or a list of task types.
	EnabledFor          json.RawMessage `json:"enabled_for"`
	IntervalSeconds     int             `json:"interval_seconds"`
	CompletionThreshold int             `json:"completion_threshold"`
	FailureThreshold    int             `json:"failure_threshold"`
}

// SummarizerSettings are the summarizer's provider and model: the model
// that writes the recycler's notes ([models.summarizer]; without one the
// reasoning model does).
type SummarizerSettings struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// settingsOut is GET /api/settings: the settings and their bounds, and
// what verifies a task, which the board shows and only config.toml
// changes.
type settingsOut struct {
	Settings
	Limits       map[string][2]int `json:"limits"`
	Verification Verification      `json:"verification"`
}

// Verification is what the recycler verifies a task with: whether
// [validation] has a command, and whether [recycler] allow_unvalidated
// lets the model's word stand without one.
type Verification struct {
	ValidationConfigured bool `json:"validation_configured"`
	AllowUnvalidated     bool `json:"allow_unvalidated"`
}

func settingsOf(cfg *config.Config) settingsOut {
	rs := cfg.RecyclerSettings()
	ef, _ := enabledJSON(rs.EnabledFor)
	out := settingsOut{Settings: Settings{Recycler: RecyclerSettings{
		EnabledFor:          ef,
		IntervalSeconds:     int(rs.Interval.Seconds()),
		CompletionThreshold: rs.CompletionThreshold,
		FailureThreshold:    rs.FailureThreshold,
	}}, Limits: map[string][2]int{
		"interval_seconds":     {config.MinRecyclerIntervalSeconds, config.MaxRecyclerIntervalSeconds},
		"completion_threshold": {1, config.MaxRecyclerThreshold},
		"failure_threshold":    {1, config.MaxRecyclerThreshold},
	}}
	v := cfg.Validation
	out.Verification = Verification{ValidationConfigured: v != nil && (v.Test != "" || v.Lint != "" || v.Typecheck != ""),
		AllowUnvalidated: rs.AllowUnvalidated}
	out.Summarizer.Provider = providerOf(cfg)
	if cfg.Models != nil && cfg.Models.Summarizer != nil {
		out.Summarizer.Model = cfg.Models.Summarizer.Model
	}
	return out
}

func enabledJSON(e config.EnabledFor) (json.RawMessage, error) {
	if e.Word != "" {
		return json.Marshal(e.Word)
	}
	return json.Marshal(append([]string{}, e.Types...))
}

// loadConfig reads config.toml without checking its values (a bad one
// elsewhere must not keep the settings from being shown or fixed).
func (s *Server) loadConfig() (*config.Config, []byte, error) {
	cfg, data, err := config.LoadUnchecked(statedir.Of(s.Fleet.Root()).Config())
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	return cfg, data, nil
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	if s.Fleet == nil {
		writeError(w, http.StatusServiceUnavailable, "this server has no repository root, so no settings")
		return
	}
	// A change logs its event before it saves the file (putSettings), and
	// a board reloads the settings when it sees the event: reading under
	// the same lock waits for the save, so the board gets the new values.
	s.settingsMu.Lock()
	cfg, _, err := s.loadConfig()
	s.settingsMu.Unlock()
	if err != nil {
		s.configError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsOf(cfg))
}

func (s *Server) configError(w http.ResponseWriter, r *http.Request, err error) {
	var se *config.SyntaxError
	if errors.As(err, &se) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	s.fail(w, r, err)
}

// putSettings validates the settings as config.toml's are, logs
// [event:user][settings] with what changed, and then writes them into
// [recycler] and [models.summarizer] (the other keys as they were). A bad value is a 400
// naming its key and range, and nothing is written.
func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	if s.Fleet == nil {
		writeError(w, http.StatusServiceUnavailable, "this server has no repository root, so no settings")
		return
	}
	var in Settings
	if !decode(w, r, &in) {
		return
	}
	enabled, ok := parseEnabled(in.Recycler.EnabledFor)
	if !ok {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "recycler.enabled_for must be \"none\", \"all\", a list of task types like [\"bug\"], or \"off\"",
			Field: "recycler.enabled_for", Fix: "use \"none\", \"all\", a list of task types, or \"off\""})
		return
	}
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	cfg, data, err := s.loadConfig()
	if err != nil {
		s.configError(w, r, err)
		return
	}
	before := settingsOf(cfg)
	rec := &config.Recycler{}
	if cfg.Recycler != nil {
		c := *cfg.Recycler
		rec = &c
	}
	rec.EnabledFor = enabled
	rec.IntervalSeconds = &in.Recycler.IntervalSeconds
	rec.CompletionThreshold = &in.Recycler.CompletionThreshold
	rec.FailureThreshold = &in.Recycler.FailureThreshold
	if problems := rec.Validate(); len(problems) > 0 {
		key, _, _ := strings.Cut(problems[0], " ")
		writeJSON(w, http.StatusBadRequest, apiError{Error: strings.Join(problems, "; "), Field: key, Fix: problems[0]})
		return
	}
	cfg.Recycler = rec
	if err := setSummarizer(cfg, in.Summarizer); err != nil {
		writeJSON(w, http.StatusBadRequest, *err)
		return
	}
	if err := cfg.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	after := settingsOf(cfg)
	changes := settingChanges(before.Settings, after.Settings)
	if len(changes) == 0 {
		writeJSON(w, http.StatusOK, after)
		return
	}
	if len(data) > 0 && cfg.Lossy(data) {
		// Encoding drops comments and unknown keys: keep what was written,
		// as 'cra init' does.
		if err := atomicfile.Write(statedir.Of(s.Fleet.Root()).Config()+".bak", data, 0o644); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	// The log comes first, as everywhere else: a change that is not
	// logged is not made. Neither write is tied to the request, so a
	// client that hangs up between them leaves no half-done change. If
	// the save then fails, a second event says the change did not take,
	// so the log never claims a setting the file does not have.
	ctx := context.WithoutCancel(r.Context())
	if _, err := s.Fleet.Tasks().Log.Event(ctx, world.SourceUser, SettingsID, "changed: "+strings.Join(changes, "; ")); err != nil {
		s.fail(w, r, fmt.Errorf("log the settings (nothing changed): %w", err))
		return
	}
	if err := saveConfig(s.Fleet.Root(), cfg); err != nil {
		err = fmt.Errorf("write the settings: %w", err)
		if _, lerr := s.Fleet.Tasks().Log.Event(ctx, world.SourceUser, SettingsID, "not changed: "+err.Error()); lerr != nil {
			err = fmt.Errorf("%w; and the log, which has the change, could not say it failed: %v", err, lerr)
		}
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, after)
}

// parseEnabled reads enabled_for as a word or a list of strings; the
// words and types themselves are left to config's validation.
func parseEnabled(raw json.RawMessage) (*config.EnabledFor, bool) {
	var word string
	if err := json.Unmarshal(raw, &word); err == nil && word != "" {
		return config.EnabledForWord(word), true
	}
	var types []string
	if err := json.Unmarshal(raw, &types); err == nil && types != nil {
		return config.EnabledForTypes(types...), true
	}
	return nil, false
}

// setSummarizer writes the summarizer's provider and model into cfg. An
// empty model leaves a config without [models.summarizer] as it is (the
// reasoning model summarizes); one with it needs a model. The provider is
// the protocol of the summarizer's server: without its own base_url it
// runs on the main server, whose provider it cannot change.
func setSummarizer(cfg *config.Config, in SummarizerSettings) *apiError {
	in.Provider, in.Model = strings.TrimSpace(in.Provider), strings.TrimSpace(in.Model)
	if in.Provider != "" && in.Provider != config.ProviderOllama && in.Provider != config.ProviderOpenAI {
		return &apiError{Error: fmt.Sprintf("summarizer.provider %q is not ollama or openai", in.Provider), Field: "summarizer.provider", Fix: "use ollama or openai"}
	}
	var cur *config.Endpoint
	if cfg.Models != nil {
		cur = cfg.Models.Summarizer
	}
	if in.Model == "" {
		if cur != nil {
			return &apiError{Error: "summarizer.model is empty", Field: "summarizer.model", Fix: "name the model that writes the recycler's notes, e.g. llama3.1:8b"}
		}
		return nil // the reasoning model summarizes, on the main server
	}
	e := &config.Endpoint{}
	if cur != nil {
		c := *cur
		e = &c
	}
	if in.Provider != "" && in.Provider != providerOf(cfg) {
		if e.BaseURL == "" {
			return &apiError{Error: fmt.Sprintf("summarizer.provider %s: the summarizer runs on the main server (models.base_url), which speaks %s", in.Provider, providerOf(cfg)),
				Field: "summarizer.provider", Fix: "keep " + providerOf(cfg) + ", or give the summarizer its own server: set models.summarizer.base_url in config.toml"}
		}
		e.Provider = in.Provider
	}
	e.Model = in.Model
	if cfg.Models == nil {
		cfg.Models = &config.Models{}
	}
	cfg.Models.Summarizer = e
	return nil
}

// providerOf returns the protocol the summarizer speaks: its own
// provider, or the main server's (ollama when unset, config.Models).
func providerOf(cfg *config.Config) string {
	if cfg.Models == nil {
		return config.ProviderOllama
	}
	if s := cfg.Models.Summarizer; s != nil && s.BaseURL != "" && s.Provider != "" {
		return s.Provider
	}
	if cfg.Models.Provider != "" {
		return cfg.Models.Provider
	}
	return config.ProviderOllama
}

// settingChanges lists the keys whose values differ, as KEY=OLD→NEW.
func settingChanges(a, b Settings) []string {
	var out []string
	add := func(key string, x, y any) {
		xs, ys := fmt.Sprint(x), fmt.Sprint(y)
		if xs != ys {
			out = append(out, fmt.Sprintf("%s=%s→%s", key, xs, ys))
		}
	}
	add("recycler.enabled_for", string(a.Recycler.EnabledFor), string(b.Recycler.EnabledFor))
	add("recycler.interval_seconds", a.Recycler.IntervalSeconds, b.Recycler.IntervalSeconds)
	add("recycler.completion_threshold", a.Recycler.CompletionThreshold, b.Recycler.CompletionThreshold)
	add("recycler.failure_threshold", a.Recycler.FailureThreshold, b.Recycler.FailureThreshold)
	add("models.summarizer.provider", quoteEmpty(a.Summarizer.Provider), quoteEmpty(b.Summarizer.Provider))
	add("models.summarizer.model", quoteEmpty(a.Summarizer.Model), quoteEmpty(b.Summarizer.Model))
	return slices.Clip(out)
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// saveConfig writes cfg over root's config.toml atomically.
func saveConfig(root string, cfg *config.Config) error {
	data, err := cfg.Encode()
	if err != nil {
		return err
	}
	return atomicfile.Write(statedir.Of(root).Config(), data, 0o644)
}
