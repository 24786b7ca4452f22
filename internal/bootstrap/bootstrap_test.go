package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/replay"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/testpar"
)

const (
	utilV1 = `"""Helpers of the app."""


def helper(x):
    """Double x."""
    return x * 2


def unused():
    return None
`
	coreV1 = `from app.util import helper


def compute(x):
    """Compute the answer for x."""
    return helper(x) + 1


def other():
    return 0
`
	testV1 = `from app.core import compute


def test_compute():
    assert compute(1) == 3
`
)

// fixture is a small Python repository whose history has one commit per
// kind of change the pairs must handle.
type fixture struct {
	dir     string
	commits map[string]string // message → hash
}

// shared is the fixture's repository, built once per run of the package's
// tests (some twenty git commands) into a directory TestMain removes;
// newFixture hands each test a copy.
var shared struct {
	once    sync.Once
	dir     string
	commits map[string]string
	built   bool
}

// TestMain removes the shared fixture at the end. The tests that run a
// whole bootstrap run testParallel at once unless -parallel says
// otherwise: each works in its own copy of the fixture and waits on git
// and its worktrees most of its time, so two at a time, GOMAXPROCS on a
// small machine, left the cores idle. The ones that cancel a run or
// hold its lock at a chosen moment stay sequential and run first.
func TestMain(m *testing.M) {
	testpar.Default(testParallel)
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// testParallel is how many tests run at once by default (see TestMain).
const testParallel = 4

// newFixture returns a copy of the fixture's repository, the test's own.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "bootstrap-fixture-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
		shared.commits = buildFixture(t, dir).commits
		shared.built = true
	})
	if !shared.built {
		t.Fatal("the fixture's repository could not be built: see the first test that asked for it")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(shared.dir)); err != nil {
		t.Fatal(err)
	}
	return &fixture{dir: dir, commits: maps.Clone(shared.commits)}
}

// buildFixture makes the fixture's repository in dir.
func buildFixture(t *testing.T, dir string) *fixture {
	t.Helper()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	f := &fixture{dir: dir, commits: map[string]string{}}
	c := func(message string, files map[string]string, remove ...string) {
		for _, r := range remove {
			gittest.Run(t, f.dir, "rm", "-q", r)
		}
		f.commits[message] = gittest.Commit(t, f.dir, message, files)
	}
	c("Create the app with its helper and core modules", map[string]string{
		"app/__init__.py": "", "app/util.py": utilV1, "app/core.py": coreV1, "tests/test_core.py": testV1, "README.md": "# app\n"})
	c("Make compute add two to the doubled value", map[string]string{
		"app/core.py":        strings.Replace(coreV1, "helper(x) + 1", "helper(x) + 2", 1),
		"tests/test_core.py": strings.Replace(testV1, "== 3", "== 4", 1)})
	c("Add a triple helper beside the double one", map[string]string{
		"app/util.py": strings.Replace(utilV1, "\n\ndef unused", "\n\ndef triple(x):\n    \"\"\"Triple x.\"\"\"\n    return x * 3\n\n\ndef unused", 1)})
	c("Create a module that formats the computed answers", map[string]string{
		"app/fmt.py": "from app.core import compute\n\n\ndef show(x):\n    return f\"answer: {compute(x)}\"\n"})
	c("Remove the formatting module, nobody calls show", nil, "app/fmt.py")
	return f
}

