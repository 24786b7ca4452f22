package adapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/workspace"
)

// The refusals of Activate without force, matched with errors.Is.
var (
	// ErrNotEvaluated: the adapter has no evaluation.
	ErrNotEvaluated = errors.New("adapter not evaluated")
	// ErrNotBetter: the evaluation did not beat the model the stage runs
	// on, or compared against a model the stage no longer runs on.
	ErrNotBetter = errors.New("adapter did not beat the active model")
)

// Entry is one adapter as `cra adapters list` shows it: its registry row
// and its curated deployment.
type Entry struct {
	Tag       string `json:"tag"`
	Stage     string `json:"stage"`
	BaseModel string `json:"base_model"`
	Version   int    `json:"version"`
	// Registered is false for an adapter_metadata row that adapter_registry
	// does not know (written by hand).
	Registered bool     `json:"registered"`
	DatasetID  int64    `json:"dataset_id,omitempty"`
	TrainedAt  string   `json:"trained_at,omitempty"`
	Active     bool     `json:"active"`
	DeployedAt string   `json:"deployed_at,omitempty"`
	Notes      string   `json:"performance_notes,omitempty"`
	Eval       *Eval    `json:"eval,omitempty"`
	Loss       *float64 `json:"training_loss,omitempty"`
}

// List returns the registered adapters, oldest first, with their state in
// the index (none active when the repository is not indexed), then the
// adapter_metadata rows the registry lacks.
func List(ctx context.Context, ws *workspace.Workspace) ([]Entry, error) {
	recs, ok, err := registry(ctx, ws)
	if !ok || err != nil {
		return nil, err // without state nothing is registered, and a listing makes no .clean_room/
	}
	var meta []kb.Adapter
	k, _, err := ws.Index(ctx)
	switch {
	case err == nil:
		if meta, err = k.Adapters(ctx); err != nil {
			return nil, err
		}
	case !errors.Is(err, workspace.ErrNotIndexed):
		return nil, err
	}
	byTag := map[string]kb.Adapter{}
	for _, m := range meta {
		if cur, ok := byTag[m.ModelTag]; !ok || m.Active || !cur.Active && m.ID > cur.ID {
			byTag[m.ModelTag] = m
		}
	}
	var out []Entry
	seen := map[string]bool{}
	for _, r := range recs {
		e := Entry{Tag: r.ModelTag, Stage: r.Stage, BaseModel: r.BaseModel, Version: r.Version, Registered: true,
			DatasetID: r.DatasetID, TrainedAt: r.TrainedAt, Loss: r.TrainingLoss}
		if r.EvalMetrics != "" {
			var ev Eval
			if json.Unmarshal([]byte(r.EvalMetrics), &ev) == nil {
				e.Eval = &ev
			}
		}
		if m, ok := byTag[r.ModelTag]; ok {
			e.Active, e.DeployedAt, e.Notes = m.Active, m.DeployedAt, m.PerformanceNotes
		}
		seen[r.ModelTag] = true
		out = append(out, e)
	}
	for _, m := range meta {
		if seen[m.ModelTag] {
			continue
		}
		seen[m.ModelTag] = true
		m = byTag[m.ModelTag]
		out = append(out, Entry{Tag: m.ModelTag, Stage: m.StageName, BaseModel: m.BaseModel, Version: m.Version,
			Active: m.Active, DeployedAt: m.DeployedAt, Notes: m.PerformanceNotes})
	}
	return out, nil
}

// registry returns raw.sqlite's adapter_registry, oldest first; ok is
// false when the repository has no state, which it does not create.
func registry(ctx context.Context, ws *workspace.Workspace) (recs []corpus.AdapterRecord, ok bool, err error) {
	if !workspace.HasState(ws.Root) {
		return nil, false, nil
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return nil, false, err
	}
	if recs, err = raw.Adapters(ctx, ""); err != nil {
		return nil, false, fmt.Errorf("read adapter_registry: %w", err)
	}
	return recs, true, nil
}

// Activation is what Activate did.
type Activation struct {
	Adapter corpus.AdapterRecord
	// Deactivated are the tags that served the stage before.
	Deactivated []string
	// Forced is set when the evaluation gate was passed over.
	Forced bool
	// Overridden names the [models.overrides] tag that keeps serving the
	// stage, "" when there is none or it names the adapter: an override
	// comes before an adapter.
	Overridden string
}

