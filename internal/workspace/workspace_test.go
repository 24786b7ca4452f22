package workspace

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// indexedRepo makes a git repository with one Go file, a config naming
// models on s (nil: no [models]) and its index.
func indexedRepo(t *testing.T, s *llmtest.Server) string {
	t.Helper()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "calc.go"), []byte("package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, repo, "init", "-q")
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "calc")
	stateDir, err := EnsureStateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	if s != nil {
		window := 4096
		cfg := &config.Config{Models: &config.Models{Coding: "coder:3b", Reasoning: "thinker:4b", BaseURL: s.OllamaURL(),
			CodingContextWindow: &window, ReasoningContextWindow: &window}}
		if _, err := SaveConfig(repo, cfg, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := index.NewBuilderIn(stateDir).Run(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	return repo
}

func TestOpenFindsTheNearestState(t *testing.T) {
	ctx := context.Background()
	repo := indexedRepo(t, nil)
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(ctx, sub, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if ws.Root != repo || ws.StateDir != filepath.Join(repo, statedir.Name) {
		t.Errorf("got root %s, state %s; want %s", ws.Root, ws.StateDir, repo)
	}
	exact, err := Open(ctx, sub, Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	if exact.Root != sub {
		t.Errorf("exact: got root %s, want %s", exact.Root, sub)
	}
	if _, err := Open(ctx, filepath.Join(repo, "calc.go"), Options{}); err == nil {
		t.Error("a file opened as a workspace")
	}
	if _, err := Open(ctx, filepath.Join(repo, "missing"), Options{}); err == nil {
		t.Error("a missing directory opened as a workspace")
	}
}

func TestIndexErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("not indexed", func(t *testing.T) {
		ws, err := Open(ctx, t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if _, _, err := ws.Index(ctx); !errors.Is(err, ErrNotIndexed) {
			t.Errorf("got %v, want ErrNotIndexed", err)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		repo := indexedRepo(t, nil)
		curated := filepath.Join(repo, statedir.Name, "curated.sqlite")
		for _, p := range []string{curated + "-wal", curated + "-shm"} {
			os.Remove(p)
		}
		if err := os.WriteFile(curated, bytes.Repeat([]byte("not a database "), 300), 0o644); err != nil {
			t.Fatal(err)
		}
		ws, err := Open(ctx, repo, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if _, _, err := ws.Index(ctx); !errors.Is(err, ErrDamaged) {
			t.Errorf("got %v, want ErrDamaged", err)
		}
	})
	t.Run("no models", func(t *testing.T) {
		ws, err := Open(ctx, indexedRepo(t, nil), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if _, err := ws.Gateway(ctx); !errors.Is(err, ErrNotInitialized) {
			t.Errorf("got %v, want ErrNotInitialized", err)
		}
	})
}

// TestPartsOpenOnceAndRecord: concurrent callers (the daemon's) share one
// index, one raw database and one gateway, whose calls are recorded.
func TestPartsOpenOnceAndRecord(t *testing.T) {
	ctx := context.Background()
	s := llmtest.NewServer(t)
	s.SetDefault(llmtest.Text("hello"))
	ws, err := Open(ctx, indexedRepo(t, s), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var wg sync.WaitGroup
	gateways := make([]*llm.Gateway, 8)
	for i := range gateways {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := ws.Gateway(ctx)
			if err != nil {
				t.Error(err)
			}
			gateways[i] = g
		}()
	}
	wg.Wait()
	for _, g := range gateways[1:] {
		if g != gateways[0] {
			t.Fatal("two gateways for one workspace")
		}
	}
	_, repo, err := ws.Index(ctx)
	if err != nil || repo.Files != 1 {
		t.Fatalf("index: %+v, %v", repo, err)
	}
	c, _, err := gateways[0].Client(ctx, llm.CallInfo{Type: "probe", Role: llm.RoleCoding})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, llm.UserPrompt("", "hi")); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, ws)
	var n int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM llm_calls WHERE call_type = 'probe'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("recorded calls: %d, %v; want 1", n, err)
	}
	l1, err := ws.Log()
	if err != nil {
		t.Fatal(err)
	}
	if l2, _ := ws.Log(); l1 != l2 {
		t.Error("two world logs for one workspace")
	}
	cp, err := ws.Corpus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := cp.HasRuns(ctx); err == nil {
		t.Errorf("the raw database still answers after Close (%v)", ok)
	}
}

// rawDB opens the workspace's raw database read-only, to check its rows.
func rawDB(t *testing.T, ws *Workspace) *sql.DB {
	t.Helper()
	db, err := store.NewFactory(statedir.At(ws.StateDir)).Open(context.Background(), store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
