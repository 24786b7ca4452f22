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

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

var _ fleetapi.Ops = (*Fleet)(nil)

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
func (f *Fleet) List(ctx context.Context, folder board.Folder) (*fleetapi.Listing, error) {
	listed, err := f.Board.Store.List(ctx, folder)
	if err != nil {
		return nil, err
	}
	out := &fleetapi.Listing{Tasks: make([]TaskView, 0, len(listed))}
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

// Waits says whether task id waits for a person, from its latest
// lifecycle entry.
func (f *Fleet) Waits(ctx context.Context, id string) (bool, error) {
	a, known, err := f.Board.Log.Lookup(ctx, id)
	return known && fleetapi.WaitsForPerson(a.Status, a.Output), err
}

// Show returns task id with its log entries, runs and reviews.
func (f *Fleet) Show(ctx context.Context, id string) (*fleetapi.Detail, error) {
	t, folder, err := f.Board.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &fleetapi.Detail{Task: t, Folder: folder, Entries: []world.Entry{}, Reviews: []Review{}}
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
	if d.Reviews, d.BadReviews, d.ReviewFile, d.EvidenceText, err = f.Reviews(ctx, id); err != nil {
		return nil, err
	}
	return d, nil
}

// Reviews returns the recycler's reviews of task id, oldest first, the
// count of history lines that could not be read and the history's path
// in the repository when there are any, and the latest review's evidence
// as the recycler's prompt shows it.
func (f *Fleet) Reviews(ctx context.Context, id string) (list []Review, bad int, file, evidenceText string, err error) {
	rv, bad, err := verdict.ReadHistory(ctx, f.reviewHistory(), id)
	if err != nil {
		return nil, 0, "", "", err
	}
	if bad > 0 {
		file = f.relPath(verdict.HistoryPath(f.ws.StateDir, id))
		if _, ok := f.reviewHistory().(verdict.Files); !ok {
			file = ReviewTable
		}
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

// ReviewTable names where a fleet whose board is in PostgreSQL keeps
// the review histories, for a warning about their unreadable records.
const ReviewTable = "the database's review_history table"

// reviewHistory is where the recycler keeps its reviews: on a board in
// PostgreSQL its database (the world log's, pgstore.Log), which every
// host that may lead the recycler shares; else the state directory's
// files.
func (f *Fleet) reviewHistory() verdict.HistoryStore {
	if l, ok := f.Board.Log.(*pgstore.Log); ok {
		return l
	}
	return verdict.Files{StateDir: f.ws.StateDir}
}

// relPath shows path relative to the repository when it is inside it.
func (f *Fleet) relPath(path string) string {
	if rel, err := filepath.Rel(f.ws.Root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// RunOne runs task id once, now, through the fleet's processor.
func (f *Fleet) RunOne(ctx context.Context, id string) (*Outcome, error) {
	if err := f.runsHere(); err != nil {
		return nil, err
	}
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
	o, err := f.Processor().Run(ctx, id)
	if o == nil {
		return nil, err
	}
	out := Outcome(*o)
	return &out, err
}

// RecycleOnce runs one recycler tick with a recycler of its own, whose
// lines go to out (the daemon's loop keeps its own).
func (f *Fleet) RecycleOnce(ctx context.Context, out io.Writer) (*fleetapi.RecycleReport, error) {
	rec, err := f.recorder(ctx)
	if err != nil {
		return nil, err
	}
	r := &review.Recycler{
		Board: f.Board, Root: f.ws.Root, StateDir: f.ws.StateDir,
		History: f.reviewHistory(),
		Config:  f.Config, Recorder: rec,
		Out: out, Logger: f.logger, Now: f.now,
	}
	return r.Tick(ctx)
}

var (
	runPattern  = lazyre.New(`^run (\d+): ?(.*)$`)
	exitPattern = lazyre.New(`^(?:` + regexp.QuoteMeta(board.RunFailed) + ` )?exit (-?\d+)\b`)
)

// Runs reads task id's runs from its lifecycle entries: each active entry
// ("run N: profile", on a fleet "run N: profile on host H") to the next
// agent entry, with its run log.
func (f *Fleet) Runs(id string, entries []world.Entry) []fleetapi.Run {
	return runs(entries, statedir.At(f.ws.StateDir).Run(id).Path())
}

func runs(entries []world.Entry, dir string) []fleetapi.Run {
	out := []fleetapi.Run{}
	open := -1
	for _, e := range entries {
		if e.Kind != world.KindAgent {
			continue
		}
		if e.Status == world.StatusActive {
			run := fleetapi.Run{Started: e.Time}
			if m := runPattern().FindStringSubmatch(e.Output); m != nil {
				run.N, _ = strconv.Atoi(m[1])
				run.Profile = m[2]
				if prof, host, ok := strings.Cut(m[2], " on host "); ok {
					run.Profile, run.Host = prof, host // a fleet's run
				}
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
		if m := exitPattern().FindStringSubmatch(e.Output); m != nil {
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
