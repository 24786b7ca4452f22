package board

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// Repair is one disagreement between the store and the log, and what
// Rebuild does (or, checking, would do) about it.
type Repair struct {
	ID string `json:"id"`
	// What is the kind: "move" (the file is not where the log puts it),
	// "duplicate" (a second copy, removed), "adopt" (a file in pending/
	// the log does not know: its start entry is logged), "unlogged" (a
	// file elsewhere the log does not know: left for a person),
	// "recreate" (the log knows the task, no file holds it: the file is
	// written again from its start entry, as far as the log tells),
	// "missing" (the same, with no start entry to recreate it from: left
	// for a person), "malformed" (a file that cannot be read: left for a
	// person), "temp" (a crashed write's temp file, removed).
	What   string       `json:"what"`
	From   Folder       `json:"from,omitempty"`
	To     Folder       `json:"to,omitempty"`
	Status world.Status `json:"status,omitempty"` // the latest lifecycle entry
	Detail string       `json:"detail"`
	// Fixed says the repair was made; false when checking, and for the
	// kinds that need a person.
	Fixed bool `json:"fixed"`
}

// Report is what Rebuild found.
type Report struct {
	Tasks   int      `json:"tasks"`   // task files read
	Repairs []Repair `json:"repairs"` // every disagreement, in the order met
}

// Clean reports whether the store and the log agreed everywhere.
func (r Report) Clean() bool { return len(r.Repairs) == 0 }

// Rebuild makes the store a view of the log again (DESIGN.md principle 1:
// after a crash, the views are rebuilt from the log). It folds the whole
// log into each task's latest lifecycle entry and then:
//
//   - moves each task file to the folder FolderOf gives for that entry;
//   - for a task in several folders, keeps the copy in the log's folder,
//     or else the newest (updated_at, then the file's time), moves it
//     there and removes the others;
//   - logs the start entry of a file in pending/ the log does not know (a
//     task dropped in by hand), and reports such a file elsewhere;
//   - recreates the file of a task of the board's id form (t-xxxxxxxx)
//     that the log knows but no folder holds (a 'cra task add' whose
//     write failed after its log line, ENOSPC say): its title and need
//     from its start entry, created_at its time, runs its active entries,
//     in the folder of its latest entry; the fields the log does not hold
//     take their defaults. Without a start entry it is reported;
//   - reports files that cannot be read;
//   - removes temp files older than TempAge left by crashed writes;
//   - builds the store's index of its tasks anew from the files
//     (FileStore's list index, tasks/.index).
//
// Each repair is logged as an [event:system] line before it is made. With
// check, nothing is logged or changed: the report says what would be.
func (b *Board) Rebuild(ctx context.Context, check bool) (Report, error) {
	return b.rebuild(ctx, check, true)
}

// RebuildAtStart is Rebuild that keeps the store's index of its tasks (FileStore's
// list index): the listing Rebuild starts with has brought the index up
// to date with the files already, reading again only those whose stat
// changed, and the files a repair moves or writes are read by the next
// listing. It is what the daemon runs at its start: building the index
// anew read and parsed every task file, 1.2 of the 1.6 CPU seconds a
// start took on a board of 10,000 tasks. 'cra task rebuild' builds it
// anew (Rebuild).
func (b *Board) RebuildAtStart(ctx context.Context) (Report, error) {
	return b.rebuild(ctx, false, false)
}

