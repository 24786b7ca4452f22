// Package preflight holds the checks every pipeline command runs before it
// does any work (seed 001 §14): models configured, the repository indexed,
// logged runs for training modes, and whether enrichment was promoted. A
// failed check is an error that names the command that fixes it; missing
// enrichment is only an info line, because retrieval works without it.
package preflight

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/store"
)

// ErrNoRuns is returned by CheckRaw when the raw database holds no logged
// runs: training modes learn from them (seed 001 §14.3, §15).
var ErrNoRuns = errors.New("no logged coding runs: training modes learn from prior runs, run 'cra solve <task>' first")

// EnrichmentMissing is the info line of CheckEnrichment when the
// repository has no promoted enrichment (seed 001 §14.4).
const EnrichmentMissing = "enrichment not found, Tier 4 skipped"

// CheckModels checks that the config names the model server and both model
// roles (seed 001 §14.1). A missing [models] section is
// config.ErrNoModels; an incomplete one also matches it with errors.Is and
// names the flags to pass.
func CheckModels(cfg *config.Config) error {
	m, err := cfg.RequireModels()
	if err != nil {
		return err
	}
	var missing, flags []string
	for _, v := range []struct{ key, flag, value string }{
		{"coding", "--coding MODEL", m.Coding},
		{"reasoning", "--reasoning MODEL", m.Reasoning},
		{"base_url", "--base-url URL", m.BaseURL},
	} {
		if v.value == "" {
			missing = append(missing, "models."+v.key)
			flags = append(flags, v.flag)
		}
	}
	if len(missing) > 0 {
		return &incompleteModelsError{missing: missing, flags: flags}
	}
	return nil
}

// incompleteModelsError is a [models] section lacking some keys.
type incompleteModelsError struct{ missing, flags []string }

func (e *incompleteModelsError) Error() string {
	return fmt.Sprintf("config has no %s: run 'cra init %s' first", strings.Join(e.missing, ", "), strings.Join(e.flags, " "))
}

// Is makes an incomplete section match config.ErrNoModels.
func (e *incompleteModelsError) Is(target error) bool { return target == config.ErrNoModels }

// emptyIndexError is a repository indexed with nothing in it: running
// 'cra index' again, the fix for kb.ErrNotIndexed, would not help.
type emptyIndexError string

func (e emptyIndexError) Error() string {
	return fmt.Sprintf("%s: indexed, but no file was kept: add files, or see what was skipped with 'cra index --verbose' (.gitignore, binary, size)", string(e))
}

// Is keeps the error a kb.ErrNotIndexed for callers that test for it.
func (e emptyIndexError) Is(target error) bool { return target == kb.ErrNotIndexed }

// CheckCurated checks that the curated database exists, knows the
// repository at repoPath (absolute) and holds files of it (seed 001 §14.2).
// Any of them missing is kb.ErrNotIndexed.
func CheckCurated(ctx context.Context, f *store.Factory, repoPath string) error {
	db, err := f.Open(ctx, store.Curated, "", true)
	if errors.Is(err, store.ErrNotExist) {
		return fmt.Errorf("%s: %w", repoPath, kb.ErrNotIndexed)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = CheckCuratedDB(ctx, db, repoPath)
	return err
}

// CheckCuratedDB is CheckCurated on an open curated database; it returns
// the repository's row, for a caller that keeps the database open.
func CheckCuratedDB(ctx context.Context, db *sql.DB, repoPath string) (kb.Repo, error) {
	notIndexed := fmt.Errorf("%s: %w", repoPath, kb.ErrNotIndexed)
	ok, err := hasTables(ctx, db, "repos", "files")
	if err != nil {
		return kb.Repo{}, fmt.Errorf("check curated db: %w", err)
	}
	if !ok {
		return kb.Repo{}, notIndexed
	}
	r, err := kb.New(db).Repo(ctx, repoPath)
	if errors.Is(err, kb.ErrNotIndexed) {
		return kb.Repo{}, notIndexed
	}
	if err == nil && r.Files == 0 {
		return kb.Repo{}, emptyIndexError(repoPath)
	}
	if err != nil {
		return kb.Repo{}, fmt.Errorf("check curated db: %w", err)
	}
	return r, nil
}

// CheckRaw checks that the raw database exists and has logged runs, the
// input of the training modes (seed 001 §14.3): task runs, or the LLM calls
// of standalone retrievals.
func CheckRaw(ctx context.Context, f *store.Factory) error {
	db, err := f.Open(ctx, store.Raw, "", true)
	if errors.Is(err, store.ErrNotExist) {
		return ErrNoRuns
	}
	if err != nil {
		return err
	}
	defer db.Close()
	logged, err := corpus.New(db).HasRuns(ctx)
	if err != nil {
		return fmt.Errorf("check raw db: %w", err)
	}
	if !logged {
		return ErrNoRuns
	}
	return nil
}

// CheckEnrichment reports whether the repository's enrichment was promoted
// (seed 001 §14.4). When it was not, or cannot be read, info is the line to
// log and show; retrieval then skips Scope Tier 4 and goes on.
func CheckEnrichment(ctx context.Context, k *kb.KnowledgeBase, repoID int64) (promoted bool, info string) {
	ok, err := k.EnrichmentPromoted(ctx, repoID)
	if err != nil {
		return false, fmt.Sprintf("%s (%v)", EnrichmentMissing, err)
	}
	if !ok {
		return false, EnrichmentMissing
	}
	return true, ""
}

// hasTables reports whether every table exists: a database file that
// exists but was never migrated (an interrupted first run) is as good as
// missing.
func hasTables(ctx context.Context, db *sql.DB, tables ...string) (bool, error) {
	for _, t := range tables {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, t).Scan(&n); err != nil {
			return false, err
		}
		if n == 0 {
			return false, nil
		}
	}
	return true, nil
}
