package evidence

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/validation"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test -update' to write it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

// fullEvidence holds a fact of every kind.
func fullEvidence() *Evidence {
	return &Evidence{
		Run: Run{ExitCode: exit(2), Failed: true},
		Diff: Diff{
			Base: "0123456789abcdef0123456789abcdef01234567",
			Files: []File{
				{Path: "calc.py", Status: "modified", LinesAdded: 4, LinesRemoved: 1},
				{Path: "calc_test.go", Status: "deleted", LinesRemoved: 9, Test: true},
				{Path: "docs/new näme.md", OldPath: "docs/old name.md", Status: "renamed"},
				{Path: "logo.png", Status: "added", LinesAdded: -1, LinesRemoved: -1},
				{Path: "tests/test_calc.py", Status: "modified", LinesAdded: 1, LinesRemoved: 5, Test: true},
			},
			LinesAdded:   5,
			LinesRemoved: 15,
			Stat:         " calc.py | 5 ++++-\n 5 files changed",
		},
		Uncommitted:          []string{"?? scratch.txt", ` M "we\"ird.py"`},
		DeletedTests:         []string{"calc_test.go"},
		WeakenedTests:        []WeakenedTest{{Path: "tests/test_calc.py", Removed: 2, Added: 0}},
		ValidationConfigured: true,
		Validation: &validation.Result{
			Checks: []validation.CheckResult{
				{Name: "test", Command: "pytest -q", ExitCode: 1, Duration: 1500 * time.Millisecond, Timeout: time.Minute, Output: "FAILED tests/test_calc.py::test_neg"},
				{Name: "lint", Command: "ruff check .", Passed: true, Duration: time.Second, Timeout: time.Minute},
				{Name: "typecheck", Command: "mypy .", TimedOut: true, ExitCode: -1, Duration: time.Minute, Timeout: time.Minute},
			},
			FailingTests: []string{"tests/test_calc.py::test_neg"},
		},
		OutputTail: "Error: boom\nError: boom",
		Loops: []Loop{
			{Kind: LoopBlock, Line: "run pytest", Lines: 3, Count: 4},
			{Kind: LoopError, Line: "Error: boom", Lines: 1, Count: 6},
		},
	}
}

func TestText(t *testing.T) {
	e := fullEvidence()
	got := e.Text()
	if len(got) > maxText+100 {
		t.Errorf("Text is %d bytes, want about %d at most", len(got), maxText)
	}
	if got != e.Text() {
		t.Error("Text is not deterministic")
	}
	golden(t, "full.txt", got)

	clean := &Evidence{Run: Run{ExitCode: exit(0)}, Diff: Diff{Base: "0123456789abcdef", Files: []File{{Path: "a.go", Status: "modified", LinesAdded: 1, LinesRemoved: 1}}, LinesAdded: 1, LinesRemoved: 1},
		WorktreeProblem: "worktree /x is missing"}
	golden(t, "clean.txt", clean.Text())
}

// TestTextBounds: many files, names and loops stay within the bound.
func TestTextBounds(t *testing.T) {
	e := fullEvidence()
	for i := range 300 {
		e.Diff.Files = append(e.Diff.Files, File{Path: fmt.Sprintf("pkg/sub/file_%03d.go", i), Status: "added", LinesAdded: 10})
		e.DeletedTests = append(e.DeletedTests, fmt.Sprintf("pkg/sub/file_%03d_test.go", i))
		e.WeakenedTests = append(e.WeakenedTests, WeakenedTest{Path: fmt.Sprintf("pkg/x/y_%03d_test.go", i), Removed: 3, Added: 1})
	}
	e.Validation.Checks[0].Command = strings.Repeat("x", 5000)
	for i := range 100 {
		e.Uncommitted = append(e.Uncommitted, fmt.Sprintf("?? tmp/%03d.txt", i))
	}
	got := e.Text()
	if len(got) > maxText+60 {
		t.Errorf("Text is %d bytes, want about %d at most", len(got), maxText)
	}
	for _, want := range []string{"run: failed: exit 2\n", "more\ndeleted tests: calc_test.go, ", "more\nweakened tests: tests/test_calc.py (2 assertion line(s) removed, 0 added), ", "more\nuncommitted", "more\nloop: "} {
		if !strings.Contains(got, want) {
			t.Errorf("Text misses %q:\n%s", want, got)
		}
	}
}

