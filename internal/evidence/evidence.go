// Package evidence gathers the deterministic evidence of a finished
// agent run, which the recycler reads before it asks a model anything
// (DESIGN.md: "evidence first, the model second"): how the run ended,
// what its branch changed against its base (files, lines, deleted and
// weakened tests, protected files), what it left uncommitted, whether
// the project's validation passes when run again, and whether its output
// shows it going round in circles.
//
// Validation that decides a verdict never runs in the agent's working
// copy, nor on what the agent could rewrite (DESIGN.md, "Trust"): it
// runs in a checkout of the branch's commit made for it outside the
// repository, sandboxed, with the protected files at the base's version
// (the files the commands name, the tests that existed at the base,
// [validation] protected). Where the test runner's reports can be read
// (package outcome), the branch's tests are compared with the base's,
// test by test: what passed at the base still runs and passes, and the
// tests the task names pass.
//
// Evidence is cheap and decided by code alone: the same branch, worktree
// and output give the same Evidence (validation aside, which runs the
// project's commands). Blockers says why the evidence does not allow a
// full_complete verdict; the model may lower the evidence's verdict,
// never raise it. Text renders it for the model's prompt and for the
// "Validation evidence" section of a note. The JSON form is stored in a
// task's review history and shown on the web board: its field names are
// stable.
package evidence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/validation"
)

// Input is what the recycler knows of one finished run.
type Input struct {
	// Repo is the repository's top level (the directory holding .git).
	Repo string
	// Branch is the task's branch, cra/<id>.
	Branch string
	// Worktree is the task's working copy, whose uncommitted work the
	// evidence lists; validation never runs in it.
	Worktree string
	// Subdir is the repository-relative directory (forward slashes)
	// validation runs in inside its checkout; "" is the top.
	Subdir string
	// Validator holds the project's validation commands; nil or one
	// without commands means validation is not configured.
	Validator *validation.Validator
	// Sandbox confines the validation commands.
	Sandbox Sandbox
	// Protected are [validation] protected's patterns.
	Protected []string
	// TestsMayChange says the task may change tests and the validation's
	// own files: its tests run as the branch has them, and a change to a
	// protected file stands against nothing.
	TestsMayChange bool
	// TaskText is the task's title, description and criteria: the tests
	// it names must pass on the branch.
	TaskText string
	// BaseCache is the directory where a base's test results are kept
	// (statedir's ValidationBases); "" keeps none.
	BaseCache string
	// Unset names environment variables validation does not get.
	Unset []string
	// ExitCode is the run's exit code; nil when it was killed, timed
	// out or never started.
	ExitCode *int
	// TimedOut says the run was killed at its timeout.
	TimedOut bool
	// RunFailed says the run did not exit 0 (exit N, killed, timed out).
	RunFailed bool
	// Output is the tail of the run's output.
	Output string
}

// Evidence is the deterministic record of one finished run.
type Evidence struct {
	Run  Run  `json:"run"`
	Diff Diff `json:"diff"`
	// Uncommitted are the git status --porcelain lines of the worktree
	// ("?? notes.txt", " M a.go"), read before validation runs: work the
	// branch does not hold.
	Uncommitted []string `json:"uncommitted"`
	// DeletedTests are the test files (IsTestFile) the branch deletes or
	// renames to a name that is not a test file's.
	DeletedTests []string `json:"deleted_tests"`
	// WeakenedTests are the test files the branch modifies so that more
	// assertion lines go than come.
	WeakenedTests []WeakenedTest `json:"weakened_tests"`
	// TestsUnchecked counts modified test files beyond the first 64,
	// whose assertions were not counted.
	TestsUnchecked int `json:"tests_unchecked,omitempty"`
	// WorktreeProblem says why the worktree could not be used (missing,
	// on another branch); "" when it was.
	WorktreeProblem string `json:"worktree_problem,omitempty"`
	// ValidationConfigured says the project has validation commands.
	ValidationConfigured bool `json:"validation_configured"`
	// Validation is the result of running them again in a checkout of
	// the branch; nil when they did not run.
	Validation *validation.Result `json:"validation,omitempty"`
	// ValidationSkipped says why configured validation did not run
	// again; that counts as not passed.
	ValidationSkipped string `json:"validation_skipped,omitempty"`
	// Checkout is where validation ran.
	Checkout *Checkout `json:"checkout,omitempty"`
	// Sandbox is how it was confined: "landlock", or "off" ([board]
	// sandbox = "off": unconfined, a warning).
	Sandbox string `json:"sandbox,omitempty"`
	// ProtectedChanges are the protected files the branch changes.
	ProtectedChanges []ProtectedChange `json:"protected_changes"`
	// TestsMayChange says the task allows them (Input.TestsMayChange).
	TestsMayChange bool `json:"tests_may_change,omitempty"`
	// Tests compares the branch's tests with the base's; nil where the
	// test runner's reports cannot be read.
	Tests *TestComparison `json:"tests,omitempty"`
	// Weaker says why the verdict rests on exit statuses alone (a runner
	// cra cannot read).
	Weaker string `json:"weaker,omitempty"`
	// Notes are what a person should know besides (a write the sandbox
	// refused, a cache not written).
	Notes []string `json:"notes,omitempty"`
	// OutputTail is the end of the run's output for a prompt: its last
	// 60 lines, at most 4 KB, without colour codes.
	OutputTail string `json:"output_tail"`
	// Loops are the signs of a stuck run in its output (DetectLoops).
	Loops []Loop `json:"loops"`
}

