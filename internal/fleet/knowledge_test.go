package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// knowledgeHosts makes a bare remote with one commit and n clones of it
// ("hosts" on this machine), each with its .clean_room.
func knowledgeHosts(t testing.TB, n int) (string, []string) {
	t.Helper()
	seed := gittest.Init(t)
	gittest.Commit(t, seed, "initial", map[string]string{"README": "hello\n", ".gitignore": ".clean_room/\n"})
	bare := filepath.Join(t.TempDir(), "shared.git")
	gittest.Run(t, seed, "clone", "-q", "--bare", seed, bare)
	var roots []string
	for i := 0; i < n; i++ {
		root := filepath.Join(t.TempDir(), "host")
		gittest.Run(t, seed, "clone", "-q", bare, root)
		if err := os.MkdirAll(filepath.Join(root, ".clean_room"), 0o755); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
	}
	return bare, roots
}

func syncOn(t *testing.T, root, host string) *KnowledgeSync {
	t.Helper()
	on := true
	cfg := &config.Config{Fleet: &config.Fleet{Host: host, Push: &on}}
	s, err := SyncKnowledge(context.Background(), root, filepath.Join(root, ".clean_room"), cfg, time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatalf("sync on %s: %v", host, err)
	}
	return s
}

func putDoc(t testing.TB, root string, by knowledge.Supervisor, rel, rules string) {
	t.Helper()
	st := &knowledge.Store{Root: root}
	if _, err := st.Put(by, rel, &knowledge.Doc{Title: "Doc " + rel, Rules: rules}, "t-1"); err != nil {
		t.Fatal(err)
	}
}

func readDoc(t *testing.T, root, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(knowledge.Dir), filepath.FromSlash(rel)))
	if err != nil {
		return ""
	}
	return string(data)
}

// TestKnowledgeTravels (issue 34 item 6): what one host's supervisor
// writes reaches another host's prompts through the remote's
// cra/knowledge; changes on both hosts to different documents both
// arrive; the same document changed on both keeps the remote's and puts
// this host's aside; a removal travels too.
func TestKnowledgeTravels(t *testing.T) {
	t.Parallel()
	bare, roots := knowledgeHosts(t, 2)
	a, b := roots[0], roots[1]

	putDoc(t, a, knowledge.CodeStyle, "conventions/errors.md", "Wrap errors once per layer.")
	if s := syncOn(t, a, "host-a"); !s.Pushed || s.Commit == "" {
		t.Fatalf("a's first sync: %+v, want a push", s)
	}
	if got := gittest.Run(t, bare, "ls-tree", "-r", "--name-only", KnowledgeBranch); got != "docs/knowledge/conventions/errors.md" {
		t.Errorf("the remote's %s holds %q", KnowledgeBranch, got)
	}
	s := syncOn(t, b, "host-b")
	if strings.Join(s.Changed, ",") != "conventions/errors.md" || s.Pushed {
		t.Errorf("b's sync: %+v, want the document taken, nothing pushed", s)
	}
	sec, err := knowledge.Load(b, "fix the error handling", knowledge.MaxTokens)
	if err != nil || sec == nil || !strings.Contains(sec.Text, "Wrap errors once per layer.") {
		t.Fatalf("b's prompt knowledge = %+v, %v; want a's document", sec, err)
	}

	// Both hosts change: different documents merge.
	putDoc(t, b, knowledge.Internaliser, "lessons/flaky.md", "Retry the network test once.")
	putDoc(t, a, knowledge.CodeStyle, "conventions/errors.md", "Wrap errors once per layer, with context.")
	syncOn(t, b, "host-b")
	syncOn(t, a, "host-a")
	syncOn(t, b, "host-b")
	for _, root := range roots {
		if !strings.Contains(readDoc(t, root, "lessons/flaky.md"), "Retry the network test once.") ||
			!strings.Contains(readDoc(t, root, "conventions/errors.md"), "with context.") {
			t.Errorf("%s lacks a change of the other host", root)
		}
	}

	// The same document on both: the remote's (a's, pushed first) wins,
	// b's is kept aside.
	putDoc(t, a, knowledge.Internaliser, "lessons/flaky.md", "Retry twice.")
	putDoc(t, b, knowledge.Internaliser, "lessons/flaky.md", "Never retry.")
	syncOn(t, a, "host-a")
	s = syncOn(t, b, "host-b")
	if strings.Join(s.Conflicts, ",") != "lessons/flaky.md" || !strings.Contains(readDoc(t, b, "lessons/flaky.md"), "Retry twice.") {
		t.Errorf("conflict: %+v; b has %q", s, readDoc(t, b, "lessons/flaky.md"))
	}
	kept, err := os.ReadFile(filepath.Join(s.ConflictDir, "lessons", "flaky.md"))
	if err != nil || !strings.Contains(string(kept), "Never retry.") {
		t.Errorf("b's version kept as %q, %v", kept, err)
	}
	if !strings.Contains(s.Summary(), "1 conflict(s)") {
		t.Errorf("summary %q", s.Summary())
	}

	// A removal on b reaches a.
	if err := os.Remove(filepath.Join(b, filepath.FromSlash(knowledge.Dir), "lessons", "flaky.md")); err != nil {
		t.Fatal(err)
	}
	syncOn(t, b, "host-b")
	syncOn(t, a, "host-a")
	if readDoc(t, a, "lessons/flaky.md") != "" {
		t.Error("b's removal did not reach a")
	}
	if got := gittest.Run(t, bare, "ls-tree", "-r", "--name-only", KnowledgeBranch); got != "docs/knowledge/conventions/errors.md" {
		t.Errorf("the remote's %s holds %q", KnowledgeBranch, got)
	}
}

