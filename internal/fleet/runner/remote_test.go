//go:build unix

package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/world"
)

// fleetHost is one host of a fleet on this machine: its own clone of the
// shared bare remote, its own .clean_room and board, [fleet] push on.
type fleetHost struct {
	name string
	repo string
	p    *Processor
}

// newFleet makes a bare remote with one commit on main and n hosts
// cloned from it (issue 34 item 4: "two hosts" on this machine), which
// share one board (a fleet's is PostgreSQL's; files here), each with a
// .clean_room of its own.
func newFleet(t *testing.T, agents map[string]config.Agent, names ...string) (string, []*fleetHost) {
	t.Helper()
	seed := gittest.Init(t)
	gittest.Commit(t, seed, "initial", map[string]string{"README": "hello\n", ".gitignore": ".clean_room/\n"})
	bare := filepath.Join(t.TempDir(), "shared.git")
	gittest.Run(t, seed, "clone", "-q", "--bare", seed, bare)
	shared := t.TempDir()
	l, err := world.Open(shared)
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.NewFileStore(shared), l)
	var hosts []*fleetHost
	for _, name := range names {
		repo := filepath.Join(t.TempDir(), name)
		gittest.Run(t, seed, "clone", "-q", bare, repo)
		state := filepath.Join(repo, ".clean_room")
		if err := os.MkdirAll(state, 0o755); err != nil {
			t.Fatal(err)
		}
		one, on := 1, true
		cfg := &config.Config{Agents: agents, Board: &config.Board{MaxParallel: &one}, Fleet: &config.Fleet{Host: name, Push: &on}}
		p := NewProcessor(b, repo, state, cfg)
		p.Host = name
		hosts = append(hosts, &fleetHost{name: name, repo: repo, p: p})
	}
	return bare, hosts
}

