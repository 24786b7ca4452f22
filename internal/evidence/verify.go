package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/outcome"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/validation"
)

// Sandbox is how the validation commands are confined (package sandbox).
type Sandbox struct {
	// Off runs them unconfined, with a warning in the evidence ([board]
	// sandbox = "off").
	Off bool
	// Wrap confines cmd so that it writes only the directories write
	// names (sandbox.Wrap with the cra binary as its launcher); required
	// unless Off.
	Wrap func(cmd *exec.Cmd, write []string) error
	// Caches are more directories the commands may write ([validation]
	// caches, expanded).
	Caches []string
}

// Checkout is where validation ran: a checkout of the branch's commit
// made for it, outside the repository, with the protected files at the
// base's version, removed afterwards.
type Checkout struct {
	// Commit is the branch's commit validated, resolved once.
	Commit string `json:"commit"`
	// Millis is what making it and putting the protected files back
	// took.
	Millis int64 `json:"ms"`
}

// TestComparison is the branch's tests against the base's (outcome.Compare).
type TestComparison struct {
	// Read are the reports read on the branch.
	Read []outcome.Kind `json:"read"`
	// BaseCommit is the base whose results it compares with; BaseCached
	// says they came from the cache.
	BaseCommit string `json:"base_commit"`
	BaseCached bool   `json:"base_cached,omitempty"`
	// BaseUnreadable says why the base gave no results: then nothing is
	// compared, and the branch's results stand alone.
	BaseUnreadable string `json:"base_unreadable,omitempty"`
	// BranchMissing says why the branch's run gave no results although
	// the base's did: a run that ended before its runner reported.
	BranchMissing string `json:"branch_missing,omitempty"`
	outcome.Comparison
}

// Comparable says both runs gave results, so the comparison stands.
func (c *TestComparison) Comparable() bool {
	return c != nil && c.BaseUnreadable == "" && c.BranchMissing == ""
}