// Activate makes the registered adapter tag the one that serves its stage
// (seed 001 §16.1), deactivating the stage's other adapters. Without
// force it refuses an adapter that was never evaluated, whose evaluation
// did not beat the model it would replace, or whose evaluation compared
// against a model the stage no longer runs on.
func Activate(ctx context.Context, ws *workspace.Workspace, tag string, force bool) (*Activation, error) {
	raw, rec, err := registered(ctx, ws, tag)
	if err != nil {
		return nil, err
	}
	if _, _, err := ws.Index(ctx); err != nil {
		return nil, err
	}
	act := &Activation{Adapter: rec, Forced: force}
	if !force {
		if err := gate(ctx, ws, rec); err != nil {
			return nil, err
		}
	}
	if err := checkServed(ctx, ws, rec.BaseModel, tag); err != nil {
		return nil, err
	}
	if ws.Config != nil && ws.Config.Models != nil {
		if o := ws.Config.Models.Overrides[rec.Stage]; !sameModel(o, tag) {
			act.Overridden = o
		}
	}
	notes := ""
	if ev, err := parseEval(rec); err == nil && ev != nil {
		notes = ev.Summary()
	}
	if force {
		notes = strings.TrimSuffix("activated with --force; "+notes, "; ")
	}
	err = writeIndex(ctx, ws, func(tx *sql.Tx, now string) error {
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT model_tag FROM adapter_metadata WHERE stage_name = ? AND active = 1 AND model_tag != ?`, rec.Stage, tag)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			act.Deactivated = append(act.Deactivated, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE adapter_metadata SET active = 0 WHERE stage_name = ? AND model_tag != ?`, rec.Stage, tag); err != nil {
			return err
		}
		return deploy(ctx, tx, rec, notes, now)
	})
	if err != nil {
		return nil, fmt.Errorf("activate adapter %s: %w", tag, err)
	}
	if err := raw.SetAdapterDeployed(ctx, rec.ID, true); err != nil {
		return nil, err
	}
	return act, nil
}

// deploy makes rec's adapter_metadata row active, adding it on its first
// deployment.
func deploy(ctx context.Context, tx *sql.Tx, rec corpus.AdapterRecord, notes, now string) error {
	res, err := tx.ExecContext(ctx, `UPDATE adapter_metadata SET active = 1, deployed_at = ?, version = ?,
		performance_notes = COALESCE(NULLIF(?, ''), performance_notes) WHERE model_tag = ? AND stage_name = ?`,
		now, rec.Version, notes, rec.ModelTag, rec.Stage)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO adapter_metadata (stage_name, base_model, model_tag, version, active, performance_notes, deployed_at)
		VALUES (?, ?, ?, ?, 1, NULLIF(?, ''), ?)`, rec.Stage, rec.BaseModel, rec.ModelTag, rec.Version, notes, now)
	return err
}

// Restore gives a new index back the active adapters it lost. The
// curated adapter_metadata holds which adapter serves each stage, and a
// new index starts without it ('cra index --rebuild' sets a damaged one
// aside, or the file was removed); the raw adapter_registry records the
// same deployments (Activate, Deactivate and Rollback write both), so
// each adapter it marks deployed whose tag the index has no row for is
// made active again, unless its stage has another active adapter. An
// adapter the index knows was deactivated there and stays so. The earlier
// versions' deployments, which Rollback reads, are not in the registry and
// are not restored. It returns the adapters restored, none when the
// repository is not indexed.
func Restore(ctx context.Context, ws *workspace.Workspace) ([]corpus.AdapterRecord, error) {
	recs, ok, err := registry(ctx, ws)
	if !ok || err != nil {
		return nil, err
	}
	var deployed []corpus.AdapterRecord
	for _, r := range recs {
		if r.Deployed {
			deployed = append(deployed, r)
		}
	}
	if len(deployed) == 0 {
		return nil, nil
	}
	k, _, err := ws.Index(ctx)
	if errors.Is(err, workspace.ErrNotIndexed) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	// What the index lacks, read first: the index's write lock is taken
	// only when there is something to restore, so a 'cra index' never
	// waits for another's build just to find it has nothing to do.
	have, err := k.Adapters(ctx)
	if err != nil {
		return nil, err
	}
	known, active := map[string]bool{}, map[string]bool{}
	for _, a := range have {
		known[a.ModelTag] = true
		active[a.StageName] = active[a.StageName] || a.Active
	}
	deployed = slices.DeleteFunc(deployed, func(r corpus.AdapterRecord) bool { return known[r.ModelTag] || active[r.Stage] })
	if len(deployed) == 0 {
		return nil, nil
	}
	var restored []corpus.AdapterRecord
	err = writeIndex(ctx, ws, func(tx *sql.Tx, now string) error {
		for _, r := range deployed {
			var known, active int
			if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM adapter_metadata WHERE model_tag = ?),
				(SELECT COUNT(*) FROM adapter_metadata WHERE stage_name = ? AND active = 1)`, r.ModelTag, r.Stage).Scan(&known, &active); err != nil {
				return err
			}
			if known > 0 || active > 0 {
				continue
			}
			notes := "restored from adapter_registry into a new index"
			if ev, err := parseEval(r); err == nil && ev != nil {
				notes += "; " + ev.Summary()
			}
			if err := deploy(ctx, tx, r, notes, now); err != nil {
				return err
			}
			restored = append(restored, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("restore the active adapters: %w", err)
	}
	return restored, nil
}

