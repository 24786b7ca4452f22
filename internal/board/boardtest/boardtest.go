// Package boardtest is the test suite every board.Store passes with its
// world log: the file store (internal/board's tests) and PostgreSQL's
// (internal/pgboard's), one suite for two implementations (STYLE.md,
// "Owners"). Run calls each case with a board made by the backend's New.
package boardtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/world"
)

// Backend makes boards of one implementation for the suite.
type Backend struct {
	// New returns a board over an empty store and world log.
	New func(t *testing.T) *board.Board
	// Raw puts body as task id's copy in folder unchecked, as a hand or a
	// crash leaves it; a nil body removes that copy.
	Raw func(t *testing.T, b *board.Board, id string, folder board.Folder, body []byte)
}

// Run runs every case of the suite on backend, in parallel: each has a
// board of its own.
func Run(t *testing.T, backend Backend) {
	cases := []struct {
		name string
		run  func(t *testing.T, be Backend)
	}{
		{"Add", testAdd},
		{"Edit", testEdit},
		{"Move", testMove},
		{"StoreMoveTwice", testStoreMoveTwice},
		{"StoreIDs", testStoreIDs},
		{"ListReportsMalformed", testListReportsMalformed},
		{"Rebuild", testRebuild},
		{"FailedWriteAfterLog", testFailedWriteAfterLog},
		{"ConcurrentChanges", testConcurrentChanges},
		{"Answer", testAnswer},
		{"CloseReopen", testCloseReopen},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, backend)
		})
	}
}

