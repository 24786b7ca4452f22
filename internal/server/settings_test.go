package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

func settingsLines(t *testing.T, l world.Store) []string {
	t.Helper()
	var out []string
	l.Select(context.Background(), world.Filter{IDs: []string{fleetapi.SettingsID}}, func(r *world.Record) error {
		out = append(out, r.Entry.Output)
		return nil
	})
	return out
}

func TestSettings(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	code, body := call(t, ts, "GET", "/api/settings", nil)
	rec, _ := body["recycler"].(map[string]any)
	if code != 200 || rec["enabled_for"] != "none" || rec["interval_seconds"] != float64(60) || rec["completion_threshold"] != float64(3) || rec["failure_threshold"] != float64(5) {
		t.Fatalf("defaults: %d %v", code, body)
	}
	if v, _ := body["verification"].(map[string]any); v["validation_configured"] != false || v["allow_unvalidated"] != false {
		t.Errorf("verification: %v", body["verification"])
	}
	good := map[string]any{
		"recycler":   map[string]any{"enabled_for": []string{"bug", "docs"}, "interval_seconds": 120, "completion_threshold": 4, "failure_threshold": 2},
		"summarizer": map[string]any{"provider": "ollama", "model": "llama3.1:8b"},
	}
	code, body = call(t, ts, "PUT", "/api/settings", good)
	if code != 200 || body["recycler"].(map[string]any)["interval_seconds"] != float64(120) {
		t.Fatalf("put: %d %v", code, body)
	}
	cfg, err := config.Load(statedir.Of(f.repo).Config())
	if err != nil {
		t.Fatal(err)
	}
	set := cfg.RecyclerSettings()
	if set.Interval.Seconds() != 120 || set.CompletionThreshold != 4 || set.FailureThreshold != 2 || !set.EnabledFor.Matches("docs") || set.EnabledFor.Matches("feature") {
		t.Errorf("config.toml: %+v", set)
	}
	if s := cfg.Models.Summarizer; s == nil || s.Model != "llama3.1:8b" {
		t.Errorf("summarizer: %+v", s)
	}
	lines := settingsLines(t, f.b.Log)
	if len(lines) != 1 || !strings.Contains(lines[0], "recycler.interval_seconds=60→120") || !strings.Contains(lines[0], `models.summarizer.model=""→llama3.1:8b`) {
		t.Errorf("the log: %q", lines)
	}
	if code, _ := call(t, ts, "PUT", "/api/settings", good); code != 200 || len(settingsLines(t, f.b.Log)) != 1 {
		t.Errorf("the same again: %d, and %d lines, want none more", code, len(settingsLines(t, f.b.Log)))
	}
	written, _ := os.ReadFile(statedir.Of(f.repo).Config())

	bad := func(mut func(r, s map[string]any)) map[string]any {
		r := map[string]any{"enabled_for": "all", "interval_seconds": 60, "completion_threshold": 3, "failure_threshold": 5}
		s := map[string]any{"provider": "ollama", "model": "m"}
		mut(r, s)
		return map[string]any{"recycler": r, "summarizer": s}
	}
	for _, tc := range []struct {
		name, field, says string
		body              any
	}{
		{"an interval too short", "recycler.interval_seconds", "use 30 to 600", bad(func(r, s map[string]any) { r["interval_seconds"] = 5 })},
		{"an interval too long", "recycler.interval_seconds", "use 30 to 600", bad(func(r, s map[string]any) { r["interval_seconds"] = 601 })},
		{"a threshold of 0", "recycler.completion_threshold", "use 1 to 100", bad(func(r, s map[string]any) { r["completion_threshold"] = 0 })},
		{"a threshold too high", "recycler.failure_threshold", "use 1 to 100", bad(func(r, s map[string]any) { r["failure_threshold"] = 1000 })},
		{"enabled_for a number", "recycler.enabled_for", "off", bad(func(r, s map[string]any) { r["enabled_for"] = 5 })},
		{"enabled_for a bad word", "recycler.enabled_for", "off", bad(func(r, s map[string]any) { r["enabled_for"] = "sometimes" })},
		{"enabled_for no types", "recycler.enabled_for", "at least one", bad(func(r, s map[string]any) { r["enabled_for"] = []string{} })},
		{"a bad provider", "summarizer.provider", "ollama or openai", bad(func(r, s map[string]any) { s["provider"] = "acme" })},
		{"another provider on the main server", "summarizer.provider", "main server", bad(func(r, s map[string]any) { s["provider"] = "openai" })},
		{"no model", "summarizer.model", "empty", bad(func(r, s map[string]any) { s["model"] = "" })},
		{"an unknown key", "", "unknown field", bad(func(r, s map[string]any) { r["colour"] = "red" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, ts, "PUT", "/api/settings", tc.body)
			if code != 400 || body["field"] != nilIfEmpty(tc.field) || !strings.Contains(errText(body), tc.says) {
				t.Errorf("got %d %v, want 400 naming %q and saying %q", code, body, tc.field, tc.says)
			}
			if now, _ := os.ReadFile(statedir.Of(f.repo).Config()); string(now) != string(written) {
				t.Errorf("config.toml changed:\n%s", now)
			}
		})
	}
	if n := len(settingsLines(t, f.b.Log)); n != 1 {
		t.Errorf("%d settings lines, want 1", n)
	}

	// A file with a comment is kept beside the new one.
	os.WriteFile(statedir.Of(f.repo).Config(), append([]byte("# mine\n"), written...), 0o644)
	if code, _ := call(t, ts, "PUT", "/api/settings", bad(func(r, s map[string]any) { r["interval_seconds"] = 90 })); code != 200 {
		t.Errorf("put over a commented file: %d", code)
	}
	if bak, err := os.ReadFile(statedir.Of(f.repo).Config() + ".bak"); err != nil || !strings.HasPrefix(string(bak), "# mine") {
		t.Errorf("the backup: %q %v", bak, err)
	}
	// A file that does not parse is for a person to fix.
	os.WriteFile(statedir.Of(f.repo).Config(), []byte("[recycler\n"), 0o644)
	if code, body := call(t, ts, "GET", "/api/settings", nil); code != 409 || !strings.Contains(errText(body), "config.toml") {
		t.Errorf("a broken file: %d %v", code, body)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestSettingsLogFirst: a change the world log cannot take is not made:
// config.toml stays as it was, and no line claims otherwise.
func TestSettingsLogFirst(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	body := map[string]any{
		"recycler":   map[string]any{"enabled_for": "all", "interval_seconds": 90, "completion_threshold": 3, "failure_threshold": 5},
		"summarizer": map[string]any{"provider": "ollama", "model": ""},
	}
	before, _ := os.ReadFile(statedir.Of(f.repo).Config())
	// The log's lock file cannot be opened: every append fails.
	lock := filepath.Join(f.state, "world.log.lock")
	os.Remove(lock)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, body := call(t, ts, "PUT", "/api/settings", body); code != 500 || !strings.Contains(errText(body), "nothing changed") {
		t.Errorf("got %d %v, want 500 saying nothing changed", code, body)
	}
	if now, _ := os.ReadFile(statedir.Of(f.repo).Config()); string(now) != string(before) {
		t.Errorf("config.toml changed though the change was not logged:\n%s", now)
	}
	os.Remove(lock)
	if code, _ := call(t, ts, "PUT", "/api/settings", body); code != 200 {
		t.Fatalf("with the log back: %d", code)
	}
	cfg, err := config.Load(statedir.Of(f.repo).Config())
	if err != nil || cfg.RecyclerSettings().Interval.Seconds() != 90 {
		t.Errorf("config.toml after the retry: %+v %v", cfg, err)
	}
	if lines := settingsLines(t, f.b.Log); len(lines) != 1 {
		t.Errorf("the log: %q, want the one change", lines)
	}
}

// TestSettingsClientMatchesInProcess: the settings operations through
// the daemon (Client) give what the fleet gives in process from the same
// config.toml: the same view, the same file written, the same log line,
// and the same refusal, a *fleetapi.SettingError naming the same key.
func TestSettingsClientMatchesInProcess(t *testing.T) {
	f := newFixture(t)
	ts, _ := f.serve(t, &Server{})
	c := &Client{Base: ts.URL, Command: "cra test"}
	ctx := context.Background()
	path := statedir.Of(f.repo).Config()
	start := []byte("# a person's comment\n[models]\nbase_url = \"http://localhost:11434\"\n\n[recycler]\ninterval_seconds = 90\n")

	type result struct {
		View   *fleetapi.SettingsView
		Err    string
		Field  string
		Fix    string
		Config string
		Bak    string
		Line   string
	}
	do := func(ops fleetapi.Ops, op func(fleetapi.Ops) (*fleetapi.SettingsView, error)) result {
		t.Helper()
		os.Remove(path + ".bak")
		if err := os.WriteFile(path, start, 0o644); err != nil {
			t.Fatal(err)
		}
		before := len(settingsLines(t, f.b.Log))
		v, err := op(ops)
		r := result{View: v}
		if err != nil {
			r.Err = err.Error()
			var se *fleetapi.SettingError
			if errors.As(err, &se) {
				r.Field, r.Fix = se.Field, se.Fix
			}
		}
		data, _ := os.ReadFile(path)
		bak, _ := os.ReadFile(path + ".bak")
		r.Config, r.Bak = string(data), string(bak)
		if lines := settingsLines(t, f.b.Log); len(lines) > before {
			r.Line = strings.Join(lines[before:], "\n")
		}
		return r
	}
	set := func(enabled any, interval int, provider, model string) func(fleetapi.Ops) (*fleetapi.SettingsView, error) {
		raw, _ := json.Marshal(enabled)
		return func(o fleetapi.Ops) (*fleetapi.SettingsView, error) {
			return o.SetSettings(ctx, fleetapi.Settings{
				Recycler:   fleetapi.RecyclerSettings{EnabledFor: raw, IntervalSeconds: interval, CompletionThreshold: 3, FailureThreshold: 5},
				Summarizer: fleetapi.SummarizerSettings{Provider: provider, Model: model},
			})
		}
	}
	for _, tc := range []struct {
		name  string
		op    func(fleetapi.Ops) (*fleetapi.SettingsView, error)
		field string // the refused key; "" for a change made
	}{
		{"read", func(o fleetapi.Ops) (*fleetapi.SettingsView, error) { return o.Settings(ctx) }, ""},
		{"a change", set([]string{"bug"}, 120, "ollama", "llama3.1:8b"), ""},
		{"no change", set("none", 90, "ollama", ""), ""},
		{"an interval too short", set("all", 5, "ollama", ""), "recycler.interval_seconds"},
		{"a bad provider", set("all", 90, "acme", "m"), "summarizer.provider"},
		{"enabled_for a number", set(5, 90, "ollama", ""), "recycler.enabled_for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local := do(f.fleet, tc.op)
			remote := do(c, tc.op)
			if diff := cmp.Diff(local, remote); diff != "" {
				t.Errorf("through the daemon differs (-in process +daemon):\n%s", diff)
			}
			if local.Field != tc.field || (tc.field != "") != (local.Err != "") {
				t.Errorf("in process: refused %q (%s), want %q", local.Field, local.Err, tc.field)
			}
		})
	}
	if r := do(f.fleet, set([]string{"bug"}, 120, "ollama", "llama3.1:8b")); !strings.Contains(r.Line, "recycler.interval_seconds=90→120") || !strings.HasPrefix(r.Bak, "# a person's comment") {
		t.Errorf("a change logs what changed and keeps the commented file: %+v", r)
	}
	// A config.toml that does not parse: the same words either way.
	if err := os.WriteFile(path, []byte("[recycler\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, lerr := f.fleet.Settings(ctx)
	_, rerr := c.Settings(ctx)
	var ae *APIError
	if lerr == nil || rerr == nil || lerr.Error() != rerr.Error() || !errors.As(rerr, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("a broken config.toml: got %v in process, %v through the daemon; want the same words, a 409", lerr, rerr)
	}
}
