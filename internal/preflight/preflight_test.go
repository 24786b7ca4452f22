package preflight

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

func TestCheckModels(t *testing.T) {
	tests := []struct {
		name     string
		cfg      *config.Config
		wantErr  error
		wantText string
	}{
		{"no config", nil, config.ErrNoModels, "run 'cra init --coding MODEL --reasoning MODEL --base-url URL' first"},
		{"no models section", &config.Config{}, config.ErrNoModels, "no [models] section"},
		{"no base url", &config.Config{Models: &config.Models{Coding: "c", Reasoning: "r"}}, config.ErrNoModels,
			"config has no models.base_url: run 'cra init --base-url URL' first"},
		{"no coding model", &config.Config{Models: &config.Models{Reasoning: "r", BaseURL: "http://h:1"}}, config.ErrNoModels,
			"config has no models.coding: run 'cra init --coding MODEL' first"},
		{"complete", &config.Config{Models: &config.Models{Coding: "c", Reasoning: "r", BaseURL: "http://h:1"}}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckModels(tc.cfg)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("got %q, want it to contain %q", err, tc.wantText)
			}
		})
	}
}

func TestCheckCurated(t *testing.T) {
	ctx := context.Background()
	indexed := t.TempDir()
	kbtest.Write(t, indexed, "/src/shop")
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "curated.sqlite"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const notIndexed = "repository is not indexed: run 'cra index <repo>' first"
	tests := []struct {
		name    string
		dir     string
		repo    string
		wantErr error
		wantMsg string // the message's end
	}{
		{"indexed", indexed, "/src/shop", nil, ""},
		{"no curated db", t.TempDir(), "/src/shop", kb.ErrNotIndexed, notIndexed},
		{"empty db file", empty, "/src/shop", kb.ErrNotIndexed, notIndexed},
		{"repo not indexed", indexed, "/src/elsewhere", kb.ErrNotIndexed, notIndexed},
		// Indexing again would not help: say what would.
		{"repo without files", indexed, kbtest.EmptyRepo, kb.ErrNotIndexed,
			"indexed, but no file was kept: add files, or see what was skipped with 'cra index --verbose' (.gitignore, binary, size)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCurated(ctx, store.NewFactory(statedir.At(tc.dir)), tc.repo)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.HasSuffix(err.Error(), tc.wantMsg) {
				t.Errorf("got %q, want it to end %q", err, tc.wantMsg)
			}
		})
	}
	t.Run("creates nothing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), ".clean_room")
		CheckCurated(ctx, store.NewFactory(statedir.At(dir)), "/src/shop")
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want the state directory left absent", err)
		}
	})
}

func TestCheckRaw(t *testing.T) {
	ctx := context.Background()
	rawWith := func(t *testing.T, stmt string) string {
		dir := t.TempDir()
		db, err := store.NewFactory(statedir.At(dir)).Open(ctx, store.Raw, "", false)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if stmt != "" {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name    string
		dir     string
		wantErr error
	}{
		{"no raw db", t.TempDir(), ErrNoRuns},
		{"no runs", rawWith(t, ""), ErrNoRuns},
		{"a task run", rawWith(t, `INSERT INTO task_runs (task_id, repo_path, mode, execute_model, context_window,
			reserved_tokens, stages, timestamp) VALUES ('t1', '/src/shop', 'solve', 'm', 32768, 4096, 'scope', '2024-01-01T00:00:00Z')`), nil},
		{"a retrieval call", rawWith(t, `INSERT INTO retrieval_llm_calls (task_id, call_type, model, prompt, response,
			latency_ms, timestamp) VALUES ('t1', 'stage', 'm', 'p', 'r', 10, '2024-01-01T00:00:00Z')`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRaw(ctx, store.NewFactory(statedir.At(tc.dir)))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
		})
	}
	if !strings.Contains(ErrNoRuns.Error(), "cra solve") {
		t.Errorf("ErrNoRuns %q does not name 'cra solve'", ErrNoRuns)
	}
}

func TestCheckEnrichment(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kbtest.Write(t, dir, "/src/shop")
	db, err := store.NewFactory(statedir.At(dir)).Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	k := kb.New(db)
	tests := []struct {
		name         string
		repo         int64
		wantPromoted bool
		wantInfo     string
	}{
		{"promoted", kbtest.MainRepoID, true, ""},
		{"absent", kbtest.OtherRepoID, false, "enrichment not found, Tier 4 skipped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			promoted, info := CheckEnrichment(ctx, k, tc.repo)
			if promoted != tc.wantPromoted || info != tc.wantInfo {
				t.Errorf("got (%v, %q), want (%v, %q)", promoted, info, tc.wantPromoted, tc.wantInfo)
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		db.Close()
		promoted, info := CheckEnrichment(ctx, k, kbtest.MainRepoID)
		if promoted || !strings.HasPrefix(info, EnrichmentMissing+" (") {
			t.Errorf("got (%v, %q), want (false, %q with the reason)", promoted, info, EnrichmentMissing)
		}
	})
}