// TestKnowledgeFileBecomesADirectory: a document replaced by a
// directory of the same name (notes.md removed, notes.md/x.md added) on
// one host reaches the other, and so does the way back; a host that made
// the same name a directory while the other changed the file gets the
// remote's file, its own documents kept aside as conflicts.
func TestKnowledgeFileBecomesADirectory(t *testing.T) {
	t.Parallel()
	_, roots := knowledgeHosts(t, 2)
	a, b := roots[0], roots[1]
	store := func(root string) string { return filepath.Join(root, filepath.FromSlash(knowledge.Dir)) }
	write := func(root, rel, content string) {
		t.Helper()
		gittest.WriteFile(t, store(root), rel, content)
	}
	remove := func(root, rel string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(store(root), filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "lessons/notes.md", "one file\n")
	syncOn(t, a, "host-a")
	syncOn(t, b, "host-b")
	if readDoc(t, b, "lessons/notes.md") != "one file\n" {
		t.Fatal("b did not get a's document")
	}

	// A file becomes a directory of the same name, and back.
	remove(a, "lessons/notes.md")
	write(a, "lessons/notes.md/x.md", "in a directory\n")
	syncOn(t, a, "host-a")
	if s := syncOn(t, b, "host-b"); readDoc(t, b, "lessons/notes.md/x.md") != "in a directory\n" {
		t.Fatalf("file to directory: b's sync %+v; b has %q", s, readDoc(t, b, "lessons/notes.md/x.md"))
	}
	remove(a, "lessons/notes.md")
	write(a, "lessons/notes.md", "a file again\n")
	syncOn(t, a, "host-a")
	if s := syncOn(t, b, "host-b"); readDoc(t, b, "lessons/notes.md") != "a file again\n" {
		t.Fatalf("directory to file: b's sync %+v; b has %q", s, readDoc(t, b, "lessons/notes.md"))
	}

	// At once: a changes the file, b makes it a directory.
	write(a, "lessons/notes.md", "changed on a\n")
	remove(b, "lessons/notes.md")
	write(b, "lessons/notes.md/y.md", "b's own\n")
	syncOn(t, a, "host-a")
	s := syncOn(t, b, "host-b")
	if readDoc(t, b, "lessons/notes.md") != "changed on a\n" || strings.Join(s.Conflicts, ",") != "lessons/notes.md,lessons/notes.md/y.md" {
		t.Fatalf("both: b's sync %+v; b has %q", s, readDoc(t, b, "lessons/notes.md"))
	}
	if kept, err := os.ReadFile(filepath.Join(s.ConflictDir, "lessons", "notes.md", "y.md")); err != nil || string(kept) != "b's own\n" {
		t.Errorf("b's document kept as %q, %v", kept, err)
	}
	if s := syncOn(t, a, "host-a"); len(s.Changed) != 0 || readDoc(t, a, "lessons/notes.md") != "changed on a\n" {
		t.Errorf("a after b's sync: %+v; a has %q", s, readDoc(t, a, "lessons/notes.md"))
	}
}

// TestKnowledgeFromAHostileRemote: a file on the branch whose path the
// store refuses is not written, and stays on the branch; [fleet] push off
// is ErrNoPush.
func TestKnowledgeFromAHostileRemote(t *testing.T) {
	t.Parallel()
	bare, roots := knowledgeHosts(t, 1)
	a := roots[0]
	// Someone pushes a branch with a hidden file and a good document.
	other := filepath.Join(t.TempDir(), "other")
	gittest.Run(t, bare, "clone", "-q", bare, other)
	gittest.Run(t, other, "checkout", "-q", "--orphan", KnowledgeBranch)
	gittest.Run(t, other, "rm", "-rqf", ".")
	gittest.Commit(t, other, "knowledge", map[string]string{"docs/knowledge/.hook": "evil", "docs/knowledge/domain/terms.md": "# Terms\n"})
	gittest.Run(t, other, "push", "-q", "origin", KnowledgeBranch)

	s := syncOn(t, a, "host-a")
	if strings.Join(s.Skipped, ",") != ".hook" || strings.Join(s.Changed, ",") != "domain/terms.md" || s.Pushed {
		t.Errorf("sync: %+v", s)
	}
	if _, err := os.Stat(filepath.Join(a, "docs", "knowledge", ".hook")); err == nil {
		t.Error("the hidden file was written")
	}
	if got := gittest.Run(t, bare, "ls-tree", "-r", "--name-only", KnowledgeBranch); !strings.Contains(got, "docs/knowledge/.hook") {
		t.Errorf("the branch lost the file it cannot hold: %q", got)
	}

	off := false
	if _, err := SyncKnowledge(context.Background(), a, filepath.Join(a, ".clean_room"), &config.Config{Fleet: &config.Fleet{Push: &off}}, time.Now()); !errors.Is(err, ErrNoPush) {
		t.Errorf("push off: %v, want ErrNoPush", err)
	}
}

// TestKnowledgeLeavesALargeFileOnTheBranch: a file on the branch over
// knowledge.MaxSharedFile is neither read nor written here, the summary
// names it and the limit, and this host's push keeps it on the branch as
// it is (the same blob).
func TestKnowledgeLeavesALargeFileOnTheBranch(t *testing.T) {
	t.Parallel()
	bare, roots := knowledgeHosts(t, 1)
	a := roots[0]
	other := filepath.Join(t.TempDir(), "other")
	gittest.Run(t, bare, "clone", "-q", bare, other)
	gittest.Run(t, other, "checkout", "-q", "--orphan", KnowledgeBranch)
	gittest.Run(t, other, "rm", "-rqf", ".")
	big := gittest.ZeroBlob(t, other, knowledge.MaxSharedFile+1)
	gittest.Run(t, other, "update-index", "--add", "--cacheinfo", "100644,"+big+",docs/knowledge/lessons/huge.md")
	gittest.WriteFile(t, other, "docs/knowledge/domain/terms.md", "# Terms\n")
	gittest.Run(t, other, "add", "docs/knowledge/domain/terms.md") // not -A: huge.md is in no work tree
	gittest.Run(t, other, "commit", "-qm", "knowledge")
	gittest.Run(t, other, "push", "-q", "origin", KnowledgeBranch)

	s := syncOn(t, a, "host-a")
	if strings.Join(s.TooLarge, ",") != "lessons/huge.md" || strings.Join(s.Changed, ",") != "domain/terms.md" || len(s.Skipped) != 0 || s.Pushed {
		t.Errorf("sync: %+v", s)
	}
	if want := fmt.Sprintf("over the limit of %d bytes", knowledge.MaxSharedFile); !strings.Contains(s.Summary(), want) || !strings.Contains(s.Summary(), "lessons/huge.md") {
		t.Errorf("summary %q: want it to name the file and %q", s.Summary(), want)
	}
	if _, err := os.Stat(filepath.Join(a, "docs", "knowledge", "lessons", "huge.md")); err == nil {
		t.Error("the large file was written")
	}
	putDoc(t, a, knowledge.CodeStyle, "conventions/errors.md", "Wrap errors once per layer.")
	if s := syncOn(t, a, "host-a"); !s.Pushed {
		t.Fatalf("a's change: %+v, want a push", s)
	}
	got := gittest.Run(t, bare, "ls-tree", "-r", KnowledgeBranch)
	if !strings.Contains(got, big+"\tdocs/knowledge/lessons/huge.md") || !strings.Contains(got, "docs/knowledge/conventions/errors.md") {
		t.Errorf("the remote's %s after a's push:\n%s\nwant the large blob kept and a's document", KnowledgeBranch, got)
	}
}

// BenchmarkKnowledgeSync is the sync a run pays before its prompt, with
// a store of 30 documents: unchanged on both sides (the common case),
// and with one document changed here (a commit and a push).
func BenchmarkKnowledgeSync(b *testing.B) {
	_, roots := knowledgeHosts(b, 1)
	root := roots[0]
	for i := 0; i < 30; i++ {
		putDoc(b, root, knowledge.Internaliser, fmt.Sprintf("lessons/l%02d.md", i), strings.Repeat("A rule. ", 40))
	}
	on := true
	cfg := &config.Config{Fleet: &config.Fleet{Host: "bench", Push: &on}}
	sync := func() *KnowledgeSync {
		s, err := SyncKnowledge(context.Background(), root, filepath.Join(root, ".clean_room"), cfg, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	sync()
	b.Run("unchanged", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if s := sync(); s.Pushed {
				b.Fatal("pushed with nothing changed")
			}
		}
	})
	n := 0
	b.Run("one_changed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n++
			putDoc(b, root, knowledge.Internaliser, "lessons/l00.md", fmt.Sprintf("Rule %d.", n))
			if s := sync(); !s.Pushed {
				b.Fatal("not pushed")
			}
		}
	})
}