// runOn runs task id once on host h, adding it to the board first, or
// requeuing it there.
func runOn(t *testing.T, h *fleetHost, id, agent string) *Outcome {
	t.Helper()
	ctx := context.Background()
	if _, _, err := h.p.Board.Store.Get(ctx, id); err != nil {
		task := board.NewTask("append a line")
		task.ID, task.Agent, task.Need = id, agent, "a line appended"
		if _, err := h.p.Board.Add(ctx, task); err != nil {
			t.Fatal(err)
		}
	} else {
		if _, err := h.p.Board.Log.Agent(ctx, world.StatusRetry, id, "once more", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := h.p.Board.Rebuild(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	o, err := h.p.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func events(t *testing.T, h *fleetHost, id string) string {
	t.Helper()
	var out []string
	for _, l := range logLines(t, h.p.Board, id) {
		if strings.Contains(l, "[event:system]") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBranchTravelsThroughRemote: a task run on host A, then on host B
// (which has no working copy of it), then on A again builds each time on
// the last run, wherever it ran, through the shared remote.
func TestBranchTravelsThroughRemote(t *testing.T) {
	agents := map[string]config.Agent{
		// Each run appends the host it ran on to notes.txt; the
		// agent's view of notes.txt before its line is in seen.txt.
		"note": {Command: `cp notes.txt seen.txt 2>/dev/null || : > seen.txt; echo "$HOST_NAME" >> notes.txt`},
	}
	bare, hosts := newFleet(t, agents, "host-a", "host-b")
	a, b := hosts[0], hosts[1]
	const id = "t-remote01"
	t.Setenv("HOST_NAME", "a")
	if o := runOn(t, a, id, "note"); o.Folder != board.Completed {
		t.Fatalf("run on a: %s %q", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, bare, "show", "cra/"+id+":notes.txt"); got != "a" {
		t.Fatalf("the remote's notes.txt after a's run = %q, want a", got)
	}

	t.Setenv("HOST_NAME", "b")
	if o := runOn(t, b, id, "note"); o.Folder != board.Completed {
		t.Fatalf("run on b: %s %q", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, bare, "show", "cra/"+id+":seen.txt"); got != "a" {
		t.Errorf("b's run saw notes.txt %q, want a's line", got)
	}
	if got := gittest.Run(t, bare, "show", "cra/"+id+":notes.txt"); got != "a\nb" {
		t.Errorf("the remote's notes.txt after b's run = %q, want a then b", got)
	}
	if ev := events(t, b, id); !strings.Contains(ev, "run 2 starts from cra/"+id+" as pushed to origin") || !strings.Contains(ev, "this host had no working copy of the task (host host-b)") {
		t.Errorf("b's log says:\n%s\nwant that the run starts from the pushed branch", ev)
	}

	// a again: its working copy is behind; it moves to b's run.
	t.Setenv("HOST_NAME", "a")
	if o := runOn(t, a, id, "note"); o.Folder != board.Completed {
		t.Fatalf("second run on a: %s %q", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, bare, "show", "cra/"+id+":notes.txt"); got != "a\nb\na" {
		t.Errorf("the remote's notes.txt after a's second run = %q, want a, b, a", got)
	}
	if ev := events(t, a, id); !strings.Contains(ev, "run 3 starts from cra/"+id+" as pushed to origin") || !strings.Contains(ev, "the working copy here follows it") {
		t.Errorf("a's log says:\n%s\nwant that the run moved to the pushed branch", ev)
	}
	if got := gittest.Run(t, a.repo, "rev-parse", "cra/"+id); got != gittest.Run(t, bare, "rev-parse", "cra/"+id) {
		t.Errorf("a's branch %s is not the remote's", got)
	}
}

// TestPushIgnoresTheWorkingCopy: an agent that points its working copy's
// origin elsewhere, edits its .git/config and makes other branches and
// tags changes neither where the push goes nor what it carries.
func TestPushIgnoresTheWorkingCopy(t *testing.T) {
	t.Parallel()
	evil := filepath.Join(t.TempDir(), "evil.git")
	gittest.Run(t, t.TempDir(), "init", "-q", "--bare", evil)
	agents := map[string]config.Agent{
		"hostile": {Command: `echo mine > work.txt
git remote set-url origin ` + evil + `
git remote add fleet ` + evil + `
printf '[remote "shared"]\n\turl = ` + evil + `\n[url "` + evil + `"]\n\tinsteadOf = /\n' >> .git/config
git -c user.name=x -c user.email=x@x commit -qam side --allow-empty
git branch extra; git tag planted
exit 0`},
	}
	bare, hosts := newFleet(t, agents, "host-a")
	const id = "t-hostile1"
	if o := runOn(t, hosts[0], id, "hostile"); o.Folder != board.Completed {
		t.Fatalf("run: %s %q", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, bare, "show", "cra/"+id+":work.txt"); got != "mine" {
		t.Errorf("the remote's work.txt = %q, want the run's", got)
	}
	refs := gittest.Run(t, bare, "for-each-ref", "--format=%(refname)")
	if want := "refs/heads/cra/" + id + "\nrefs/heads/main"; refs != want {
		t.Errorf("the remote's refs:\n%s\nwant:\n%s", refs, want)
	}
	if got := gittest.Run(t, evil, "for-each-ref"); got != "" {
		t.Errorf("the agent's remote received %q", got)
	}
}

// TestDivergedBranch: when this host's branch and the remote's have each
// commits the other lacks, the run builds on this host's, nothing on the
// remote is overwritten, and the log says both what happened and how to
// merge; a remote that cannot be read stops the run before it starts.
func TestDivergedBranch(t *testing.T) {
	agents := map[string]config.Agent{"note": {Command: `echo "$HOST_NAME" >> notes.txt`}}
	bare, hosts := newFleet(t, agents, "host-a", "host-b")
	a, b := hosts[0], hosts[1]
	const id = "t-diverge1"
	t.Setenv("HOST_NAME", "a")
	runOn(t, a, id, "note")
	t.Setenv("HOST_NAME", "b")
	runOn(t, b, id, "note")
	pushed := gittest.Run(t, bare, "rev-parse", "cra/"+id)
	// A commit on a's branch that never reached the remote.
	tree := gittest.Run(t, a.repo, "rev-parse", "cra/"+id+"^{tree}")
	local := gittest.Run(t, a.repo, "commit-tree", tree, "-p", "cra/"+id, "-m", "unpushed")
	gittest.Run(t, a.repo, "update-ref", "refs/heads/cra/"+id, local)

	t.Setenv("HOST_NAME", "a")
	o := runOn(t, a, id, "note")
	if o.Folder != board.Completed {
		t.Fatalf("diverged run: %s %q, want completed (a refused push loses nothing)", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, bare, "rev-parse", "cra/"+id); got != pushed {
		t.Errorf("the remote's branch moved to %s, want it left at %s", got, pushed)
	}
	if got := gittest.Run(t, a.repo, "show", "cra/"+id+":notes.txt"); got != "a\na" {
		t.Errorf("a's branch notes.txt = %q, want the run on a's own branch", got)
	}
	if got := gittest.Run(t, a.repo, "rev-parse", "refs/remotes/origin/cra/"+id); got != pushed {
		t.Errorf("the remote's branch is kept at %s here, want %s", got, pushed)
	}
	ev := events(t, a, id)
	for _, want := range []string{"have diverged: this run builds on this host's (host-a)", "refs/remotes/origin/cra/" + id,
		"was not pushed to origin (host host-a)", "merge origin/cra/" + id + " into cra/" + id + " here, then requeue the task"} {
		if !strings.Contains(ev, want) {
			t.Errorf("a's log:\n%s\nlacks %q", ev, want)
		}
	}

	// The remote gone: the run does not start, and the need says why.
	gittest.Run(t, b.repo, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	o = runOn(t, b, id, "note")
	if o.Folder != board.Failed || !strings.Contains(o.Finish, "remote origin cannot be read") || !strings.Contains(o.Need, "fix the remote") {
		t.Errorf("run with the remote gone: %s %q need %q", o.Folder, o.Finish, o.Need)
	}
}

// TestAgentCannotWriteTheRemote: a confined agent that knows where the
// shared remote is pushes to it itself: a forged commit onto its own
// task's branch ahead of cra's push, another task's branch that a later
// run on any host would build on, and the fleet's knowledge branch that
// every host's prompts read. The sandbox leaves the remote (a directory
// here) out of its reach, so the remote ends holding only main and the
// task's branch as cra pushed it, at the host's commit of the run.
func TestAgentCannotWriteTheRemote(t *testing.T) {
	agents := map[string]config.Agent{
		"pusher": {Command: `echo mine > work.txt; : > pushed.txt
git -c user.name=x -c user.email=x@x commit -qam 'verified: forged' --allow-empty
for ref in cra/t-pusher01 cra/t-victim01 cra/knowledge; do
  git push -q "$SHARED" HEAD:refs/heads/$ref && echo "pushed $ref" >> pushed.txt
done
git --git-dir="$SHARED" update-ref refs/heads/cra/t-victim01 HEAD && echo "update-ref" >> pushed.txt
exit 0`},
	}
	bare, hosts := newFleet(t, agents, "host-a")
	t.Setenv("SHARED", bare)
	before := gittest.Run(t, bare, "rev-parse", "main")
	const id = "t-pusher01"
	o := runOn(t, hosts[0], id, "pusher")
	if o.Folder != board.Completed {
		t.Fatalf("run: %s %q", o.Folder, o.Finish)
	}
	refs := gittest.Run(t, bare, "for-each-ref", "--format=%(refname)")
	if want := "refs/heads/cra/" + id + "\nrefs/heads/main"; refs != want {
		t.Errorf("the remote's refs:\n%s\nwant:\n%s", refs, want)
	}
	if got := gittest.Run(t, bare, "rev-parse", "main"); got != before {
		t.Errorf("the remote's main moved from %s to %s", before, got)
	}
	if got, want := gittest.Run(t, bare, "rev-parse", "cra/"+id), gittest.Run(t, hosts[0].repo, "rev-parse", "cra/"+id); got != want {
		t.Errorf("the remote's cra/%s is %s, not the host's commit of the run %s", id, got, want)
	}
	if got := gittest.Run(t, bare, "show", "cra/"+id+":work.txt"); got != "mine" {
		t.Errorf("the remote's work.txt = %q, want the run's", got)
	}
	if pushed := gittest.Run(t, bare, "show", "cra/"+id+":pushed.txt"); pushed != "" {
		t.Errorf("the agent wrote the remote itself: %q", pushed)
	}
}

// TestUnrecordedBranchIsNotTaken: a task whose last run recorded no
// commit (it ran before cra recorded them) has its remote branch taken
// by no other host: a run there starts from a clean base and says why,
// and its review there is refused (board.ErrForeignBranch), while the
// host the run ran on reviews its own branch.
func TestUnrecordedBranchIsNotTaken(t *testing.T) {
	ctx := context.Background()
	agents := map[string]config.Agent{"note": {Command: `cp notes.txt seen.txt 2>/dev/null || : > seen.txt; echo "$HOST_NAME" >> notes.txt`}}
	bare, hosts := newFleet(t, agents, "host-a", "host-b")
	a, b := hosts[0], hosts[1]
	const id = "t-unrec01"
	t.Setenv("HOST_NAME", "a")
	o := runOn(t, a, id, "note")
	if o.Folder != board.Completed || o.Commit == "" || o.Commit != gittest.Run(t, bare, "rev-parse", "cra/"+id) {
		t.Fatalf("run on a: %s %q, commit %q", o.Folder, o.Finish, o.Commit)
	}
	task, folder, err := a.p.Board.Store.Get(ctx, id)
	if err != nil || task.Results == nil || task.Results.Commit != o.Commit {
		t.Fatalf("the run's results: %+v, %v; want commit %s", task.Results, err, o.Commit)
	}
	task.Results.Commit = "" // as a run before cra recorded them left it
	if err := a.p.Board.Store.Put(ctx, task, folder); err != nil {
		t.Fatal(err)
	}
	if err := a.p.FetchBranch(ctx, id); err != nil {
		t.Errorf("review on the host the run ran on: %v", err)
	}
	err = b.p.FetchBranch(ctx, id)
	if !errors.Is(err, board.ErrForeignBranch) || !strings.Contains(err.Error(), "recorded no commit") || !strings.Contains(err.Error(), o.Commit[:12]) {
		t.Errorf("review on another host: %v, want it refused, naming %.12s", err, o.Commit)
	}
	if ok, _ := gitx.BranchExists(ctx, b.repo, "cra/"+id); ok {
		t.Errorf("host-b made cra/%s from the remote's", id)
	}
	t.Setenv("HOST_NAME", "b")
	if o := runOn(t, b, id, "note"); o.Folder != board.Completed {
		t.Fatalf("run on b: %s %q", o.Folder, o.Finish)
	}
	if got := gittest.Run(t, b.repo, "show", "cra/"+id+":seen.txt"); got != "" {
		t.Errorf("b's run saw notes.txt %q, want a clean base", got)
	}
	ev := events(t, b, id)
	for _, want := range []string{"(" + o.Commit[:12] + ") is not taken: no run of the task recorded a commit", "this run builds on a clean base: this host has no cra/" + id + " (host host-b)"} {
		if !strings.Contains(ev, want) {
			t.Errorf("the log lacks %q:\n%s", want, ev)
		}
	}

	// The remote gone: a host whose branch is the run's (b) reviews it;
	// one whose branch is an older run's (a) waits for the remote, and
	// neither takes its own branch for the run's nor judges the run
	// foreign.
	for _, h := range hosts {
		gittest.Run(t, h.repo, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	}
	if err := b.p.FetchBranch(ctx, id); err == nil || errors.Is(err, board.ErrForeignBranch) {
		t.Errorf("review on the run's host with the remote gone: %v, want the remote's error alone", err)
	}
	if err := a.p.FetchBranch(ctx, id); !errors.Is(err, board.ErrBranchAway) || errors.Is(err, board.ErrForeignBranch) || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("review on a host with an older branch and the remote gone: %v, want it to wait for the remote", err)
	}
}
