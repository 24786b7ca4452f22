package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// Ops are the operations people, their commands and the daemon's API call
// on a repository's board. *Fleet does them in process; server.Client
// asks a running daemon to do them, so that a command does not know which
// answered (gopls's connect).
type Ops interface {
	// Add adds t to pending: its start entry first, then its file.
	Add(ctx context.Context, t *board.Task) (*board.Task, error)
	// Edit changes the fields p sets and returns the names of those that
	// changed.
	Edit(ctx context.Context, id string, p Patch) (*board.Task, []string, error)
	// Move is a person's move of task id to folder to, and returns the
	// folder it left.
	Move(ctx context.Context, id string, to board.Folder, why string) (board.Folder, error)
	// Answer records a person's answer; resumed says the task went back
	// to pending with it.
	Answer(ctx context.Context, id, text string) (resumed bool, err error)
	// List returns folder's tasks ("" for all), and the task files that
	// could not be read.
	List(ctx context.Context, folder board.Folder) (*Listing, error)
	// NeedsYou returns the tasks that wait for a person, with their need.
	NeedsYou(ctx context.Context) ([]NeedsYou, error)
	// Show returns a task with its log entries, runs and reviews.
	Show(ctx context.Context, id string) (*Detail, error)
	// RunOne runs task id once, now (a completed or failed task is moved
	// back to pending first, as a person's move), and returns how it
	// ended.
	RunOne(ctx context.Context, id string) (*runner.Outcome, error)
	// RecycleOnce runs one recycler tick, its lines to out.
	RecycleOnce(ctx context.Context, out io.Writer) (*RecycleReport, error)
	// Stop stops task id's running run, as a person; no failure counts.
	Stop(ctx context.Context, id, why string) (*Stopped, error)
	// CloseTask closes task id as won't-do; Reopen undoes a close or a
	// stop.
	CloseTask(ctx context.Context, id, why string) (*board.Task, error)
	Reopen(ctx context.Context, id string) (*board.Task, error)
	// Merge merges task id's branch; PR pushes it and opens a pull
	// request.
	Merge(ctx context.Context, id string, o MergeOptions) (*board.Task, error)
	PR(ctx context.Context, id string, o PROptions) (*PullRequest, error)
	// Close releases what the operations hold.
	Close() error
}

var _ Ops = (*Fleet)(nil)

// Review is a recycler's review of one run, as 'cra task show' and the
// board's drawer show it.
type Review = verdict.Review

// Patch is an edit of a task's descriptive fields: each set field
// replaces the task's.
type Patch struct {
	Title       *string         `json:"title,omitempty"`
	Need        *string         `json:"need,omitempty"`
	Description *string         `json:"description,omitempty"`
	Type        *string         `json:"type,omitempty"`
	Kind        *board.Kind     `json:"kind,omitempty"`
	Priority    *board.Priority `json:"priority,omitempty"`
	Milestone   *string         `json:"milestone,omitempty"`
	After       *[]string       `json:"after,omitempty"`
	Agent       *string         `json:"agent,omitempty"`
	NoChange    *bool           `json:"no_change,omitempty"`
	// TestsMayChange is --tests-may-change (board.Task.TestsMayChange).
	TestsMayChange *bool `json:"tests_may_change,omitempty"`
}

// Apply sets on t the fields p sets.
func (p Patch) Apply(t *board.Task) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&t.Title, p.Title)
	set(&t.Need, p.Need)
	set(&t.Description, p.Description)
	set(&t.Type, p.Type)
	set(&t.Milestone, p.Milestone)
	set(&t.Agent, p.Agent)
	if p.Kind != nil {
		t.Kind = *p.Kind
	}
	if p.Priority != nil {
		t.Priority = *p.Priority
	}
	if p.After != nil {
		t.After = append([]string(nil), (*p.After)...)
	}
	if p.NoChange != nil {
		t.NoChange = *p.NoChange
	}
	if p.TestsMayChange != nil {
		t.TestsMayChange = *p.TestsMayChange
	}
}

