package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

func TestRetrieveRecordsTheRun(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "pager.py"), []byte("def _pager_contextmanager():\n    return 'less'\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "cli.py"), []byte("from pager import _pager_contextmanager\n"), 0o644)
	gittest.Run(t, repo, "init", "-q")
	d, out, _ := testDeps()
	if err := indexRun(ctx, d, &indexOptions{repo: repo}); err != nil {
		t.Fatal(err)
	}
	cw, rt := 2048, 512
	opts := &retrieveOptions{task: "`_pager_contextmanager` is slow", repo: repo, stages: "scope,precision", deterministic: true, taskID: "task-42",
		budget: budgetFlags{contextWindow: &cw, reservedTokens: &rt}}
	out.Reset()
	if err := retrieveRun(ctx, d, opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "## pager.py") {
		t.Errorf("output lacks pager.py:\n%s", out)
	}
	f := store.NewFactory(statedir.At(filepath.Join(repo, ".clean_room")))
	raw, err := f.Open(ctx, store.Raw, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode, stages, model string
	var success, window, reserved int
	if err := raw.QueryRow("SELECT mode, stages, execute_model, success, context_window, reserved_tokens FROM task_runs WHERE task_id = 'task-42'").
		Scan(&mode, &stages, &model, &success, &window, &reserved); err != nil {
		t.Fatal(err)
	}
	if mode != "retrieve" || stages != "scope,precision" || model != "none" || success != 1 || window != 2048 || reserved != 512 {
		t.Errorf("task_runs: got %s %s %s %d %d %d", mode, stages, model, success, window, reserved)
	}
	var archives, decisions int
	raw.QueryRow("SELECT COUNT(*) FROM session_archives WHERE task_id = 'task-42'").Scan(&archives)
	raw.QueryRow("SELECT COUNT(*) FROM retrieval_decisions WHERE task_id = 'task-42'").Scan(&decisions)
	if archives != 1 || decisions == 0 {
		t.Errorf("got %d session archives and %d decisions, want 1 and some", archives, decisions)
	}
	if entries, _ := os.ReadDir(filepath.Join(repo, ".clean_room", "sessions")); len(entries) != 0 {
		t.Errorf("session files left behind: %v", entries)
	}
}

// TestRetrieveFileDeletedSinceIndexing: a file deleted after 'cra index'
// is reported with the fix, 'cra index', not as a budget to raise.
func TestRetrieveFileDeletedSinceIndexing(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "pager.py"), []byte("def _pager_contextmanager():\n    return 'less'\n"), 0o644)
	gittest.Run(t, repo, "init", "-q")
	d, _, _ := testDeps()
	if err := indexRun(ctx, d, &indexOptions{repo: repo}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo, "pager.py"))
	d, out, errOut := testDeps()
	cw, rt := 8192, 1024
	if err := retrieveRun(ctx, d, &retrieveOptions{task: "`_pager_contextmanager` is slow", repo: repo, stages: "scope,precision", deterministic: true,
		budget: budgetFlags{contextWindow: &cw, reservedTokens: &rt}}); err != nil {
		t.Fatal(err)
	}
	if all := out.String() + errOut.String(); strings.Contains(all, "raise --context-window") || !strings.Contains(all, "run 'cra index' first") {
		t.Errorf("a deleted file:\nstdout:\n%s\nstderr:\n%s\nwant the fix 'cra index', not a budget to raise", out, errOut)
	}
}
