package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseRecyclerAndNotify(t *testing.T) {
	c, err := Parse([]byte(`
[recycler]
enabled_for = ["bug", "docs"]
interval_seconds = 90
completion_threshold = 4
failure_threshold = 6
stale_after = "20m"
breaker_after = 2
breaker_cooldown = "1h"
allow_unvalidated = true

[notify]
command = "notify-send \"cra: $CRA_TASK_TITLE\" \"$CRA_TASK_STATUS $CRA_TASK_NEED\""
webhook = "https://example.org/hook"
webhook_token_env = "CRA_NOTIFY_TOKEN"
timeout = "45s"
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Recycler: &Recycler{EnabledFor: EnabledForTypes("bug", "docs"), IntervalSeconds: intp(90), CompletionThreshold: intp(4),
			FailureThreshold: intp(6), StaleAfter: "20m", BreakerAfter: intp(2), BreakerCooldown: "1h", AllowUnvalidated: boolp(true)},
		Notify: &Notify{Command: `notify-send "cra: $CRA_TASK_TITLE" "$CRA_TASK_STATUS $CRA_TASK_NEED"`,
			Webhook: "https://example.org/hook", WebhookTokenEnv: "CRA_NOTIFY_TOKEN", Timeout: "45s"},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantSettings := RecyclerSettings{EnabledFor: EnabledFor{Types: []string{"bug", "docs"}}, Interval: 90 * time.Second,
		CompletionThreshold: 4, FailureThreshold: 6, StaleAfter: 20 * time.Minute, BreakerAfter: 2, BreakerCooldown: time.Hour, AllowUnvalidated: true}
	if diff := cmp.Diff(wantSettings, c.RecyclerSettings()); diff != "" {
		t.Errorf("RecyclerSettings (-want +got):\n%s", diff)
	}
	wantNotify := NotifySettings{Command: want.Notify.Command, Webhook: "https://example.org/hook", TokenEnv: "CRA_NOTIFY_TOKEN", Timeout: 45 * time.Second}
	if diff := cmp.Diff(wantNotify, c.NotifySettings()); diff != "" {
		t.Errorf("NotifySettings (-want +got):\n%s", diff)
	}
}

// TestRecyclerKeys checks every key of [recycler] and [notify]: valid
// values, each bound just inside and just outside, and wrong types.
func TestRecyclerKeys(t *testing.T) {
	tests := []struct {
		name, toml string
		wantErr    string // "" means valid
	}{
		{"all", `[recycler]` + "\n" + `enabled_for = "all"`, ""},
		{"both", `[recycler]` + "\n" + `enabled_for = "both"`, ""},
		{"off", `[recycler]` + "\n" + `enabled_for = "off"`, ""},
		{"one type", `[recycler]` + "\n" + `enabled_for = ["bug"]`, ""},
		{"unicode type", `[recycler]` + "\n" + `enabled_for = ["doc ü \"x\""]`, ""},
		{"64-character type", `[recycler]` + "\n" + `enabled_for = ["` + strings.Repeat("a", 64) + `"]`, ""},
		{"65-character type", `[recycler]` + "\n" + `enabled_for = ["` + strings.Repeat("a", 65) + `"]`,
			`recycler.enabled_for lists "` + strings.Repeat("a", 65) + `": a task type is 1 to 64 characters without commas or newlines`},
		{"unknown word", `[recycler]` + "\n" + `enabled_for = "some"`,
			`recycler.enabled_for is "some": use "none" (review each run once), "all", a list of task types like ["bug"], or "off"`},
		{"word in capitals", `[recycler]` + "\n" + `enabled_for = "All"`, `recycler.enabled_for is "All"`},
		{"empty word", `[recycler]` + "\n" + `enabled_for = ""`, `recycler.enabled_for is "": use "off", "all", or a list of task types like ["bug"]`},
		{"empty list", `[recycler]` + "\n" + `enabled_for = []`, `recycler.enabled_for is []: list at least one task type, like ["bug"], or use "off"`},
		{"all inside a list", `[recycler]` + "\n" + `enabled_for = ["bug", "all"]`,
			`recycler.enabled_for lists "all": write recycler.enabled_for = "all" on its own, not inside a list`},
		{"off inside a list", `[recycler]` + "\n" + `enabled_for = ["off"]`, `recycler.enabled_for lists "off"`},
		{"both inside a list", `[recycler]` + "\n" + `enabled_for = ["both"]`, `recycler.enabled_for lists "both"`},
		{"empty type", `[recycler]` + "\n" + `enabled_for = [""]`, `recycler.enabled_for lists "": a task type is 1 to 64`},
		{"comma in a type", `[recycler]` + "\n" + `enabled_for = ["bug,docs"]`, `recycler.enabled_for lists "bug,docs"`},
		{"newline in a type", `[recycler]` + "\n" + `enabled_for = ["bug\ndocs"]`, `recycler.enabled_for lists "bug\ndocs"`},
		{"integer", `[recycler]` + "\n" + `enabled_for = 3`, `parse config.toml: toml: line 2 (last key "recycler.enabled_for"): recycler.enabled_for is 3, a number: use "off", "all", or a list of task types like ["bug"]`},
		{"boolean", `[recycler]` + "\n" + `enabled_for = true`, `use "off", "all", or a list of task types`},
		{"list of integers", `[recycler]` + "\n" + `enabled_for = ["bug", 3]`, `recycler.enabled_for lists 3, a number: list task types as strings`},
		{"table", "[recycler.enabled_for]\nbug = true", "recycler.enabled_for is a table: use"},
		{"list of lists", `[recycler]` + "\n" + `enabled_for = [["bug"]]`, "recycler.enabled_for lists an array: list task types as strings"},
		{"date", `[recycler]` + "\n" + `enabled_for = 2026-01-01`, "recycler.enabled_for is a date or time: use"},

		{"interval low bound", "[recycler]\ninterval_seconds = 30", ""},
		{"interval high bound", "[recycler]\ninterval_seconds = 600", ""},
		{"interval too short", "[recycler]\ninterval_seconds = 29", "recycler.interval_seconds is 29: use 30 to 600"},
		{"interval too long", "[recycler]\ninterval_seconds = 601", "recycler.interval_seconds is 601: use 30 to 600"},
		{"interval as string", "[recycler]\ninterval_seconds = \"60\"", "parse config.toml"},
		{"interval as float", "[recycler]\ninterval_seconds = 60.5", "parse config.toml"},

		{"completion low bound", "[recycler]\ncompletion_threshold = 1", ""},
		{"completion high bound", "[recycler]\ncompletion_threshold = 100", ""},
		{"completion zero", "[recycler]\ncompletion_threshold = 0", "recycler.completion_threshold is 0: use 1 to 100"},
		{"completion too high", "[recycler]\ncompletion_threshold = 101", "recycler.completion_threshold is 101: use 1 to 100"},
		{"failure low bound", "[recycler]\nfailure_threshold = 1", ""},
		{"failure high bound", "[recycler]\nfailure_threshold = 100", ""},
		{"failure zero", "[recycler]\nfailure_threshold = 0", "recycler.failure_threshold is 0: use 1 to 100"},
		{"failure too high", "[recycler]\nfailure_threshold = 101", "recycler.failure_threshold is 101: use 1 to 100"},
		{"failure negative", "[recycler]\nfailure_threshold = -5", "recycler.failure_threshold is -5: use 1 to 100"},
		{"breaker low bound", "[recycler]\nbreaker_after = 1", ""},
		{"breaker high bound", "[recycler]\nbreaker_after = 100", ""},
		{"breaker zero", "[recycler]\nbreaker_after = 0", "recycler.breaker_after is 0: use 1 to 100"},
		{"breaker too high", "[recycler]\nbreaker_after = 101", "recycler.breaker_after is 101: use 1 to 100"},
		{"breaker as string", "[recycler]\nbreaker_after = \"3\"", "parse config.toml"},

		{"stale low bound", "[recycler]\nstale_after = \"1m\"", ""},
		{"stale high bound", "[recycler]\nstale_after = \"24h\"", ""},
		{"stale mixed units", "[recycler]\nstale_after = \"1h30m\"", ""},
		{"stale too short", "[recycler]\nstale_after = \"59s\"", `recycler.stale_after is "59s": use a duration from 1m to 24h, like "15m"`},
		{"stale far too short", "[recycler]\nstale_after = \"5s\"", `recycler.stale_after is "5s": use a duration from 1m to 24h, like "15m"`},
		{"stale too long", "[recycler]\nstale_after = \"24h1s\"", `recycler.stale_after is "24h1s": use a duration from 1m to 24h`},
		{"stale not a duration", "[recycler]\nstale_after = \"15\"", `recycler.stale_after is "15"`},
		{"stale negative", "[recycler]\nstale_after = \"-15m\"", `recycler.stale_after is "-15m"`},
		{"stale as integer", "[recycler]\nstale_after = 900", "parse config.toml"},
		{"cooldown low bound", "[recycler]\nbreaker_cooldown = \"60s\"", ""},
		{"cooldown high bound", "[recycler]\nbreaker_cooldown = \"1440m\"", ""},
		{"cooldown too short", "[recycler]\nbreaker_cooldown = \"59.9s\"", `recycler.breaker_cooldown is "59.9s": use a duration from 1m to 24h, like "10m"`},
		{"cooldown too long", "[recycler]\nbreaker_cooldown = \"25h\"", `recycler.breaker_cooldown is "25h"`},

		{"command", "[notify]\ncommand = \"echo hi\"", ""},
		{"blank command", "[notify]\ncommand = \"  \"", "notify.command is blank"},
		{"command as list", "[notify]\ncommand = [\"echo\", \"hi\"]", "parse config.toml"},
		{"http webhook", "[notify]\nwebhook = \"http://127.0.0.1:9/hook\"", ""},
		{"https webhook", "[notify]\nwebhook = \"https://example.org/hook?x=1\"", ""},
		{"webhook without scheme", "[notify]\nwebhook = \"example.org/hook\"", `notify.webhook "example.org/hook" is not an http(s) URL`},
		{"webhook other scheme", "[notify]\nwebhook = \"ftp://example.org/hook\"", `notify.webhook "ftp://example.org/hook" is not an http(s) URL`},
		{"webhook with password", "[notify]\nwebhook = \"https://me:secret@example.org/hook\"", "notify.webhook carries a user or password"},
		{"token env", "[notify]\nwebhook = \"https://example.org/hook\"\nwebhook_token_env = \"CRA_NOTIFY_TOKEN\"", ""},
		{"token instead of its variable", "[notify]\nwebhook = \"https://example.org/hook\"\nwebhook_token_env = \"xoxb-123-abc\"",
			`notify.webhook_token_env "xoxb-123-abc" is not an environment variable name`},
		{"token env without webhook", "[notify]\nwebhook_token_env = \"CRA_NOTIFY_TOKEN\"", "notify.webhook_token_env is set without notify.webhook"},
		{"literal token key", "[notify]\nwebhook = \"https://example.org/hook\"\nwebhook_token = \"secret\"", ""}, // unknown: reported, not read
		{"timeout low bound", "[notify]\ntimeout = \"1s\"", ""},
		{"timeout high bound", "[notify]\ntimeout = \"10m\"", ""},
		{"timeout too short", "[notify]\ntimeout = \"999ms\"", `notify.timeout is "999ms": use a duration from 1s to 10m, like "30s"`},
		{"timeout too long", "[notify]\ntimeout = \"10m1s\"", `notify.timeout is "10m1s": use a duration from 1s to 10m, like "30s"`},
		{"timeout zero", "[notify]\ntimeout = \"0s\"", `notify.timeout is "0s"`},
		{"allow unvalidated", "[recycler]\nallow_unvalidated = true", ""},
		{"allow unvalidated false", "[recycler]\nallow_unvalidated = false", ""},
		{"allow unvalidated as string", "[recycler]\nallow_unvalidated = \"yes\"", "parse config.toml"},
		{"unknown recycler key", "[recycler]\nmodel_name = \"llama3.1:8b\"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.toml + "\n"))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("got %v, want it accepted", err)
				}
				if enc := mustEncode(t, c); !strings.Contains(tc.name, "unknown") && !strings.Contains(tc.name, "literal") {
					roundTrip(t, c, enc)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func roundTrip(t *testing.T, c *Config, enc []byte) {
	t.Helper()
	back, err := Parse(enc)
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, enc)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s\nencoded:\n%s", diff, enc)
	}
}

func TestUnknownRecyclerKeysReported(t *testing.T) {
	c, err := Parse([]byte("[recycler]\nmodel_name = \"m\"\nenabled_for = [\"bug\"]\n[notify]\nwebhook = \"https://x/h\"\nwebhook_token = \"secret\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"notify.webhook_token", "recycler.model_name"}, c.Unknown); diff != "" {
		t.Errorf("unknown keys (-want +got):\n%s", diff)
	}
}

// TestEnabledForRoundTrip pins that a word and a list each re-encode to
// what was written, quoting included.
func TestEnabledForRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   *EnabledFor
		line string
	}{
		{"all", EnabledForWord(EnabledAll), `enabled_for = "all"`},
		{"both stays both", EnabledForWord(EnabledBoth), `enabled_for = "both"`},
		{"off", EnabledForWord(EnabledOff), `enabled_for = "off"`},
		{"list", EnabledForTypes("bug", "docs"), `enabled_for = ["bug", "docs"]`},
		{"quotes and unicode", EnabledForTypes(`say "hi"`, `back\slash`, "ü"), `enabled_for = ["say \"hi\"", "back\\slash", "ü"]`},
		{"empty list", &EnabledFor{}, `enabled_for = []`},
		{"bad word kept", EnabledForWord("some"), `enabled_for = "some"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Recycler: &Recycler{EnabledFor: tc.in}}
			enc := mustEncode(t, c)
			if !strings.Contains(string(enc), "[recycler]\n"+tc.line+"\n") {
				t.Errorf("encoded:\n%s\nwant the line %s under [recycler]", enc, tc.line)
			}
			back, err := Decode(enc)
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, enc)
			}
			if diff := cmp.Diff(c, back, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			if got, want := tc.in.String(), strings.TrimPrefix(tc.line, "enabled_for = "); got != want {
				t.Errorf("String: got %s, want %s", got, want)
			}
		})
	}
}