// rebuild is Rebuild, which builds the store's index anew when index is
// set and check is not.
func (b *Board) rebuild(ctx context.Context, check, index bool) (Report, error) {
	var rep Report
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return rep, err
	}
	defer unlock()
	agents, err := b.Log.Current(ctx)
	if err != nil {
		return rep, err
	}
	byID := make(map[string]world.Agent, len(agents))
	for _, a := range agents {
		byID[a.ID] = a
	}
	listed, err := b.Store.List(ctx, "")
	if err != nil {
		return rep, err
	}
	copies := map[string][]Listed{}
	present := map[string]bool{}
	var ids []string
	for _, l := range listed {
		present[l.ID] = true
		if l.Err != nil {
			rep.Repairs = append(rep.Repairs, Repair{ID: l.ID, What: "malformed", From: l.Folder, Detail: l.Err.Error() + " (then run 'cra task rebuild')"})
			continue
		}
		rep.Tasks++
		if copies[l.ID] == nil {
			ids = append(ids, l.ID)
		}
		copies[l.ID] = append(copies[l.ID], l)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := b.rebuildTask(ctx, &rep, copies[id], byID, check); err != nil {
			return rep, err
		}
	}
	for _, a := range agents {
		if present[a.ID] || !boardID().MatchString(a.ID) {
			continue
		}
		if err := b.recreate(ctx, &rep, a, check); err != nil {
			return rep, err
		}
	}
	temps, err := b.Store.Sweep(ctx, b.TempAge, check)
	if err != nil {
		return rep, err
	}
	for _, name := range temps {
		rep.Repairs = append(rep.Repairs, Repair{What: "temp", Detail: name + ": the temp file of a write that never finished", Fixed: !check})
	}
	// A store that keeps an index of its tasks beside them (FileStore's
	// list index) builds it anew from the repaired files.
	if ix, ok := b.Store.(interface{ RebuildIndex() error }); ok && !check && index {
		if err := ix.RebuildIndex(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// rebuildTask repairs the copies of one task.
func (b *Board) rebuildTask(ctx context.Context, rep *Report, cs []Listed, byID map[string]world.Agent, check bool) error {
	id := cs[0].ID
	a, known := byID[id]
	if !known {
		if len(cs) == 1 && cs[0].Folder == Pending {
			r := Repair{ID: id, What: "adopt", From: Pending, To: Pending, Fixed: !check,
				Detail: "in pending/ but not in the world log: its start entry is logged, as 'cra task add' does"}
			if !check {
				if _, err := b.Log.Agent(ctx, world.StatusStart, id, cs[0].Task.Title, cs[0].Task.Need); err != nil {
					return fmt.Errorf("rebuild: log task %s: %w", id, err)
				}
			}
			rep.Repairs = append(rep.Repairs, r)
			return nil
		}
		for _, c := range cs {
			rep.Repairs = append(rep.Repairs, Repair{ID: id, What: "unlogged", From: c.Folder,
				Detail: fmt.Sprintf("in %s but not in the world log, so its folder cannot be checked: move the file to tasks/%s/ to add it as a new task, or remove it", c.Folder, Pending)})
		}
		return nil
	}
	want, _ := folderOfAgent(a)
	keep := slices.IndexFunc(cs, func(l Listed) bool { return l.Folder == want })
	if keep < 0 {
		keep = 0
		for i, c := range cs {
			k := cs[keep]
			if cmp.Or(c.Task.UpdatedAt.Compare(k.Task.UpdatedAt), c.ModTime.Compare(k.ModTime)) > 0 {
				keep = i
			}
		}
	}
	for i, c := range cs {
		if i == keep {
			continue
		}
		kept := "the newest"
		if cs[keep].Folder == want {
			kept = "where the log puts it"
		}
		detail := fmt.Sprintf("a second copy in %s; the one in %s is kept (%s)", c.Folder, cs[keep].Folder, kept)
		why := fmt.Sprintf("rebuild: removed the copy in %s, kept the one in %s (%s)", c.Folder, cs[keep].Folder, kept)
		r := Repair{ID: id, What: "duplicate", From: c.Folder, To: cs[keep].Folder, Status: a.Status, Detail: detail, Fixed: !check}
		if !check {
			if err := b.logRepair(ctx, id, why); err != nil {
				return err
			}
			if err := b.Store.Delete(ctx, id, c.Folder); err != nil {
				return err
			}
		}
		rep.Repairs = append(rep.Repairs, r)
	}
	if from := cs[keep].Folder; from != want {
		why := fmt.Sprintf("rebuild: moved from %s to %s, where its latest entry (%s) puts it", from, want, a.Status)
		r := Repair{ID: id, What: "move", From: from, To: want, Status: a.Status, Fixed: !check,
			Detail: fmt.Sprintf("in %s, but its latest entry (%s) puts it in %s", from, a.Status, want)}
		if !check {
			if err := b.logRepair(ctx, id, why); err != nil {
				return err
			}
			if err := b.Store.Move(ctx, id, from, want); err != nil {
				return err
			}
		}
		rep.Repairs = append(rep.Repairs, r)
	}
	return nil
}

// recreate writes again the file of task a, which the log knows and no
// folder holds, from what the log tells of it: the title and need of its
// start entry, the time of that entry, its runs (active entries), in the
// folder of its latest entry.
func (b *Board) recreate(ctx context.Context, rep *Report, a world.Agent, check bool) error {
	f, _ := folderOfAgent(a)
	history, err := b.History(ctx, a.ID)
	if err != nil {
		return err
	}
	var start *world.Entry
	runs := 0
	for i, e := range history {
		switch {
		case e.Kind != world.KindAgent:
		case e.Status == world.StatusStart && start == nil:
			start = &history[i]
		case e.Status == world.StatusActive:
			runs++
		}
	}
	if start == nil {
		rep.Repairs = append(rep.Repairs, Repair{ID: a.ID, What: "missing", To: f, Status: a.Status,
			Detail: fmt.Sprintf("the world log has it %s (%s) but no folder holds its file, and its start entry is gone: restore tasks/%s/%s.yaml from a backup", a.Status, f, f, a.ID)})
		return nil
	}
	t := NewTask(titleFromLog(start.Output))
	t.ID, t.Need, t.Runs = a.ID, start.Need, runs
	t.CreatedAt = start.Time
	t.UpdatedAt = b.Now().UTC().Truncate(time.Millisecond)
	t.ProcessorAutoRequeue = !f.Terminal()
	rel := fmt.Sprintf("tasks/%s/%s.yaml", f, a.ID)
	rep.Repairs = append(rep.Repairs, Repair{ID: a.ID, What: "recreate", To: f, Status: a.Status, Fixed: !check,
		Detail: fmt.Sprintf("the world log has it %s (%s) but no folder holds its file: %s is written again from its start entry (title, need)", a.Status, f, rel)})
	if check {
		return nil
	}
	if err := b.logRepair(ctx, a.ID, "rebuild: recreated "+rel+" from its start entry; the fields the log does not hold (description, type, priority, …) took their defaults"); err != nil {
		return err
	}
	if err := b.Store.Put(ctx, t, f); err != nil {
		return fmt.Errorf("rebuild: recreate %s: %w", rel, err)
	}
	return nil
}

// titleFromLog is a start entry's output as a task title: one line, at
// most MaxTitle bytes, never empty.
func titleFromLog(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "(untitled in the world log)"
	}
	if len(s) > MaxTitle {
		s = strings.ToValidUTF8(s[:MaxTitle-len("…")], "") + "…"
	}
	return s
}

func (b *Board) logRepair(ctx context.Context, id, what string) error {
	if _, err := b.Log.Event(ctx, world.SourceSystem, id, what); err != nil {
		return fmt.Errorf("log the repair of task %s: %w", id, err)
	}
	return nil
}

// MigrateReport is what Migrate did.
type MigrateReport struct {
	Tasks int `json:"tasks"` // task files read
	// Changed lists the tasks given defaults, each with the fields added.
	Changed []Migrated `json:"changed"`
	// Malformed are the files that could not be read, left as they were.
	Malformed []string `json:"malformed,omitempty"`
}

// Migrated is one task file Migrate rewrote.
type Migrated struct {
	ID     string   `json:"id"`
	Folder Folder   `json:"folder"`
	Fields []string `json:"fields"`
}

// defaultKeys are the fields Migrate writes into files that lack them.
var defaultKeys = []string{"kind", "priority", "created_at", "updated_at", "runs",
	"consecutive_completion_claims", "consecutive_failures", "processor_auto_requeue"}

// Migrate seeds defaults into older task files (seed 004, "Provide a
// migration utility to seed defaults on existing tasks"): a missing
// processor_auto_requeue becomes true, missing streak counters and runs 0,
// kind task, priority normal, created_at the time of the task's start
// entry in the log (else the file's time), updated_at the file's time.
// Unknown fields and the folder stay. It is idempotent: a second run finds
// every key present and changes nothing.
func (b *Board) Migrate(ctx context.Context) (MigrateReport, error) {
	var rep MigrateReport
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return rep, err
	}
	defer unlock()
	listed, err := b.Store.List(ctx, "")
	if err != nil {
		return rep, err
	}
	var starts map[string]time.Time
	for _, l := range listed {
		if l.Err != nil {
			rep.Malformed = append(rep.Malformed, l.Err.Error())
			continue
		}
		rep.Tasks++
		missing := l.Task.missingKeys(defaultKeys)
		if len(missing) == 0 {
			continue
		}
		t := l.Task.Clone()
		if t.CreatedAt.IsZero() {
			if starts == nil {
				if starts, err = b.startTimes(ctx); err != nil {
					return rep, err
				}
			}
			t.CreatedAt = cmp.Or(starts[t.ID], l.ModTime.UTC())
		}
		if t.UpdatedAt.IsZero() {
			t.UpdatedAt = cmp.Or(l.ModTime.UTC(), t.CreatedAt)
		}
		if err := b.Store.Put(ctx, t, l.Folder); err != nil {
			return rep, err
		}
		rep.Changed = append(rep.Changed, Migrated{ID: t.ID, Folder: l.Folder, Fields: missing})
	}
	return rep, nil
}