// gate is Activate's evaluation check.
func gate(ctx context.Context, ws *workspace.Workspace, rec corpus.AdapterRecord) error {
	ev, err := parseEval(rec)
	if err != nil {
		return err
	}
	if ev == nil {
		return fmt.Errorf("%w: %s was never evaluated: run 'cra adapters eval %s' first, or pass --force", ErrNotEvaluated, rec.ModelTag, rec.ModelTag)
	}
	if !ev.Better {
		return fmt.Errorf("%w: %s; pass --force to activate it anyway", ErrNotBetter, ev.Summary())
	}
	base, err := Baseline(ctx, ws, rec)
	if err != nil {
		return err
	}
	if base.Model != ev.Baseline.Model {
		return fmt.Errorf("%w: %s was evaluated against %s, but stage %s now runs on %s: run 'cra adapters eval %s' again, or pass --force",
			ErrNotBetter, rec.ModelTag, ev.Baseline.Model, rec.Stage, base.Model, rec.ModelTag)
	}
	return nil
}

// Deactivate stops the adapter tag from serving its stage; the stage goes
// back to its role's model (or an override).
func Deactivate(ctx context.Context, ws *workspace.Workspace, tag string) error {
	if _, _, err := ws.Index(ctx); err != nil {
		return err
	}
	inIndex := true
	err := writeIndex(ctx, ws, func(tx *sql.Tx, _ string) error {
		res, err := tx.ExecContext(ctx, `UPDATE adapter_metadata SET active = 0 WHERE model_tag = ? AND active = 1`, tag)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		inIndex = n > 0
		return nil
	})
	if err != nil {
		return fmt.Errorf("deactivate adapter %s: %w", tag, err)
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return err
	}
	rec, err := raw.AdapterByTag(ctx, tag)
	// A new index whose restore has not run yet does not have it active,
	// but raw.sqlite still marks it deployed, and the next 'cra index'
	// would restore it: deactivating it is clearing that mark.
	if !inIndex && (err != nil || !rec.Deployed) {
		return fmt.Errorf("deactivate adapter %s: adapter %s is not active: 'cra adapters list' shows the active ones", tag, tag)
	}
	if err == nil && rec.Deployed {
		return raw.SetAdapterDeployed(ctx, rec.ID, false)
	}
	return nil
}

