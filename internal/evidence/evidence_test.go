package evidence

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/validation"
	"github.com/google/go-cmp/cmp"
)

// fixture is a repository with a task's worktree on branch cra/t-1, as
// the board's processor makes them.
type fixture struct {
	repo, wt string
	base     string
}

const branch = "cra/t-1"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	repo := t.TempDir()
	gittest.Run(t, repo, "init", "-q")
	write(t, repo, ".clean_room/.gitignore", "*\n")
	write(t, repo, "calc.py", "def add(a, b):\n    return a + b\n")
	write(t, repo, "README.md", "# calc\n")
	write(t, repo, "docs/old name.md", "one\ntwo\nthree\nfour\n")
	write(t, repo, "tests/test_calc.py", `from calc import add


def test_add():
    assert add(1, 2) == 3
    assert add(0, 0) == 0


def test_neg():
    assert add(-1, 1) == 0
`)
	write(t, repo, "tests/test_old.py", "from calc import add\n\n\ndef test_one():\n    x = add(1, 1)\n    assert x == 2\n    assert x > 0\n    assert x < 3\n    y = 1\n    z = 2\n")
	write(t, repo, "calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Error(\"bad\")\n\t}\n}\n")
	write(t, repo, "web/sum.test.js", "test('adds', () => {\n  expect(1 + 2).toBe(3);\n});\n")
	write(t, repo, "web/keep.test.js", "test('keeps', () => {\n  expect(1).toBe(1);\n});\n")
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-qm", "base")
	wt, err := gitx.AddWorktree(context.Background(), repo, filepath.Join(repo, ".clean_room", "worktrees", "t-1"), branch)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{repo: repo, wt: wt.Path, base: wt.Base}
}

