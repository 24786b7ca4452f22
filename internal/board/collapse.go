package board

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// ErrNotPending is a task that a collapse names but that is not waiting
// in pending/ (seed 000 via issue 16: only pending tasks are collapsed).
var ErrNotPending = errors.New("task is not pending")

// DuplicateOf starts the output of the [agent:failed] entry that ends a
// task collapsed into another: "duplicate of KEEP: …". Readers that list
// blocked tasks tell such an ending from a failure with WaitsForNoOne;
// IsCollapsed also names the kept task.
const DuplicateOf = "duplicate of "

// Dropped starts the output of the [agent:failed] entry that ends a
// directive a supervisor dropped (aged, over the cap, past the polish
// limit): its text is in the log, and it waits for no one.
const Dropped = "dropped: "

// WaitsForNoOne reports whether a failed entry's output ends a task
// nobody needs to look at: a duplicate cleanup collapsed, a directive a
// supervisor dropped, a task a person closed. Such endings are neither
// notified nor listed as needing a person.
func WaitsForNoOne(output string) bool {
	return strings.HasPrefix(output, DuplicateOf) || strings.HasPrefix(output, Dropped) || strings.HasPrefix(output, Closed)
}

// IsCollapsed reports whether an agent's latest entry ended it as a
// duplicate collapsed by Collapse, and into which task.
func IsCollapsed(a world.Agent) (keep string, ok bool) {
	if a.Status != world.StatusFailed || !strings.HasPrefix(a.Output, DuplicateOf) {
		return "", false
	}
	keep, _, ok = strings.Cut(strings.TrimPrefix(a.Output, DuplicateOf), ":")
	return keep, ok
}

// Collapsed is what one Collapse did.
type Collapsed struct {
	// Keep is the kept task as written, with the canonical title.
	Keep *Task `json:"keep"`
	// OldTitle is the kept task's title before.
	OldTitle string `json:"old_title"`
	// Dropped are the duplicates, as written into failed-blocked/.
	Dropped []*Task `json:"dropped"`
	// Relinked are the tasks whose after list named a dropped task and
	// now names the kept one (or, where that would close a cycle, no
	// longer names it).
	Relinked []string `json:"relinked,omitempty"`
}