func TestEnabledForMatches(t *testing.T) {
	tests := []struct {
		e        EnabledFor
		off      bool
		bug, any bool
	}{
		{EnabledFor{Word: EnabledAll}, false, true, true},
		{EnabledFor{Word: EnabledBoth}, false, true, true},
		{EnabledFor{Word: EnabledOff}, true, false, false},
		{EnabledFor{Word: EnabledNone}, false, false, false},
		{EnabledFor{Word: "some"}, true, false, false},
		{EnabledFor{Types: []string{"bug", "docs"}}, false, true, false},
		{EnabledFor{}, true, false, false},
		{EnabledFor{Word: EnabledOff, Types: []string{"bug"}}, true, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.e.String(), func(t *testing.T) {
			if got := tc.e.Off(); got != tc.off {
				t.Errorf("Off: got %v, want %v", got, tc.off)
			}
			if got := tc.e.Matches("bug"); got != tc.bug {
				t.Errorf("Matches(bug): got %v, want %v", got, tc.bug)
			}
			if got := tc.e.Matches("feature"); got != tc.any {
				t.Errorf("Matches(feature): got %v, want %v", got, tc.any)
			}
		})
	}
}

func TestRecyclerSettingsDefaults(t *testing.T) {
	want := RecyclerSettings{EnabledFor: EnabledFor{Word: "none"}, Interval: 60 * time.Second, CompletionThreshold: 3,
		FailureThreshold: 5, StaleAfter: 15 * time.Minute, BreakerAfter: 3, BreakerCooldown: 10 * time.Minute}
	var nilConfig *Config
	for name, c := range map[string]*Config{
		"nil config":         nilConfig,
		"no section":         {},
		"empty section":      {Recycler: &Recycler{}},
		"refused values":     {Recycler: &Recycler{EnabledFor: EnabledForWord("some"), IntervalSeconds: intp(5), CompletionThreshold: intp(0), FailureThreshold: intp(500), StaleAfter: "soon", BreakerAfter: intp(-1), BreakerCooldown: "1s"}},
		"refused empty list": {Recycler: &Recycler{EnabledFor: &EnabledFor{}}},
	} {
		if diff := cmp.Diff(want, c.RecyclerSettings()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff(want, DefaultRecyclerSettings()); diff != "" {
		t.Errorf("DefaultRecyclerSettings (-want +got):\n%s", diff)
	}
	if got := nilConfig.NotifySettings(); got != (NotifySettings{Timeout: 30 * time.Second}) {
		t.Errorf("nil config NotifySettings: got %+v", got)
	}
	if got := (&Config{Notify: &Notify{Command: " echo x ", Timeout: "1h"}}).NotifySettings(); got != (NotifySettings{Command: "echo x", Timeout: 30 * time.Second}) {
		t.Errorf("refused timeout: got %+v, want the default", got)
	}
}

// TestRecyclerSectionSaves is the web board's settings write: settings
// changed in memory become a [recycler] section that validates, saves and
// loads back to the same settings.
func TestRecyclerSectionSaves(t *testing.T) {
	for i, enabled := range []EnabledFor{{Word: "off"}, {Word: "both"}, {Types: []string{"bug", "docs"}}} {
		t.Run(enabled.String(), func(t *testing.T) {
			s := DefaultRecyclerSettings()
			s.EnabledFor = enabled
			s.AllowUnvalidated = i == 1
			s.Interval = 90 * time.Second
			s.StaleAfter = 90 * time.Minute
			s.BreakerCooldown = 24 * time.Hour
			c := &Config{Models: &Models{Coding: "c"}, Recycler: s.Section()}
			if problems := c.Recycler.Validate(); len(problems) > 0 {
				t.Fatalf("Validate: %v", problems)
			}
			path := filepath.Join(t.TempDir(), "config.toml")
			writeConfig(t, path, c)
			back, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, back); diff != "" {
				t.Errorf("saved config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(s, back.RecyclerSettings()); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
			if back.Recycler.StaleAfter != "1h30m" || back.Recycler.BreakerCooldown != "24h" {
				t.Errorf("durations written as %q and %q, want 1h30m and 24h", back.Recycler.StaleAfter, back.Recycler.BreakerCooldown)
			}
		})
	}
}

// TestRecyclerValidateAlone checks a section that did not come from a
// file, as a web form's would, and that problems are all reported.
func TestRecyclerValidateAlone(t *testing.T) {
	r := &Recycler{EnabledFor: EnabledForTypes("bug", "all", ""), IntervalSeconds: intp(10), StaleAfter: "5s"}
	want := []string{
		`recycler.enabled_for lists "all": write recycler.enabled_for = "all" on its own, not inside a list`,
		`recycler.enabled_for lists "": a task type is 1 to 64 characters without commas or newlines`,
		"recycler.interval_seconds is 10: use 30 to 600",
		`recycler.stale_after is "5s": use a duration from 1m to 24h, like "15m"`,
	}
	if diff := cmp.Diff(want, r.Validate()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var none *Recycler
	if got := none.Validate(); got != nil {
		t.Errorf("nil section: got %v", got)
	}
	if got := (*Notify)(nil).Validate(); got != nil {
		t.Errorf("nil notify: got %v", got)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 15 * time.Minute: "15m", 24 * time.Hour: "24h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", time.Second: "1s", time.Hour + 30*time.Second: "1h0m30s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v): got %s, want %s", d, got, want)
		}
		if back, err := time.ParseDuration(shortDuration(d)); err != nil || back != d {
			t.Errorf("%s parses to %v, %v", shortDuration(d), back, err)
		}
	}
}

func FuzzEnabledFor(f *testing.F) {
	for _, s := range []string{`"all"`, `["bug", "docs"]`, `[]`, `3`, `["a\"b", "ü"]`, `[["x"]]`, `{a = 1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		c, err := Decode([]byte(fmt.Sprintf("[recycler]\nenabled_for = %s\n", value)))
		if err != nil || c.Recycler == nil || c.Recycler.EnabledFor == nil {
			return
		}
		c.Unknown = nil
		enc := mustEncode(t, c)
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("decode of encoded %v: %v\n%s", c.Recycler.EnabledFor, err, enc)
		}
		if !cmp.Equal(c, back, cmpopts.EquateEmpty()) {
			t.Fatalf("round trip changed enabled_for:\n%s", cmp.Diff(c, back, cmpopts.EquateEmpty()))
		}
	})
}

func boolp(v bool) *bool { return &v }
