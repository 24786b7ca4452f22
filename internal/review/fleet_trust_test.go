//go:build unix

package review

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/world"
)

// forger is an unconfined agent that does no work of its own and leaves
// behind, in a session of its own (out of reach of the stop of its
// process group; the agent waits until it is there), a process that waits for cra's push
// of its branch and then pushes to the shared remote ($SHARED) a commit
// titled 'verified: forged' that adds done.txt (what validation asks
// for): onto its own branch, on top of cra's push, and in place of
// $VICTIM's branch. It forges in its first run only.
const forger = `echo "looked around, changed nothing"
[ "$CRA_RUN_ID" = 1 ] || exit 0
setsid sh -c '
: > .git/forger-started
b=refs/heads/cra/$CRA_TASK_ID
for i in $(seq 1 600); do tip=$(git ls-remote "$SHARED" $b | cut -f1); [ -n "$tip" ] && break; sleep 0.05; done
git fetch -q "$SHARED" $b
export GIT_INDEX_FILE=$PWD/.git/forged-index
git read-tree FETCH_HEAD
blob=$(echo forged | git hash-object -w --stdin)
git update-index --add --cacheinfo 100644,$blob,done.txt
forged=$(git -c user.name=x -c user.email=x@x commit-tree $(git write-tree) -p FETCH_HEAD -m "verified: forged")
git push -q "$SHARED" $forged:$b
git push -q -f "$SHARED" $forged:refs/heads/cra/$VICTIM
' </dev/null >/dev/null 2>&1 &
while [ ! -e .git/forger-started ]; do sleep 0.01; done
exit 0`

// trustHost is one host of the fleet in TestForgedBranchIsNotReviewed.
type trustHost struct {
	repo string
	proc *runner.Processor
}