// Collapse merges the pending tasks drops into the pending task keep,
// which takes canonical as its title (seed 000's
// collapse(keepId:canonical:dropIds:), issue 16 item 5). Nothing is lost,
// and the log comes first for every task it touches, under the board's
// lock:
//
//  1. keep: [event:system][keep] collapsed D1, D2 into this task:
//     title=CANONICAL (was: OLD); then its file, whose description gains
//     each dropped task's title and description, whose priority becomes
//     the most urgent of the group and whose after list gains the
//     dropped tasks' (less keep itself and any link that would close a
//     cycle);
//  2. each task whose after list names a dropped task: [event:system][x]
//     after: D → KEEP (D collapsed into KEEP), then its file. Relinking
//     before the drops end means no task ever waits for a task that
//     cannot be verified;
//  3. each dropped task: [event:system][d] collapsed into KEEP: title=…;
//     description=…; … (every descriptive field, in full), then
//     [agent:failed][d] duplicate of KEEP: collapsed by cleanup | need:
//     none, then its file moves to failed-blocked/ with
//     processor_auto_requeue false.
//
// A dropped task thus leaves the queue but keeps its file and its text in
// the log ('cra log query --id D'), and the folder agrees with the log
// ([agent:failed] maps to failed-blocked, so 'cra task rebuild' has
// nothing to repair). It is not hard-deleted: a person who disagrees
// answers it ('cra answer D "not a duplicate"'), which sends it back to
// pending. A crash between any two steps leaves every written entry's
// task either updated or movable by Rebuild; a crash before step 3 leaves
// the duplicates pending, for the next cleanup.
//
// Every id must be a task in pending/ whose latest log entry is start or
// retry (else ErrNotPending, or ErrNotFound), of the kept task's kind,
// type and milestone (sameWork), keep must not be among drops, and drops
// must not be empty; nothing is written otherwise.
//
// shown is what the caller read of each task before it decided (cleanup
// shows the texts to a model, a call that can take minutes): when shown
// is not nil, every id must be in it and the task must still have that
// UpdatedAt and that many runs, else Collapse returns ErrChanged and
// writes nothing. A task that ran and came back to pending in between,
// or that a person edited, is not judged on a text it no longer has.
// A nil shown checks nothing, for callers that read under the lock.
func (b *Board) Collapse(ctx context.Context, keep, canonical string, drops []string, shown map[string]Shown) (*Collapsed, error) {
	canonical = strings.TrimSpace(canonical)
	if len(drops) == 0 {
		return nil, fmt.Errorf("collapse into %s: no task to drop", keep)
	}
	seen := map[string]bool{keep: true}
	for _, d := range drops {
		if d == keep {
			return nil, fmt.Errorf("collapse into %s: the kept task is also among the dropped", keep)
		}
		if seen[d] {
			return nil, fmt.Errorf("collapse into %s: task %s is named twice", keep, d)
		}
		seen[d] = true
	}
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	kept, err := b.pendingTask(ctx, keep)
	if err != nil {
		return nil, err
	}
	if err := unchanged(kept, shown); err != nil {
		return nil, err
	}
	dropped := make([]*Task, len(drops))
	for i, d := range drops {
		if dropped[i], err = b.pendingTask(ctx, d); err != nil {
			return nil, err
		}
		if err := unchanged(dropped[i], shown); err != nil {
			return nil, err
		}
	}
	for _, d := range dropped {
		if err := sameWork(kept, d); err != nil {
			return nil, fmt.Errorf("collapse %s into %s: %w", d.ID, keep, err)
		}
	}
	all, err := b.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}

	// The new state of keep, checked before anything is written.
	k := kept.Clone()
	res := &Collapsed{OldTitle: kept.Title}
	k.Title = canonical
	k.Description = mergedDescription(kept, dropped)
	for _, d := range dropped {
		if d.Priority.rank() < k.Priority.rank() {
			k.Priority = d.Priority
		}
	}
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("collapse into %s: %w", keep, err)
	}

	// The after graph as it will be once the links move (step 2).
	isDrop := func(id string) bool { return slices.Contains(drops, id) }
	graph := map[string][]string{}
	type relink struct {
		t      *Task
		folder Folder
		change []string
	}
	var relinks []relink
	for _, l := range all {
		if l.Err != nil || l.Task == nil || isDrop(l.ID) {
			continue
		}
		graph[l.ID] = l.Task.After
	}
	for _, l := range all {
		if l.Err != nil || l.Task == nil || isDrop(l.ID) || l.ID == keep || l.Folder == CompletedFinalized {
			continue
		}
		if !slices.ContainsFunc(l.Task.After, isDrop) {
			continue
		}
		t := l.Task.Clone()
		var after, change []string
		for _, a := range t.After {
			switch {
			case !isDrop(a):
				after = appendNew(after, a)
			case reaches(graph, keep, t.ID):
				change = append(change, fmt.Sprintf("%s removed (%s collapsed into %s, which waits for this task)", a, a, keep))
			default:
				after = appendNew(after, keep)
				change = append(change, fmt.Sprintf("%s → %s (%s collapsed into %s)", a, keep, a, keep))
			}
		}
		t.After = after
		graph[t.ID] = after
		relinks = append(relinks, relink{t, l.Folder, change})
	}
	// keep inherits what the dropped tasks waited for, except itself, one
	// another, and links that would close a cycle.
	for _, d := range dropped {
		for _, a := range d.After {
			if a == keep || isDrop(a) || slices.Contains(k.After, a) || reaches(graph, a, keep) {
				continue
			}
			k.After = append(k.After, a)
			graph[keep] = k.After
		}
	}

	now := b.Now().UTC().Truncate(time.Millisecond)
	// 1. keep.
	msg := fmt.Sprintf("collapsed %s into this task: title=%s (was: %s)", strings.Join(drops, ", "), k.Title, kept.Title)
	if k.Priority != kept.Priority {
		msg += fmt.Sprintf("; priority=%s (was: %s)", k.Priority, kept.Priority)
	}
	if !slices.Equal(k.After, kept.After) {
		msg += "; after=" + strings.Join(k.After, ",")
	}
	if _, err := b.Log.Event(ctx, world.SourceSystem, keep, msg); err != nil {
		return nil, fmt.Errorf("log the collapse into %s: %w", keep, err)
	}
	k.UpdatedAt = now
	if err := b.Store.Put(ctx, k, Pending); err != nil {
		return nil, fmt.Errorf("task %s: the world log has its collapse but its file was not updated: %w", keep, err)
	}
	res.Keep = k

	// 2. The links to the dropped tasks.
	for _, r := range relinks {
		if _, err := b.Log.Event(ctx, world.SourceSystem, r.t.ID, "after: "+strings.Join(r.change, "; ")); err != nil {
			return nil, fmt.Errorf("log the new after list of %s: %w", r.t.ID, err)
		}
		r.t.UpdatedAt = now
		if err := b.Store.Put(ctx, r.t, r.folder); err != nil {
			return nil, fmt.Errorf("task %s: the world log has its new after list but its file was not updated: %w", r.t.ID, err)
		}
		res.Relinked = append(res.Relinked, r.t.ID)
	}

	// 3. The dropped tasks: their text, their ending, their file.
	for _, d := range dropped {
		if _, err := b.Log.Event(ctx, world.SourceSystem, d.ID, "collapsed into "+keep+": "+fullText(d)); err != nil {
			return nil, fmt.Errorf("log the text of %s: %w", d.ID, err)
		}
		out := DuplicateOf + keep + ": collapsed by cleanup"
		need := "none: a person who disagrees answers it (cra answer " + d.ID + " 'not a duplicate') and it returns to pending"
		if _, err := b.Log.Agent(ctx, world.StatusFailed, d.ID, out, need); err != nil {
			return nil, fmt.Errorf("log the end of %s: %w", d.ID, err)
		}
		d.ProcessorAutoRequeue = false
		d.UpdatedAt = now
		if err := b.put(ctx, d, Pending, FailedBlocked); err != nil {
			return nil, err
		}
		res.Dropped = append(res.Dropped, d)
	}
	return res, nil
}