// startTimes returns the time of each agent's first start entry.
func (b *Board) startTimes(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := b.Log.Select(ctx, world.Filter{Statuses: []world.Status{world.StatusStart}}, func(r *world.Record) error {
		if r.Err == nil {
			if _, ok := out[r.Entry.ID]; !ok {
				out[r.Entry.ID] = r.Entry.Time
			}
		}
		return nil
	})
	return out, err
}

// missingKeys returns the keys among keys that the parsed file lacks; a
// task not read from a file lacks none.
func (t *Task) missingKeys(keys []string) []string {
	node := t.document()
	if node == nil {
		return nil
	}
	have := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		have[node.Content[i].Value] = true
	}
	var out []string
	for _, k := range keys {
		if !have[k] {
			out = append(out, k)
		}
	}
	return out
}

// RepairFolders is the part of Rebuild a running daemon's Level 1 pass
// makes on every pass (supervise.Board): each task file that is in one
// folder but not the one its latest entry puts it in (a move that failed
// after its log line) is moved there, the repair logged as Rebuild logs
// it. It reads the folders' listings and the log's states only; no file is
// parsed. A task the log has active is its run's to move, and so is one
// for which live reports a run still going (an agent that reported its
// own finish while its process runs); a task in two folders, a file the
// log does not know and a missing one are left to 'cra task rebuild' and
// the daemon's start. It returns what it moved, a line each.
//
// A pass on a board whose Stamp is that of the last pass, which found
// nothing to move and asked live about none, is skipped: what it would
// read is what that pass read (a daemon's idle passes read no folder, at
// any size of the board).
func (b *Board) RepairFolders(ctx context.Context, live func(id string) bool) ([]string, error) {
	unlock, err := b.Store.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	stamp, stamped := b.Stamp()
	if stamped && b.repaired.done(stamp) {
		return nil, nil
	}
	asked := false
	if live != nil {
		ask := live
		live = func(id string) bool {
			asked = true
			return ask(id)
		}
	}
	out, err := b.repairFolders(ctx, live)
	if stamped && err == nil && len(out) == 0 && !asked {
		b.repaired.set(stamp)
	}
	return out, err
}