func (f *fixture) commit(t *testing.T, msg string) {
	t.Helper()
	gittest.Run(t, f.wt, "add", "-A")
	gittest.Run(t, f.wt, "commit", "-qm", msg)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exit(n int) *int { return &n }

func TestCollectEmptyDiff(t *testing.T) {
	f := newFixture(t)
	e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: f.wt, ExitCode: exit(0), Output: "nothing to do\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Diff.Empty || e.Diff.Base != f.base || len(e.Diff.Files) != 0 || e.Diff.Stat != "" {
		t.Errorf("diff: got %+v, want empty from base %s", e.Diff, f.base)
	}
	if e.ValidationConfigured || e.Validation != nil || e.ValidationSkipped != "" || e.WorktreeProblem != "" {
		t.Errorf("validation: got configured=%v %+v skipped=%q problem=%q, want not configured", e.ValidationConfigured, e.Validation, e.ValidationSkipped, e.WorktreeProblem)
	}
	want := []string{"the branch changes nothing against its base " + f.base[:12]}
	if d := cmp.Diff(want, e.Blockers(false)); d != "" {
		t.Errorf("Blockers(false) (-want +got):\n%s", d)
	}
	if got := e.Blockers(true); len(got) != 0 {
		t.Errorf("Blockers(true): got %q, want none: no change was expected", got)
	}
	if e.OutputTail != "nothing to do" {
		t.Errorf("output tail: got %q", e.OutputTail)
	}

	// Work left uncommitted is not the branch's: the diff stays empty,
	// and the blocker says what is lying in the worktree.
	write(t, f.wt, "scratch.txt", "notes\n")
	e, err = Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: f.wt, ExitCode: exit(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Diff.Empty || !cmp.Equal(e.Uncommitted, []string{"?? scratch.txt"}) {
		t.Errorf("got empty=%v uncommitted=%q, want an empty diff and ?? scratch.txt", e.Diff.Empty, e.Uncommitted)
	}
	want = []string{"the branch changes nothing against its base " + f.base[:12] + " (1 uncommitted path(s) in the worktree)"}
	if d := cmp.Diff(want, e.Blockers(false)); d != "" {
		t.Errorf("Blockers(false) (-want +got):\n%s", d)
	}
}

func TestCollectChanges(t *testing.T) {
	f := newFixture(t)
	// The repository's HEAD moves on after the branch forked: the base
	// stays the fork point, and the new commit is not the branch's work.
	write(t, f.repo, "later.txt", "on main\n")
	gittest.Run(t, f.repo, "add", "later.txt")
	gittest.Run(t, f.repo, "commit", "-qm", "later")

	write(t, f.wt, "calc.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
	write(t, f.wt, "new module.py", "X = 1\n")
	write(t, f.wt, "tests/test_sub.py", "from calc import sub\n\n\ndef test_sub():\n    assert sub(2, 1) == 1\n")
	if err := os.Remove(filepath.Join(f.wt, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.wt, "calc_test.go")); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, f.wt, "mv", "docs/old name.md", "docs/new näme.md")
	gittest.Run(t, f.wt, "mv", "web/sum.test.js", "web/sum.js.bak")
	// One test loses a whole function, another an assertion through a
	// rename; a third only rewrites its assertion.
	write(t, f.wt, "tests/test_calc.py", `from calc import add


def test_add():
    assert add(1, 2) == 3
    # assert add(0, 0) == 0
`)
	gittest.Run(t, f.wt, "mv", "tests/test_old.py", "tests/test_renamed.py")
	write(t, f.wt, "tests/test_renamed.py", "from calc import add\n\n\ndef test_one():\n    x = add(1, 1)\n    assert x == 2\n    assert x > 0\n    y = 1\n    z = 2\n")
	write(t, f.wt, "web/keep.test.js", "test('keeps', () => {\n  expect(1).toEqual(1);\n});\n")
	f.commit(t, "work")
	write(t, f.wt, "scratch.txt", "notes\n")
	write(t, f.wt, "calc.py", "# uncommitted\n")

	e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: f.wt, ExitCode: exit(0)})
	if err != nil {
		t.Fatal(err)
	}
	if e.Diff.Base != f.base || e.Diff.Empty || e.Diff.Unavailable != "" {
		t.Errorf("diff: got base %s empty %v unavailable %q, want base %s", e.Diff.Base, e.Diff.Empty, e.Diff.Unavailable, f.base)
	}
	wantFiles := []File{
		{Path: "README.md", Status: "deleted", LinesAdded: 0, LinesRemoved: 1},
		{Path: "calc.py", Status: "modified", LinesAdded: 4, LinesRemoved: 0},
		{Path: "calc_test.go", Status: "deleted", LinesAdded: 0, LinesRemoved: 9, Test: true},
		{Path: "docs/new näme.md", OldPath: "docs/old name.md", Status: "renamed"},
		{Path: "new module.py", Status: "added", LinesAdded: 1},
		{Path: "tests/test_calc.py", Status: "modified", LinesAdded: 1, LinesRemoved: 5, Test: true},
		{Path: "tests/test_renamed.py", OldPath: "tests/test_old.py", Status: "renamed", LinesAdded: 0, LinesRemoved: 1, Test: true},
		{Path: "tests/test_sub.py", Status: "added", LinesAdded: 5, Test: true},
		{Path: "web/keep.test.js", Status: "modified", LinesAdded: 1, LinesRemoved: 1, Test: true},
		{Path: "web/sum.js.bak", OldPath: "web/sum.test.js", Status: "renamed", Test: true},
	}
	if d := cmp.Diff(wantFiles, e.Diff.Files); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	if e.Diff.LinesAdded != 12 || e.Diff.LinesRemoved != 17 {
		t.Errorf("lines: got +%d -%d, want +12 -17", e.Diff.LinesAdded, e.Diff.LinesRemoved)
	}
	if !strings.Contains(e.Diff.Stat, "calc.py") || !strings.Contains(e.Diff.Stat, "10 files changed") || strings.Contains(e.Diff.Stat, "later.txt") {
		t.Errorf("stat: got\n%s", e.Diff.Stat)
	}
	if d := cmp.Diff([]string{"calc_test.go", "web/sum.test.js"}, e.DeletedTests); d != "" {
		t.Errorf("deleted tests (-want +got):\n%s", d)
	}
	wantWeak := []WeakenedTest{{Path: "tests/test_calc.py", Removed: 2, Added: 0}, {Path: "tests/test_renamed.py", Removed: 1, Added: 0}}
	if d := cmp.Diff(wantWeak, e.WeakenedTests); d != "" {
		t.Errorf("weakened tests (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{" M calc.py", "?? scratch.txt"}, e.Uncommitted); d != "" {
		t.Errorf("uncommitted (-want +got):\n%s", d)
	}
	wantBlockers := []string{
		"test file(s) deleted: calc_test.go, web/sum.test.js",
		"assertions removed from tests/test_calc.py: 2 removed, 0 added",
		"assertions removed from tests/test_renamed.py: 1 removed, 0 added",
	}
	if d := cmp.Diff(wantBlockers, e.Blockers(false)); d != "" {
		t.Errorf("Blockers (-want +got):\n%s", d)
	}
}