func rawCorpus(t *testing.T, dir string) *corpus.Corpus {
	t.Helper()
	db, err := store.NewFactory(statedir.At(dir)).Open(context.Background(), store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return corpus.New(db)
}

func testOptions(t *testing.T, repo, state string) Options {
	return Options{Repo: repo, ScratchDir: filepath.Join(state, "scratch"), DatasetsDir: filepath.Join(state, "datasets"),
		Corpus: rawCorpus(t, state), TaskID: "boot-test",
		Budget: retrieve.Budget{ContextWindow: 16384, ReservedTokens: 4096, SafetyMargin: 0.1}}
}

// readAll reads both splits of a stage.
func readAll(t *testing.T, dir string) []dataset.Record {
	t.Helper()
	var out []dataset.Record
	for _, split := range []dataset.Split{dataset.Train, dataset.Valid} {
		recs, err := dataset.Read(dir, split)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func byCommit(recs []dataset.Record) map[string][]dataset.Record {
	m := map[string][]dataset.Record{}
	for _, r := range recs {
		m[r.Meta.Commit] = append(m[r.Meta.Commit], r)
	}
	return m
}

func assistant(r dataset.Record) string { return r.Example.Messages[len(r.Example.Messages)-1].Content }
func userOf(r dataset.Record) string    { return r.Example.Messages[1].Content }

// TestRun bootstraps the fixture and checks each stage's pairs: every
// assistant message parses with cra's own inference parser, the labels
// follow the diff, and every execute_code pair reproduces its commit.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	head := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	rep, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seen != 5 || rep.Kept != 4 || rep.Skipped[replay.SkipRoot] != 1 {
		t.Fatalf("commits: seen %d kept %d skipped %v, want 5, 4, root 1", rep.Seen, rep.Kept, rep.Skipped)
	}
	// The deletion cannot be written as edit blocks; every other commit
	// gives one pair per stage.
	if rep.Code.Tried != 3 || rep.Code.Reproduced != 3 || rep.Pairs[dataset.ExecuteCode] != 3 {
		t.Errorf("execute_code: %+v, %d pairs; want 3 tried, 3 reproduced, 3 pairs", rep.Code, rep.Pairs[dataset.ExecuteCode])
	}
	// Scope judges nothing for the commit that only creates a file: the
	// parent's files the history of similar commits brings are
	// candidates, but what the new file uses is not known at the parent,
	// so no label is sure. Precision has nothing for it nor for the
	// deletion, whose scoped files hold no changed symbol.
	want := map[string]int{dataset.TaskAnalysis: 4, dataset.Scope: 3, dataset.Precision: 2, dataset.ExecutePlan: 4, dataset.ExecuteCode: 3}
	if diff := cmp.Diff(want, rep.Pairs); diff != "" {
		t.Errorf("pairs (-want +got):\n%s\nmissing: %v", diff, rep.Missing)
	}
	dirs := map[string]string{}
	for _, d := range rep.Datasets {
		dirs[d.Stage] = d.Path
		if d.ID == 0 || d.Path != dataset.Dir(rep.Dir, d.Stage) {
			t.Errorf("dataset %+v: want a row id and the path %s", d, dataset.Dir(rep.Dir, d.Stage))
		}
	}

	make2 := f.commits["Make compute add two to the doubled value"]
	create := f.commits["Create a module that formats the computed answers"]
	triple := f.commits["Add a triple helper beside the double one"]

	// Task analysis: the inference prompt, and a reply ParseTaskAnalysis
	// accepts naming the changed files and definitions.
	ta := byCommit(readAll(t, dirs[dataset.TaskAnalysis]))
	for c, recs := range ta {
		v, err := retrieve.ParseTaskAnalysis(assistant(recs[0]))
		if err != nil {
			t.Errorf("task analysis of %.7s: %v", c, err)
		}
		task := recs[0].Example.Messages
		if sys, user := retrieve.TaskAnalysisPrompt(strings.TrimPrefix(task[1].Content, "Task:\n")); sys != task[0].Content || user != task[1].Content {
			t.Errorf("task analysis of %.7s: the prompt is not TaskAnalysisPrompt's", c)
		}
		if c == make2 {
			if !slices.Contains(v.Files, "app/core.py") || !slices.Contains(v.Symbols, "compute") || v.Intent != "Make compute add two to the doubled value." {
				t.Errorf("task analysis of the compute change: %+v", v)
			}
		}
	}

	// Scope: changed files relevant, the files they import supporting
	// (relevant, with the reason), the rest not.
	scopes := byCommit(readAll(t, dirs[dataset.Scope]))
	if _, ok := scopes[create]; ok {
		t.Errorf("a scope pair for the commit that only creates a file")
	}
	if n := rep.Missing[dataset.Scope]["no changed file is in the parent's index (a new file): what it uses is not known"]; n != 1 {
		t.Errorf("scope's missing pairs %v: want one for the commit that only creates a file, saying why", rep.Missing[dataset.Scope])
	}
	for c, recs := range scopes {
		vs, err := retrieve.ParseScopeReply(assistant(recs[0]))
		if err != nil {
			t.Fatalf("scope of %.7s: %v", c, err)
		}
		for p := range vs {
			if !strings.Contains(userOf(recs[0]), "- "+p+" (") {
				t.Errorf("scope of %.7s: verdict on %s, which the prompt does not list", c, p)
			}
		}
		if c == make2 {
			if !vs["app/core.py"].Relevant || !vs["tests/test_core.py"].Relevant {
				t.Errorf("scope: the changed files are not relevant: %+v", vs)
			}
			if v := vs["app/util.py"]; !v.Relevant || !strings.Contains(v.Reason, "imported by app/core.py") {
				t.Errorf("scope: app/util.py, which core imports, got %+v, want supporting", v)
			}
			if v, ok := vs["README.md"]; ok && v.Relevant {
				t.Errorf("scope: README.md relevant")
			}
		}
	}

	// Precision: the changed definition primary, what the changed lines
	// call supporting.
	for c, recs := range byCommit(readAll(t, dirs[dataset.Precision])) {
		vs, err := retrieve.ParsePrecisionReply(assistant(recs[0]))
		if err != nil {
			t.Fatalf("precision of %.7s: %v", c, err)
		}
		tiers := map[string]string{}
		for _, v := range vs {
			tiers[v.Path+":"+v.Symbol] = v.Tier
			if !strings.Contains(userOf(recs[0]), "- "+v.Path+" ") {
				t.Errorf("precision of %.7s: verdict on %s, not offered", c, v.Symbol)
			}
		}
		if c == make2 {
			want := map[string]string{"app/core.py:compute": retrieve.DetailPrimary, "app/util.py:helper": retrieve.DetailSupporting,
				"tests/test_core.py:test_compute": retrieve.DetailPrimary, "app/core.py:other": retrieve.DetailExcluded}
			for k, w := range want {
				if tiers[k] != w {
					t.Errorf("precision: %s is %q, want %q (all: %v)", k, tiers[k], w, tiers)
				}
			}
		}
	}

	// Execute (plan): a valid plan by cra's own parser, code first.
	for c, recs := range byCommit(readAll(t, dirs[dataset.ExecutePlan])) {
		task := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(userOf(recs[0]), "\n\n", 2)[0], "## TASK\n"))
		p, err := agent.ParsePlanReply(assistant(recs[0]), task)
		if err != nil {
			t.Fatalf("plan of %.7s: %v\n%s", c, err, assistant(recs[0]))
		}
		if c == make2 && (len(p.Steps) != 2 || p.Steps[0].File != "app/core.py" || !strings.Contains(p.Steps[0].Change, "`compute`")) {
			t.Errorf("plan of the compute change: %+v", p.Steps)
		}
		if c == triple && (len(p.Steps) != 1 || p.Steps[0].Change != "Add `triple`.") {
			t.Errorf("plan of the triple helper: %+v", p.Steps)
		}
	}

	// Execute (code): cra's reply parser reads the blocks, and applied to
	// the parent they give the commit: git diff against it is empty.
	codes := readAll(t, dirs[dataset.ExecuteCode])
	if len(codes) != 3 {
		t.Fatalf("%d execute_code pairs, want 3", len(codes))
	}
	for _, r := range codes {
		if got := diffAfterApply(t, f.dir, r.Meta.Parent, r.Meta.Commit, assistant(r)); got != "" {
			t.Errorf("execute_code of %.7s does not reproduce its commit:\n%s", r.Meta.Commit, got)
		}
		if !strings.HasPrefix(userOf(r), "## TASK\n") || !strings.Contains(userOf(r), "## CONTEXT") {
			t.Errorf("execute_code prompt is not the solve prompt:\n%s", userOf(r))
		}
	}

	// The plan and the rows.
	p, err := opts.Corpus.Plan(ctx, rep.PlanID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != corpus.SourceSynthetic || !strings.Contains(p.DataCriteria, `"max_files":5`) || !strings.Contains(p.DataCriteria, f.dir) {
		t.Errorf("plan row: %+v", p)
	}
	rows, err := opts.Corpus.Datasets(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(dataset.Stages) {
		t.Errorf("%d dataset rows, want %d", len(rows), len(dataset.Stages))
	}
	for _, d := range rows {
		if d.Source != corpus.SourceSynthetic || d.PlanID != rep.PlanID || d.Examples != rep.Pairs[d.Stage] {
			t.Errorf("dataset row %+v: want synthetic, plan %d, %d examples", d, rep.PlanID, rep.Pairs[d.Stage])
		}
	}

	// The user's repository is untouched: same HEAD, clean, no worktree.
	assertUntouched(t, f.dir, head)

	// A rerun of the same history with the same settings writes nothing
	// and reports the first run's datasets.
	again, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused || again.PlanID != rep.PlanID || again.Dir != rep.Dir || again.Pairs[dataset.ExecuteCode] != 3 || len(again.Datasets) != len(dataset.Stages) {
		t.Errorf("rerun: %+v, want the first run's datasets reused", again)
	}
	if rows, _ := opts.Corpus.Datasets(ctx, ""); len(rows) != len(dataset.Stages) {
		t.Errorf("%d dataset rows after a rerun, want %d", len(rows), len(dataset.Stages))
	}

	// --force writes a run of its own beside the first, which stays.
	opts.Force = true
	rep2, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Reused || rep2.Dir == rep.Dir || rep2.PlanID == rep.PlanID {
		t.Errorf("forced rerun: dir %s plan %d, the same as the first run's", rep2.Dir, rep2.PlanID)
	}
	if got := readAll(t, dirs[dataset.TaskAnalysis]); len(got) != 4 {
		t.Errorf("the first run's task analysis has %d examples after a rerun, want 4", len(got))
	}
	rows, _ = opts.Corpus.Datasets(ctx, "")
	if len(rows) != 2*len(dataset.Stages) {
		t.Errorf("%d dataset rows after a forced rerun, want %d", len(rows), 2*len(dataset.Stages))
	}
	assertUntouched(t, f.dir, head)
}

// diffAfterApply applies a reply's blocks with internal/edit to parent,
// checked out in a scratch worktree, and returns git's diff of the result
// against commit.
func diffAfterApply(t *testing.T, repo, parent, commit, reply string) string {
	t.Helper()
	r, err := agent.ParseReply(reply)
	if err != nil {
		t.Fatalf("agent.ParseReply: %v\n%s", err, reply)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Run(t, repo, "worktree", "add", "-q", "--detach", wt, parent)
	defer gittest.Run(t, repo, "worktree", "remove", "--force", wt)
	results, _, err := edit.Apply(wt, r.Edits)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if !res.OK() {
			t.Errorf("block %d: %s", res.Block, res.Message)
		}
	}
	gittest.Run(t, wt, "add", "-A")
	return gittest.Run(t, wt, "diff", "--cached", commit)
}

func assertUntouched(t *testing.T, repo, head string) {
	t.Helper()
	if got := gittest.Run(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved: %s, want %s", got, head)
	}
	if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("git status not clean:\n%s", st)
	}
	wts, err := gitx.Worktrees(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != 0 {
		t.Errorf("worktrees left: %v", wts)
	}
}

// TestRunCancelled stops a bootstrap in the middle: the scratch worktree
// is gone, and nothing is written or recorded.
func TestRunCancelled(t *testing.T) {
	f := newFixture(t)
	head := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts.Progress = writerFunc(func(p []byte) {
		if strings.HasPrefix(string(p), "[1/") {
			cancel()
		}
	})
	_, err := Run(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	assertUntouched(t, f.dir, head)
	if _, err := filepath.Glob(filepath.Join(state, "datasets", "*")); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "datasets", "*")); len(m) != 0 {
		t.Errorf("datasets written by a cancelled run: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "scratch", "worktree")); len(m) != 0 {
		t.Errorf("scratch worktree left: %v", m)
	}
	rows, _ := opts.Corpus.Datasets(context.Background(), "")
	if len(rows) != 0 {
		t.Errorf("%d dataset rows recorded by a cancelled run", len(rows))
	}
}

type writerFunc func([]byte)

func (w writerFunc) Write(p []byte) (int, error) { w(p); return len(p), nil }

// TestRunNothingKept: a history with no commit worth learning from
// writes and records nothing.
func TestRunNothingKept(t *testing.T) {
	t.Parallel()
	dir := gittest.Init(t)
	gittest.Commit(t, dir, "Start", map[string]string{"a.py": "x = 1\n"})
	gittest.Commit(t, dir, "wip", map[string]string{"a.py": "x = 2\n"})
	state := t.TempDir()
	rep, err := Run(context.Background(), testOptions(t, dir, state))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kept != 0 || rep.Dir != "" || rep.Skipped[replay.SkipShortMessage] != 1 {
		t.Errorf("report %+v: want nothing kept or written, one short message", rep)
	}
}

func TestCompactJSON(t *testing.T) {
	got := compactJSON(map[string]string{"a": "<b> & c"})
	var back map[string]string
	if err := json.Unmarshal([]byte(got), &back); err != nil || got != `{"a":"<b> & c"}` {
		t.Errorf("got %s (%v)", got, err)
	}
}

// TestRunBusy: a second bootstrap of the same repository into the same
// scratch directory is refused while the first runs, and takes nothing
// from it.
func TestRunBusy(t *testing.T) {
	f := newFixture(t)
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	if err := os.MkdirAll(opts.ScratchDir, 0o755); err != nil {
		t.Fatal(err)
	}
	lk, ok, err := flock.TryLock(filepath.Join(opts.ScratchDir, "bootstrap.lock"))
	if err != nil || !ok {
		t.Fatal(err, ok)
	}
	defer lk.Close()
	_, err = Run(context.Background(), opts)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
}

// TestRunCancelledInWorktreeAdd stops a bootstrap while git is still
// adding the scratch worktree (a smudge filter holds the checkout): git,
// killed, leaves the worktree registered and locked "initializing", which
// the run must remove all the same, or the user's repository lists it and
// every later bootstrap fails on it.
func TestRunCancelledInWorktreeAdd(t *testing.T) {
	f := newFixture(t)
	head := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	marker := filepath.Join(t.TempDir(), "smudging")
	gittest.WriteFile(t, f.dir, ".git/info/attributes", "*.py filter=hold\n")
	gittest.Run(t, f.dir, "config", "filter.hold.smudge", "exec 2>/dev/null; [ -e '"+marker+"' ] || { touch '"+marker+"'; sleep 1; }; cat")
	opts := testOptions(t, f.dir, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(marker); err == nil {
				cancel()
				return
			}
			if ctx.Err() != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := Run(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	assertUntouched(t, f.dir, head)
	if _, err := os.Stat(filepath.Join(opts.ScratchDir, "worktree")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch worktree left: %v", err)
	}
}

// TestRunLeftoverLockedWorktree: a scratch worktree a killed run left
// registered and locked is removed, and the run goes on.
func TestRunLeftoverLockedWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	head := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	opts := testOptions(t, f.dir, t.TempDir())
	wt := filepath.Join(opts.ScratchDir, "worktree")
	gittest.Run(t, f.dir, "worktree", "add", "-q", "--detach", wt, "HEAD~1")
	gittest.Run(t, f.dir, "worktree", "lock", "--reason", "initializing", wt)
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || rep.Pairs[dataset.TaskAnalysis] == 0 {
		t.Errorf("report %+v: want every kept commit's pairs", rep)
	}
	assertUntouched(t, f.dir, head)
}

// TestRunEveryCommitFailed: when no kept commit could be derived (here
// the scratch index cannot be made), the run fails with the first error
// and writes and records nothing, so that a rerun, once the cause is
// gone, derives the pairs instead of reusing empty datasets.
func TestRunEveryCommitFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	gittest.WriteFile(t, opts.ScratchDir, "index", "not a directory\n")
	rep, err := Run(context.Background(), opts)
	if err == nil {
		t.Fatalf("no error; report %+v", rep)
	}
	if !strings.Contains(err.Error(), "index") {
		t.Errorf("error %q does not say what failed", err)
	}
	if m, _ := filepath.Glob(filepath.Join(state, "datasets", "*")); len(m) != 0 {
		t.Errorf("datasets written by a run that derived nothing: %v", m)
	}
	if rows, _ := opts.Corpus.Datasets(context.Background(), ""); len(rows) != 0 {
		t.Errorf("%d dataset rows recorded by a run that derived nothing", len(rows))
	}

	// The cause gone, the rerun derives the pairs.
	if err := os.Remove(filepath.Join(opts.ScratchDir, "index")); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reused || rep.Failed != 0 || rep.Pairs[dataset.TaskAnalysis] == 0 {
		t.Errorf("rerun report %+v: want the pairs derived", rep)
	}
}

// TestRunSubmoduleRecurse: a repository with a submodule, whose user
// checks submodules out with the superproject (submodule.recurse, a
// common setting), is bootstrapped: the scratch checkouts leave the
// submodule alone, as its git directory is the user's.
func TestRunSubmoduleRecurse(t *testing.T) {
	t.Parallel()
	sub := gittest.Init(t)
	gittest.Commit(t, sub, "Start the library", map[string]string{"lib.py": "A = 1\n"})
	f := newFixture(t)
	gittest.Run(t, f.dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "lib")
	gittest.Run(t, f.dir, "commit", "-qm", "Vendor the library as a submodule under lib")
	gittest.Commit(t, f.dir, "Make compute add three to the doubled value", map[string]string{
		"app/core.py": strings.Replace(coreV1, "helper(x) + 1", "helper(x) + 3", 1)})
	gittest.Run(t, f.dir, "config", "submodule.recurse", "true")
	head := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	subHead := gittest.Run(t, filepath.Join(f.dir, "lib"), "rev-parse", "HEAD")
	rep, err := Run(context.Background(), testOptions(t, f.dir, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 {
		t.Errorf("%d of %d kept commits failed: %v", rep.Failed, rep.Kept, rep.Errors)
	}
	assertUntouched(t, f.dir, head)
	if got := gittest.Run(t, filepath.Join(f.dir, "lib"), "rev-parse", "HEAD"); got != subHead {
		t.Errorf("the submodule's HEAD moved: %s, want %s", got, subHead)
	}
}

// TestRunProgressUTF8: a progress line cuts a long subject on a
// character, not inside one.
func TestRunProgressUTF8(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	subject := "Make compute add three to the doubled value for the ledger émigré accounts" // é across byte 60
	gittest.Commit(t, f.dir, subject, map[string]string{
		"app/core.py": strings.Replace(coreV1, "helper(x) + 1", "helper(x) + 3", 1)})
	opts := testOptions(t, f.dir, t.TempDir())
	var progress strings.Builder
	opts.Progress = writerFunc(func(p []byte) { progress.Write(p) })
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "Make compute add three") {
		t.Fatalf("no progress line for the commit:\n%s", progress.String())
	}
	if !utf8.ValidString(progress.String()) {
		t.Errorf("progress is not valid UTF-8:\n%q", progress.String())
	}
}

// TestRunModeOnly: a commit that only makes a file executable gets a plan
// step that says so, not one that edits lines it never touched.
func TestRunModeOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.Chmod(filepath.Join(f.dir, "app", "core.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, f.dir, "commit", "-qam", "Make the core module executable for the scripts")
	hash := gittest.Run(t, f.dir, "rev-parse", "HEAD")
	rep, err := Run(context.Background(), testOptions(t, f.dir, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	recs := byCommit(readAll(t, dataset.Dir(rep.Dir, dataset.ExecutePlan)))[hash]
	if len(recs) != 1 {
		t.Fatalf("%d execute_plan pairs for the mode change, want 1", len(recs))
	}
	if got, want := assistant(recs[0]), `"change":"Change the file's mode (no line changes)."`; !strings.Contains(got, want) {
		t.Errorf("plan %s: want a step with %s", got, want)
	}
}

// TestRunKeepsUsersWorktrees: a worktree of the user's whose directory is
// away (a drive not mounted) keeps its record: the run removes its own
// scratch worktree only, and prunes nothing of the user's.
func TestRunKeepsUsersWorktrees(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	away := filepath.Join(t.TempDir(), "usb")
	gittest.Run(t, f.dir, "worktree", "add", "-q", "--detach", away, "HEAD~1")
	if err := os.Rename(away, away+"-unmounted"); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), testOptions(t, f.dir, t.TempDir())); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".git", "worktrees", "usb")); err != nil {
		t.Errorf("the user's worktree record was pruned: %v", err)
	}
}

// TestRunReusesPartlyFailedRun: a run where one kept commit failed (its
// parent's checkout: a required smudge filter that fails) keeps the other
// commits' pairs; the rerun that reuses it reports the failure again, with
// the first error, so the user learns those pairs are missing; --force
// derives them again once the cause is gone.
func TestRunReusesPartlyFailedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	gittest.WriteFile(t, f.dir, ".git/info/attributes", "app/fmt.py filter=broken\n")
	gittest.Run(t, f.dir, "config", "filter.broken.smudge", "false")
	gittest.Run(t, f.dir, "config", "filter.broken.required", "true")
	opts := testOptions(t, f.dir, t.TempDir())
	rep, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	removal := f.commits["Remove the formatting module, nobody calls show"]
	if rep.Failed != 1 || len(rep.Errors) != 1 || !strings.HasPrefix(rep.Errors[0], removal[:12]+": ") {
		t.Fatalf("first run: %d failed %q, want the removal %.12s", rep.Failed, rep.Errors, removal)
	}

	again, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Reused || again.PlanID != rep.PlanID {
		t.Fatalf("rerun: reused %v plan %d, want plan %d reused", again.Reused, again.PlanID, rep.PlanID)
	}
	if again.Failed != rep.Failed || !slices.Equal(again.Errors, rep.Errors[:1]) {
		t.Errorf("rerun: %d failed %q, want %d %q", again.Failed, again.Errors, rep.Failed, rep.Errors[:1])
	}

	// The cause gone, --force derives the missing commit's pairs.
	gittest.Run(t, f.dir, "config", "--unset", "filter.broken.required")
	gittest.Run(t, f.dir, "config", "filter.broken.smudge", "cat")
	opts.Force = true
	forced, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if forced.Reused || forced.Failed != 0 || forced.Pairs[dataset.TaskAnalysis] != 4 {
		t.Errorf("forced rerun: reused %v, %d failed, %d task analysis pairs; want derived, 0, 4", forced.Reused, forced.Failed, forced.Pairs[dataset.TaskAnalysis])
	}
}