// planted are the files that, in a directory above a checkout, change how
// its tests run: a runner finds them by walking up (pytest's rootdir and
// conftest.py, go.work, node_modules).
var planted = []string{"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "go.work", "node_modules", "package.json", "sitecustomize.py"}

// baseResults is what the cache keeps of a base's run.
type baseResults struct {
	Base    string           `json:"base"`
	Command string           `json:"command"`
	Time    time.Time        `json:"time"`
	Results *outcome.Results `json:"results"`
}

// cacheVersion changes when what a cached base holds changes meaning.
const cacheVersion = "1"

// verify runs validation in a fresh checkout of the branch's commit, with
// the protected files at the base's version, sandboxed, and compares its
// tests with the base's where the runner's reports can be read. What
// could not be done is evidence (ValidationSkipped); the error is for a
// cancelled context.
func (e *Evidence) verify(ctx context.Context, in Input) error {
	v := in.Validator
	if e.Diff.Unavailable != "" {
		e.ValidationSkipped = "the branch cannot be read: " + e.Diff.Unavailable
		return nil
	}
	switch {
	case in.Sandbox.Off:
		e.Sandbox = "off"
	case in.Sandbox.Wrap == nil:
		e.ValidationSkipped = "validation cannot be confined here (cra does not know its own binary): run it from cra, or set [board] sandbox = \"off\" to run it unconfined"
		return nil
	case sandbox.ABI() == 0:
		e.ValidationSkipped = sandbox.ErrUnavailable.Error() + `: validation that decides a verdict runs confined; set [board] sandbox = "off" to run it unconfined, with a warning`
		return nil
	default:
		e.Sandbox = "landlock"
	}
	commit, err := gitx.RevParse(ctx, in.Repo, "refs/heads/"+in.Branch)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.ValidationSkipped = err.Error()
		return nil
	}
	prot, err := newProtection(ctx, in.Repo, e.Diff.Base, in.Subdir, []string{v.Test, v.Lint, v.Typecheck}, in.Protected)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.ValidationSkipped = err.Error()
		return nil
	}
	e.ProtectedChanges = prot.changes(e.Diff.Files, func(p string) []byte {
		data, _ := gitx.ShowFile(ctx, in.Repo, commit, p)
		if len(data) > maxHookScan {
			data = data[:maxHookScan]
		}
		return data
	})
	root, err := os.MkdirTemp("", "cra-verify-")
	if err != nil {
		return fmt.Errorf("make a checkout for validation: %w", err)
	}
	defer os.RemoveAll(root)
	sub := filepath.FromSlash(strings.Trim(in.Subdir, "/"))
	if sub != "" && !filepath.IsLocal(sub) {
		e.ValidationSkipped = fmt.Sprintf("the directory %q is not inside the repository", in.Subdir)
		return nil
	}
	if problem := plantedAbove(root); problem != "" {
		e.ValidationSkipped = problem
		return nil
	}

	test, sources := outcome.Instrument(v.Test, filepath.Join(root, "reports"))
	var base *outcome.Results
	cmp := &TestComparison{BaseCommit: e.Diff.Base}
	if len(sources) > 0 {
		base, cmp.BaseCached, cmp.BaseUnreadable, err = e.baseRun(ctx, in, root, sub)
		if err != nil {
			return err
		}
	} else {
		e.Weaker = weaker(v.Test)
	}

	tree := filepath.Join(root, "branch")
	start := time.Now()
	if err := gitx.AddDetachedWorktree(ctx, in.Repo, tree, commit); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.ValidationSkipped = fmt.Sprintf("the branch's commit %.12s could not be checked out: %v", commit, err)
		return nil
	}
	defer gitx.RemoveDetachedWorktree(context.WithoutCancel(ctx), in.Repo, tree)
	if err := e.restore(ctx, in, tree); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.ValidationSkipped = err.Error()
		return nil
	}
	e.Checkout = &Checkout{Commit: commit, Millis: time.Since(start).Milliseconds()}
	dir := filepath.Join(tree, sub)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		e.ValidationSkipped = fmt.Sprintf("the directory %s is not in the branch's commit %.12s", in.Subdir, commit)
		return nil
	}
	run, err := e.runner(in, root, tree, "reports")
	if err != nil {
		return err
	}
	run.Test = test
	res, err := run.Run(ctx, dir)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		e.ValidationSkipped = fmt.Sprintf("validation could not run: %v", err)
		return nil
	}
	e.Validation = res
	if c := res.Check(validation.CheckTest); c != nil {
		c.Command = v.Test // as configured, not as instrumented
		if hasKind(sources, outcome.GoJSON) {
			c.Output = outcome.GoText(c.Output)
			if !c.Passed {
				res.FailingTests = validation.FailingTests(c.Output)
			}
		}
	}
	e.Notes = append(e.Notes, refusedWrites(res, e.Sandbox)...)
	if len(sources) == 0 {
		return nil
	}
	branch := outcome.Read(sources, func() (io.ReadCloser, error) {
		return os.Open(validation.Transcript(filepath.Join(root, "reports"), validation.CheckTest))
	})
	branch.Relative(tree)
	cmp.Read = branch.Read
	switch {
	case !branch.Readable() && base != nil:
		cmp.BranchMissing = strings.Join(branch.Missing, "; ")
	case !branch.Readable():
		// Neither run reported: the exit status alone, as for a runner
		// cra cannot read.
		e.Weaker = fmt.Sprintf("the test runner's per-test results could not be read (%s): the verdict rests on exit statuses alone", strings.Join(branch.Missing, "; "))
		return nil
	}
	if base == nil {
		base = &outcome.Results{Tests: map[string]outcome.Status{}}
	}
	cmp.Comparison = outcome.Compare(base, branch, in.TaskText)
	if !branch.Readable() {
		cmp.Comparison = outcome.Comparison{Base: base.Count()}
	}
	e.Tests = cmp
	return nil
}

// restore puts the protected files the branch changed back at the base's
// version in the checkout at tree, and removes those it added: all of
// them, or, for a task whose tests may change, the validation's own files
// and validation.protected only.
func (e *Evidence) restore(ctx context.Context, in Input, tree string) error {
	var back, drop []string
	for i, c := range e.ProtectedChanges {
		if in.TestsMayChange && (c.Why == WhyTest || strings.HasPrefix(c.Why, WhyHook)) {
			continue
		}
		if c.Status == gitx.StatusAdded {
			drop = append(drop, c.Path)
		} else {
			back = append(back, c.Path)
		}
		e.ProtectedChanges[i].Restored = true
	}
	if err := gitx.RestorePaths(ctx, tree, e.Diff.Base, back); err != nil {
		return fmt.Errorf("the protected files could not be put back at the base: %w", err)
	}
	if err := gitx.RemovePaths(ctx, tree, drop); err != nil {
		return fmt.Errorf("the protected files the branch added could not be taken out: %w", err)
	}
	return nil
}

// runner is the validator of one checkout: in.Validator's commands and
// timeout, confined to write root (the checkout, its temp directory, the
// reports) and the caches, without the secrets in.Unset names, its
// transcripts in root/reports.
func (e *Evidence) runner(in Input, root, tree, reports string) (*validation.Validator, error) {
	v := *in.Validator
	tmp := filepath.Join(root, "tmp")
	v.Transcripts = filepath.Join(root, reports)
	for _, d := range []string{tmp, v.Transcripts} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("make a directory for validation: %w", err)
		}
	}
	v.Env = append(append([]string(nil), v.Env...), "TMPDIR="+tmp)
	v.Unset = append(append([]string(nil), v.Unset...), in.Unset...)
	if !in.Sandbox.Off {
		write := append([]string{tree, tmp, v.Transcripts}, in.Sandbox.Caches...)
		wrap := in.Sandbox.Wrap
		v.Confine = func(cmd *exec.Cmd) error { return wrap(cmd, write) }
	}
	return &v, nil
}