// Rollback deactivates the active adapter of stage and activates the
// stage's previous version: the highest version below it that was ever
// deployed. It needs no evaluation: that version served the stage before.
func Rollback(ctx context.Context, ws *workspace.Workspace, stage string) (from, to kb.Adapter, err error) {
	if err := dataset.CheckStage(stage); err != nil {
		return from, to, err
	}
	k, _, err := ws.Index(ctx)
	if err != nil {
		return from, to, err
	}
	cur, err := k.AdapterForStage(ctx, stage)
	if err != nil {
		return from, to, err
	}
	if cur == nil {
		return from, to, fmt.Errorf("stage %s has no active adapter to roll back", stage)
	}
	all, err := k.Adapters(ctx)
	if err != nil {
		return from, to, err
	}
	var prev *kb.Adapter
	for i, a := range all {
		if a.StageName == stage && a.ModelTag != cur.ModelTag && a.Version < cur.Version && (prev == nil || a.Version > prev.Version) {
			prev = &all[i]
		}
	}
	if prev == nil {
		return from, to, fmt.Errorf("stage %s has no earlier adapter version than %s (v%d) that was ever active: 'cra adapters deactivate %s' serves the stage with its role's model again",
			stage, cur.ModelTag, cur.Version, cur.ModelTag)
	}
	if err := checkServed(ctx, ws, prev.BaseModel, prev.ModelTag); err != nil {
		return from, to, err
	}
	err = writeIndex(ctx, ws, func(tx *sql.Tx, now string) error {
		if _, err := tx.ExecContext(ctx, `UPDATE adapter_metadata SET active = 0 WHERE stage_name = ?`, stage); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE adapter_metadata SET active = 1, deployed_at = ? WHERE id = ?`, now, prev.ID)
		return err
	})
	if err != nil {
		return from, to, fmt.Errorf("roll back stage %s: %w", stage, err)
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return from, to, err
	}
	if rec, err := raw.AdapterByTag(ctx, prev.ModelTag); err == nil {
		if err := raw.SetAdapterDeployed(ctx, rec.ID, true); err != nil {
			return from, to, err
		}
	} else if rec, err := raw.AdapterByTag(ctx, cur.ModelTag); err == nil {
		if err := raw.SetAdapterDeployed(ctx, rec.ID, false); err != nil {
			return from, to, err
		}
	}
	to = *prev
	to.Active = true
	from = *cur
	from.Active = false
	return from, to, nil
}

// checkServed returns an error unless the server of the role baseModel
// has the model tag: a stage switched to a tag the server lacks (removed
// with 'ollama rm', or base_url now names another server) would fail on
// every call.
func checkServed(ctx context.Context, ws *workspace.Workspace, baseModel, tag string) error {
	m, err := llm.NewRouter(ws.Config, nil).Resolve(ctx, llm.Role(baseModel), "")
	if err != nil {
		return err
	}
	names, err := llm.ListModels(ctx, m)
	if err != nil {
		return fmt.Errorf("check that the server has adapter %s: %w", tag, err)
	}
	if !llm.HasModel(names, tag) {
		return fmt.Errorf("the server of the %s model (%s) has no model %s: it was removed, or base_url names another server; "+
			"'cra adapters register' the adapter's file again for a new tag", baseModel, m.BaseURL, tag)
	}
	return nil
}

// writeIndex runs f in one transaction of the curated database, opened
// read-write for it under the index lock (seed 001 §4.3: the other
// readers keep their read-only handles). now is the deployment time.
func writeIndex(ctx context.Context, ws *workspace.Workspace, f func(tx *sql.Tx, now string) error) error {
	lk, err := index.Lock(ctx, ws.StateDir, 0, nil)
	if err != nil {
		return err
	}
	defer lk.Close()
	db, err := ws.OpenIndexWriter(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	return tx.Commit()
}

// registered returns the raw database and the registry row of tag, or an
// error naming the fix. A repository without .clean_room/ has registered
// nothing, and a refusal makes no .clean_room/.
func registered(ctx context.Context, ws *workspace.Workspace, tag string) (*corpus.Corpus, corpus.AdapterRecord, error) {
	notRegistered := fmt.Errorf("adapter %s is not registered: run 'cra adapters register' first ('cra adapters list' shows the registered ones)", tag)
	if !workspace.HasState(ws.Root) {
		return nil, corpus.AdapterRecord{}, notRegistered
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return nil, corpus.AdapterRecord{}, err
	}
	rec, err := raw.AdapterByTag(ctx, tag)
	if errors.Is(err, corpus.ErrNoRow) {
		return raw, rec, notRegistered
	}
	return raw, rec, err
}

// Baseline is the model the adapter's stage runs on without the adapter:
// what the router resolves (an override, another active adapter, the
// role's model) when rec's tag is not active and no override names it.
// An override naming the adapter already serves the stage with it, so it
// is passed over like the active adapter: the baseline is never the
// adapter, which an evaluation would compare with itself. A role model
// naming the adapter leaves nothing to compare against and is an error.
func Baseline(ctx context.Context, ws *workspace.Workspace, rec corpus.AdapterRecord) (llm.ModelConfig, error) {
	var src llm.AdapterSource
	k, _, err := ws.Index(ctx)
	switch {
	case err == nil:
		src = without{workspace.Adapters(k), rec.ModelTag}
	case !errors.Is(err, workspace.ErrNotIndexed):
		return llm.ModelConfig{}, err
	}
	cfg := ws.Config
	if cfg != nil && cfg.Models != nil && sameModel(cfg.Models.Overrides[rec.Stage], rec.ModelTag) {
		c, ms := *cfg, *cfg.Models
		ms.Overrides = maps.Clone(ms.Overrides)
		delete(ms.Overrides, rec.Stage)
		c.Models = &ms
		cfg = &c
	}
	r := llm.NewRouter(cfg, src)
	r.Logger = ws.Logger()
	m, err := r.Resolve(ctx, llm.Role(rec.BaseModel), rec.Stage)
	if err == nil && sameModel(m.Model, rec.ModelTag) {
		return llm.ModelConfig{}, fmt.Errorf("the %s model (models.%s in .clean_room/config.toml) is adapter %s itself, so stage %s has no model without it to compare against: "+
			"set models.%s to the model the adapter was created from, then run again", rec.BaseModel, rec.BaseModel, rec.ModelTag, rec.Stage, rec.BaseModel)
	}
	return m, err
}

// sameModel reports whether two Ollama model names name one model: a
// name without a tag is the ":latest" one.
func sameModel(a, b string) bool {
	return a != "" && b != "" && (llm.HasModel([]string{a}, b) || llm.HasModel([]string{b}, a))
}

// without is an adapter source that does not see one tag.
type without struct {
	src llm.AdapterSource
	tag string
}

func (w without) AdapterForStage(ctx context.Context, stage string) (*llm.Adapter, error) {
	a, err := w.src.AdapterForStage(ctx, stage)
	if err != nil || a == nil || a.ModelTag != w.tag {
		return a, err
	}
	return nil, nil
}