// Run is how the run ended.
type Run struct {
	// ExitCode is nil when the run was killed, timed out or never
	// started.
	ExitCode *int `json:"exit_code"`
	TimedOut bool `json:"timed_out"`
	Failed   bool `json:"run_failed"`
}

// Diff is the branch's committed work: base..branch.
type Diff struct {
	// Base is the commit the branch forked from the repository's HEAD
	// (git merge-base HEAD branch).
	Base string `json:"base"`
	// Unavailable says why there is no diff (the branch does not exist);
	// "" when there is one.
	Unavailable string `json:"unavailable,omitempty"`
	// Empty says the branch changes no file against its base.
	Empty bool   `json:"empty"`
	Files []File `json:"files"`
	// LinesAdded and LinesRemoved sum the text files' line counts.
	LinesAdded   int `json:"lines_added"`
	LinesRemoved int `json:"lines_removed"`
	// Stat is git diff --stat, for a person's glance.
	Stat string `json:"stat"`
}

// File is one file the branch changes.
type File struct {
	Path string `json:"path"`
	// OldPath is the path before a rename or a copy.
	OldPath string `json:"old_path,omitempty"`
	// Status is added, modified, deleted, renamed, copied or
	// type_changed.
	Status string `json:"status"`
	// LinesAdded and LinesRemoved are -1 for a binary file.
	LinesAdded   int  `json:"lines_added"`
	LinesRemoved int  `json:"lines_removed"`
	Test         bool `json:"test,omitempty"`
}

// WeakenedTest is a test file that lost assertions.
type WeakenedTest struct {
	Path    string `json:"path"`
	Removed int    `json:"assertions_removed"`
	Added   int    `json:"assertions_added"`
	// SkipsAdded is how many more tests the file skips than before
	// (t.Skip, @pytest.mark.skip, it.skip, .only); 0 or less: none.
	SkipsAdded int `json:"skips_added,omitempty"`
}

// maxTestPatches bounds the test files whose patches are read.
const maxTestPatches = 64

// maxTestPatch caps one test file's patch.
const maxTestPatch = 4 << 20

// Collect gathers the evidence of a run. It reads the branch's diff in
// Repo and the worktree's status, and runs the validation commands again
// when they are configured: in a checkout of Branch's commit made for
// them, sandboxed, the protected files at the base's version (verify). A
// missing branch or worktree is evidence, not an error; the error is for
// a cancelled context and for git failing in a repository that is
// there.
func Collect(ctx context.Context, in Input) (*Evidence, error) {
	e := &Evidence{
		Run:              Run{TimedOut: in.TimedOut, Failed: in.RunFailed},
		Diff:             Diff{Files: []File{}},
		Uncommitted:      []string{},
		DeletedTests:     []string{},
		ProtectedChanges: []ProtectedChange{},
		TestsMayChange:   in.TestsMayChange,
		WeakenedTests:    []WeakenedTest{},
		OutputTail:       tail(in.Output, 60, 4096),
		Loops:            DetectLoops(in.Output),
	}
	if in.ExitCode != nil {
		code := *in.ExitCode // the caller's variable stays the caller's
		e.Run.ExitCode = &code
	}
	if err := e.collectDiff(ctx, in); err != nil {
		return nil, err
	}
	problem, err := worktreeProblem(ctx, in)
	if err != nil {
		return nil, err
	}
	if problem == "" {
		// Before validation runs: what its commands leave (caches, build
		// output) is not the agent's.
		st, err := gitx.Status(ctx, in.Worktree)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			problem = fmt.Sprintf("the status of worktree %s cannot be read: %v", in.Worktree, err)
		case st != nil:
			e.Uncommitted = st
		}
	}
	e.WorktreeProblem = problem
	e.ValidationConfigured = in.Validator.Configured()
	if !e.ValidationConfigured {
		return e, nil
	}
	if err := e.verify(ctx, in); err != nil {
		return nil, err
	}
	return e, nil
}