func TestCollectValidation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		validator func(f *fixture) *validation.Validator
		subdir    string
		sandbox   func(t *testing.T) Sandbox
		prepare   func(t *testing.T, f *fixture) (worktree string)
		// want is the checks' names and outcomes, "" when validation
		// must not run.
		want     string
		skipped  string // a part of ValidationSkipped
		blockers []string
		text     string // a part of Text
	}{
		{name: "not configured", validator: test("")},
		{name: "passed", validator: func(*fixture) *validation.Validator { return &validation.Validator{Test: "exit 0", Lint: "true"} },
			want: "test:passed:0 lint:passed:0", text: "validation ran sandboxed (Landlock)"},
		{name: "failed", validator: func(*fixture) *validation.Validator {
			return &validation.Validator{Test: "echo '--- FAIL: TestAdd (0.00s)'; exit 3", Typecheck: "true"}
		},
			want:     "test:failed:3 typecheck:passed:0",
			blockers: []string{"validation test failed: exit 3"}},
		{name: "timed out", validator: func(*fixture) *validation.Validator {
			return &validation.Validator{Lint: "sleep 5", Timeout: 300 * time.Millisecond}
		},
			want:     "lint:timed out:-1",
			blockers: []string{"validation lint failed: timed out after 300ms"}},
		{name: "runs in the subdirectory", validator: test(`test "$(basename "$PWD")" = web`), subdir: "web/",
			want: "test:passed:0"},
		{name: "its leftovers are not uncommitted work", validator: test("touch made-by-validation.txt"),
			want: "test:passed:0"},
		{name: "it runs the branch's commit, not the working copy", validator: test("grep -rq --include='*.py' 'b + a' . && ! test -e scratch.txt"),
			prepare: func(t *testing.T, f *fixture) string {
				write(t, f.wt, "calc.py", "def add(a, b):\n    return 3\n")
				write(t, f.wt, "scratch.txt", "x\n")
				return f.wt
			},
			want: "test:passed:0"},
		{name: "the working copy gone", validator: test("exit 0"),
			prepare: func(t *testing.T, f *fixture) string {
				if err := os.RemoveAll(f.wt); err != nil {
					t.Fatal(err)
				}
				return f.wt
			},
			want: "test:passed:0"},
		{name: "no working copy", validator: test("exit 0"),
			prepare: func(t *testing.T, f *fixture) string { return "" },
			want:    "test:passed:0"},
		{name: "the working copy on another branch", validator: test("exit 0"),
			prepare: func(t *testing.T, f *fixture) string {
				gittest.Run(t, f.wt, "checkout", "-q", "-b", "other")
				return f.wt
			},
			want: "test:passed:0"},
		{name: "sandboxed", validator: func(f *fixture) *validation.Validator {
			return &validation.Validator{Test: "echo forged >> " + filepath.Join(f.repo, ".clean_room", "world.log") + " || { echo refused; exit 9; }"}
		},
			want:     "test:failed:9",
			blockers: []string{"validation test failed: exit 9"},
			text:     "note: validation test failed with a refused write"},
		{name: "sandbox off", validator: test("exit 0"), sandbox: func(*testing.T) Sandbox { return Sandbox{Off: true} },
			want: "test:passed:0", text: "WARNING: validation ran unconfined"},
		{name: "no launcher", validator: test("exit 0"), sandbox: func(*testing.T) Sandbox { return Sandbox{} },
			skipped:  "validation cannot be confined here",
			blockers: []string{"validation is configured but did not run again: validation cannot be confined here"}},
		{name: "subdirectory missing", validator: test("exit 0"), subdir: "nope/",
			skipped:  "the directory nope/ is not in the branch's commit",
			blockers: []string{"validation is configured but did not run again: the directory nope/"}},
		{name: "subdirectory outside", validator: test("exit 0"), subdir: "../..",
			skipped:  "is not inside the repository",
			blockers: []string{"validation is configured but did not run again: the directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			write(t, f.wt, "calc.py", "def add(a, b):\n    return b + a\n")
			f.commit(t, "work")
			wt := f.wt
			if tc.prepare != nil {
				wt = tc.prepare(t, f)
			}
			sb := confined(t)
			if tc.sandbox != nil {
				sb = tc.sandbox(t)
			}
			v := tc.validator(f)
			e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: wt, Subdir: tc.subdir,
				Validator: v, Sandbox: sb, ExitCode: exit(0)})
			if err != nil {
				t.Fatal(err)
			}
			if e.ValidationConfigured != v.Configured() {
				t.Errorf("configured: got %v, want %v", e.ValidationConfigured, v.Configured())
			}
			var got []string
			if e.Validation != nil {
				for _, c := range e.Validation.Checks {
					outcome := "passed"
					switch {
					case c.TimedOut:
						outcome = "timed out"
					case !c.Passed:
						outcome = "failed"
					}
					got = append(got, c.Name+":"+outcome+":"+strconv.Itoa(c.ExitCode))
				}
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("checks: got %q, want %q (skipped %q)", g, tc.want, e.ValidationSkipped)
			}
			if tc.skipped == "" && e.ValidationSkipped != "" || !strings.Contains(e.ValidationSkipped, tc.skipped) {
				t.Errorf("skipped: got %q, want it to hold %q", e.ValidationSkipped, tc.skipped)
			}
			if tc.prepare == nil && len(e.Uncommitted) != 0 {
				t.Errorf("uncommitted: got %q, want none", e.Uncommitted)
			}
			blockers := e.Blockers(false)
			if len(blockers) != len(tc.blockers) {
				t.Fatalf("blockers: got %q, want %d starting %q", blockers, len(tc.blockers), tc.blockers)
			}
			for i, b := range blockers {
				if !strings.HasPrefix(b, tc.blockers[i]) {
					t.Errorf("blocker %d: got %q, want it to start %q", i, b, tc.blockers[i])
				}
			}
			if text := e.Text(); !strings.Contains(text, tc.text) {
				t.Errorf("text:\n%s\nwant it to hold %q", text, tc.text)
			}
			if data, err := os.ReadFile(filepath.Join(f.repo, ".clean_room", "world.log")); err == nil {
				t.Errorf("validation wrote the world log: %q", data)
			}
		})
	}
}

