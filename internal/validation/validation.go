// Package validation runs a project's own checks, the [validation] test,
// lint and typecheck commands, in a working copy and reads their outcome:
// what passed, what timed out, which tests failed (seed 001 Phase 3,
// §18). agent validates each attempt with it, evidence re-runs it on a
// finished run's branch, and review and run build it from the config
// through FromConfig, the one reader of [validation].
package validation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/procgroup"
)

// DefaultTimeout bounds each validation command when [validation]
// timeout is unset.
const DefaultTimeout = 10 * time.Minute

// The validation checks, in the order they run.
const (
	CheckTest      = "test"
	CheckLint      = "lint"
	CheckTypecheck = "typecheck"
)

// The failure classes of a failed check, as an attempt's retry context
// names them (seed 001 §13).
const (
	ClassTest      = "test_failure"      // [validation] test failed
	ClassLint      = "lint_failure"      // [validation] lint failed
	ClassTypecheck = "typecheck_failure" // [validation] typecheck failed
)

// Section is where a validator's commands come from: *config.Config,
// whose [validation] section this package reads without importing
// config (it sits below it).
type Section interface {
	// ValidationCommands returns the test, lint and typecheck commands
	// and the timeout (0 when unset); ok is false when there is no
	// section.
	ValidationCommands() (test, lint, typecheck string, timeout time.Duration, ok bool)
}

// FromConfig returns the validator of the [validation] section, or nil
// when there is none (a nil Validator is not Configured and validates
// nothing). Its timeout was checked by config.Validate.
func FromConfig(cfg Section) *Validator {
	if cfg == nil {
		return nil
	}
	test, lint, typecheck, timeout, ok := cfg.ValidationCommands()
	if !ok {
		return nil
	}
	return &Validator{Test: test, Lint: lint, Typecheck: typecheck, Timeout: timeout}
}

// Validator runs the project's own checks in a worktree (seed 001 Phase
// 3): the [validation] test, lint and typecheck commands, each through
// the shell, each bounded by Timeout. An empty command is skipped.
// Nothing a command starts outlives it: when it ends, times out or is
// cancelled, what it left running is killed, even processes that left its
// process group (see shellCommand).
type Validator struct {
	Test      string
	Lint      string
	Typecheck string
	// Timeout bounds each command; 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxOutput caps the output kept of each command (its head and its
	// tail); 0 means 256 KiB.
	MaxOutput int
	// Confine, when set, rewrites each command before it starts so that
	// it runs confined (sandbox.Wrap); its error keeps the command from
	// running and is Run's. Nil runs the commands as they are.
	Confine func(cmd *exec.Cmd) error
	// Env is added to each command's environment (TMPDIR, for one).
	Env []string
	// Unset names variables taken out of each command's environment: the
	// secrets of the process that validates (a model's API key), which
	// the code under test has no need of.
	Unset []string
	// Transcripts, when set, is a directory where each check's whole
	// output is also written, as <name>.out (at most MaxTranscript
	// bytes): what a reader of per-test reports needs whole.
	Transcripts string
}

// reapGrace is how long a check's group has between SIGTERM and SIGKILL
// when cra died mid-check.
const reapGrace = 2 * time.Second

// MaxTranscript bounds a check's transcript.
const MaxTranscript = 512 << 20

// Transcript is the file of check name's whole output under dir.
func Transcript(dir, name string) string { return filepath.Join(dir, name+".out") }

// Configured reports whether any command is set.
func (v *Validator) Configured() bool {
	return v != nil && (v.Test != "" || v.Lint != "" || v.Typecheck != "")
}

// CheckResult is one command's run.
type CheckResult struct {
	Name     string `json:"name"`
	Command  string `json:"command"`
	Passed   bool   `json:"passed"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Timeout is the bound the command ran under.
	Timeout  time.Duration `json:"timeout_ns,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// Output is stdout and stderr interleaved, capped.
	Output string `json:"output"`
}

// Result is the outcome of validating one attempt (seed 001 §18), a
// validation_results row.
type Result struct {
	Success bool          `json:"success"`
	Checks  []CheckResult `json:"checks"`
	// FailingTests are the names read from the test command's output.
	FailingTests []string `json:"failing_tests"`
}