// TestRunBusyWhileSaving: a second bootstrap started while the first
// writes and records its datasets is refused, as during the derivation:
// were the lock released before the save, the second would find no
// recorded run to reuse, derive the same pairs and record them twice.
func TestRunBusyWhileSaving(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	opts := testOptions(t, f.dir, t.TempDir())
	second := opts
	var secondErr error
	started := false
	opts.Progress = writerFunc(func(p []byte) {
		if strings.HasPrefix(string(p), "writing the datasets") && !started {
			started = true
			_, secondErr = Run(ctx, second)
		}
	})
	if _, err := Run(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if !started {
		t.Fatal("no progress line before the save")
	}
	if !errors.Is(secondErr, ErrBusy) {
		t.Errorf("a bootstrap started during the save: got %v, want ErrBusy", secondErr)
	}
	if rows, _ := opts.Corpus.Datasets(ctx, ""); len(rows) != len(dataset.Stages) {
		t.Errorf("%d dataset rows, want one run's %d", len(rows), len(dataset.Stages))
	}
}

// TestRunRemovesLeftoverTemp: the temporary directory a run killed in
// the middle of its save left (complete files included, never renamed
// into place nor recorded) is removed by the next run of the same
// repository and never read as a dataset; another repository's, whose
// run may be saving, and other directories stay.
func TestRunRemovesLeftoverTemp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	leftover := filepath.Join(opts.DatasetsDir, opts.tempPrefix()+"12345")
	rec := dataset.Record{Example: dataset.Example{Messages: []dataset.Message{
		{Role: "system", Content: "s"}, {Role: "user", Content: "u"}, {Role: "assistant", Content: "a"}}},
		Meta: dataset.Meta{Stage: dataset.TaskAnalysis, Source: corpus.SourceSynthetic, Positive: true, Commit: "c", Date: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if _, err := dataset.Write(leftover, dataset.TaskAnalysis, []dataset.Record{rec}, 0); err != nil {
		t.Fatal(err)
	}
	other := opts
	other.ScratchDir = filepath.Join(state, "other-scratch")
	keep := []string{filepath.Join(opts.DatasetsDir, other.tempPrefix()+"67890"), filepath.Join(opts.DatasetsDir, "curated-scope-1")}
	for _, k := range keep {
		gittest.WriteFile(t, k, "x", "y\n")
	}

	rep, err := Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover temporary directory is still there: %v", err)
	}
	for _, k := range keep {
		if _, err := os.Stat(k); err != nil {
			t.Errorf("%s, not this repository's leftover, was removed: %v", k, err)
		}
	}
	rows, err := opts.Corpus.Datasets(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rows {
		if !strings.HasPrefix(d.Path, rep.Dir+string(filepath.Separator)) {
			t.Errorf("dataset %s is not under the run's directory %s", d.Path, rep.Dir)
		}
	}
	if strings.HasPrefix(rep.Name, ".") {
		t.Errorf("the run's directory %s is a temporary one", rep.Name)
	}
}

// TestRunSaveFails: a save that fails midway (here the record, once the
// files are written) leaves neither the run's directory nor its
// temporary one.
func TestRunSaveFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	db, err := store.NewFactory(statedir.At(state)).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opts.Corpus = corpus.New(db)
	opts.Progress = writerFunc(func(p []byte) {
		if strings.HasPrefix(string(p), "writing the datasets") {
			db.Close()
		}
	})
	if _, err := Run(ctx, opts); err == nil || !strings.Contains(err.Error(), "record the datasets") {
		t.Fatalf("got %v, want the record's error", err)
	}
	if m, _ := filepath.Glob(filepath.Join(opts.DatasetsDir, "*")); len(m) != 0 {
		t.Errorf("left by a failed save: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(opts.DatasetsDir, ".*")); len(m) != 0 {
		t.Errorf("left by a failed save: %v", m)
	}
}

// TestRunRemovesLeftoverTempKeepingNothing: a run that keeps no commit
// still removes what a killed run of the repository left.
func TestRunRemovesLeftoverTempKeepingNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	opts := testOptions(t, f.dir, t.TempDir())
	leftover := filepath.Join(opts.DatasetsDir, opts.tempPrefix()+"12345")
	gittest.WriteFile(t, leftover, "x", "y\n")
	opts.Since = time.Now().Add(24 * time.Hour) // no commit is that new
	rep, err := Run(context.Background(), opts)
	if err != nil || rep.Kept != 0 {
		t.Fatalf("got %+v, %v, want a run that keeps nothing", rep, err)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's %s is still there: %v", filepath.Base(leftover), err)
	}
}

// TestRunRemovesUnrecordedRun: a run killed after it placed its
// directory and before its record leaves it marked pending with the
// repository's prefix; the next run of the repository removes it, leaves
// another repository's alone, and records its own without the mark.
func TestRunRemovesUnrecordedRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	state := t.TempDir()
	opts := testOptions(t, f.dir, state)
	other := opts
	other.ScratchDir = filepath.Join(state, "other-scratch")
	placed := map[string]string{}
	for name, owner := range map[string]string{"bootstrap-repo-20240101T000000Z": opts.tempPrefix(), "bootstrap-repo-20240102T000000Z": other.tempPrefix()} {
		dir := filepath.Join(opts.DatasetsDir, name)
		gittest.WriteFile(t, dir, dataset.PendingFile, owner+"\n")
		gittest.WriteFile(t, filepath.Join(dir, "reasoning", "scope"), dataset.TrainFile, "{}\n")
		placed[owner] = dir
	}
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(placed[opts.tempPrefix()]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("this repository's unrecorded run is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(placed[other.tempPrefix()], "reasoning", "scope", dataset.TrainFile)); err != nil {
		t.Errorf("another repository's run was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rep.Dir, dataset.PendingFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the recorded run %s keeps its pending mark: %v", rep.Dir, err)
	}
}
