package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/knowledge"
)

// TestRunOutlivesABrokenKnowledgeBranch: a cra/knowledge on the remote
// that this host cannot sync (here a document whose name holds a tab,
// which the store refuses to commit) fails every sync; a run's prompt
// then reads the host's own store, the run goes on, and the failure is
// said, where it used to fail every run of every host.
func TestRunOutlivesABrokenKnowledgeBranch(t *testing.T) {
	t.Parallel()
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

	var logged strings.Builder
	prompt := runPromptOn(t, b, &logged)
	if !strings.Contains(prompt, "Keep this host's rule.") {
		t.Errorf("the prompt lacks this host's own store:\n%s", prompt)
	}
	if !strings.Contains(logged.String(), "knowledge store not synced") {
		t.Errorf("the failed sync was not said; logged:\n%s", logged.String())
	}
}