// Check returns the result of the named check, or nil when it did not run.
func (r *Result) Check(name string) *CheckResult {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// FirstFailure returns the failure class of the first check that failed,
// tests first: a failing test says most about the task.
func (r *Result) FirstFailure() string {
	for _, c := range []struct{ name, class string }{{CheckTest, ClassTest}, {CheckLint, ClassLint}, {CheckTypecheck, ClassTypecheck}} {
		if ch := r.Check(c.name); ch != nil && !ch.Passed {
			return c.class
		}
	}
	return ""
}

// Run runs every configured command in dir, all of them even after a
// failure, so the evidence is complete. Its error is for a cancelled
// context or a shell that cannot start; a failing command is a result.
func (v *Validator) Run(ctx context.Context, dir string) (*Result, error) {
	res := &Result{Success: true, FailingTests: []string{}}
	for _, c := range []struct{ name, cmd string }{{CheckTest, v.Test}, {CheckLint, v.Lint}, {CheckTypecheck, v.Typecheck}} {
		if strings.TrimSpace(c.cmd) == "" {
			continue
		}
		cr, err := v.run(ctx, dir, c.name, c.cmd)
		if err != nil {
			return nil, err
		}
		res.Checks = append(res.Checks, cr)
		if !cr.Passed {
			res.Success = false
			if c.name == CheckTest {
				res.FailingTests = FailingTests(cr.Output)
			}
		}
	}
	return res, nil
}

func (v *Validator) run(ctx context.Context, dir, name, command string) (CheckResult, error) {
	timeout := v.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	max := v.MaxOutput
	if max <= 0 {
		max = 256 << 10
	}
	cr := CheckResult{Name: name, Command: command, Timeout: timeout}
	out := &cappedBuffer{max: max}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, tag, killLeft := shellCommand(cctx, command)
	cmd.Dir = dir
	cmd.Env = environ(cmd.Env, append(slices.Clip(v.Env), uncachedGo(v.Env)), v.Unset)
	if v.Confine != nil {
		if err := v.Confine(cmd); err != nil {
			return cr, fmt.Errorf("validation %s: %w", name, err)
		}
	}
	var sink io.Writer = out
	if v.Transcripts != "" {
		f, err := os.Create(Transcript(v.Transcripts, name))
		if err != nil {
			return cr, fmt.Errorf("validation %s: %w", name, err)
		}
		defer f.Close()
		sink = io.MultiWriter(out, &limitWriter{w: f, n: MaxTranscript})
	}
	// The command writes to a pipe of cra's own, not through exec's
	// copying: Wait returns when the command exits, even if what it left
	// running holds the pipe, and those are killed before the pipe is
	// read to its end.
	pr, pw, err := os.Pipe()
	if err != nil {
		return cr, fmt.Errorf("validation %s: %w", name, err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	// A command that outlives its kill must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return cr, fmt.Errorf("validation %s: %w", name, err)
	}
	// Should cra be killed mid-check (kill -9), the check's group goes
	// with it, and what left the group carrying its token: a test run left behind by a dead daemon or reviewer holds
	// the working copy and the machine for no one.
	reaper, rerr := procgroup.Reap(cmd.Process.Pid, reapGrace, tag)
	if rerr != nil {
		fmt.Fprintf(sink, "[cra: %s is not watched should cra die mid-check (%v)]\n", name, rerr)
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(sink, pr)
		close(copied)
	}()
	err = cmd.Wait()
	cr.Duration = time.Since(start)
	left := killLeft()
	reaper.Done() // nil-safe; after the group is ended above
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		pr.Close() // a holder of the pipe escaped the kill: stop reading
	}
	if ctx.Err() != nil {
		return cr, ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		cr.Passed = true
	case cctx.Err() != nil:
		cr.TimedOut, cr.ExitCode = true, -1
		out.WriteString(fmt.Sprintf("\n[cra: %s timed out after %s and was killed, with every process it started]\n", name, timeout))
	case errors.As(err, &ee):
		cr.ExitCode = ee.ExitCode()
	default:
		return cr, fmt.Errorf("validation %s: %w", name, err)
	}
	if left > 0 && !cr.TimedOut {
		out.WriteString(fmt.Sprintf("\n[cra: %s left %d process(es) running; they were killed]\n", name, left))
	}
	cr.Output = out.String()
	return cr, nil
}

// environ is base (nil: this process's environment) with the variables
// unset names taken out and add appended.
// uncachedGo is GOFLAGS for a validation command: the flags the
// environment gives (env's last, else this process's) and -count=1, so
// that go test runs the tests rather than replay a pass from the build
// cache. A cache the agents may write too (a profile's caches, as
// [validation] caches) holds the passes an agent recorded: a test run
// where the code read what the test log does not see (syscall.Getenv, a
// raw open) is keyed as if it read nothing, and with -trimpath it
// replays in any checkout. go build and go vet ignore the flag.
func uncachedGo(env []string) string {
	flags := os.Getenv("GOFLAGS")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			flags = v
		}
	}
	return "GOFLAGS=" + strings.TrimSpace(flags+" -count=1")
}

