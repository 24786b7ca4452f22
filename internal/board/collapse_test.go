package board

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

func TestCollapse(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	keep := add(t, b, "Develop ambient AI solutions")
	d1 := NewTask("Developing ambient AI solutions")
	d1.Description = "line one\nline two"
	d1.Priority = High
	d1, err := b.Add(ctx, d1)
	if err != nil {
		t.Fatal(err)
	}
	other := add(t, b, "write the docs")
	d2 := NewTask("Developing and refining ambient AI solutions for various applications")
	d2.After = []string{other.ID}
	if d2, err = b.Add(ctx, d2); err != nil {
		t.Fatal(err)
	}
	waiter := NewTask("ship it")
	waiter.After = []string{d1.ID, d2.ID}
	if waiter, err = b.Add(ctx, waiter); err != nil {
		t.Fatal(err)
	}

	res, err := b.Collapse(ctx, keep.ID, "Develop ambient AI solutions for various applications", []string{d1.ID, d2.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, f, err := s.Get(ctx, keep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f != Pending || got.Title != "Develop ambient AI solutions for various applications" || got.Priority != High {
		t.Errorf("kept task in %s: title %q priority %s", f, got.Title, got.Priority)
	}
	for _, want := range []string{"Develop ambient AI solutions", "Developing ambient AI solutions", "  line two", "Developing and refining"} {
		if !strings.Contains(got.Description, want) {
			t.Errorf("kept description %q lacks %q", got.Description, want)
		}
	}
	if !slices.Equal(got.After, []string{other.ID}) {
		t.Errorf("kept after %v, want the dropped task's %v", got.After, []string{other.ID})
	}
	if res.OldTitle != keep.Title || len(res.Dropped) != 2 || !slices.Equal(res.Relinked, []string{waiter.ID}) {
		t.Errorf("result %+v", res)
	}
	w, _, err := s.Get(ctx, waiter.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.After, []string{keep.ID}) {
		t.Errorf("waiter after %v, want [%s]", w.After, keep.ID)
	}
	for _, d := range []*Task{d1, d2} {
		dt, f, err := s.Get(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f != FailedBlocked || dt.ProcessorAutoRequeue {
			t.Errorf("dropped %s in %s, auto requeue %v", d.ID, f, dt.ProcessorAutoRequeue)
		}
		lines := logLines(t, b, d.ID)
		n := len(lines)
		if n < 3 || !strings.Contains(lines[n-2], "[event:system]["+d.ID+"] collapsed into "+keep.ID+": title="+d.Title) ||
			!strings.Contains(lines[n-1], "[agent:failed]["+d.ID+"] duplicate of "+keep.ID+": collapsed by cleanup | need: none") {
			t.Errorf("log of %s: %q", d.ID, lines)
		}
		a, _, err := b.Log.Lookup(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := IsCollapsed(a); !ok || k != keep.ID {
			t.Errorf("IsCollapsed(%+v) = %q, %v", a, k, ok)
		}
	}
	if l := logLines(t, b, d1.ID); !strings.Contains(strings.Join(l, "\n"), `description=line one\nline two; kind=task; priority=high`) {
		t.Errorf("the full text of %s is not in the log: %q", d1.ID, l)
	}
	kl := logLines(t, b, keep.ID)
	if !strings.Contains(kl[len(kl)-1], "[event:system]["+keep.ID+"] collapsed "+d1.ID+", "+d2.ID+" into this task: title=Develop ambient AI solutions for various applications (was: Develop ambient AI solutions); priority=high (was: normal); after="+other.ID) {
		t.Errorf("keep's log line %q", kl[len(kl)-1])
	}
	if wl := logLines(t, b, waiter.ID); !strings.Contains(wl[len(wl)-1], "after: "+d1.ID+" → "+keep.ID) {
		t.Errorf("waiter's log line %q", wl[len(wl)-1])
	}
	rep, err := b.Rebuild(ctx, true)
	if err != nil || !rep.Clean() {
		t.Errorf("rebuild --check after a collapse: %+v, %v", rep, err)
	}
	// A person who disagrees answers the duplicate: it is pending again.
	if _, _, resumed, err := b.Answer(ctx, d1.ID, "not a duplicate"); err != nil || !resumed {
		t.Errorf("answer a dropped task: resumed %v, %v", resumed, err)
	}
	if f := folderOn(t, s, d1.ID); f != Pending {
		t.Errorf("answered duplicate in %s, want pending", f)
	}
}

func TestCollapseRefuses(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	a := add(t, b, "a")
	c := add(t, b, "b")
	done := add(t, b, "c")
	if _, err := b.Move(ctx, done.ID, FailedBlocked, "by hand"); err != nil {
		t.Fatal(err)
	}
	with := func(title string, edit func(*Task)) *Task {
		task := NewTask(title)
		task.Need = "tests pass"
		edit(task)
		got, err := b.Add(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	cleanup := with("standardise errors", func(d *Task) { d.Kind, d.Type = KindDirective, DirectiveCleanup })
	functional := with("standardise errors", func(d *Task) { d.Kind, d.Type = KindDirective, DirectiveFunctional })
	m1 := with("standardise errors", func(d *Task) { d.Milestone = "m1" })
	m2 := with("standardise errors", func(d *Task) { d.Milestone = "m2" })
	before := countLines(t, b)
	for _, tc := range []struct {
		name      string
		keep      string
		canonical string
		drops     []string
		want      error
		wantText  string
	}{
		{"keep among drops", a.ID, "x", []string{a.ID}, nil, "also among the dropped"},
		{"no drops", a.ID, "x", nil, nil, "no task to drop"},
		{"twice", a.ID, "x", []string{c.ID, c.ID}, nil, "named twice"},
		{"unknown drop", a.ID, "x", []string{c.ID, "t-00000000"}, ErrNotFound, ""},
		{"unknown keep", "t-00000000", "x", []string{c.ID}, ErrNotFound, ""},
		{"drop not pending", a.ID, "x", []string{c.ID, done.ID}, ErrNotPending, ""},
		{"keep not pending", done.ID, "x", []string{c.ID}, ErrNotPending, ""},
		{"empty title", a.ID, "  ", []string{c.ID}, nil, "field title"},
		{"two lines", a.ID, "x\ny", []string{c.ID}, nil, "field title"},
		// The cap and aging drop cleanup directives: planned work
		// collapsed into one would go with it, unasked.
		{"planned task into a directive", cleanup.ID, "x", []string{m1.ID}, nil, "not duplicates"},
		{"directive into a planned task", m1.ID, "x", []string{cleanup.ID}, nil, "not duplicates"},
		{"functional into cleanup directive", cleanup.ID, "x", []string{functional.ID}, nil, "not duplicates"},
		{"planned tasks of two milestones", m1.ID, "x", []string{m2.ID}, nil, "not duplicates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Collapse(ctx, tc.keep, tc.canonical, tc.drops, nil)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("got %v, want %v %q", err, tc.want, tc.wantText)
			}
		})
	}
	if after := countLines(t, b); after != before || folderOn(t, s, c.ID) != Pending || folderOn(t, s, m1.ID) != Pending {
		t.Errorf("a refused collapse wrote: %d log lines before, %d after", before, after)
	}
}

// TestCollapseCycle: a link that would make two tasks wait for each other
// is dropped instead of moved.
func TestCollapseCycle(t *testing.T) {
	ctx := context.Background()
	b, s, _ := newTestBoard(t)
	d := add(t, b, "dup")
	x := NewTask("x waits for the duplicate")
	x.After = []string{d.ID}
	x, err := b.Add(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	k := NewTask("keep waits for x")
	k.After = []string{x.ID}
	if k, err = b.Add(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Collapse(ctx, k.ID, "keep", []string{d.ID}, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Get(ctx, x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.After) != 0 {
		t.Errorf("x after %v, want none (keep waits for x)", got.After)
	}
}

// failingStore fails its n-th write (Put or Move), as a crash would stop
// the collapse there.
type failingStore struct {
	Store
	n, writes int
}

func (s *failingStore) write() error {
	s.writes++
	if s.writes == s.n {
		return fmt.Errorf("injected failure of write %d", s.n)
	}
	return nil
}

func (s *failingStore) Put(ctx context.Context, t *Task, f Folder) error {
	if err := s.write(); err != nil {
		return err
	}
	return s.Store.Put(ctx, t, f)
}

func (s *failingStore) Move(ctx context.Context, id string, from, to Folder) error {
	if err := s.write(); err != nil {
		return err
	}
	return s.Store.Move(ctx, id, from, to)
}

// TestCollapseCrash stops a collapse at each of its writes in turn: the
// log always comes first, so every dropped task whose ending is logged
// has its text in the log, Rebuild puts every file where the log says,
// and no task is lost.
func TestCollapseCrash(t *testing.T) {
	ctx := context.Background()
	for n := 1; ; n++ {
		b, fs, _ := newTestBoard(t)
		keep := add(t, b, "keep me")
		d1 := add(t, b, "drop one")
		d2 := add(t, b, "drop two")
		w := NewTask("waits")
		w.After = []string{d2.ID}
		w, err := b.Add(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		fail := &failingStore{Store: fs, n: n}
		b.Store = fail
		_, err = b.Collapse(ctx, keep.ID, "kept", []string{d1.ID, d2.ID}, nil)
		b.Store = fs
		if err == nil {
			if n < 5 {
				t.Fatalf("write %d: the collapse made only %d writes", n, fail.writes)
			}
			break
		}
		if _, err := b.Rebuild(ctx, false); err != nil {
			t.Fatal(err)
		}
		if rep, err := b.Rebuild(ctx, true); err != nil || !rep.Clean() {
			t.Errorf("write %d: the board disagrees with the log after a rebuild: %+v %v", n, rep, err)
		}
		for _, d := range []*Task{d1, d2} {
			a, _, err := b.Log.Lookup(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			f := folderOn(t, fs, d.ID)
			switch a.Status {
			case world.StatusFailed:
				if f != FailedBlocked || !strings.Contains(strings.Join(logLines(t, b, d.ID), "\n"), "collapsed into "+keep.ID+": title="+d.Title) {
					t.Errorf("write %d: %s failed in the log, in %s, text logged: %q", n, d.ID, f, logLines(t, b, d.ID))
				}
			case world.StatusStart:
				if f != Pending {
					t.Errorf("write %d: %s pending in the log, in %s", n, d.ID, f)
				}
			}
		}
		// No task waits for a dropped one.
		wt, _, err := fs.Get(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a, _, _ := b.Log.Lookup(ctx, d2.ID); a.Status == world.StatusFailed && slices.Contains(wt.After, d2.ID) {
			t.Errorf("write %d: %s waits for the dropped %s", n, w.ID, d2.ID)
		}
	}
}

func countLines(t *testing.T, b *Board) int {
	t.Helper()
	n := 0
	if err := b.Log.Select(context.Background(), world.Filter{}, func(*world.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCollapseChanged: a task that ran and came back, or that a person
// edited, after the caller read it is refused with ErrChanged, and
// nothing is written.
func TestCollapseChanged(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(*Task)
	}{
		{"ran again", func(t *Task) { t.Runs++ }},
		{"edited", func(t *Task) { t.UpdatedAt = t.UpdatedAt.Add(time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, s, _ := newTestBoard(t)
			keep := add(t, b, "keep me")
			d := add(t, b, "drop me")
			shown := map[string]Shown{keep.ID: ShownOf(keep), d.ID: ShownOf(d)}
			got, f, err := s.Get(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(got)
			if err := s.Put(ctx, got, f); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Collapse(ctx, keep.ID, "kept", []string{d.ID}, shown); !errors.Is(err, ErrChanged) {
				t.Fatalf("got %v, want ErrChanged", err)
			}
			if _, f, _ := s.Get(ctx, d.ID); f != Pending {
				t.Errorf("changed task in %s, want pending", f)
			}
			if k, _, _ := s.Get(ctx, keep.ID); k.Title != "keep me" {
				t.Errorf("kept task retitled %q", k.Title)
			}
			// Shown as it is now, the collapse goes through.
			now, _, _ := s.Get(ctx, d.ID)
			shown[d.ID] = ShownOf(now)
			if _, err := b.Collapse(ctx, keep.ID, "kept", []string{d.ID}, shown); err != nil {
				t.Fatal(err)
			}
		})
	}
}
