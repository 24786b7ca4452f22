package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// newTestRunner is a runner over a fresh repository with a board and a
// world log, the supervisors themselves off (no model is called).
func newTestRunner(t *testing.T, set func(*config.Supervisors)) (*Runner, string) {
	t.Helper()
	repo := t.TempDir()
	state := filepath.Join(repo, ".clean_room")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := world.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	off := false
	s := &config.Supervisors{Enabled: &off}
	if set != nil {
		set(s)
	}
	cfg := &config.Config{Supervisors: s}
	return &Runner{Board: board.New(board.NewFileStore(state), l), Root: repo, StateDir: state,
		Config: func() (*config.Config, error) { return cfg, nil }}, state
}

// verdict logs a reviewed run of task id ending with action, and its
// review, as the recycler does.
func addVerdict(t *testing.T, r *Runner, id string, run int, action review.Action) {
	t.Helper()
	logVerdict(t, r, id, run, action, "")
}

// verdictClass logs a retry whose review was classification c.
func verdictClass(t *testing.T, r *Runner, id string, run int, c review.Classification) {
	t.Helper()
	logVerdict(t, r, id, run, review.Requeue, c)
}

func logVerdict(t *testing.T, r *Runner, id string, run int, action review.Action, c review.Classification) {
	t.Helper()
	ctx := context.Background()
	l := r.Board.Log
	if _, err := l.Agent(ctx, world.StatusActive, id, fmt.Sprintf("run %d: rec", run), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Agent(ctx, world.StatusFinish, id, "exit 0", ""); err != nil {
		t.Fatal(err)
	}
	status, class, out := world.StatusRetry, review.SomeProgress, "some_progress: go on"
	switch action {
	case review.Finalize:
		status, class, out = world.StatusVerified, review.FullComplete, "verified: 1 complete reviews in a row: done"
	case review.Block:
		status, out = world.StatusFailed, "blocked: 1 failed runs in a row: broken"
	}
	if c != "" {
		class, out = c, string(c)+": go on"
	}
	if _, err := l.Event(ctx, world.SourceReview, id, fmt.Sprintf("run %d: %s", run, class)); err != nil {
		t.Fatal(err)
	}
	e, err := l.Agent(ctx, status, id, out, "")
	if err != nil {
		t.Fatal(err)
	}
	rv := review.Review{Time: e.Time, TaskID: id, Run: run, Classification: class, Action: action, Entry: out}
	line, _ := json.Marshal(rv)
	dir := filepath.Join(r.StateDir, board.RunsDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, statedir.ReviewsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(line, '\n'))
	f.Close()
}

func addTask(t *testing.T, r *Runner, title string, edit func(*board.Task)) *board.Task {
	t.Helper()
	task := board.NewTask(title)
	if edit != nil {
		edit(task)
	}
	got, err := r.Board.Add(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // distinct created_at
	return got
}

func cleanupDirective(d *board.Task) {
	d.Kind, d.Type, d.Priority, d.Source = board.KindDirective, board.DirectiveCleanup, board.Low, "code_style"
	d.Description, d.Rationale, d.Files = "rename the helpers", "names are nouns", []string{"util.go"}
}

func TestCheckDropsAgedAndSurplusDirectives(t *testing.T) {
	ctx := context.Background()
	two, one := 2, 1
	r, state := newTestRunner(t, func(s *config.Supervisors) { s.DirectiveMaxAge, s.MaxCleanupDirectives = &two, &one })
	aged := addTask(t, r, "aged cleanup", cleanupDirective)
	work := addTask(t, r, "work", nil)
	addVerdict(t, r, work.ID, 1, review.Requeue)
	addVerdict(t, r, work.ID, 2, review.Requeue)
	older := addTask(t, r, "older cleanup", cleanupDirective)
	newer := addTask(t, r, "newer cleanup", cleanupDirective)

	rep, err := r.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		aged.ID:  "not picked up within 2 completions",
		older.ID: "over the cap of 1 pending cleanup directives: the oldest goes",
	}
	if fmt.Sprint(rep.Dropped) != fmt.Sprint(want) {
		t.Fatalf("dropped %v, want %v", rep.Dropped, want)
	}
	for _, d := range []*board.Task{aged, older} {
		if _, f, err := r.Board.Store.Get(ctx, d.ID); err != nil || f != board.FailedBlocked {
			t.Errorf("%s in %s, %v", d.ID, f, err)
		}
		a, _, _ := r.Board.Log.Lookup(ctx, d.ID)
		if a.Status != world.StatusFailed || !strings.HasPrefix(a.Output, DroppedPrefix) {
			t.Errorf("%s: %+v", d.ID, a)
		}
	}
	// The text stays in the log.
	data, _ := os.ReadFile(world.Path(state))
	if !strings.Contains(string(data), "[agent:failed]["+aged.ID+"] dropped: not picked up within 2 completions; directive: aged cleanup; description: rename the helpers; rationale: names are nouns; files: util.go") {
		t.Errorf("log:\n%s", data)
	}
	if _, f, _ := r.Board.Store.Get(ctx, newer.ID); f != board.Pending {
		t.Errorf("newer in %s", f)
	}
	// The board still agrees with the log.
	if rep, err := r.Board.Rebuild(ctx, true); err != nil || !rep.Clean() {
		t.Errorf("rebuild: %+v %v", rep, err)
	}
	// Drops are not churn, blocks or verdicts.
	st, err := r.Status(ctx)
	if err != nil || st.Urgency != 0.6 || st.PendingCleanup != 1 {
		t.Errorf("status: %+v %v", st, err)
	}
}

func TestPromoteAfterUse(t *testing.T) {
	ctx := context.Background()
	r, state := newTestRunner(t, nil)
	store := &knowledge.Store{Root: r.Root}
	if _, err := store.Put(knowledge.CodeStyle, "conventions/errors.md", &knowledge.Doc{Title: "Errors", Rules: "Wrap once."}, "t-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(knowledge.Design, "design/flaky.md", &knowledge.Doc{Title: "Flaky", Rules: "Do it."}, "t-0"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // prompts written after the documents
	prompt := "# x\n\n## PROJECT KNOWLEDGE\n\n### conventions/errors.md\n# Errors\n\n### design/flaky.md\n# Flaky\n\n## ACTIVE DIRECTIVES\n\n### design/not-knowledge.md\n"
	for i, action := range []review.Action{review.Finalize, review.Finalize, review.Requeue, review.Finalize} {
		task := addTask(t, r, fmt.Sprintf("task %d", i), nil)
		if err := os.MkdirAll(filepath.Join(state, board.RunsDir, task.ID), 0o755); err != nil {
			t.Fatal(err)
		}
		p := prompt
		if i == 3 {
			p = strings.Replace(prompt, "### design/flaky.md\n", "", 1)
		}
		if err := os.WriteFile(filepath.Join(state, board.RunsDir, task.ID, "prompt-1.md"), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
		addVerdict(t, r, task.ID, 1, action)
	}
	blocked := addTask(t, r, "blocked", nil)
	os.MkdirAll(filepath.Join(state, board.RunsDir, blocked.ID), 0o755)
	os.WriteFile(filepath.Join(state, board.RunsDir, blocked.ID, "prompt-1.md"), []byte("## PROJECT KNOWLEDGE\n\n### design/flaky.md\n"), 0o644)
	addVerdict(t, r, blocked.ID, 1, review.Block)

	uses, err := Usage(state, r.Root, []string{"conventions/errors.md", "design/flaky.md"})
	if err != nil {
		t.Fatal(err)
	}
	if u := uses["conventions/errors.md"]; len(u.Tasks) != 3 || len(u.Failures) != 0 || !Promotable(u, 3) || Promotable(u, 4) {
		t.Errorf("errors: %+v", u)
	}
	if u := uses["design/flaky.md"]; len(u.Tasks) != 2 || len(u.Failures) != 1 || Promotable(u, 1) {
		t.Errorf("flaky: %+v", u)
	}
	rep, err := r.Check(ctx)
	if err != nil || len(rep.Promoted) != 1 || rep.Promoted[0] != "conventions/errors.md" {
		t.Fatalf("check: %+v %v", rep, err)
	}
	d, _, _ := store.Read("conventions/errors.md")
	if d.Status != knowledge.Established || !strings.Contains(d.Changelog[len(d.Changelog)-1], "cra after none: status established: used by 3 verified tasks without a failure") {
		t.Errorf("promoted: %+v", d)
	}
	if d, _, _ := store.Read("design/flaky.md"); d.Status != knowledge.Provisional {
		t.Errorf("flaky: %s", d.Status)
	}
}

func TestCollectSignals(t *testing.T) {
	ctx := context.Background()
	r, state := newTestRunner(t, nil)
	a := addTask(t, r, "a", nil)
	for run := 1; run <= 3; run++ {
		addVerdict(t, r, a.ID, run, review.Requeue)
	}
	b := addTask(t, r, "b", nil)
	if _, _, err := r.Board.Edit(ctx, b.ID, func(t *board.Task) error { t.Title = "b, reworded"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Board.Edit(ctx, b.ID, func(t *board.Task) error { t.Agent = "other"; return nil }); err != nil {
		t.Fatal(err)
	}
	addVerdict(t, r, b.ID, 1, review.Block)
	// A person's move and a retry no review wrote are no verdicts.
	if _, err := r.Board.Log.Event(ctx, world.SourceUser, b.ID, "the answer"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Board.Move(ctx, b.ID, board.Pending, "again"); err != nil {
		t.Fatal(err)
	}
	got, err := collect(ctx, r.Board, verdict.Files{StateDir: state}, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range got {
		kinds = append(kinds, fmt.Sprintf("%s:%s", s.Kind, map[string]string{a.ID: "a", b.ID: "b"}[s.Task]))
	}
	want := "verdict:a verdict:a churn:a verdict:a churn:b replan:b blocked:b verdict:b"
	if strings.Join(kinds, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(kinds, " "), want)
	}
	if u := Urgency(got, time.Time{}); u < 2.59 || u > 2.61 { // 4×0.3 + 2×0.2 + 1.0
		t.Errorf("urgency %v", u)
	}
}

func TestPolishLimit(t *testing.T) {
	ctx := context.Background()
	two := 2
	r, _ := newTestRunner(t, func(s *config.Supervisors) { s.PolishLimit = &two })
	finish := func(task *board.Task) {
		t.Helper()
		addVerdict(t, r, task.ID, 1, review.Finalize)
		task.Runs = 1
		if err := r.Board.Store.Put(ctx, task, board.Pending); err != nil {
			t.Fatal(err)
		}
		if err := r.Board.Store.Move(ctx, task.ID, board.Pending, board.CompletedFinalized); err != nil {
			t.Fatal(err)
		}
	}
	inM := func(d *board.Task) { cleanupDirective(d); d.Milestone = "m" }
	finish(addTask(t, r, "planned", func(d *board.Task) { d.Milestone = "m" }))
	finish(addTask(t, r, "polish 1", inM))
	finish(addTask(t, r, "polish 2", inM))
	left := addTask(t, r, "polish 3", inM)
	other := addTask(t, r, "elsewhere", cleanupDirective)
	st, err := r.Status(ctx)
	if err != nil || !st.Polish || fmt.Sprint(st.Milestones) != "[m]" {
		t.Fatalf("status: %+v %v", st, err)
	}
	rep, err := r.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Polished) != "[m]" || rep.Dropped[left.ID] != "the polish phase of milestone m ran its 2 cleanup directives" || rep.Dropped[other.ID] != "" {
		t.Errorf("report: %+v", rep)
	}
}

// TestDropPickedUp: a directive picked up between the check and its drop
// is not dropped, and no line of the log says it was.
func TestDropPickedUp(t *testing.T) {
	ctx := context.Background()
	r, state := newTestRunner(t, nil)
	d := addTask(t, r, "cleanup picked up", cleanupDirective)
	// A processor takes it meanwhile.
	if err := r.Board.Log.Begin(ctx, d.ID, "run 1: builtin", ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Board.Store.Move(ctx, d.ID, board.Pending, board.InProgress); err != nil {
		t.Fatal(err)
	}
	if err := r.drop(ctx, d, "aged"); !errors.Is(err, board.ErrChanged) {
		t.Fatalf("got %v, want board.ErrChanged", err)
	}
	data, _ := os.ReadFile(world.Path(state))
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "]["+d.ID+"]") && strings.Contains(line, "dropped") {
			t.Errorf("the log says a directive that was picked up was dropped: %s", line)
		}
	}
}

// TestApplyItemsNeverCollide: items whose first words match, or that
// have no ASCII words at all, each get their own lesson; the same item
// again updates its own file and no other.
func TestApplyItemsNeverCollide(t *testing.T) {
	ctx := context.Background()
	r, _ := newTestRunner(t, nil)
	st := &state{store: &knowledge.Store{Root: r.Root}}
	contents := []string{
		"Always run the tests before you commit, or CI breaks.",
		"Always run the tests before you commit the generated files.",
		"コミットの前にテストを実行する。",
		"生成されたファイルはコミットしない。",
	}
	var items []Item
	for _, c := range contents {
		items = append(items, Item{Category: "lesson", Content: c, SourceTask: "t-1", Confidence: "high"})
	}
	for range 2 { // twice: the second run finds each item's own file
		rec := &Record{After: "t-1"}
		if err := r.apply(ctx, st, knowledge.Internaliser, &Reply{Items: items}, rec); err != nil {
			t.Fatal(err)
		}
		if len(rec.Refused) != 0 {
			t.Errorf("refused %v", rec.Refused)
		}
	}
	listed, err := st.store.List()
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, l := range listed {
		d, _, err := st.store.Read(l.Path)
		if err != nil {
			t.Fatal(err)
		}
		rules[d.Rules] = true
		if !strings.HasPrefix(l.Path, "lessons/") {
			t.Errorf("lesson at %s", l.Path)
		}
	}
	if len(listed) != len(contents) {
		t.Errorf("%d lessons, want %d: %+v", len(listed), len(contents), listed)
	}
	for _, c := range contents {
		if !rules[c] {
			t.Errorf("the lesson %q was lost", c)
		}
	}
	if s := slug(contents[0]); !strings.HasPrefix(s, "always_run_the_tests_before_you-") {
		t.Errorf("slug %q keeps no words", s)
	}
}

// TestApplyItemKeepsOtherRules: a file already at an item's name that
// holds other rules is left as it is, and the write is refused.
func TestApplyItemKeepsOtherRules(t *testing.T) {
	ctx := context.Background()
	r, _ := newTestRunner(t, nil)
	st := &state{store: &knowledge.Store{Root: r.Root}}
	item := Item{Category: "lesson", Content: "Retries need backoff.", SourceTask: "t-1", Confidence: "high"}
	p := "lessons/" + slug(item.Content) + ".md"
	if _, err := st.store.Put(knowledge.Internaliser, p, &knowledge.Doc{Title: "other", Rules: "Something else entirely."}, "t-0"); err != nil {
		t.Fatal(err)
	}
	rec := &Record{After: "t-1"}
	if err := r.apply(ctx, st, knowledge.Internaliser, &Reply{Items: []Item{item}}, rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Refused) != 1 || len(rec.Written) != 0 {
		t.Errorf("refused %v, written %v; want the write refused", rec.Refused, rec.Written)
	}
	if d, _, err := st.store.Read(p); err != nil || d.Rules != "Something else entirely." {
		t.Errorf("the lesson's rules: %+v %v, want them kept", d, err)
	}
}

// TestCollapsedDuplicateIsNoWork: a planned task that cleanup collapsed
// into another is neither an aborted task (no urgency, no design due) nor
// open work that keeps its milestone from completing: its work is the
// kept task's.
func TestCollapsedDuplicateIsNoWork(t *testing.T) {
	ctx := context.Background()
	r, _ := newTestRunner(t, nil)
	inM := func(d *board.Task) { d.Milestone = "m" }
	keep := addTask(t, r, "Develop ambient AI solutions", inM)
	dup := addTask(t, r, "Developing ambient AI solutions", inM)
	if _, err := r.Board.Collapse(ctx, keep.ID, "Develop ambient AI solutions", []string{dup.ID}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Urgency != 0 {
		t.Errorf("urgency %.1f after a cleanup collapse, want 0 (a collapsed duplicate is no aborted task)", st.Urgency)
	}
	addVerdict(t, r, keep.ID, 1, review.Finalize)
	if err := r.Board.Store.Move(ctx, keep.ID, board.Pending, board.CompletedFinalized); err != nil {
		t.Fatal(err)
	}
	if st, err = r.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if !st.Polish || !slices.Equal(st.Milestones, []string{"m"}) {
		t.Errorf("polish %v, milestones complete %v; want polish and [m]: the collapsed duplicate kept milestone m open", st.Polish, st.Milestones)
	}
}