// TaskView is a task with its folder, as lists show it.
type TaskView struct {
	*board.Task
	Folder board.Folder `json:"folder"`
}

// Listing is what List read.
type Listing struct {
	Tasks []TaskView `json:"tasks"`
	// Problems are the task files that could not be read, skipped.
	Problems []string `json:"problems,omitempty"`
	// Skipped are the world log's agent entries the lifecycle forbids,
	// which moved no task (see Fleet.Skipped).
	Skipped []string `json:"skipped,omitempty"`
}

// NeedsYou is a task that waits for a person.
type NeedsYou struct {
	TaskView
	// Need is what a person must do: the need of the task's latest
	// [agent:failed] entry.
	Need string `json:"need_you"`
}

// Detail is one task as 'cra task show' and the board's drawer show it.
type Detail struct {
	Task   *board.Task  `json:"task"`
	Folder board.Folder `json:"folder"`
	// Entries are the task's world-log entries, oldest first.
	Entries []world.Entry `json:"entries"`
	// Runs are its runs, oldest first.
	Runs []Run `json:"runs"`
	// Reviews are the recycler's reviews, oldest first; BadReviews counts
	// the lines of the review history that could not be read.
	Reviews    []Review `json:"reviews"`
	BadReviews int      `json:"bad_reviews,omitempty"`
	// ReviewFile is the review history's path relative to the
	// repository, set when BadReviews is.
	ReviewFile string `json:"review_file,omitempty"`
	// EvidenceText is the latest review's evidence as the recycler's
	// prompt shows it.
	EvidenceText string `json:"evidence_text,omitempty"`
	// WaitsForPerson: the task is failed in the log with an ending a
	// person must answer.
	WaitsForPerson bool `json:"waits_for_person"`
}

// Add adds t to pending.
func (f *Fleet) Add(ctx context.Context, t *board.Task) (*board.Task, error) {
	return f.Board.Add(ctx, t)
}

// Edit changes the fields p sets on task id.
func (f *Fleet) Edit(ctx context.Context, id string, p Patch) (*board.Task, []string, error) {
	return f.Board.Edit(ctx, id, func(t *board.Task) error {
		p.Apply(t)
		return nil
	})
}

// Move is a person's move of task id to folder to.
func (f *Fleet) Move(ctx context.Context, id string, to board.Folder, why string) (board.Folder, error) {
	_, from, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if _, err := f.Board.Move(ctx, id, to, why); err != nil {
		return "", err
	}
	return from, nil
}

// Answer records a person's answer to task id.
func (f *Fleet) Answer(ctx context.Context, id, text string) (bool, error) {
	_, _, resumed, err := f.Board.Answer(ctx, id, text)
	return resumed, err
}