// sameWork checks that drop may live on in keep: the same kind, type and
// milestone. A planned task in a cleanup directive would go when the
// directive is aged or capped, and one in another milestone would let
// its own milestone complete without it.
func sameWork(keep, drop *Task) error {
	what := func(t *Task) string {
		s := string(t.Kind)
		if t.Type != "" {
			s = t.Type + " " + s
		}
		if t.Milestone != "" {
			s += " of milestone " + t.Milestone
		}
		return s
	}
	if keep.Kind != drop.Kind || keep.Type != drop.Type || keep.Milestone != drop.Milestone {
		return fmt.Errorf("not duplicates: %s is a %s, %s a %s, and only tasks of one kind, type and milestone collapse", drop.ID, what(drop), keep.ID, what(keep))
	}
	return nil
}

// Shown is what a caller read of a task before deciding on it, for
// Collapse to check that the task is still the one that was judged.
type Shown struct {
	UpdatedAt time.Time
	Runs      int
}

// ShownOf is what t is now, as Collapse's shown records it.
func ShownOf(t *Task) Shown { return Shown{UpdatedAt: t.UpdatedAt, Runs: t.Runs} }

// unchanged checks t against what shown says was read of it; a nil shown
// checks nothing.
func unchanged(t *Task, shown map[string]Shown) error {
	if shown == nil {
		return nil
	}
	s, ok := shown[t.ID]
	if !ok {
		return fmt.Errorf("task %s was not among the tasks shown: %w", t.ID, ErrChanged)
	}
	if !t.UpdatedAt.Equal(s.UpdatedAt) || t.Runs != s.Runs {
		return fmt.Errorf("task %s changed since it was shown (updated %s after %d runs, shown updated %s after %d): %w",
			t.ID, t.UpdatedAt.Format(time.RFC3339Nano), t.Runs, s.UpdatedAt.Format(time.RFC3339Nano), s.Runs, ErrChanged)
	}
	return nil
}

// pendingTask returns task id when it is in pending/ and its latest
// lifecycle entry is start or retry.
func (b *Board) pendingTask(ctx context.Context, id string) (*Task, error) {
	t, folder, err := b.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	if err != nil {
		return nil, err
	}
	if folder != Pending {
		return nil, fmt.Errorf("task %s is in %s: %w", id, folder, ErrNotPending)
	}
	a, known, err := b.Log.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !known || a.Status != world.StatusStart && a.Status != world.StatusRetry {
		return nil, fmt.Errorf("task %s is in pending/ but the world log has it %s (run 'cra task rebuild'): %w", id, cmpStatus(a.Status, known), ErrNotPending)
	}
	return t, nil
}

func cmpStatus(s world.Status, known bool) string {
	if !known {
		return "unknown"
	}
	return string(s)
}

// reaches reports whether from waits, directly or through others, for to
// in the after graph.
func reaches(graph map[string][]string, from, to string) bool {
	seen := map[string]bool{}
	stack := []string{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == to {
			return true
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		stack = append(stack, graph[n]...)
	}
	return false
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// mergedDescription is keep's description followed by what the group
// said otherwise: the old title when it changed, and each dropped task's
// title and description, so that the run of the kept task reads them.
func mergedDescription(keep *Task, drops []*Task) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(keep.Description, "\n"))
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("Collapsed duplicates (cra cleanup):\n")
	fmt.Fprintf(&b, "- %s (this task's title before): %s\n", keep.ID, keep.Title)
	for _, d := range drops {
		fmt.Fprintf(&b, "- %s: %s\n", d.ID, d.Title)
		if desc := strings.TrimSpace(d.Description); desc != "" {
			for _, line := range strings.Split(desc, "\n") {
				b.WriteString("  " + line + "\n")
			}
		}
		if d.Need != "" && d.Need != keep.Need {
			fmt.Fprintf(&b, "  need: %s\n", d.Need)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// fullText is every descriptive field of t that is set, as FIELD=VALUE;
// …, for the log line that keeps a dropped task's text.
func fullText(t *Task) string {
	fields := []struct{ name, value string }{
		{"title", t.Title},
		{"description", t.Description},
		{"need", t.Need},
		{"kind", string(t.Kind)},
		{"type", t.Type},
		{"priority", string(t.Priority)},
		{"milestone", t.Milestone},
		{"source", t.Source},
		{"rationale", t.Rationale},
		{"files", strings.Join(t.Files, ",")},
		{"after", strings.Join(t.After, ",")},
		{"agent", t.Agent},
		{"notes", t.Notes},
	}
	var parts []string
	for _, f := range fields {
		if f.value != "" {
			parts = append(parts, f.name+"="+f.value)
		}
	}
	return strings.Join(parts, "; ")
}
