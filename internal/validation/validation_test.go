package validation

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFailingTests(t *testing.T) {
	tests := []struct {
		runner string
		output string
		want   []string
	}{
		{"go test", `--- FAIL: TestAdd (0.00s)
    calc_test.go:7: Add(2, 3) = -1, want 5
--- FAIL: TestTable (0.00s)
    --- FAIL: TestTable/negative (0.00s)
        calc_test.go:20: got 1
FAIL
FAIL	example.com/calc	0.002s
FAIL	example.com/broken [build failed]
ok  	example.com/other	0.001s
`, []string{"TestAdd", "TestTable", "TestTable/negative", "example.com/broken [build failed]"}},
		{"pytest", `============================= test session starts ==============================
tests/test_calc.py::test_add FAILED                                      [ 50%]
tests/test_calc.py::test_sub PASSED                                      [100%]
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert -1 == 5
ERROR tests/test_db.py::test_connect[sqlite] - ConnectionError
========================= 1 failed, 1 passed in 0.03s ==========================
`, []string{"tests/test_calc.py::test_add", "tests/test_db.py::test_connect[sqlite]"}},
		{"unittest", `.F.E
======================================================================
ERROR: test_connect (tests.test_db.DBTest.test_connect)
----------------------------------------------------------------------
Traceback (most recent call last):
ConnectionError
======================================================================
FAIL: test_sub (tests.test_calc.CalcTest)
----------------------------------------------------------------------
AssertionError: -1 != 5
----------------------------------------------------------------------
Ran 4 tests in 0.001s

FAILED (failures=1, errors=1)
`, []string{"tests.test_db.DBTest.test_connect", "tests.test_calc.CalcTest.test_sub"}},
		{"jest", ` FAIL  src/calc.test.js
  calc
    ✓ subtracts (2 ms)
    ✕ adds (3 ms)

  ● calc › adds

    expect(received).toBe(expected) // Object.is equality

  ● Test suite failed to run

Tests:       1 failed, 1 passed, 2 total
`, []string{"adds", "calc › adds"}},
		{"vitest", ` ❯ src/calc.test.ts (2 tests | 1 failed) 5ms
   × calc > adds 3ms
     → expected -1 to be 5

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/calc.test.ts > calc > adds
AssertionError: expected -1 to be 5
`, []string{"calc > adds", "src/calc.test.ts > calc > adds"}},
		{"node:test tap", `TAP version 13
# Subtest: adds
not ok 1 - adds
  ---
  duration_ms: 0.5
  ...
ok 2 - subtracts
not ok 3 - later # TODO
1..3
`, []string{"adds"}},
		{"node:test spec", `✔ subtracts (0.4ms)
✖ adds (1.2ms)
  AssertionError [ERR_ASSERTION]: -1 == 5
ℹ tests 2
ℹ fail 1

✖ failing tests:

test at calc.test.mjs:4:1
✖ adds (1.2ms)
`, []string{"adds"}},
		{"nothing failed", "ok  \texample.com/calc\t0.002s\n", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.runner, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, FailingTests(tc.output)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidatorRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh commands")
	}
	ctx := context.Background()
	dir := t.TempDir()
	v := &Validator{
		Test:    "echo running; echo '--- FAIL: TestAdd (0.00s)'; echo oops >&2; exit 3",
		Lint:    "true",
		Timeout: 5 * time.Second,
	}
	if !v.Configured() || (&Validator{}).Configured() || (*Validator)(nil).Configured() {
		t.Error("Configured is wrong")
	}
	res, err := v.Run(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || len(res.Checks) != 2 || res.FirstFailure() != ClassTest {
		t.Fatalf("got %+v", res)
	}
	test := res.Check(CheckTest)
	if test.ExitCode != 3 || test.Passed || !strings.Contains(test.Output, "running") || !strings.Contains(test.Output, "oops") {
		t.Errorf("test check: %+v", test)
	}
	if diff := cmp.Diff([]string{"TestAdd"}, res.FailingTests); diff != "" {
		t.Errorf("failing tests (-want +got):\n%s", diff)
	}
	if lint := res.Check(CheckLint); !lint.Passed || res.Check(CheckTypecheck) != nil {
		t.Errorf("lint %+v, typecheck %+v", lint, res.Check(CheckTypecheck))
	}

	// The command runs in dir; a slow one is killed at the timeout, its
	// children with it.
	slow := &Validator{Typecheck: "pwd; sleep 30 & sleep 30", Timeout: 300 * time.Millisecond}
	start := time.Now()
	res, err = slow.Run(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the timeout took %v", time.Since(start))
	}
	tc := res.Check(CheckTypecheck)
	if res.Success || !tc.TimedOut || res.FirstFailure() != ClassTypecheck || !strings.Contains(tc.Output, "timed out after 300ms") {
		t.Errorf("got %+v", tc)
	}
	if real, _ := filepath.EvalSymlinks(dir); !strings.Contains(tc.Output, real) && !strings.Contains(tc.Output, dir) {
		t.Errorf("not run in %s: %q", dir, tc.Output)
	}

	// Output beyond the cap keeps its head and its tail.
	big := &Validator{Lint: "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; exit 1", MaxOutput: 400}
	res, _ = big.Run(ctx, dir)
	out := res.Check(CheckLint).Output
	if !strings.HasPrefix(out, "line0\n") || !strings.Contains(out, "bytes of output left out") || !strings.HasSuffix(out, "line1999\n") {
		t.Errorf("capped output: %q", out)
	}
}

// TestValidatorGoTest runs real go test output through the parser, on a
// module whose test fails.
func TestValidatorGoTest(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil || runtime.GOOS == "windows" {
		t.Skip("no go command, or no sh")
	}
	dir := t.TempDir()
	writeFile(t, dir, "go.mod", "module calc\n\ngo 1.21\n")
	writeFile(t, dir, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a - b }\n")
	writeFile(t, dir, "calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n")
	res, err := (&Validator{Test: "GOFLAGS=-mod=mod go test ./..."}).Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || !cmp.Equal([]string{"TestAdd"}, res.FailingTests) {
		t.Errorf("got %v %v\n%s", res.Success, res.FailingTests, res.Check(CheckTest).Output)
	}
}

// TestValidatorRunsGoTestsAnew: an agent that shares the Go build cache
// with validation records a pass its code gets only in the agent's own
// environment (read with syscall.Getenv, which the test log does not
// see), in its own checkout, with -trimpath; the validator's go test in
// another checkout, without that variable, runs the test and fails
// instead of replaying the pass as "(cached)".
func TestValidatorRunsGoTestsAnew(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the go command is missing: install Go (https://go.dev/dl)")
	}
	// The cache is this user's own (a fresh one compiles the standard
	// library with -trimpath first, most of a minute): the planted pass
	// is for this one module, which nothing else builds.
	agent, checkout := t.TempDir(), t.TempDir()
	for _, dir := range []string{agent, checkout} {
		writeFile(t, dir, "go.mod", "module calc\n\ngo 1.21\n")
		writeFile(t, dir, "calc.go", "package calc\n\nimport \"syscall\"\n\nfunc Sub(a, b int) int {\n\tif _, ok := syscall.Getenv(\"CRA_AGENT_ONLY\"); ok {\n\t\treturn a - b\n\t}\n\treturn a + b\n}\n")
		writeFile(t, dir, "calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"Sub(3, 1) != 2\")\n\t}\n}\n")
	}
	plant := exec.Command("go", "test", "-trimpath", "./...")
	plant.Dir = agent
	plant.Env = append(os.Environ(), "GOFLAGS=", "CRA_AGENT_ONLY=1")
	if out, err := plant.CombinedOutput(); err != nil {
		t.Fatalf("the agent's run: %v\n%s", err, out)
	}
	res, err := (&Validator{Test: "go test -trimpath ./...", Env: []string{"GOFLAGS="}}).Run(context.Background(), checkout)
	if err != nil {
		t.Fatal(err)
	}
	if out := res.Check(CheckTest).Output; res.Success || strings.Contains(out, "(cached)") || !cmp.Equal([]string{"TestSub"}, res.FailingTests) {
		t.Errorf("a pass the agent planted in the shared cache: success %v, failing %v\n%s", res.Success, res.FailingTests, out)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestValidatorEnvironmentAndTranscript: a command gets Env, loses the
// variables Unset names, its whole output lands in its transcript beside
// the capped copy, and Confine rewrites it before it starts (its error
// keeps it from running).
func TestValidatorEnvironmentAndTranscript(t *testing.T) {
	t.Setenv("CRA_TEST_SECRET", "s3cret")
	t.Setenv("CRA_TEST_KEPT", "kept")
	dir, transcripts := t.TempDir(), t.TempDir()
	v := &Validator{
		Test:        `echo "secret=${CRA_TEST_SECRET:-none} kept=$CRA_TEST_KEPT extra=$CRA_TEST_EXTRA"; seq 1 20000`,
		Env:         []string{"CRA_TEST_EXTRA=x"},
		Unset:       []string{"CRA_TEST_SECRET"},
		Transcripts: transcripts,
		MaxOutput:   4096,
	}
	var confined []string
	v.Confine = func(cmd *exec.Cmd) error {
		confined = append(confined, strings.Join(cmd.Args, " "))
		return nil
	}
	res, err := v.Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check(CheckTest)
	if c == nil || !c.Passed || !strings.Contains(c.Output, "secret=none kept=kept extra=x") || len(c.Output) > 4200 {
		t.Fatalf("check: %+v", c)
	}
	whole, err := os.ReadFile(Transcript(transcripts, CheckTest))
	if err != nil || !strings.HasSuffix(string(whole), "\n19999\n20000\n") || !strings.Contains(string(whole), "\n5000\n") {
		t.Errorf("transcript: %d bytes, %v", len(whole), err)
	}
	if len(confined) != 1 || !strings.HasPrefix(confined[0], "sh -c ") {
		t.Errorf("confined %q, want the shell command once", confined)
	}
	v.Confine = func(*exec.Cmd) error { return errors.New("no sandbox here") }
	if _, err := v.Run(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "no sandbox here") {
		t.Errorf("a command Confine refuses: got %v", err)
	}
}