// collectDiff reads base..branch: the files, the line counts, the stat,
// and the deleted and weakened tests.
func (e *Evidence) collectDiff(ctx context.Context, in Input) error {
	ok, err := gitx.BranchExists(ctx, in.Repo, in.Branch)
	if err != nil {
		return fmt.Errorf("read branch %s: %w", in.Branch, err)
	}
	if !ok || in.Branch == "" {
		e.Diff.Unavailable = fmt.Sprintf("branch %s does not exist", in.Branch)
		return nil
	}
	rev := "refs/heads/" + in.Branch
	base, err := gitx.MergeBase(ctx, in.Repo, "HEAD", rev)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.Diff.Unavailable = fmt.Sprintf("branch %s has no base on HEAD: %v", in.Branch, err)
		return nil
	}
	e.Diff.Base = base
	files, err := gitx.DiffFiles(ctx, in.Repo, base, rev)
	if err != nil {
		return fmt.Errorf("read the diff of %s: %w", in.Branch, err)
	}
	e.Diff.Empty = len(files) == 0
	if e.Diff.Stat, err = gitx.DiffStat(ctx, in.Repo, base, rev); err != nil {
		return fmt.Errorf("read the diff of %s: %w", in.Branch, err)
	}
	checked := 0
	for _, f := range files {
		e.Diff.Files = append(e.Diff.Files, File{Path: f.Path, OldPath: f.OldPath, Status: f.Status,
			LinesAdded: f.Insertions, LinesRemoved: f.Deletions, Test: IsTestFile(f.Path) || IsTestFile(f.OldPath)})
		e.Diff.LinesAdded += max(f.Insertions, 0)
		e.Diff.LinesRemoved += max(f.Deletions, 0)
		switch {
		case f.Status == gitx.StatusDeleted && IsTestFile(f.Path):
			e.DeletedTests = append(e.DeletedTests, f.Path)
		case f.Status == gitx.StatusRenamed && IsTestFile(f.OldPath) && !IsTestFile(f.Path):
			e.DeletedTests = append(e.DeletedTests, f.OldPath)
		case f.Status == gitx.StatusAdded || f.Status == gitx.StatusCopied || !IsTestFile(f.Path) || f.Insertions < 0:
			// A new test file only adds assertions; a binary one has no lines.
		case checked == maxTestPatches:
			e.TestsUnchecked++
		default:
			checked++
			paths := []string{f.Path}
			if f.OldPath != "" {
				paths = append(paths, f.OldPath)
			}
			patch, _, err := gitx.DiffPatch(ctx, in.Repo, base, rev, paths, maxTestPatch)
			if err != nil {
				return fmt.Errorf("read the diff of %s: %w", f.Path, err)
			}
			if c := countAssertions(patch, isJS(f.Path)); c.weakened() {
				e.WeakenedTests = append(e.WeakenedTests, WeakenedTest{Path: f.Path, Removed: c.removed, Added: c.added, SkipsAdded: max(c.skippedTests(), 0)})
			}
		}
	}
	return nil
}

// worktreeProblem says why validation cannot run again in in.Worktree,
// or "" when it can: the directory is there, is a work tree's top level
// and has in.Branch checked out. Its error is a cancelled context.
func worktreeProblem(ctx context.Context, in Input) (string, error) {
	if in.Worktree == "" {
		return "the run has no worktree", nil
	}
	fi, err := os.Stat(in.Worktree)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("worktree %s is missing", in.Worktree), nil
	case err != nil:
		return fmt.Sprintf("worktree %s cannot be read: %v", in.Worktree, err), nil
	case !fi.IsDir():
		return fmt.Sprintf("worktree %s is not a directory", in.Worktree), nil
	}
	top, _, err := gitx.TopLevel(ctx, in.Worktree)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("worktree %s is not a git work tree: %v", in.Worktree, err), nil
	}
	if !samePath(top, in.Worktree) {
		return fmt.Sprintf("%s is not a worktree of its own (it is inside %s)", in.Worktree, top), nil
	}
	branch, err := gitx.CurrentBranch(ctx, in.Worktree)
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		return fmt.Sprintf("worktree %s is not on a branch (%v)", in.Worktree, err), nil
	}
	if branch != in.Branch {
		return fmt.Sprintf("worktree %s is on branch %s, not %s", in.Worktree, branch, in.Branch), nil
	}
	return "", nil
}

// samePath reports whether a and b name the same directory, symbolic
// links resolved (git prints the resolved path).
func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