// baseRun returns the base's test results: from the cache, or from the
// test command run on a checkout of the base (sandboxed as the branch's
// is), then cached. why says why there are none.
func (e *Evidence) baseRun(ctx context.Context, in Input, root, sub string) (res *outcome.Results, cached bool, why string, err error) {
	key := baseKey(e.Diff.Base, in.Subdir, in.Validator.Test)
	var cacheFile string
	if in.BaseCache != "" {
		cacheFile = filepath.Join(in.BaseCache, key+".json")
		var c baseResults
		if data, err := os.ReadFile(cacheFile); err == nil && json.Unmarshal(data, &c) == nil &&
			c.Base == e.Diff.Base && c.Command == in.Validator.Test && c.Results.Readable() {
			return c.Results, true, "", nil
		}
	}
	tree := filepath.Join(root, "base")
	if err := gitx.AddDetachedWorktree(ctx, in.Repo, tree, e.Diff.Base); err != nil {
		if ctx.Err() != nil {
			return nil, false, "", ctx.Err()
		}
		return nil, false, fmt.Sprintf("the base could not be checked out: %v", err), nil
	}
	defer gitx.RemoveDetachedWorktree(context.WithoutCancel(ctx), in.Repo, tree)
	dir := filepath.Join(tree, sub)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, false, fmt.Sprintf("the directory %s is not in the base", in.Subdir), nil
	}
	run, err := e.runner(in, root, tree, "base-reports")
	if err != nil {
		return nil, false, "", err
	}
	test, sources := outcome.Instrument(in.Validator.Test, run.Transcripts)
	run.Test, run.Lint, run.Typecheck = test, "", ""
	if _, err := run.Run(ctx, dir); err != nil {
		if ctx.Err() != nil {
			return nil, false, "", ctx.Err()
		}
		return nil, false, fmt.Sprintf("the tests could not run at the base: %v", err), nil
	}
	res = outcome.Read(sources, func() (io.ReadCloser, error) {
		return os.Open(validation.Transcript(run.Transcripts, validation.CheckTest))
	})
	res.Relative(tree)
	if !res.Readable() {
		return nil, false, strings.Join(res.Missing, "; "), nil
	}
	if cacheFile != "" {
		data, _ := json.Marshal(baseResults{Base: e.Diff.Base, Command: in.Validator.Test, Time: time.Now().UTC(), Results: res})
		if err := os.MkdirAll(in.BaseCache, 0o755); err == nil {
			if err := atomicfile.Write(cacheFile, data, 0o644); err != nil {
				e.Notes = append(e.Notes, "the base's test results were not cached: "+err.Error())
			}
		}
	}
	return res, false, "", nil
}

// baseKey names a base's cached results: its commit, where validation
// runs, and the test command.
func baseKey(base, subdir, command string) string {
	h := sha256.Sum256([]byte(cacheVersion + "\x00" + base + "\x00" + subdir + "\x00" + command))
	return hex.EncodeToString(h[:16])
}

// plantedAbove says which file in a directory above dir would change how
// tests in dir run, or "": the runners look upwards for their
// configuration, and a checkout must not take any from outside itself.
func plantedAbove(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		for _, name := range planted {
			if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
				return fmt.Sprintf("%s is above the validation checkout (%s), where test runners would read it: remove it, or set TMPDIR to a directory of cra's own", filepath.Join(d, name), dir)
			}
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// weaker says why a test command's results cannot be read.
func weaker(test string) string {
	if strings.TrimSpace(test) == "" {
		return "no [validation] test command: the verdict rests on the other checks' exit statuses"
	}
	return fmt.Sprintf("cra cannot read per-test results from %q (it reads go test, pytest and node --test): the verdict rests on exit statuses alone, so a test that stopped running goes unseen", clipBytes(test, maxCommand))
}

func hasKind(sources []outcome.Source, k outcome.Kind) bool {
	for _, s := range sources {
		if s.Kind == k {
			return true
		}
	}
	return false
}

// refusedWrites notes, for a confined check that failed with a refused
// write in its output, where to declare the directory it wanted.
func refusedWrites(res *validation.Result, mode string) []string {
	if mode != "landlock" {
		return nil
	}
	var out []string
	for _, c := range res.Checks {
		if c.Passed {
			continue
		}
		o := strings.ToLower(c.Output)
		if strings.Contains(o, "permission denied") || strings.Contains(o, "read-only file system") || strings.Contains(o, "operation not permitted") {
			out = append(out, fmt.Sprintf("validation %s failed with a refused write: the sandbox lets it write only its checkout and temp directory; declare a cache it needs in [validation] caches (for Go, the output of 'go env GOCACHE')", c.Name))
		}
	}
	return out
}
