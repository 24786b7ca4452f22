package fleet

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/workspace"
)

// TestRunOutlivesABrokenKnowledgeBranch: a cra/knowledge on the remote
// that this host cannot sync (here a document whose name holds a tab,
// which the store refuses to commit) fails every sync; a run's prompt
// then reads the host's own store, the run goes on, and the failure is
// said, where it used to fail every run of every host.
func TestRunOutlivesABrokenKnowledgeBranch(t *testing.T) {
	ctx := context.Background()
	bare, roots := knowledgeHosts(t, 2)
	a, b := roots[0], roots[1]
	putDoc(t, a, knowledge.CodeStyle, "conventions/errors.md", "Wrap errors once per layer.")
	syncOn(t, a, "host-a")
	// Someone (a person, an agent with the user's credentials) pushes a
	// document this host's store cannot hold.
	w := filepath.Join(t.TempDir(), "w")
	gittest.Run(t, a, "clone", "-q", "-b", KnowledgeBranch, bare, w)
	if err := os.WriteFile(filepath.Join(w, "docs", "knowledge", "conventions", "tab\there.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, w, "add", "-A")
	gittest.Run(t, w, "commit", "-q", "-m", "a name with a tab")
	gittest.Run(t, w, "push", "-q", "origin", KnowledgeBranch)
	putDoc(t, b, knowledge.CodeStyle, "conventions/local.md", "Keep this host's rule.")
	on := true
	if _, err := SyncKnowledge(ctx, b, filepath.Join(b, ".clean_room"), &config.Config{Fleet: &config.Fleet{Host: "host-b", Push: &on}}, time.Now()); err == nil {
		t.Fatal("the sync of a branch with a tab in a name succeeded: the test no longer breaks the sync")
	}

	cfg := "[board]\nsandbox = \"off\"\n\n[agents.ok]\ncommand = \"true\"\n\n[fleet]\nhost = \"host-b\"\npush = true\n"
	if err := os.WriteFile(filepath.Join(b, ".clean_room", "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(ctx, b, workspace.Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	f, err := Open(ctx, ws, Options{Create: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	task := board.NewTask("tidy the error handling")
	task.Agent, task.Need = "ok", "errors wrapped"
	added, err := f.Board.Add(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.Processor().Run(ctx, added.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Folder != board.Completed {
		t.Fatalf("run: %s %q", o.Folder, o.Finish)
	}
	prompt, err := os.ReadFile(o.PromptPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "Keep this host's rule.") {
		t.Errorf("the prompt lacks this host's own store:\n%s", prompt)
	}
	if !strings.Contains(logged.String(), "knowledge store not synced") {
		t.Errorf("the failed sync was not said; logged:\n%s", logged.String())
	}
}