// repairFolders is RepairFolders under the board's lock.
func (b *Board) repairFolders(ctx context.Context, live func(id string) bool) ([]string, error) {
	statuses, err := b.Log.Statuses(ctx)
	if err != nil {
		return nil, err
	}
	where := map[string][]Folder{}
	var ids []string
	for _, f := range Folders() {
		in, err := b.Store.IDs(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, id := range in {
			if where[id] == nil {
				ids = append(ids, id)
			}
			where[id] = append(where[id], f)
		}
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		status, known := statuses[id]
		if !known || len(where[id]) != 1 || status == world.StatusActive || fits(where[id][0], status) {
			continue
		}
		a, _, err := b.Log.Lookup(ctx, id)
		if err != nil {
			return out, err
		}
		from := where[id][0]
		want, ok := folderOfAgent(a)
		if !ok || from == want || (live != nil && live(id)) {
			continue
		}
		why := fmt.Sprintf("Level 1: moved from %s to %s, where its latest entry (%s) puts it", from, want, a.Status)
		if err := b.logRepair(ctx, id, why); err != nil {
			return out, err
		}
		if err := b.Store.Move(ctx, id, from, want); err != nil {
			return out, fmt.Errorf("task %s: %w", id, err)
		}
		out = append(out, fmt.Sprintf("moved %s from %s to %s, where its latest entry (%s) puts it", id, from, want, a.Status))
	}
	return out, nil
}

// fits reports whether folder f may hold a task whose latest entry has
// status: FolderOf for every output of that status.
func fits(f Folder, status world.Status) bool {
	if status == world.StatusFinish {
		return f == Completed || f == Failed
	}
	want, ok := FolderOf(status, "")
	return ok && f == want
}

// repairMemo holds the Stamp of the board after the last RepairFolders
// pass that left it as the log says: while the board keeps that stamp,
// a pass would find the same. A nil memo (a Board not made by New)
// remembers nothing.
type repairMemo struct {
	mu    sync.Mutex
	stamp Stamp
	ok    bool
}

func (m *repairMemo) done(st Stamp) bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ok && m.stamp == st
}

func (m *repairMemo) set(st Stamp) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stamp, m.ok = st, true
}