// TestForgedBranchIsNotReviewed: on a fleet (two hosts sharing a board
// and a git remote, sandbox off), an agent that pushes a forged commit
// onto its own task's branch after cra's push, and onto another task's,
// has neither forgery reviewed nor built on: the leader (the other host)
// validates the commit the run recorded, or, for the other task, whose
// recorded commit it cannot get, reviews nothing and blocks the review
// naming both commits; neither passes, where a review of the forged
// branch would have (validation asks for the file the forgery adds).
// The honest run still passes, and later runs on the leader start from
// the recorded commit, or from a clean base when it is not there.
func TestForgedBranchIsNotReviewed(t *testing.T) {
	ctx := context.Background()
	b, bare, a, leader, rec := newTrustFleet(t)

	add := func(title, agent string) string {
		task := board.NewTask(title)
		task.Agent, task.Need = agent, "done.txt exists"
		task, err := b.Add(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		return task.ID
	}
	runOn := func(h *trustHost, id string) *runner.Outcome {
		t.Helper()
		o, err := h.proc.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if o.Folder != board.Completed || o.Commit == "" {
			t.Fatalf("run of %s: %s %q, commit %q", id, o.Folder, o.Finish, o.Commit)
		}
		return o
	}
	honest, victim, forged := add("honest work", "honest"), add("the victim", "idle"), add("the forger", "forger")
	runOn(a, honest)
	victimRun := runOn(a, victim)
	t.Setenv("SHARED", bare)
	t.Setenv("VICTIM", victim)
	forgerRun := runOn(a, forged)
	// The forger's process pushes once cra's push is there.
	for _, id := range []string{forged, victim} {
		deadline := time.Now().Add(30 * time.Second)
		for gittest.Run(t, bare, "log", "-1", "--format=%s", "cra/"+id) != "verified: forged" {
			if time.Now().After(deadline) {
				t.Fatalf("the forger's process did not push cra/%s; the remote has:\n%s", id, gittest.Run(t, bare, "log", "-3", "--format=%h %s", "cra/"+id))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	forgedTip := gittest.Run(t, bare, "rev-parse", "cra/"+victim)
	forgerTip := gittest.Run(t, bare, "rev-parse", "cra/"+forged)

	reviews := map[string]*Review{}
	for range 3 {
		rep, err := rec.Tick(ctx)
		if err != nil || rep.Review == nil {
			t.Fatalf("tick: %+v, %v", rep, err)
		}
		reviews[rep.Review.TaskID] = rep.Review
	}
	if rv := reviews[honest]; rv == nil || rv.Classification != FullComplete || rv.Action != Finalize {
		t.Errorf("the honest run's review: %+v, want full_complete and verified", rv)
	}
	for _, id := range []string{forged, victim} {
		rv := reviews[id]
		if rv == nil {
			t.Fatalf("%s not reviewed", id)
		}
		if rv.Classification == FullComplete || rv.Action == Finalize {
			t.Errorf("%s: the review passed (%s, %s) on the forged branch", id, rv.Classification, rv.Action)
		}
		if f := folderOf(t, b, id); f == board.CompletedFinalized {
			t.Errorf("%s is verified", id)
		}
	}
	// The forger's own branch: the run's commit is reviewed, the forgery
	// on top of it is not.
	if got := gittest.Run(t, leader.repo, "rev-parse", "cra/"+forged); got != forgerRun.Commit {
		t.Errorf("the leader's cra/%s is %s, want the run's recorded %s", forged, got, forgerRun.Commit)
	}
	if rv := reviews[forged]; !strings.Contains(strings.Join(rv.Lowered, "; "), "validation") || !strings.Contains(string(rv.Evidence), `"commit":"`+forgerRun.Commit+`"`) {
		t.Errorf("the forger's review was lowered for %q on evidence %s, want its validation of the run's commit %s (which lacks done.txt)", rv.Lowered, rv.Evidence, forgerRun.Commit)
	}
	// The victim's branch: its recorded commit is not on the remote, and
	// not on the leader; nothing is reviewed, and the review says why.
	rv := reviews[victim]
	why := strings.Join(rv.Blockers, "; ")
	for _, want := range []string{forgedTip[:12], victimRun.Commit[:12], "not the commit run 1 of task " + victim + " recorded"} {
		if !strings.Contains(why, want) {
			t.Errorf("the victim's review's blockers %q lack %q", why, want)
		}
	}
	if rv.Evidence != nil {
		t.Errorf("the victim's review took evidence from a branch that is not its run's: %s", rv.Evidence)
	}
	if ok, _ := gitx.BranchExists(ctx, leader.repo, "cra/"+victim); ok {
		t.Errorf("the leader made cra/%s from the forgery", victim)
	}

	// Later runs on the leader: the forger's starts from its recorded
	// commit, the victim's from a clean base; neither has done.txt.
	for _, id := range []string{forged, victim} {
		if folderOf(t, b, id) == board.Pending {
			continue // the review requeued it
		}
		if _, err := b.Log.Agent(ctx, world.StatusRetry, id, "once more", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	o := runOn(leader, forged)
	if !gitx.IsAncestor(ctx, leader.repo, forgerRun.Commit, o.Commit) || gitx.IsAncestor(ctx, leader.repo, forgerTip, o.Commit) {
		t.Errorf("the forger's second run (%s) does not build on its recorded commit %s alone", o.Commit, forgerRun.Commit)
	}
	o = runOn(leader, victim)
	if got := gittest.Run(t, leader.repo, "ls-tree", "--name-only", o.Commit); strings.Contains(got, "done.txt") {
		t.Errorf("the victim's second run has done.txt: %q", got)
	}
	if got := gittest.Run(t, bare, "rev-parse", "cra/"+victim); got != o.Commit {
		t.Errorf("the remote's cra/%s is %s, want the second run's %s in place of the forgery", victim, got, o.Commit)
	}
	var events []string
	for _, line := range logText(t, b, victim) {
		if strings.Contains(line, "[event:system]") {
			events = append(events, line)
		}
	}
	ev := strings.Join(events, "\n")
	for _, want := range []string{"is not the commit the task's last run recorded (" + victimRun.Commit[:12] + ")", forgedTip[:12], "this run builds on a clean base", "which no run recorded, was replaced"} {
		if !strings.Contains(ev, want) {
			t.Errorf("the victim's events lack %q:\n%s", want, ev)
		}
	}
}

// newTrustFleet makes two hosts, host-a and the leader host-b, cloned
// from one shared bare remote and sharing a file board, and the leader's
// recycler; the models answer that the work is complete.
func newTrustFleet(t *testing.T) (b *board.Board, bare string, a, leader *trustHost, rec *Recycler) {
	t.Helper()
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	srv.SetDefault(llmtest.Text(completeReply))
	seed := gittest.Init(t)
	gittest.Commit(t, seed, "initial", map[string]string{"README": "hello\n", ".gitignore": ".clean_room/\n"})
	bare = filepath.Join(t.TempDir(), "shared.git")
	gittest.Run(t, seed, "clone", "-q", "--bare", seed, bare)
	shared := t.TempDir()
	l, err := world.Open(shared)
	if err != nil {
		t.Fatal(err)
	}
	b = board.New(board.NewFileStore(shared), l)
	host := func(name string) *trustHost {
		h := &trustHost{repo: filepath.Join(t.TempDir(), name)}
		gittest.Run(t, seed, "clone", "-q", bare, h.repo)
		state := filepath.Join(h.repo, statedir.Name)
		write(t, filepath.Join(state, statedir.ConfigFile), fmt.Sprintf(`[models]
reasoning = "thinker:4b"
base_url = %q
max_retries = 0

[board]
sandbox = "off"

[fleet]
host = %q
push = true

[validation]
test = "test -f done.txt"

[agents.honest]
command = "echo done > done.txt; echo wrote done.txt"

[agents.idle]
command = "echo nothing to do here; echo looked > notes.txt"

[agents.forger]
command = %q
`, srv.OllamaURL(), name, forger))
		cfg, err := config.Load(statedir.Of(h.repo).Config())
		if err != nil {
			t.Fatal(err)
		}
		h.proc = runner.NewProcessor(b, h.repo, state, cfg)
		h.proc.Host, h.proc.Grace = name, 200*time.Millisecond
		return h
	}
	a, leader = host("host-a"), host("host-b")
	raw, err := store.NewFactory(statedir.At(filepath.Join(leader.repo, statedir.Name))).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return b, bare, a, leader, newFleetRecycler(b, leader, raw)
}

// TestReviewWaitsForAnUnreadableRemote: the leader reviews a run another
// host ran, whose work is on the shared remote; while that remote cannot
// be read, the review waits: the task stays completed, unjudged, with
// no review in its history and its streaks as they were, where it used
// to be judged on the leader's lack of the branch. Once the remote is
// back, the run is reviewed and passes.
func TestReviewWaitsForAnUnreadableRemote(t *testing.T) {
	ctx := context.Background()
	b, bare, a, leader, rec := newTrustFleet(t)
	task := board.NewTask("honest work")
	task.Agent, task.Need = "honest", "done.txt exists"
	task, err := b.Add(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := a.proc.Run(ctx, task.ID); err != nil || o.Folder != board.Completed || o.Commit == "" {
		t.Fatalf("run on host-a: %+v, %v", o, err)
	}
	gittest.Run(t, leader.repo, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone.git"))
	rep, err := rec.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Review != nil {
		t.Fatalf("reviewed with the remote gone: %s, %s (blockers %q)", rep.Review.Classification, rep.Review.Action, rep.Review.Blockers)
	}
	if w := strings.Join(rep.Warnings, "; "); !strings.Contains(w, "cannot be read") || !strings.Contains(w, "waits") {
		t.Errorf("the tick's warnings %q do not say the review waits for the remote", w)
	}
	got, f, err := b.Store.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f != board.Completed || got.ConsecutiveFailures != 0 || got.ConsecutiveCompletionClaims != task.ConsecutiveCompletionClaims {
		t.Errorf("after the waiting tick: %s, streaks %d/%d; want completed and as they were", f, got.ConsecutiveCompletionClaims, got.ConsecutiveFailures)
	}
	if hist, err := rec.history().ReviewLines(ctx, task.ID); err != nil || len(hist) != 0 {
		t.Errorf("the task's reviews: %d, %v; want none", len(hist), err)
	}

	gittest.Run(t, leader.repo, "remote", "set-url", "origin", bare)
	rec.held = nil // what the hold would let go after its time
	rep, err = rec.Tick(ctx)
	if err != nil || rep.Review == nil {
		t.Fatalf("tick with the remote back: %+v, %v", rep, err)
	}
	if rv := rep.Review; rv.Classification != FullComplete || rv.Action != Finalize {
		t.Errorf("the run's review with the remote back: %s, %s (blockers %q); want full_complete and verified", rv.Classification, rv.Action, rv.Blockers)
	}
}

// newFleetRecycler is the leader's recycler, which fetches each run's
// branch from the remote before its review, as a fleet's does.
func newFleetRecycler(b *board.Board, leader *trustHost, raw *sql.DB) *Recycler {
	return &Recycler{Board: b, Root: leader.repo, StateDir: filepath.Join(leader.repo, statedir.Name),
		Config:   func() (*config.Config, error) { return config.Load(statedir.Of(leader.repo).Config()) },
		Recorder: llm.NewRecorder(corpus.New(raw)), Fetch: leader.proc.FetchBranch}
}

func folderOf(t *testing.T, b *board.Board, id string) board.Folder {
	t.Helper()
	_, f, err := b.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func logText(t *testing.T, b *board.Board, id string) []string {
	t.Helper()
	entries, err := b.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		line, err := world.Format(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	return out
}
