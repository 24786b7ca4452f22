package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// Settings returns the board's settings as config.toml has them now,
// read without checking its other values (a bad one elsewhere must not
// keep the settings from being shown or fixed). A config.toml that does
// not parse is a *config.SyntaxError, for a person to fix.
func (f *Fleet) Settings(ctx context.Context) (*fleetapi.SettingsView, error) {
	// A change logs its event before it saves the file (SetSettings), and
	// a board reloads the settings when it sees the event: reading under
	// the same lock waits for the save, so the board gets the new values.
	f.settingsMu.Lock()
	defer f.settingsMu.Unlock()
	cfg, _, err := f.loadUnchecked()
	if err != nil {
		return nil, err
	}
	if err := f.overlayShared(ctx, cfg); err != nil {
		return nil, err
	}
	v := settingsOf(cfg)
	return &v, nil
}

// shared is the store of the settings every host of a fleet shares: the
// board's PostgreSQL (issue 34 item 1); nil on one machine, where they
// live in config.toml.
func (f *Fleet) shared() *pgstore.Log {
	l, _ := f.Board.Log.(*pgstore.Log)
	if f.closeDB == nil {
		return nil
	}
	return l
}

// overlayShared puts the fleet's shared settings, when a host has set
// them, over cfg's [recycler] keys and [models.summarizer]: on a fleet
// the settings a person changes from any host's web board hold on every
// host. Nothing changes on one machine.
func (f *Fleet) overlayShared(ctx context.Context, cfg *config.Config) error {
	l := f.shared()
	if l == nil {
		return nil
	}
	body, ok, err := l.Settings(ctx)
	if err != nil || !ok {
		return err
	}
	var in fleetapi.Settings
	if err := json.Unmarshal(body, &in); err != nil {
		return fmt.Errorf("the fleet's shared settings do not read (%v): set them again from the web board's Settings", err)
	}
	if err := applySettings(cfg, in); err != nil {
		return fmt.Errorf("the fleet's shared settings do not apply to this host's config.toml (%v): set them again from the web board's Settings", err)
	}
	return nil
}

// applySettings writes in into cfg's [recycler] and [models.summarizer],
// checked as config.toml's values are; a bad value is a
// *fleetapi.SettingError naming its key and range.
func applySettings(cfg *config.Config, in fleetapi.Settings) error {
	enabled, ok := parseEnabled(in.Recycler.EnabledFor)
	if !ok {
		return &fleetapi.SettingError{Msg: "recycler.enabled_for must be \"none\", \"all\", a list of task types like [\"bug\"], or \"off\"",
			Field: "recycler.enabled_for", Fix: "use \"none\", \"all\", a list of task types, or \"off\""}
	}
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
		return &fleetapi.SettingError{Msg: strings.Join(problems, "; "), Field: key, Fix: problems[0]}
	}
	cfg.Recycler = rec
	if err := setSummarizer(cfg, in.Summarizer); err != nil {
		return err
	}
	return nil
}