func environ(base, add, unset []string) []string {
	if len(add) == 0 && len(unset) == 0 {
		return base
	}
	if base == nil {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(unset, name) {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// limitWriter writes at most n bytes to w and drops the rest, never
// failing the copy that feeds it.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		if _, err := l.w.Write(p[:k]); err != nil {
			l.n = 0
		} else {
			l.n -= k
		}
	}
	return len(p), nil
}

// cappedBuffer keeps the first quarter and the last three quarters of at
// most max bytes of what is written: a runner's first failure and its
// summary both survive.
type cappedBuffer struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte
	dropped int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max/4 - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tail = append(b.tail, p...)
	if limit := b.max - b.max/4; len(b.tail) > limit {
		cut := len(b.tail) - limit
		b.dropped += cut
		b.tail = append(b.tail[:0], b.tail[cut:]...)
	}
	return n, nil
}

func (b *cappedBuffer) WriteString(s string) { b.Write([]byte(s)) }

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped == 0 {
		return string(b.head) + string(b.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes of output left out …]\n%s", b.head, b.dropped, b.tail)
}

// Failing-test lines of the runners cra reads.
var (
	goFail       = lazyre.New(`^\s*--- FAIL: (\S+)`)
	goBuildFail  = lazyre.New(`^FAIL\s+(\S+)\s+\[(build failed|setup failed)\]`)
	pytestShort  = lazyre.New(`^(?:FAILED|ERROR) (\S+::\S+)`)
	pytestLong   = lazyre.New(`^(\S+::\S+) (?:FAILED|ERROR)\b`)
	jestTitle    = lazyre.New(`^\s*● (.+?)\s*$`)
	vitestFail   = lazyre.New(`^\s*FAIL\s+(\S+\s+>\s+.+?)\s*$`)
	crossMark    = lazyre.New(`^\s*[×✕✗✖]\s+(.+?)(?:\s+\(?\d+(?:\.\d+)?\s*m?s\)?)?\s*$`)
	tapNotOK     = lazyre.New(`^\s*not ok \d+ (?:- )?(.+?)\s*$`)
	unittestFail = lazyre.New(`^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)`)
	tapDirective = lazyre.New(`#\s*(?i:todo|skip)\b`)
)

// maxFailingTests bounds the names kept.
const maxFailingTests = 50

// FailingTests reads the names of failing tests from a test runner's
// output: go test (--- FAIL, build failures), pytest (FAILED/ERROR
// node ids), Python's unittest (FAIL: and ERROR: lines, named
// module.Class.test), jest (● titles), vitest (FAIL file > name, ×), and
// node:test (TAP not ok, spec ✖). Names come in order of appearance, once each.
func FailingTests(output string) []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] || len(out) >= maxFailingTests {
			return
		}
		seen[s] = true
		out = append(out, s)
	}
	for _, l := range strings.Split(output, "\n") {
		l = strings.TrimRight(l, "\r")
		if m := goFail().FindStringSubmatch(l); m != nil {
			add(m[1])
		} else if m := goBuildFail().FindStringSubmatch(l); m != nil {
			add(m[1] + " [" + m[2] + "]")
		} else if m := unittestFail().FindStringSubmatch(l); m != nil {
			if strings.HasSuffix(m[2], "."+m[1]) {
				add(m[2]) // Python 3.11+ names the test in full
			} else {
				add(m[2] + "." + m[1])
			}
		} else if m := pytestShort().FindStringSubmatch(l); m != nil {
			add(m[1])
		} else if m := pytestLong().FindStringSubmatch(l); m != nil {
			add(m[1])
		} else if m := jestTitle().FindStringSubmatch(l); m != nil {
			if !strings.HasPrefix(m[1], "Test suite failed to run") && !strings.HasPrefix(m[1], "Console") {
				add(m[1])
			}
		} else if m := vitestFail().FindStringSubmatch(l); m != nil {
			add(m[1])
		} else if m := crossMark().FindStringSubmatch(l); m != nil {
			if m[1] != "failing tests:" {
				add(m[1])
			}
		} else if m := tapNotOK().FindStringSubmatch(l); m != nil && !tapDirective().MatchString(l) {
			add(m[1])
		}
	}
	return out
}