// test is a validator of one test command.
func test(command string) func(*fixture) *validation.Validator {
	return func(*fixture) *validation.Validator { return &validation.Validator{Test: command} }
}

func TestCollectMissingBranch(t *testing.T) {
	f := newFixture(t)
	e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: "cra/t-none", Worktree: f.wt, RunFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"the run failed: killed or never started (no exit code)",
		"the branch's diff cannot be read: branch cra/t-none does not exist",
	}
	if d := cmp.Diff(want, e.Blockers(true)); d != "" {
		t.Errorf("Blockers (-want +got):\n%s", d)
	}
	if !strings.Contains(e.WorktreeProblem, "is on branch cra/t-1, not cra/t-none") {
		t.Errorf("worktree problem: got %q", e.WorktreeProblem)
	}
}

func TestCollectErrors(t *testing.T) {
	if _, err := Collect(context.Background(), Input{Repo: t.TempDir(), Branch: branch}); err == nil {
		t.Error("Collect in a directory that is not a repository: got no error")
	}

	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	write(t, f.wt, "calc.py", "def add(a, b):\n    return b + a\n")
	f.commit(t, "work")
	_, err := Collect(ctx, Input{Repo: f.repo, Branch: branch, Worktree: f.wt, Validator: &validation.Validator{Test: "sleep 10"}, Sandbox: confined(t)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Collect cancelled during validation: got %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Collect cancelled during validation returned after %s", d)
	}
}

// TestEvidenceJSON pins the stored form: snake_case names, and lists
// that are [] rather than null for the web board.
func TestEvidenceJSON(t *testing.T) {
	f := newFixture(t)
	code := 0
	e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: f.wt, ExitCode: &code})
	if err != nil {
		t.Fatal(err)
	}
	code = 9
	if *e.Run.ExitCode != 0 {
		t.Errorf("the evidence's exit code follows the caller's variable: got %d", *e.Run.ExitCode)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"uncommitted", "deleted_tests", "weakened_tests", "loops"} {
		if v, ok := m[k].([]any); !ok || len(v) != 0 {
			t.Errorf("%s: got %#v, want []", k, m[k])
		}
	}
	diff, _ := m["diff"].(map[string]any)
	if files, ok := diff["files"].([]any); !ok || len(files) != 0 || diff["empty"] != true || diff["base"] != f.base {
		t.Errorf("diff: got %#v", diff)
	}
	run, _ := m["run"].(map[string]any)
	if run["exit_code"] != 0.0 || run["timed_out"] != false || run["run_failed"] != false {
		t.Errorf("run: got %#v", run)
	}
}

