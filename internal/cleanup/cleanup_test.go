package cleanup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/world"
)

// fixture is a repository with a board, a knowledge index, a model server
// and the raw database every call is recorded in.
type fixture struct {
	deps Deps
	srv  *llmtest.Server
	raw  *sql.DB
	ids  map[string]string // title → id
}

func newFixture(t *testing.T, titles ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	repo := t.TempDir()
	state := filepath.Join(repo, statedir.Name)
	srv := llmtest.NewServer(t)
	cfg, err := config.Parse([]byte(fmt.Sprintf("[models]\nreasoning = \"thinker:4b\"\nbase_url = %q\nmax_retries = 0\n", srv.OllamaURL())))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := store.NewFactory(statedir.At(state)).Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	l, err := world.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, raw: raw, ids: map[string]string{}}
	f.deps = Deps{
		Board: board.New(board.NewFileStore(state), l), Root: repo, StateDir: state,
		Gateway: llm.NewGateway(llm.NewRouter(cfg, nil), llm.NewRecorder(corpus.New(raw))),
		Now:     func() time.Time { return time.Date(2026, 2, 26, 9, 0, 0, 0, time.UTC) },
	}
	for _, title := range titles {
		task, err := f.deps.Board.Add(ctx, board.NewTask(title))
		if err != nil {
			t.Fatal(err)
		}
		f.ids[title] = task.ID
	}
	f.write(t, "docs/knowledge/_index.md", "# Index\n\n## Project\n- cra is a coding agent\n")
	f.write(t, "docs/knowledge/conventions/errors.md", "# Errors\n\n_Status: established_\n\nWrap errors once per layer.\n")
	return f
}

