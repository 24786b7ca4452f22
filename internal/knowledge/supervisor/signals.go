package supervisor

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// The outputs of lifecycle entries that are not signals: a person's own
// move, and a directive dropped by aging, the cap or the polish limit.
const (
	personMove = "moved by a person"
	// DroppedPrefix starts the [agent:failed] output of a dropped
	// directive.
	DroppedPrefix = board.Dropped
)

// textFields are the edits that rewrite a task's text (churn) or its
// plan (re-plan).
var textFields = []string{"title=", "description=", "need=", "milestone="}

// collect reads the signals from the world log and the reviews (DESIGN.md:
// the log is the truth; the triggers are views of it), and the drift of
// design runs from the run log, oldest first. A verdict is an
// [agent:retry], [agent:verified] or [agent:failed] entry that a review in
// runs/<id>/reviews.jsonl wrote (its entry output matches).
//
// Verdicts before since are not looked up (their reviews are not read):
// no trigger counts them.
func collect(ctx context.Context, b *board.Board, hist verdict.HistoryStore, recs []Record, since time.Time) ([]Signal, error) {
	out, err := logSignals(ctx, b, hist, since)
	if err != nil {
		return nil, err
	}
	return withDrift(out, recs), nil
}

// logSignals is collect's reading of the log and the reviews, in the
// log's order: what stays the same while the log does.
func logSignals(ctx context.Context, b *board.Board, hist verdict.HistoryStore, since time.Time) ([]Signal, error) {
	var out []Signal
	retries := map[string]int{}
	reviews := map[string][]verdict.Review{}
	used := map[string]int{} // reviews already matched, per task
	err := b.Log.Select(ctx, world.Filter{}, func(r *world.Record) error {
		if r.Err != nil || r.Skipped != nil {
			return nil // a line the lifecycle forbids is no verdict
		}
		e := r.Entry
		switch {
		case e.Kind == world.KindEvent && e.Source == world.SourceUser && strings.HasPrefix(e.Output, "edited: "):
			fields := e.Output[len("edited: "):]
			if slices.ContainsFunc(textFields[:3], func(f string) bool { return strings.HasPrefix(fields, f) || strings.Contains(fields, "; "+f) }) {
				out = append(out, Signal{Time: e.Time, Kind: Churn, Task: e.ID})
			}
			if slices.ContainsFunc(textFields, func(f string) bool { return strings.HasPrefix(fields, f) || strings.Contains(fields, "; "+f) }) {
				out = append(out, Signal{Time: e.Time, Kind: Replan, Task: e.ID})
			}
		case e.Kind != world.KindAgent:
		case e.Status == world.StatusRetry || e.Status == world.StatusVerified || e.Status == world.StatusFailed:
			if strings.HasPrefix(e.Output, personMove) || board.WaitsForNoOne(e.Output) {
				return nil // a person's move, a dropped directive, a collapsed duplicate: no agent's outcome
			}
			if e.Status == world.StatusRetry {
				retries[e.ID]++
				if retries[e.ID] == ChurnRetries {
					out = append(out, Signal{Time: e.Time, Kind: Churn, Task: e.ID})
				}
			}
			if e.Status == world.StatusFailed {
				out = append(out, Signal{Time: e.Time, Kind: Blocked, Task: e.ID})
			}
			if e.Time.Before(since) {
				return nil
			}
			rvs, ok := reviews[e.ID]
			if !ok {
				rvs, _, _ = verdict.ReadHistory(ctx, hist, e.ID)
				reviews[e.ID] = rvs
			}
			for i := used[e.ID]; i < len(rvs); i++ {
				if rvs[i].Entry == e.Output && !rvs[i].Time.After(e.Time) {
					used[e.ID] = i + 1
					out = append(out, Signal{Time: e.Time, Kind: Verdict, Task: e.ID, Complete: rvs[i].Classification == verdict.FullComplete})
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// withDrift is a copy of the log's signals with the drift of the
// supervisors' runs in recs, ordered by time.
func withDrift(signals []Signal, recs []Record) []Signal {
	out := slices.Clone(signals)
	for _, r := range recs {
		if r.Ran() && r.Drift {
			out = append(out, Signal{Time: r.Finished, Kind: Drift, Task: string(r.Supervisor)})
		}
	}
	slices.SortStableFunc(out, func(a, b Signal) int { return a.Time.Compare(b.Time) })
	return out
}

// boardView is what the supervisors read of the board at once, without
// the duplicates cleanup collapsed.
type boardView struct {
	all        []*board.Task
	folder     map[string]board.Folder
	pending    []*board.Task
	milestones []string // with at least one task, in order of first use
	done       []string // milestones whose tasks (kind task) are all verified
}

func readBoard(ctx context.Context, b *board.Board) (*boardView, error) {
	listed, err := b.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	// A duplicate cleanup collapsed is failed in the log: its work is
	// the kept task's. One read of the failed agents, not a lookup per
	// blocked task (a board with 10,000 closed tasks checked each one).
	failed, err := b.Log.CurrentIn(ctx, world.StatusFailed)
	if err != nil {
		return nil, err
	}
	collapsed := map[string]bool{}
	for _, a := range failed {
		if _, ok := board.IsCollapsed(a); ok {
			collapsed[a.ID] = true
		}
	}
	v := &boardView{folder: map[string]board.Folder{}}
	open := map[string]bool{}
	for _, l := range listed {
		if l.Err != nil {
			continue
		}
		t := l.Task
		if l.Folder == board.FailedBlocked && collapsed[t.ID] {
			continue
		}
		v.all = append(v.all, t)
		v.folder[t.ID] = l.Folder
		if l.Folder == board.Pending {
			v.pending = append(v.pending, t)
		}
		if t.Kind != board.KindTask || t.Milestone == "" {
			continue
		}
		if !slices.Contains(v.milestones, t.Milestone) {
			v.milestones = append(v.milestones, t.Milestone)
		}
		if l.Folder != board.CompletedFinalized {
			open[t.Milestone] = true
		}
	}
	for _, m := range v.milestones {
		if !open[m] {
			v.done = append(v.done, m)
		}
	}
	slices.Sort(v.done)
	return v, nil
}

// current is the milestone new directives belong to: the milestone of
// the first planned task the processor would pick; when none is pending,
// the milestone of the planned task verified last (whose polish phase the
// directives then join); else "".
func (v *boardView) current() string {
	for _, t := range board.Order(v.pending, nil) {
		if t.Kind == board.KindTask && t.Milestone != "" {
			return t.Milestone
		}
	}
	var last *board.Task
	for _, t := range v.all {
		if t.Kind == board.KindTask && t.Milestone != "" && v.folder[t.ID] == board.CompletedFinalized &&
			(last == nil || t.UpdatedAt.After(last.UpdatedAt)) {
			last = t
		}
	}
	if last != nil {
		return last.Milestone
	}
	return ""
}

// functionallyComplete reports whether every planned task is verified:
// the remit is done and only the polish phase remains (seed 003).
func (v *boardView) functionallyComplete() bool {
	n := 0
	for _, t := range v.all {
		if t.Kind == board.KindTask {
			n++
			if v.folder[t.ID] != board.CompletedFinalized {
				return false
			}
		}
	}
	return n > 0
}