// TestCollectSkippedTests: skipping a failing test is the classic way to
// make validation pass without the work; it stands against full_complete
// like a removed assertion.
func TestCollectSkippedTests(t *testing.T) {
	for _, tc := range []struct{ path, content string }{
		{"calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tt.Skip(\"flaky, later\")\n\tif Add(1, 2) != 3 {\n\t\tt.Error(\"bad\")\n\t}\n}\n"},
		{"tests/test_calc.py", "import pytest\nfrom calc import add\n\n\n@pytest.mark.skip(reason=\"later\")\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n\n\ndef test_sub():\n    pass\n"},
		{"web/sum.test.js", "test.skip('adds', () => {\n  expect(1 + 2).toBe(3);\n});\n"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			f := newFixture(t)
			write(t, f.wt, "calc.py", "def add(a, b):\n    return a - b\n")
			write(t, f.wt, tc.path, tc.content)
			f.commit(t, "done")
			e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: f.wt, ExitCode: exit(0)})
			if err != nil {
				t.Fatal(err)
			}
			want := "tests skipped in " + tc.path + ": 1 more skip(s) or .only"
			if b := e.Blockers(false); !slices.Contains(b, want) {
				t.Errorf("blockers %q, want %q (weakened %+v)", b, want, e.WeakenedTests)
			}
		})
	}
}

// TestCollectNewGuardedTest: a new test that comes with its platform
// guard skips no test that ran before: no blocker.
func TestCollectNewGuardedTest(t *testing.T) {
	f := newFixture(t)
	write(t, f.wt, "tests/test_calc.py", `import sys

import pytest

from calc import add


def test_add():
    assert add(1, 2) == 3
    assert add(0, 0) == 0


def test_neg():
    assert add(-1, 1) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="uses fork")
def test_add_in_child():
    assert run_in_child(add, 1, 2) == 3
    assert run_in_child(add, 2, 2) == 4
`)
	f.commit(t, "add a test")
	e, err := Collect(context.Background(), Input{Repo: f.repo, Branch: branch, Worktree: f.wt, ExitCode: exit(0)})
	if err != nil {
		t.Fatal(err)
	}
	if b := e.Blockers(false); len(b) > 0 {
		t.Errorf("a new, guarded test blocks completion: %q (weakened %+v)", b, e.WeakenedTests)
	}
}