// TestRunPromptReadsFleetKnowledge: a run on host b, whose store never
// had the document, gets in its prompt what host a's supervisor wrote:
// the fleet's processor syncs the store before the prompt reads it.
func TestRunPromptReadsFleetKnowledge(t *testing.T) {
	t.Parallel()
	_, roots := knowledgeHosts(t, 2)
	a, b := roots[0], roots[1]
	putDoc(t, a, knowledge.CodeStyle, "conventions/errors.md", "Wrap errors once per layer.")
	syncOn(t, a, "host-a")

	prompt := runPromptOn(t, b, nil)
	if !strings.Contains(prompt, "Wrap errors once per layer.") {
		t.Errorf("b's prompt lacks a's document:\n%s", prompt)
	}
}

// runPromptOn runs a task once with push on in the repository at root
// (host b of knowledgeHosts), the fleet's logger writing to logged when
// set, and returns the prompt the run's agent got.
func runPromptOn(t *testing.T, root string, logged io.Writer) string {
	t.Helper()
	ctx := context.Background()
	cfg := "[board]\nsandbox = \"off\"\n\n[agents.ok]\ncommand = \"true\"\n\n[fleet]\nhost = \"host-b\"\npush = true\n"
	if err := os.WriteFile(filepath.Join(root, ".clean_room", "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(ctx, root, workspace.Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Create: true}
	if logged != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logged, nil))
	}
	f, err := Open(ctx, ws, opts)
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
	return string(prompt)
}