// SetSettings validates in as config.toml's values are, logs
// [event:user][settings] with what changed, and then writes them into
// [recycler] and [models.summarizer] (the other keys as they were). A
// bad value is a *fleetapi.SettingError naming its key and range, and
// nothing is written. A file with comments or keys the encoder drops is
// kept beside it as config.toml.bak.
func (f *Fleet) SetSettings(ctx context.Context, in fleetapi.Settings) (*fleetapi.SettingsView, error) {
	if _, ok := parseEnabled(in.Recycler.EnabledFor); !ok {
		return nil, applySettings(&config.Config{}, in) // the error that names it
	}
	f.settingsMu.Lock()
	defer f.settingsMu.Unlock()
	cfg, data, err := f.loadUnchecked()
	if err != nil {
		return nil, err
	}
	if err := f.overlayShared(ctx, cfg); err != nil {
		return nil, err
	}
	before := settingsOf(cfg)
	if err := applySettings(cfg, in); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, &fleetapi.SettingError{Msg: err.Error()}
	}
	after := settingsOf(cfg)
	changes := settingChanges(before.Settings, after.Settings)
	if len(changes) == 0 {
		return &after, nil
	}
	if l := f.shared(); l != nil {
		// On a fleet the settings are every host's: stored in the
		// database with their event, in one transaction; no host's
		// config.toml changes.
		body, err := json.Marshal(after.Settings)
		if err != nil {
			return nil, err
		}
		err = l.SetSettings(context.WithoutCancel(ctx), body, func(ctx context.Context, log world.Store) error {
			_, err := log.Event(ctx, world.SourceUser, fleetapi.SettingsID, "changed: "+strings.Join(changes, "; "))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("the settings did not change: %w", err)
		}
		return &after, nil
	}
	path := statedir.At(f.ws.StateDir).Config()
	if len(data) > 0 && cfg.Lossy(data) {
		// Encoding drops comments and unknown keys: keep what was written,
		// as 'cra init' does.
		if err := atomicfile.Write(path+".bak", data, 0o644); err != nil {
			return nil, err
		}
	}
	// The log comes first, as everywhere else: a change that is not
	// logged is not made. Neither write is tied to the caller's context,
	// so a caller that goes away between them leaves no half-done change.
	// If the save then fails, a second event says the change did not
	// take, so the log never claims a setting the file does not have.
	ctx = context.WithoutCancel(ctx)
	if _, err := f.Board.Log.Event(ctx, world.SourceUser, fleetapi.SettingsID, "changed: "+strings.Join(changes, "; ")); err != nil {
		return nil, fmt.Errorf("log the settings (nothing changed): %w", err)
	}
	if err := saveConfig(path, cfg); err != nil {
		err = fmt.Errorf("write the settings: %w", err)
		if _, lerr := f.Board.Log.Event(ctx, world.SourceUser, fleetapi.SettingsID, "not changed: "+err.Error()); lerr != nil {
			err = fmt.Errorf("%w; and the log, which has the change, could not say it failed: %v", err, lerr)
		}
		return nil, err
	}
	return &after, nil
}

// loadUnchecked reads config.toml without checking its values, and the
// bytes it read; a repository without one has an empty config.
func (f *Fleet) loadUnchecked() (*config.Config, []byte, error) {
	cfg, data, err := config.LoadUnchecked(statedir.At(f.ws.StateDir).Config())
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	return cfg, data, nil
}

func settingsOf(cfg *config.Config) fleetapi.SettingsView {
	rs := cfg.RecyclerSettings()
	ef, _ := enabledJSON(rs.EnabledFor)
	out := fleetapi.SettingsView{Settings: fleetapi.Settings{Recycler: fleetapi.RecyclerSettings{
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
	out.Verification = fleetapi.Verification{ValidationConfigured: v != nil && (v.Test != "" || v.Lint != "" || v.Typecheck != ""),
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
func setSummarizer(cfg *config.Config, in fleetapi.SummarizerSettings) *fleetapi.SettingError {
	in.Provider, in.Model = strings.TrimSpace(in.Provider), strings.TrimSpace(in.Model)
	if in.Provider != "" && in.Provider != config.ProviderOllama && in.Provider != config.ProviderOpenAI {
		return &fleetapi.SettingError{Msg: fmt.Sprintf("summarizer.provider %q is not ollama or openai", in.Provider), Field: "summarizer.provider", Fix: "use ollama or openai"}
	}
	var cur *config.Endpoint
	if cfg.Models != nil {
		cur = cfg.Models.Summarizer
	}
	if in.Model == "" {
		if cur != nil {
			return &fleetapi.SettingError{Msg: "summarizer.model is empty", Field: "summarizer.model", Fix: "name the model that writes the recycler's notes, e.g. llama3.1:8b"}
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
			return &fleetapi.SettingError{Msg: fmt.Sprintf("summarizer.provider %s: the summarizer runs on the main server (models.base_url), which speaks %s", in.Provider, providerOf(cfg)),
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
func settingChanges(a, b fleetapi.Settings) []string {
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

// saveConfig writes cfg over the config.toml at path atomically.
func saveConfig(path string, cfg *config.Config) error {
	data, err := cfg.Encode()
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o644)
}