// TestEvidenceJSONGolden pins the stored form's field names.
func TestEvidenceJSONGolden(t *testing.T) {
	b, err := json.MarshalIndent(fullEvidence(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.json", string(b)+"\n")
}

func TestBlockers(t *testing.T) {
	passed := &validation.Result{Success: true, Checks: []validation.CheckResult{{Name: "test", Command: "exit 0", Passed: true}}}
	changed := Diff{Base: "0123456789abcdef", Files: []File{{Path: "a.go", Status: "modified"}}}
	ok := func() *Evidence {
		return &Evidence{Run: Run{ExitCode: exit(0)}, Diff: changed, ValidationConfigured: true, Validation: passed}
	}
	for _, tc := range []struct {
		name             string
		change           func(e *Evidence)
		noChangeExpected bool
		want             []string
	}{
		{"allowed", func(e *Evidence) {}, false, []string{}},
		{"allowed without validation", func(e *Evidence) { e.ValidationConfigured, e.Validation = false, nil }, false, []string{}},
		{"uncommitted files and loops do not block", func(e *Evidence) {
			e.Uncommitted = []string{"?? x"}
			e.Loops = []Loop{{Kind: LoopBlock, Line: "x", Lines: 1, Count: 9}}
		}, false, []string{}},
		{"exit code", func(e *Evidence) { e.Run = Run{ExitCode: exit(3), Failed: true} }, false,
			[]string{"the run failed: exit 3"}},
		{"timed out", func(e *Evidence) { e.Run = Run{TimedOut: true, Failed: true} }, false,
			[]string{"the run failed: timed out"}},
		{"killed", func(e *Evidence) { e.Run = Run{Failed: true} }, false,
			[]string{"the run failed: killed or never started (no exit code)"}},
		{"failed with exit 0", func(e *Evidence) { e.Run.Failed = true }, false,
			[]string{"the run failed: exit 0 but recorded as failed"}},
		{"validation failed", func(e *Evidence) {
			e.Validation = &validation.Result{Checks: []validation.CheckResult{
				{Name: "test", ExitCode: 1}, {Name: "lint", Passed: true}, {Name: "typecheck", TimedOut: true, ExitCode: -1, Timeout: 2 * time.Minute}}}
		}, false, []string{"validation test failed: exit 1", "validation typecheck failed: timed out after 2m0s"}},
		{"validation unsuccessful without a failed check", func(e *Evidence) { e.Validation = &validation.Result{} }, false,
			[]string{"validation failed"}},
		{"validation skipped", func(e *Evidence) { e.Validation, e.ValidationSkipped = nil, "worktree /w is missing" }, false,
			[]string{"validation is configured but did not run again: worktree /w is missing"}},
		{"validation without a result", func(e *Evidence) { e.Validation = nil }, false,
			[]string{"validation is configured but did not run again: no result was recorded"}},
		{"empty diff", func(e *Evidence) { e.Diff = Diff{Base: "0123456789abcdef", Empty: true} }, false,
			[]string{"the branch changes nothing against its base 0123456789ab"}},
		{"empty diff expected", func(e *Evidence) { e.Diff = Diff{Base: "0123456789abcdef", Empty: true} }, true, []string{}},
		{"diff unavailable", func(e *Evidence) { e.Diff = Diff{Unavailable: "branch cra/x does not exist"} }, true,
			[]string{"the branch's diff cannot be read: branch cra/x does not exist"}},
		{"deleted tests", func(e *Evidence) { e.DeletedTests = []string{"a_test.go", "tests/test b.py"} }, false,
			[]string{`test file(s) deleted: a_test.go, "tests/test b.py"`}},
		{"weakened tests", func(e *Evidence) {
			e.WeakenedTests = []WeakenedTest{{Path: "a_test.go", Removed: 3, Added: 1}, {Path: "b.test.js", Removed: 1}}
		}, false, []string{"assertions removed from a_test.go: 3 removed, 1 added", "assertions removed from b.test.js: 1 removed, 0 added"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := ok()
			tc.change(e)
			if d := cmp.Diff(tc.want, e.Blockers(tc.noChangeExpected)); d != "" {
				t.Errorf("Blockers (-want +got):\n%s", d)
			}
		})
	}
}