func (f *fixture) write(t *testing.T, rel, text string) {
	t.Helper()
	p := filepath.Join(f.deps.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.deps.Root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// expand replaces {title} in s with the task's id.
func (f *fixture) expand(s string) string {
	for title, id := range f.ids {
		s = strings.ReplaceAll(s, "{"+title+"}", id)
	}
	return s
}

func (f *fixture) calls(t *testing.T) map[string]int {
	t.Helper()
	rows, err := f.raw.Query(`SELECT call_type, role FROM llm_calls`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var typ, role string
		if err := rows.Scan(&typ, &role); err != nil {
			t.Fatal(err)
		}
		out[typ+"/"+role]++
	}
	return out
}

var seedTitles = []string{
	"Develop ambient AI solutions",
	"Developing ambient AI solutions",
	"Develop ambient AI solutions for various applications",
	"Developing and refining ambient AI solutions for various applications",
	"Fix the login page crash",
}

const rewriteReply = `<WORLD_MODEL>
# Index

## Project
- cra is a coding agent
- cra is a coding agent.

## Conventions
- Wrap errors once per layer.
</WORLD_MODEL>
<TODOS>
-MEDIUM: Develop ambient AI solutions for various applications
-HIGH: Fix the login page crash
-HIGH: Add a --json flag to cra cleanup
-DONE: Ship the board
</TODOS>`

func TestRun(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, seedTitles...)
	f.srv.On(llmtest.Contains("## CURRENT INDEX"), llmtest.Text(rewriteReply))
	f.srv.On(llmtest.Contains("id | bucket | type | content"), llmtest.Text(f.expand(
		"Develop ambient AI solutions for various applications | {Develop ambient AI solutions} | {Developing ambient AI solutions},{Develop ambient AI solutions for various applications}, {Developing and refining ambient AI solutions for various applications}\n"+
			"Something | {Fix the login page crash} | t-00000000\n"+
			"Chained | {Fix the login page crash} | {Develop ambient AI solutions}\n")))
	rep, err := Run(ctx, f.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 1 || len(rep.Groups[0].IDs) != 4 {
		t.Errorf("pre-pass groups %+v, want the four ambient AI tasks", rep.Groups)
	}
	if !rep.Rewrite.Done || !rep.Collapse.Done || rep.Rewrite.Requests != 1 || rep.Collapse.Requests != 1 {
		t.Errorf("calls: rewrite %+v, collapse %+v", rep.Rewrite, rep.Collapse)
	}
	index := f.read(t, "docs/knowledge/_index.md")
	want := "# Index\n\n_Last updated by: cleanup, 2026-02-26_\n\n## Project\n- cra is a coding agent\n\n## Conventions\n- Wrap errors once per layer.\n"
	if index != want {
		t.Errorf("_index.md:\n%s\nwant:\n%s", index, want)
	}
	if len(rep.Added) != 1 || rep.Added[0].Title != "Add a --json flag to cra cleanup" || rep.Added[0].Priority != string(board.High) {
		t.Errorf("added %+v, want the one new todo", rep.Added)
	}
	added, _, err := f.deps.Board.Store.Get(ctx, rep.Added[0].ID)
	if err != nil || added.Source != "cleanup" || added.Kind != board.KindTask {
		t.Errorf("added task %+v, %v", added, err)
	}
	if len(rep.Ignored) != 3 {
		t.Errorf("ignored %+v, want two matches and a DONE", rep.Ignored)
	}
	if len(rep.Merged) != 1 || len(rep.Merged[0].Dropped) != 3 || rep.Merged[0].Keep != f.ids[seedTitles[0]] {
		t.Errorf("merged %+v", rep.Merged)
	}
	if len(rep.Skipped) != 2 || !strings.Contains(rep.Skipped[0].Reason, "t-00000000") || !strings.Contains(rep.Skipped[1].Reason, "keeps an earlier group") {
		t.Errorf("skipped %+v, want the line naming an unknown task and the one dropping a kept task", rep.Skipped)
	}
	for _, title := range seedTitles[1:4] {
		if _, folder, _ := f.deps.Board.Store.Get(ctx, f.ids[title]); folder != board.FailedBlocked {
			t.Errorf("dropped %q in %s", title, folder)
		}
	}
	if got := f.calls(t); got[CallRewrite+"/supervisor"] != 1 || got[CallCollapse+"/supervisor"] != 1 {
		t.Errorf("recorded calls %v", got)
	}
	for _, r := range f.srv.ChatRequests() {
		want := CollapseMaxTokens
		if strings.Contains(r.Prompt(), "## CURRENT INDEX") {
			want = RewriteMaxTokens
			for _, s := range []string{"Today is 2026-02-26.", "- conventions/errors.md — Errors (established): Wrap errors once per layer.", "-MEDIUM: Develop ambient AI solutions\n"} {
				if !strings.Contains(r.Prompt(), s) {
					t.Errorf("Call 1's prompt lacks %q:\n%s", s, r.Prompt())
				}
			}
		} else if !regexp.MustCompile(`(?m)^t-[0-9a-f]{8} \| task \| - \| Fix the login page crash$`).MatchString(r.Prompt()) {
			t.Errorf("Call 2's prompt:\n%s", r.Prompt())
		}
		if r.MaxTokens != want {
			t.Errorf("max tokens %d, want %d", r.MaxTokens, want)
		}
	}
}

// TestRunCallsFailAlone: a malformed Call 1 (twice: one retry) changes
// nothing, and Call 2 still collapses.
func TestRunCallsFailAlone(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, seedTitles...)
	before := f.read(t, "docs/knowledge/_index.md")
	f.srv.On(llmtest.Contains("## CURRENT INDEX"), llmtest.Text("<WORLD_MODEL>no sections</WORLD_MODEL><TODOS>-HIGH: new thing to do</TODOS>"))
	f.srv.On(llmtest.Contains("id | bucket | type | content"), llmtest.Text(f.expand("Develop ambient AI solutions | {Develop ambient AI solutions} | {Developing ambient AI solutions}")))
	rep, err := Run(ctx, f.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Rewrite.Failed() || rep.Rewrite.Requests != 2 || !strings.Contains(rep.Rewrite.Err, "malformed twice") {
		t.Errorf("rewrite %+v, want malformed twice", rep.Rewrite)
	}
	if got := f.read(t, "docs/knowledge/_index.md"); got != before || len(rep.Added) != 0 {
		t.Errorf("a malformed Call 1 changed the index or added %v", rep.Added)
	}
	if len(rep.Merged) != 1 {
		t.Errorf("merged %+v, want Call 2's group", rep.Merged)
	}

	// And the other way round: a dead model fails both calls, and the
	// log says so.
	f.srv.Close()
	rep, err = Run(ctx, f.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Rewrite.Failed() || !rep.Collapse.Failed() {
		t.Errorf("rewrite %+v collapse %+v, want both failed", rep.Rewrite, rep.Collapse)
	}
	var lines []string
	f.deps.Board.Log.Select(ctx, world.Filter{IDs: []string{Source}}, func(r *world.Record) error {
		lines = append(lines, r.Entry.Output)
		return nil
	})
	if s := strings.Join(lines, "\n"); !strings.Contains(s, "collapse failed: the model failed") || !strings.Contains(s, "knowledge rewrite failed") {
		t.Errorf("cleanup's log lines:\n%s", s)
	}
}

func TestRunLock(t *testing.T) {
	f := newFixture(t)
	if Running(f.deps.StateDir) {
		t.Fatal("Running before any pass")
	}
	lock, ok, err := flock.TryLock(filepath.Join(f.deps.StateDir, LockFile))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !Running(f.deps.StateDir) {
		t.Error("not Running while the lock is held")
	}
	if _, err := Run(context.Background(), f.deps, Options{}); !errors.Is(err, ErrRunning) {
		t.Errorf("got %v, want ErrRunning", err)
	}
	if _, err := Run(context.Background(), f.deps, Options{DryRun: true}); err != nil {
		t.Errorf("a dry run needs no lock: %v", err)
	}
	lock.Close()
	if Running(f.deps.StateDir) || Running(filepath.Join(f.deps.StateDir, "nowhere")) {
		t.Error("Running after the lock is released")
	}
}

func TestRunDryRun(t *testing.T) {
	f := newFixture(t, seedTitles...)
	rep, err := Run(context.Background(), f.deps, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 1 || len(f.srv.ChatRequests()) != 0 || len(rep.Merged) != 0 {
		t.Errorf("dry run: %+v, %d requests", rep, len(f.srv.ChatRequests()))
	}
}

func TestIndexText(t *testing.T) {
	got := indexText("## A\n- x\n_Last updated by: code_style, t-1_", "2026-01-02")
	want := "# Knowledge index\n\n_Last updated by: cleanup, 2026-01-02_\n\n## A\n- x\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRunCollapseStale: a task that ran and came back to pending while
// Call 2 was judging its text is not collapsed on that stale text; its
// line is skipped, and the others stand.
func TestRunCollapseStale(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, seedTitles...)
	f.srv.On(llmtest.Contains("## CURRENT INDEX"), llmtest.Text(rewriteReply))
	stale := f.ids["Developing ambient AI solutions"]
	var once sync.Once
	ranMeanwhile := func(r llmtest.Request) bool {
		if strings.Contains(r.Prompt(), "id | bucket | type | content") {
			once.Do(func() {
				task, folder, err := f.deps.Board.Store.Get(ctx, stale)
				if err != nil {
					t.Error(err)
					return
				}
				task.Runs++
				task.UpdatedAt = task.UpdatedAt.Add(time.Minute)
				if err := f.deps.Board.Store.Put(ctx, task, folder); err != nil {
					t.Error(err)
				}
			})
			return true
		}
		return false
	}
	f.srv.On(ranMeanwhile, llmtest.Text(f.expand(
		"Develop ambient AI solutions | {Develop ambient AI solutions} | {Developing ambient AI solutions}\n"+
			"Ambient AI for applications | {Develop ambient AI solutions for various applications} | {Developing and refining ambient AI solutions for various applications}\n")))
	rep, err := Run(ctx, f.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0].Reason, stale) || !strings.Contains(rep.Skipped[0].Reason, "changed") {
		t.Errorf("skipped %+v, want the line of the task that changed", rep.Skipped)
	}
	if len(rep.Merged) != 1 || rep.Merged[0].Keep != f.ids["Develop ambient AI solutions for various applications"] {
		t.Errorf("merged %+v, want only the other line", rep.Merged)
	}
	for _, title := range []string{"Develop ambient AI solutions", "Developing ambient AI solutions"} {
		if _, folder, _ := f.deps.Board.Store.Get(ctx, f.ids[title]); folder != board.Pending {
			t.Errorf("%q in %s, want pending", title, folder)
		}
	}
}

// TestRunWhilePolled: the board polls Running while passes start; a poll
// never makes a pass refuse to run, and a poll sees no pass once they
// are done.
func TestRunWhilePolled(t *testing.T) {
	f := newFixture(t)
	f.deps.Gateway = nil // each pass fails its calls at once
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					Running(f.deps.StateDir)
				}
			}
		}()
	}
	for i := range 100 {
		if _, err := Run(context.Background(), f.deps, Options{}); err != nil {
			t.Errorf("pass %d while polled: %v", i, err)
			break
		}
	}
	close(done)
	wg.Wait()
	if Running(f.deps.StateDir) {
		t.Error("Running after every pass ended")
	}
}