func add(t *testing.T, b *board.Board, title string) *board.Task {
	t.Helper()
	task := board.NewTask(title)
	task.Need = "tests pass"
	got, err := b.Add(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// logLines returns the world log's lines for id, as written.
func logLines(t *testing.T, b *board.Board, id string) []string {
	t.Helper()
	var out []string
	err := b.Log.Select(context.Background(), world.Filter{IDs: []string{id}}, func(r *world.Record) error {
		out = append(out, string(r.Raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func folderOn(t *testing.T, b *board.Board, id string) board.Folder {
	t.Helper()
	_, f, err := b.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func testAdd(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	task := add(t, b, "add a --json flag")
	got, f, err := b.Store.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f != board.Pending || got.Kind != board.KindTask || got.Priority != board.Normal || !got.ProcessorAutoRequeue || got.CreatedAt.IsZero() || !got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("added task in %s: %+v", f, got)
	}
	lines := logLines(t, b, task.ID)
	if len(lines) != 1 || !strings.HasSuffix(lines[0], "[agent:start]["+task.ID+"] add a --json flag | need: tests pass") {
		t.Errorf("log lines %q, want one start entry", lines)
	}

	// An id in use, on the board or in the log, is refused.
	dup := board.NewTask("again")
	dup.ID = task.ID
	if _, err := b.Add(ctx, dup); !errors.Is(err, board.ErrExists) {
		t.Errorf("second add of %s: got %v, want ErrExists", task.ID, err)
	}
	if _, err := b.Log.Agent(ctx, world.StatusStart, "t-0badf00d", "solve", ""); err != nil {
		t.Fatal(err)
	}
	dup.ID = "t-0badf00d"
	if _, err := b.Add(ctx, dup); !errors.Is(err, board.ErrExists) {
		t.Errorf("add of an id the log knows: got %v, want ErrExists", err)
	}
	// after must name tasks on the board; nothing is logged when it does not.
	later := board.NewTask("later")
	later.After = []string{"t-99999999"}
	if _, err := b.Add(ctx, later); err == nil || !strings.Contains(err.Error(), "not on the board") {
		t.Errorf("after an unknown task: got %v", err)
	}
	later.After = []string{task.ID}
	if _, err := b.Add(ctx, later); err != nil {
		t.Errorf("after a task on the board: %v", err)
	}
	if _, err := b.Add(ctx, board.NewTask("")); err == nil {
		t.Errorf("empty title accepted")
	}
	if n, _ := b.Store.List(ctx, board.Pending); len(n) != 2 {
		t.Errorf("pending holds %d tasks, want 2", len(n))
	}
	if _, _, err := b.Store.Get(ctx, "t-00000bad"); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("get of no task: got %v, want ErrNotFound", err)
	}
	if _, _, err := b.Store.Get(ctx, "../x"); err == nil {
		t.Errorf("get of a bad id: no error")
	}
}

func testEdit(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	task := add(t, b, "first")
	b.Now = func() time.Time { return task.CreatedAt.Add(time.Hour) }
	got, changed, err := b.Edit(ctx, task.ID, func(t *board.Task) error {
		t.Priority, t.Title = board.High, "second"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(changed, ",") != "title,priority" || got.Title != "second" || !got.UpdatedAt.After(got.CreatedAt) {
		t.Errorf("edit changed %v: %+v", changed, got)
	}
	if again, _, _ := b.Store.Get(ctx, task.ID); again.Priority != board.High {
		t.Errorf("edit not written: %+v", again)
	}
	lines := logLines(t, b, task.ID)
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, "[event:user]["+task.ID+"] edited: title=second; priority=high") {
		t.Errorf("edit logged as %q", last)
	}
	if _, changed, _ := b.Edit(ctx, task.ID, func(*board.Task) error { return nil }); changed != nil || len(logLines(t, b, task.ID)) != len(lines) {
		t.Errorf("an edit changing nothing changed %v or logged", changed)
	}
	if _, _, err := b.Edit(ctx, task.ID, func(t *board.Task) error { t.Priority = "urgent"; return nil }); err == nil {
		t.Errorf("bad priority accepted")
	}
}

func testMove(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	id := add(t, b, "x").ID

	// start → completed needs a run: refused, naming where it can go.
	_, err := b.Move(ctx, id, board.Completed, "")
	var me *board.MoveError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "it can move to failed-blocked") {
		t.Fatalf("move of a pending task to completed: got %v", err)
	}
	if _, err := b.Move(ctx, id, board.InProgress, ""); err == nil || !strings.Contains(err.Error(), "only a run makes a task active") {
		t.Errorf("move to in-progress: got %v", err)
	}
	if n := len(logLines(t, b, id)); n != 1 {
		t.Errorf("refused moves logged %d lines, want the start alone", n)
	}
	got, err := b.Move(ctx, id, board.FailedBlocked, "needs a design")
	if err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, b, id); f != board.FailedBlocked || got.ProcessorAutoRequeue {
		t.Errorf("blocked task in %s, processor_auto_requeue %v", f, got.ProcessorAutoRequeue)
	}
	got, err = b.Move(ctx, id, board.Pending, "design agreed")
	if err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, b, id); f != board.Pending || !got.ProcessorAutoRequeue {
		t.Errorf("requeued task in %s, processor_auto_requeue %v", f, got.ProcessorAutoRequeue)
	}
	want := []string{
		"[agent:start][" + id + "] x | need: tests pass",
		"[event:user][" + id + "] moved from pending to failed-blocked: needs a design",
		"[agent:failed][" + id + "] moved by a person: needs a design | need: a person answers: cra answer " + id + " '…'",
		"[event:user][" + id + "] moved from failed-blocked to pending: design agreed",
		"[agent:retry][" + id + "] moved by a person: design agreed",
	}
	lines := logLines(t, b, id)
	if len(lines) != len(want) {
		t.Fatalf("log:\n%s", strings.Join(lines, "\n"))
	}
	for i := range want {
		if !strings.HasSuffix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want it to end %q", i+1, lines[i], want[i])
		}
	}

	// After a run that failed, a person may call it done.
	if _, err := b.Log.Agent(ctx, world.StatusActive, id, "run 1: cra", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Log.Agent(ctx, world.StatusFinish, id, "run failed: exit 3", ""); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.Rebuild(ctx, false); err != nil || len(rep.Repairs) != 1 || rep.Repairs[0].To != board.Failed {
		t.Fatalf("rebuild after the run: %+v, %v", rep, err)
	}
	if _, err := b.Move(ctx, id, board.CompletedFinalized, "good enough"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Move(ctx, id, board.Pending, ""); err == nil || !strings.Contains(err.Error(), "lifecycle is over") {
		t.Errorf("move of a verified task: got %v", err)
	}
}

func testStoreMoveTwice(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	task := add(t, b, "x")
	for i := 0; i < 2; i++ {
		if err := b.Store.Move(ctx, task.ID, board.Pending, board.Failed); err != nil {
			t.Fatalf("move %d: %v", i+1, err)
		}
	}
	if err := b.Store.Move(ctx, task.ID, board.Pending, board.Completed); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("move from a folder that does not hold it: got %v, want ErrNotFound", err)
	}
	if err := b.Store.Delete(ctx, task.ID, board.Pending); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("delete from a folder that does not hold it: got %v, want ErrNotFound", err)
	}
	if err := b.Store.Delete(ctx, task.ID, board.Failed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Store.Get(ctx, task.ID); !errors.Is(err, board.ErrNotFound) {
		t.Errorf("get after delete: got %v, want ErrNotFound", err)
	}
}

// testStoreIDs: the ids of a folder's tasks, unread, in id order; a name
// that is no task id is left out.
func testStoreIDs(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	for _, id := range []string{"t-00000002", "t-00000001"} {
		task := board.NewTask("x")
		task.ID = id
		if err := b.Store.Put(ctx, task, board.CompletedFinalized); err != nil {
			t.Fatal(err)
		}
	}
	be.Raw(t, b, "not an id", board.CompletedFinalized, []byte("garbage"))
	ids, err := b.Store.IDs(ctx, board.CompletedFinalized)
	if err != nil || strings.Join(ids, " ") != "t-00000001 t-00000002" {
		t.Errorf("got %v, %v", ids, err)
	}
	if ids, err := b.Store.IDs(ctx, board.Pending); err != nil || len(ids) != 0 {
		t.Errorf("pending: got %v, %v", ids, err)
	}
	if ids, err := b.Store.IDs(ctx, ""); err != nil || len(ids) != 2 {
		t.Errorf("every folder: got %v, %v", ids, err)
	}
}

func testListReportsMalformed(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	add(t, b, "fine")
	be.Raw(t, b, "t-00000001", board.Pending, []byte("id: t-00000002\ntitle: x\n"))
	be.Raw(t, b, "t-00000003", board.Failed, []byte("id: t-00000003\ntitle: x\npriority: urgent\n"))
	be.Raw(t, b, "t-00000004", board.Failed, []byte("\x00\x01 not yaml: ["))
	ls, err := b.Store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, l := range ls {
		if (l.Err == nil) == (l.Task == nil) {
			t.Errorf("listed %s with task %v and error %v: want one of them", l.ID, l.Task, l.Err)
		}
		if l.Err != nil {
			errs = append(errs, l.Err.Error())
		}
	}
	if len(ls) != 4 || len(errs) != 3 {
		t.Fatalf("listed %d, errors %q", len(ls), errs)
	}
	for _, want := range []string{`"t-00000002" differs from the`, "set id: t-00000001", "priority"} {
		if !strings.Contains(strings.Join(errs, "\n"), want) {
			t.Errorf("errors %q lack %q", errs, want)
		}
	}
	if _, _, err := b.Store.Get(ctx, "t-00000001"); err == nil || errors.Is(err, board.ErrNotFound) {
		t.Errorf("get of a malformed task: got %v, want its error", err)
	}
	if ls, _ := b.Store.List(ctx, board.Failed); len(ls) != 2 || ls[0].ID != "t-00000003" {
		t.Errorf("failed lists %+v, want the two malformed in id order", ls)
	}
}

// testRebuild: Rebuild puts a task moved by hand back where the log says,
// recreates a lost one from the log, adopts one dropped into pending,
// and leaves to a person one the log does not know outside pending and a
// malformed one.
func testRebuild(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	moved := add(t, b, "moved by hand")
	ok := add(t, b, "where it belongs")
	gone := add(t, b, "lost")
	if err := b.Store.Move(ctx, moved.ID, board.Pending, board.Completed); err != nil {
		t.Fatal(err)
	}
	be.Raw(t, b, gone.ID, board.Pending, nil)
	be.Raw(t, b, "hand-1", board.Pending, []byte("id: hand-1\ntitle: dropped in\n"))
	be.Raw(t, b, "hand-2", board.Completed, []byte("id: hand-2\ntitle: dropped in\n"))
	be.Raw(t, b, "broken", board.Pending, []byte("id: broken\ntitle: x\npriority: urgent\n"))
	want := map[string]string{moved.ID: "move", gone.ID: "recreate", "hand-1": "adopt", "hand-2": "unlogged", "broken": "malformed"}
	for _, check := range []bool{true, false} {
		rep, err := b.Rebuild(ctx, check)
		if err != nil {
			t.Fatal(err)
		}
		if got := repairKinds(rep); !maps(got, want) {
			t.Fatalf("rebuild (check %v) found %v, want %v", check, got, want)
		}
	}
	for id, want := range map[string]board.Folder{moved.ID: board.Pending, ok.ID: board.Pending, gone.ID: board.Pending, "hand-1": board.Pending, "hand-2": board.Completed} {
		if f := folderOn(t, b, id); f != want {
			t.Errorf("%s in %s, want %s", id, f, want)
		}
	}
	if a, _, _ := b.Log.Lookup(ctx, "hand-1"); a.Status != world.StatusStart {
		t.Errorf("adopted task is %s in the log, want start", a.Status)
	}
	rep, err := b.Rebuild(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, left := repairKinds(rep), map[string]string{"hand-2": "unlogged", "broken": "malformed"}; !maps(got, left) {
		t.Errorf("second check found %v, want %v", got, left)
	}
}

func repairKinds(r board.Report) map[string]string {
	out := map[string]string{}
	for _, p := range r.Repairs {
		if out[p.ID] != "" {
			out[p.ID] += ","
		}
		out[p.ID] += p.What
	}
	return out
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// errInjected is the failure the suite injects between the log and the
// store.
var errInjected = errors.New("injected failure")

// failingStore fails the writes named, passing the rest to Store.
type failingStore struct {
	board.Store
	put, move bool
}

func (f failingStore) Put(ctx context.Context, t *board.Task, folder board.Folder) error {
	if f.put {
		return errInjected
	}
	return f.Store.Put(ctx, t, folder)
}

func (f failingStore) Move(ctx context.Context, id string, from, to board.Folder) error {
	if f.move {
		return errInjected
	}
	return f.Store.Move(ctx, id, from, to)
}

// failingAtomic is failingStore over an Atomic store: the failure comes
// inside its transaction, after the log's entries.
type failingAtomic struct {
	failingStore
	a board.Atomic
}

func (f failingAtomic) Atomic(ctx context.Context, log world.Store, fn func(world.Store, board.Store) error) error {
	return f.a.Atomic(ctx, log, func(l world.Store, s board.Store) error {
		return fn(l, failingStore{Store: s, put: f.put, move: f.move})
	})
}

// failing returns b's store failing the writes named.
func failing(b *board.Board, put, move bool) board.Store {
	fs := failingStore{Store: b.Store, put: put, move: move}
	if a, ok := b.Store.(board.Atomic); ok {
		return failingAtomic{failingStore: fs, a: a}
	}
	return fs
}

// testFailedWriteAfterLog: a write of the store that fails after the
// log's entries. Where the store is Atomic the two commit together, so
// the failure leaves neither; elsewhere the log keeps the entries and
// Rebuild makes the store follow it (DESIGN.md principle 5).
func testFailedWriteAfterLog(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	_, atomic := b.Store.(board.Atomic)
	store := b.Store
	lines := func() int {
		n := 0
		if err := b.Log.Select(ctx, world.Filter{}, func(*world.Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}

	b.Store = failing(b, true, false)
	task := board.NewTask("never half added")
	task.ID = "t-0000add0"
	if _, err := b.Add(ctx, task); !errors.Is(err, errInjected) {
		t.Fatalf("add with a failing write: got %v, want the injected failure", err)
	}
	b.Store = store
	_, known, err := b.Log.Lookup(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, _, gerr := b.Store.Get(ctx, task.ID)
	if atomic && (known || lines() != 0 || !errors.Is(gerr, board.ErrNotFound)) {
		t.Errorf("atomic add that failed left the log's entry (%v, %d lines) or the task (%v)", known, lines(), gerr)
	}
	if !atomic && (!known || !errors.Is(gerr, board.ErrNotFound)) {
		t.Errorf("file add that failed: logged %v, get %v; want logged and no file", known, gerr)
	}

	moving := add(t, b, "never half moved")
	before := lines()
	b.Store = failing(b, false, true)
	if _, err := b.Move(ctx, moving.ID, board.FailedBlocked, "blocked"); !errors.Is(err, errInjected) {
		t.Fatalf("move with a failing store: got %v, want the injected failure", err)
	}
	b.Store = store
	a, _, _ := b.Log.Lookup(ctx, moving.ID)
	if atomic && (lines() != before || a.Status != world.StatusStart || folderOn(t, b, moving.ID) != board.Pending) {
		t.Errorf("atomic move that failed: %d lines (want %d), status %s, folder %s: want neither changed", lines(), before, a.Status, folderOn(t, b, moving.ID))
	}
	if !atomic && (lines() != before+2 || a.Status != world.StatusFailed) {
		t.Errorf("file move that failed: %d lines (want %d), status %s", lines(), before+2, a.Status)
	}
	// Either way Rebuild leaves the store where the log says.
	if _, err := b.Rebuild(ctx, false); err != nil {
		t.Fatal(err)
	}
	want := board.Pending
	if !atomic {
		want = board.FailedBlocked
	}
	if f := folderOn(t, b, moving.ID); f != want {
		t.Errorf("after rebuild %s is in %s, want %s", moving.ID, f, want)
	}
}

// testConcurrentChanges: adds, moves and rebuilds from several goroutines
// leave every task in one folder, where the log puts it.
func testConcurrentChanges(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	const workers, each = 4, 3
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := b.Rebuild(ctx, false); err != nil {
				errs <- fmt.Errorf("rebuild: %w", err)
				return
			}
		}
	}()
	var ww sync.WaitGroup
	for w := 0; w < workers; w++ {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := 0; i < each; i++ {
				task, err := b.Add(ctx, board.NewTask("concurrent"))
				if err != nil {
					errs <- err
					return
				}
				for _, f := range []board.Folder{board.FailedBlocked, board.Pending} {
					if _, err := b.Move(ctx, task.ID, f, "shuffle"); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep, err := b.Rebuild(ctx, true)
	if err != nil || !rep.Clean() || rep.Tasks != workers*each {
		t.Fatalf("after the changes: %d tasks, %+v, %v", rep.Tasks, rep.Repairs, err)
	}
	ids, _ := b.Store.IDs(ctx, board.Pending)
	if len(ids) != workers*each || !slices.IsSorted(ids) {
		t.Errorf("pending holds %v, want %d tasks in order", ids, workers*each)
	}
}

// finished puts a new task through a run that ended in folder: completed
// (exit 0) or failed.
func finished(t *testing.T, b *board.Board, title string, folder board.Folder) *board.Task {
	t.Helper()
	ctx := context.Background()
	task := add(t, b, title)
	out := "exit 0: ok"
	if folder == board.Failed {
		out = board.RunFailed + " exit 3: broken"
	}
	for _, e := range []struct {
		s   world.Status
		out string
	}{{world.StatusActive, "run 1: test"}, {world.StatusFinish, out}} {
		if _, err := b.Log.Agent(ctx, e.s, task.ID, e.out, ""); err != nil {
			t.Fatal(err)
		}
	}
	task.Runs = 1
	if err := b.Store.Put(ctx, task, board.Pending); err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Move(ctx, task.ID, board.Pending, folder); err != nil {
		t.Fatal(err)
	}
	return task
}

// testAnswer: a person's answer, logged; a failed task it resumes goes
// back to pending with its streaks reset, the answer and the retry
// logged; a verified one takes none.
func testAnswer(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)

	// A task in pending takes the answer for its next run.
	p := add(t, b, "waiting")
	if _, folder, resumed, err := b.Answer(ctx, p.ID, "use v2"); err != nil || resumed || folder != board.Pending {
		t.Fatalf("got resumed %v in %s, %v", resumed, folder, err)
	}
	var fe *board.FieldError
	if _, _, _, err := b.Answer(ctx, p.ID, "  "); !errors.As(err, &fe) {
		t.Fatalf("an empty answer: got %v", err)
	}

	// A blocked task goes back to pending, streaks reset.
	task := finished(t, b, "blocked", board.Failed)
	if _, _, err := b.Decide(ctx, board.Decision{ID: task.ID, From: board.Failed, Runs: 1, Status: world.StatusFailed, Output: "blocked", Need: "a token",
		Update: func(t *board.Task) { t.ConsecutiveFailures, t.ConsecutiveCompletionClaims = 5, 1 }}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Resume(ctx, task.ID); !errors.Is(err, board.ErrChanged) {
		t.Fatalf("resume without an answer: got %v, want board.ErrChanged", err)
	}
	got, folder, resumed, err := b.Answer(ctx, task.ID, "the token is in\nCI_TOKEN")
	if err != nil || !resumed || folder != board.Pending {
		t.Fatalf("got resumed %v in %s, %v", resumed, folder, err)
	}
	if folderOn(t, b, task.ID) != board.Pending || got.ConsecutiveFailures != 0 || got.ConsecutiveCompletionClaims != 0 || !got.ProcessorAutoRequeue {
		t.Errorf("after the answer: in %s, %+v", folderOn(t, b, task.ID), got)
	}
	lines := logLines(t, b, task.ID)
	want := []string{"[event:user][" + task.ID + "] the token is in\\nCI_TOKEN", "[agent:retry][" + task.ID + "] a person answered: the token is in CI_TOKEN"}
	for i, w := range want {
		if l := lines[len(lines)-2+i]; !strings.HasSuffix(l, w) {
			t.Errorf("line %q, want it to end %q", l, w)
		}
	}
	// The next run's prompt carries the answer.
	h, err := b.History(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var pr board.Prompt
	pr.FromLog(h)
	if len(pr.Answers) != 1 || pr.Answers[0] != "the token is in\nCI_TOKEN" {
		t.Errorf("answers %q", pr.Answers)
	}

	// A verified task takes none.
	v := finished(t, b, "done", board.Completed)
	if _, _, err := b.Decide(ctx, board.Decision{ID: v.ID, From: board.Completed, Runs: 1, Status: world.StatusVerified, Output: "ok", Review: "run 1: full_complete"}); err != nil {
		t.Fatal(err)
	}
	var ae *board.AnswerError
	if _, _, _, err := b.Answer(ctx, v.ID, "more"); !errors.As(err, &ae) {
		t.Fatalf("got %v, want an board.AnswerError", err)
	}
	if _, _, _, err := b.Answer(ctx, "t-00000000", "who"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("got %v, want board.ErrNotFound", err)
	}
}

// testCloseReopen: a person closes a task whose run failed (failed, into
// failed-blocked) and reopens it (back to pending), each logged with its
// folder's change.
func testCloseReopen(t *testing.T, be Backend) {
	ctx := context.Background()
	b := be.New(t)
	task := finished(t, b, "broken", board.Failed)
	got, err := b.Close(ctx, task.ID, "not worth it")
	if err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, b, task.ID); f != board.FailedBlocked || got.ProcessorAutoRequeue {
		t.Errorf("closed task in %s, processor_auto_requeue %v", f, got.ProcessorAutoRequeue)
	}
	if _, err := b.Close(ctx, task.ID, "again"); err == nil {
		t.Errorf("a second close: no error")
	}
	a, _, _ := b.Log.Lookup(ctx, task.ID)
	if a.Status != world.StatusFailed {
		t.Errorf("closed task is %s in the log, want failed", a.Status)
	}
	if _, err := b.Reopen(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if f := folderOn(t, b, task.ID); f != board.Pending {
		t.Errorf("reopened task in %s, want pending", f)
	}
	lines := logLines(t, b, task.ID)
	want := []string{"[agent:failed][" + task.ID + "] " + board.Closed + "not worth it", "[agent:retry][" + task.ID + "] moved by a person: reopened"}
	all := strings.Join(lines, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("log lacks %q:\n%s", w, all)
		}
	}
}