// List returns folder's tasks ("" for all).
func (f *Fleet) List(ctx context.Context, folder board.Folder) (*Listing, error) {
	listed, err := f.Board.Store.List(ctx, folder)
	if err != nil {
		return nil, err
	}
	out := &Listing{Tasks: make([]TaskView, 0, len(listed))}
	for _, l := range listed {
		if l.Err != nil {
			out.Problems = append(out.Problems, l.Err.Error())
			continue
		}
		out.Tasks = append(out.Tasks, TaskView{Task: l.Task, Folder: l.Folder})
	}
	if out.Skipped, err = f.Skipped(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// maxSkippedShown bounds the skipped entries a listing names.
const maxSkippedShown = 10

// Skipped describes the agent entries of the world log that its fold
// skips because the lifecycle forbids them where they stand (a verified
// appended by hand, with no review of the run before it): the latest
// ones, and how many more there are. They stay in the log, and are
// reported, until a compaction moves them to the archive.
func (f *Fleet) Skipped(ctx context.Context) ([]string, error) {
	skips, total, err := f.Board.Log.Skipped(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	if more := total - min(len(skips), maxSkippedShown); more > 0 {
		out = append(out, fmt.Sprintf("%d earlier entries of the world log are skipped too: 'cra log query --skipped' lists them, 'cra log compact' archives them", more))
	}
	for _, s := range skips[max(0, len(skips)-maxSkippedShown):] {
		out = append(out, s.String())
	}
	return out, nil
}

// NeedsYou returns the tasks in failed-blocked that wait for a person.
func (f *Fleet) NeedsYou(ctx context.Context) ([]NeedsYou, error) {
	l, err := f.List(ctx, board.FailedBlocked)
	if err != nil {
		return nil, err
	}
	out := []NeedsYou{}
	for _, t := range l.Tasks {
		a, _, err := f.Board.Log.Lookup(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if board.WaitsForNoOne(a.Output) {
			continue // a collapsed duplicate, a dropped directive
		}
		out = append(out, NeedsYou{TaskView: t, Need: a.Need})
	}
	return out, nil
}

// WaitsForPerson says whether an agent whose latest lifecycle entry has
// status and output waits for a person's answer: failed, and not an
// ending that waits for no one (board.WaitsForNoOne).
func WaitsForPerson(status world.Status, output string) bool {
	return status == world.StatusFailed && !board.WaitsForNoOne(output)
}

// Waits says whether task id waits for a person, from its latest
// lifecycle entry.
func (f *Fleet) Waits(ctx context.Context, id string) (bool, error) {
	a, known, err := f.Board.Log.Lookup(ctx, id)
	return known && WaitsForPerson(a.Status, a.Output), err
}

// Show returns task id with its log entries, runs and reviews.
func (f *Fleet) Show(ctx context.Context, id string) (*Detail, error) {
	t, folder, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &Detail{Task: t, Folder: folder, Entries: []world.Entry{}, Reviews: []Review{}}
	if d.WaitsForPerson, err = f.Waits(ctx, id); err != nil {
		return nil, err
	}
	if d.Entries, err = f.Board.History(ctx, id); err != nil {
		return nil, err
	}
	if d.Entries == nil {
		d.Entries = []world.Entry{}
	}
	d.Runs = f.Runs(id, d.Entries)
	if d.Reviews, d.BadReviews, d.ReviewFile, d.EvidenceText, err = f.Reviews(id); err != nil {
		return nil, err
	}
	return d, nil
}

// Reviews returns the recycler's reviews of task id, oldest first, the
// count of history lines that could not be read and the history's path
// in the repository when there are any, and the latest review's evidence
// as the recycler's prompt shows it.
func (f *Fleet) Reviews(id string) (list []Review, bad int, file, evidenceText string, err error) {
	path := verdict.HistoryPath(f.ws.StateDir, id)
	rv, bad, err := verdict.History(f.ws.StateDir, id)
	if err != nil {
		return nil, 0, "", "", err
	}
	if bad > 0 {
		file = f.relPath(path)
	}
	var text string
	if n := len(rv); n > 0 && len(rv[n-1].Evidence) > 0 {
		var ev evidence.Evidence
		if json.Unmarshal(rv[n-1].Evidence, &ev) == nil {
			text = ev.Text()
		}
	}
	if rv == nil {
		rv = []Review{}
	}
	return rv, bad, file, text, nil
}

// relPath shows path relative to the repository when it is inside it.
func (f *Fleet) relPath(path string) string {
	if rel, err := filepath.Rel(f.ws.Root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// RunOne runs task id once, now, through the fleet's processor.
func (f *Fleet) RunOne(ctx context.Context, id string) (*runner.Outcome, error) {
	_, folder, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case folder == board.InProgress:
		return nil, fmt.Errorf("task %s is in progress: a run is going on (see 'cra task show %s'); a task never has two", id, id)
	case folder.Terminal():
		return nil, fmt.Errorf("task %s is in %s, where the processor leaves it: move it back first (cra task move %s pending --why …)", id, folder, id)
	case folder == board.Completed || folder == board.Failed:
		if _, err := f.Board.Move(ctx, id, board.Pending, "run again with 'cra task run'"); err != nil {
			return nil, err
		}
	}
	return f.Processor().Run(ctx, id)
}

// RecycleOnce runs one recycler tick with a recycler of its own, whose
// lines go to out (the daemon's loop keeps its own).
func (f *Fleet) RecycleOnce(ctx context.Context, out io.Writer) (*RecycleReport, error) {
	rec, err := f.recorder(ctx)
	if err != nil {
		return nil, err
	}
	r := &review.Recycler{
		Board: f.Board, Root: f.ws.Root, StateDir: f.ws.StateDir,
		Config: f.Config, Recorder: rec,
		Out: out, Logger: f.logger, Now: f.now,
	}
	return r.Tick(ctx)
}

// Run is one run of a task, from its [agent:active] entry to the entry
// that ended it.
type Run struct {
	N       int    `json:"n"`
	Profile string `json:"profile,omitempty"`
	// Started and Finished are the times of its active entry and of the
	// entry that ended it; Finished is zero while it runs.
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished,omitzero"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	// Outcome is the ending entry's output: "exit 0: …", "run failed: …".
	Outcome  string `json:"outcome,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Log is the run's output file, runs/<id>/run-N.log relative to the
	// state directory, and LogBytes its size; empty when there is none.
	Log      string `json:"log,omitempty"`
	LogBytes int64  `json:"log_bytes,omitempty"`
}

var (
	runPattern  = regexp.MustCompile(`^run (\d+): ?(.*)$`)
	exitPattern = regexp.MustCompile(`^(?:` + regexp.QuoteMeta(board.RunFailed) + ` )?exit (-?\d+)\b`)
)

// Runs reads task id's runs from its lifecycle entries: each active entry
// ("run N: profile") to the next agent entry, with its run log.
func (f *Fleet) Runs(id string, entries []world.Entry) []Run {
	return runs(entries, statedir.At(f.ws.StateDir).Run(id).Path())
}

func runs(entries []world.Entry, dir string) []Run {
	out := []Run{}
	open := -1
	for _, e := range entries {
		if e.Kind != world.KindAgent {
			continue
		}
		if e.Status == world.StatusActive {
			run := Run{Started: e.Time}
			if m := runPattern.FindStringSubmatch(e.Output); m != nil {
				run.N, _ = strconv.Atoi(m[1])
				run.Profile = m[2]
			} else {
				run.N = len(out) + 1
			}
			out = append(out, run)
			open = len(out) - 1
			continue
		}
		if open < 0 {
			continue
		}
		run := &out[open]
		run.Finished, run.Outcome = e.Time, e.Output
		run.DurationMS = e.Time.Sub(run.Started).Milliseconds()
		if m := exitPattern.FindStringSubmatch(e.Output); m != nil {
			code, _ := strconv.Atoi(m[1])
			run.ExitCode = &code
		}
		open = -1
	}
	if dir != "" {
		for i := range out {
			if fi, err := os.Stat(statedir.RunAt(dir).Log(out[i].N)); err == nil {
				out[i].Log = statedir.Dir{}.Run(filepath.Base(dir)).Log(out[i].N)
				out[i].LogBytes = fi.Size()
			}
		}
	}
	return out
}

// RecycleReport is what one recycler tick did.
type RecycleReport = verdict.Report

// DryRun is the command the next run of task id would start, its secrets
// masked; nothing starts (issue 29 item 7). It reads config.toml as it is
// now.
func (f *Fleet) DryRun(ctx context.Context, id string) (string, error) {
	t, _, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return "", err
	}
	cfg, err := f.Config()
	if err != nil {
		return "", err
	}
	p, err := runner.ResolveProfile(t, cfg)
	if err != nil {
		var pe *runner.ProfileError
		if errors.As(err, &pe) {
			return "", fmt.Errorf("%w: %s", err, pe.Need)
		}
		return "", err
	}
	exe, _ := os.Executable()
	return runner.DryRun(p, t, f.ws.Root, f.ws.StateDir, exe, os.Environ(), !cfg.SandboxOff())
}