// TestRunTodoMatchesOneTask: the rewritten TODOS give every task back,
// and a new line like an existing one ("signup" beside "login") is new
// work: each task is matched by its best line only, so a near line of
// another intent is added.
func TestRunTodoMatchesOneTask(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "Fix the login page crash", "Add a --json flag to cra task list")
	f.srv.On(llmtest.Contains("## CURRENT INDEX"), llmtest.Text(`<WORLD_MODEL>
## Project
- cra is a coding agent
</WORLD_MODEL>
<TODOS>
-HIGH: Fix the signup page crash
-HIGH: Fix the login page crash
-MEDIUM: Add a --json flag to cra task list
-MEDIUM: Add a --json flag to cra task show
-MEDIUM: Add the --json flag to cra task show
</TODOS>`))
	f.srv.On(llmtest.Contains("id | bucket | type | content"), llmtest.Text("NONE"))
	rep, err := Run(ctx, f.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, a := range rep.Added {
		added = append(added, a.Title)
	}
	if want := []string{"Fix the signup page crash", "Add a --json flag to cra task show"}; !slices.Equal(added, want) {
		t.Errorf("added %q, want %q; ignored %+v", added, want, rep.Ignored)
	}
}

// TestRunCollapsesOnlyWhatThePrePassFindsAlike: five unrelated tasks the
// model names as one group "Do everything" all stay, titles and all; the
// group is a suggestion for a person, in the report and in the log, never
// applied. A group of which one member is unlike the rest is not applied
// either, while a group the pre-pass found is.
func TestRunCollapsesOnlyWhatThePrePassFindsAlike(t *testing.T) {
	ctx := context.Background()
	unrelated := []string{
		"Fix the login page crash",
		"Add a --json flag to cra task list",
		"Write the release notes for 2.0",
		"Speed up the indexer on large repositories",
		"Translate the README into French",
	}
	f := newFixture(t, append(unrelated, seedTitles[:2]...)...)
	f.srv.On(llmtest.Contains("## CURRENT INDEX"), llmtest.Text("<WORLD_MODEL>\n## Project\n- cra is a coding agent\n</WORLD_MODEL>\n<TODOS>\n</TODOS>"))
	f.srv.On(llmtest.Contains("id | bucket | type | content"), llmtest.Text(f.expand(
		"Do everything | {Fix the login page crash} | {Add a --json flag to cra task list},{Write the release notes for 2.0},{Speed up the indexer on large repositories},{Translate the README into French}\n"+
			"Develop ambient AI solutions | {Develop ambient AI solutions} | {Developing ambient AI solutions}\n")))
	rep, err := Run(ctx, f.deps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range unrelated {
		task, folder, err := f.deps.Board.Store.Get(ctx, f.ids[title])
		if err != nil || folder != board.Pending || task.Title != title {
			t.Errorf("%q: in %s, titled %q (%v); want it pending as it was", title, folder, task.Title, err)
		}
	}
	if len(rep.Merged) != 1 || rep.Merged[0].Keep != f.ids[seedTitles[0]] {
		t.Errorf("merged %+v, want only the ambient AI pair", rep.Merged)
	}
	if len(rep.Suggested) != 1 || rep.Suggested[0].Keep != f.ids[unrelated[0]] || len(rep.Suggested[0].Drops) != 4 ||
		rep.Suggested[0].Canonical != "Do everything" || !strings.Contains(rep.Suggested[0].Reason, "not alike") {
		t.Errorf("suggested %+v, want the Do everything group, not applied", rep.Suggested)
	}
	var lines []string
	f.deps.Board.Log.Select(ctx, world.Filter{IDs: []string{Source}}, func(r *world.Record) error {
		lines = append(lines, r.Entry.Output)
		return nil
	})
	if s := strings.Join(lines, "\n"); !strings.Contains(s, "suggested for a person, not applied: merge into "+f.ids[unrelated[0]]+" as \"Do everything\"") {
		t.Errorf("cleanup's log lines do not suggest the group:\n%s", s)
	}
}

func TestAlikeGroup(t *testing.T) {
	groups := []Group{{IDs: []string{"a", "b", "c"}}, {IDs: []string{"d", "e"}}}
	text := map[string]string{
		"a": "Develop ambient AI solutions", "b": "Developing ambient AI solutions", "c": "ambient AI",
		"d": "Fix the login page crash", "e": "Fix the login page crash on mobile",
		"f": "Develop ambient AI solutions for various applications", "g": "Write the release notes",
	}
	tests := []struct {
		keep  string
		drops []string
		want  bool
	}{
		{"a", []string{"b", "c"}, true},  // one pre-pass group
		{"a", []string{"b", "d"}, false}, // two groups
		{"a", []string{"f"}, true},       // no group, but alike: f holds a's words
		{"d", []string{"g"}, false},      // unlike
		{"g", []string{"a"}, false},
	}
	for _, tc := range tests {
		_, ok := alikeGroup(tc.keep, tc.drops, groups, func(id string) string { return text[id] })
		if ok != tc.want {
			t.Errorf("%s ← %v: got %v, want %v", tc.keep, tc.drops, ok, tc.want)
		}
	}
}

// TestReadKnowledgeRefusesLink: a committed symbolic link on the
// knowledge store's path (docs/ or docs/knowledge/) is refused, so the
// rewrite never reads or writes _index.md through it.
func TestReadKnowledgeRefusesLink(t *testing.T) {
	for _, link := range []string{"docs", "docs/knowledge"} {
		t.Run(link, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			if err := os.MkdirAll(filepath.Join(outside, "knowledge"), 0o755); err != nil {
				t.Fatal(err)
			}
			target := outside
			if link == "docs/knowledge" {
				target = filepath.Join(outside, "knowledge")
				if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
			_, _, err := readKnowledge(root, filepath.Join(root, filepath.FromSlash(KnowledgeDir)))
			if want := filepath.Join(root, filepath.FromSlash(link)) + " is a symbolic link"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("read through a link: %v, want %q", err, want)
			}
		})
	}
}
