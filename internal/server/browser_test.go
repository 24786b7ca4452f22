package server

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// chromium returns the path of a Chromium the browser tests drive; they
// fail, never skip, without one: CI installs it.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("the browser tests need Chromium: run 'apt-get install -y chromium' (.ci/run installs it)")
	return ""
}

// newBrowser starts a headless Chromium for the test; each tab is a
// context made from it with chromedp.NewContext.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests may run as root in CI containers
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1600, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	return ctx
}

// tab is one page of the board in the browser.
type tab struct {
	t   testing.TB
	ctx context.Context

	mu         sync.Mutex
	exceptions []string
}

// openTab opens url in a new tab; every action on it is bounded by a
// minute, and a script error on the page fails the test.
func openTab(t testing.TB, browser context.Context, url string) *tab {
	t.Helper()
	tabCtx, cancelTab := chromedp.NewContext(browser)
	tb := &tab{t: t}
	msgs := chromedp.Console(tabCtx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() {
				tb.mu.Lock()
				tb.exceptions = append(tb.exceptions, m.String())
				tb.mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(tabCtx, chromedp.Navigate(url)); err != nil {
		cancelTab()
		t.Fatalf("open %s: %v", url, err)
	}
	ctx, cancel := context.WithTimeout(tabCtx, time.Minute)
	tb.ctx = ctx
	t.Cleanup(func() {
		tb.mu.Lock()
		if len(tb.exceptions) > 0 {
			t.Errorf("script errors on the page: %q", tb.exceptions)
		}
		tb.mu.Unlock()
		cancel()
		cancelTab()
	})
	tb.waitJS("window.cra && window.cra.ready && window.cra.connected")
	return tb
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatal(err)
	}
}

// waitJS waits until expr is truthy on the page.
func (tb *tab) waitJS(expr string) {
	tb.t.Helper()
	if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		tb.t.Fatalf("waiting for %s: %v", expr, err)
	}
}

func evalJS[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// click clicks the element sel selects once it is there, in one step,
// so that a column redrawn in between does not lose the click.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.waitJS(fmt.Sprintf(`(() => { const n = document.querySelector(%q); if (n) n.click(); return !!n; })()`, sel))
}

// cardSel selects task id's card in folder's column.
func cardSel(folder board.Folder, id string) string {
	return fmt.Sprintf(`#cards-%s article[data-id=%q]`, folder, id)
}

// startDaemon runs the real daemon over f on 127.0.0.1:0 (no processor,
// no recycler: the test moves the tasks) and returns its address.
func startDaemon(t testing.TB, f *fixture, configure ...func(*Daemon)) (string, *Daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Fleet: f.fleet, Addr: "127.0.0.1:0", Workers: fleet.Workers{PassEvery: time.Hour}}
	for _, c := range configure {
		c(d)
	}
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	select {
	case info := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("daemon: %v", err)
			}
		})
		return "http://" + info.Addr, d
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	return "", nil
}

// TestBrowser drives the board in headless Chromium against the real
// daemon, while other "processes" (boards over the same directory) change
// the board as 'cra task add' and the recycler do.
func TestBrowser(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	cleaning, release := make(chan struct{}, 1), make(chan struct{})
	url, d := startDaemon(t, f, func(d *Daemon) {
		d.Fleet = &slowCleanup{Fleet: f.fleet, pass: func(ctx context.Context) {
			cleaning <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			if _, err := f.b.Log.Event(ctx, world.SourceSystem, "cleanup", "cleanup: 0 groups merged, 0 todos added"); err != nil {
				t.Error(err)
			}
		}}
	})
	cli := openBoard(t, f.state) // what 'cra task add' would open
	ctx := context.Background()

	t.Run("Clean Up is disabled while a cleanup runs", func(t *testing.T) {
		tb := openTab(t, browser, url)
		tb.waitJS(`!document.querySelector("#cleanup-btn").disabled`)
		tb.do(chromedp.Click(chromedp.CSS("#cleanup-btn")))
		<-cleaning
		tb.waitJS(`document.querySelector("#cleanup-btn").disabled && document.querySelector("#cleanup-btn").title.includes("running")`)
		close(release)
		tb.waitJS(`!document.querySelector("#cleanup-btn").disabled`)
		tb.waitJS(`[...document.querySelectorAll("#activity-list li")].some(li => li.textContent.includes("0 groups merged"))`)
	})

	t.Run("a task added from outside appears without a reload", func(t *testing.T) {
		tb := openTab(t, browser, url)
		tb.do(chromedp.Evaluate[chromedp.Void]("window.marker = 1"))
		added, err := cli.Add(ctx, board.NewTask("added by the CLI"))
		if err != nil {
			t.Fatal(err)
		}
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, added.ID))))
		if got := evalJS[string](tb, fmt.Sprintf(`document.querySelector(%q).textContent`, cardSel(board.Pending, added.ID)+" .title")); got != "added by the CLI" {
			t.Errorf("the card's title: %q", got)
		}
		if evalJS[int](tb, "window.marker") != 1 {
			t.Error("the page was reloaded")
		}
	})

	t.Run("a recycler move takes the card to its column with the terminal styling", func(t *testing.T) {
		tb := openTab(t, browser, url)
		done := f.add(t, "will be verified", nil)
		stuck := f.add(t, "will be blocked", nil)
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, stuck.ID))))
		f.run(t, done.ID, 0, "all tests pass")
		f.run(t, stuck.ID, 1, "cannot reach the database")
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Completed, done.ID))),
			chromedp.WaitVisible(chromedp.CSS(cardSel(board.Failed, stuck.ID))))
		f.decide(t, done.ID, world.StatusVerified, "full_complete", "verified: 3 completions", "")
		f.decide(t, stuck.ID, world.StatusFailed, "", "blocked: 5 failures", "give the agent the database URL")
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.CompletedFinalized, done.ID)+".finalized .icon.check")),
			chromedp.WaitVisible(chromedp.CSS(cardSel(board.FailedBlocked, stuck.ID)+".blocked .icon.error")),
			chromedp.WaitVisible(chromedp.CSS(cardSel(board.FailedBlocked, stuck.ID)+" .badge.needs")))
		green := evalJS[string](tb, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).borderTopColor`, cardSel(board.CompletedFinalized, done.ID)))
		red := evalJS[string](tb, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).borderTopColor`, cardSel(board.FailedBlocked, stuck.ID)))
		if green != "rgb(31, 157, 85)" || red != "rgb(214, 69, 69)" {
			t.Errorf("borders: finalized %s, blocked %s; want green and red", green, red)
		}
		if n := evalJS[int](tb, fmt.Sprintf(`document.querySelectorAll('[data-id=%q]').length`, done.ID)); n != 1 {
			t.Errorf("%d cards for the task, want 1", n)
		}
	})

	t.Run("the answer box writes [event:user]", func(t *testing.T) {
		tb := openTab(t, browser, url)
		task := f.add(t, "needs an answer", nil)
		f.run(t, task.ID, 1, "which database?")
		f.decide(t, task.ID, world.StatusFailed, "", "blocked", "say which database to use")
		sel := cardSel(board.FailedBlocked, task.ID)
		tb.click(sel)
		tb.do(chromedp.WaitVisible(chromedp.CSS("#d-answer-text")))
		if got := evalJS[string](tb, `document.querySelector("#d-need-person").textContent`); got != "say which database to use" {
			t.Errorf("the need shown: %q", got)
		}
		tb.do(chromedp.SendKeys(chromedp.CSS("#d-answer-text"), "use the test database"),
			chromedp.Click(chromedp.CSS("#d-answer button[type=submit]")),
			chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, task.ID))))
		hist, err := cli.History(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		var answered bool
		for _, e := range hist {
			answered = answered || e.Kind == world.KindEvent && e.Source == world.SourceUser && e.Output == "use the test database"
		}
		if !answered || hist[len(hist)-1].Status != world.StatusRetry {
			t.Errorf("the log: %+v, want [event:user] with the answer, then a retry", hist)
		}
	})

	t.Run("a collapsed duplicate waits for no one: no badge, no answer box", func(t *testing.T) {
		tb := openTab(t, browser, url)
		keep := f.add(t, "the kept one", nil)
		dup := f.add(t, "the duplicate", nil)
		if _, err := f.b.Collapse(ctx, keep.ID, "the kept one", []string{dup.ID}, nil); err != nil {
			t.Fatal(err)
		}
		sel := cardSel(board.FailedBlocked, dup.ID)
		tb.do(chromedp.WaitVisible(chromedp.CSS(sel)))
		if n := evalJS[int](tb, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel+" .badge.needs")); n != 0 {
			t.Errorf("the collapsed card shows %d \"needs you\" badges, want none", n)
		}
		tb.click(sel)
		tb.waitJS(fmt.Sprintf(`document.querySelector("#d-id").textContent.startsWith(%q)`, dup.ID))
		if evalJS[bool](tb, `!document.querySelector("#d-answer").hidden || document.querySelector("#d-badges .badge.needs") !== null`) {
			t.Error("the drawer of a collapsed duplicate offers the answer box or says it needs you")
		}
	})

	t.Run("a settings change persists in config.toml and survives a reload", func(t *testing.T) {
		tb := openTab(t, browser, url)
		probe := f.add(t, "shows thresholds", nil)
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, probe.ID))),
			chromedp.Click(chromedp.CSS("#settings-btn")),
			chromedp.WaitVisible(chromedp.CSS("#settings-dialog")),
			chromedp.Evaluate[chromedp.Void](`(() => {
				const e = document.querySelector("#settings-form").elements;
				e.interval_seconds.value = "150";
				e.interval_seconds.dispatchEvent(new Event("input", {bubbles: true}));
				e.enabled_for.value = "types";
				e.enabled_for.dispatchEvent(new Event("input", {bubbles: true}));
			})()`),
			chromedp.WaitVisible(chromedp.CSS("#types-label")),
			chromedp.SetValue(chromedp.CSS("#settings-form input[name=types]"), "bug, docs"),
			chromedp.SetValue(chromedp.CSS("#settings-form input[name=completion_threshold]"), "7"),
			chromedp.Click(chromedp.CSS("#settings-save")),
		)
		tb.waitJS(`!document.querySelector("#settings-dialog").open`)
		cfg, err := config.Load(statedir.Of(f.repo).Config())
		if err != nil {
			t.Fatal(err)
		}
		set := cfg.RecyclerSettings()
		if set.Interval != 150*time.Second || set.CompletionThreshold != 7 || !set.EnabledFor.Matches("docs") {
			t.Errorf("config.toml: %+v", set)
		}
		// Every board hears of it: the cards show the new threshold.
		tb.waitJS(fmt.Sprintf(`document.querySelector(%q).textContent === "✓ 0/7"`, cardSel(board.Pending, probe.ID)+" .streak.ok"))
		tb.do(chromedp.Reload())
		tb.waitJS("window.cra && window.cra.ready")
		tb.do(chromedp.Click(chromedp.CSS("#settings-btn")), chromedp.WaitVisible(chromedp.CSS("#settings-dialog")))
		tb.waitJS(`document.querySelector("#settings-form").elements.interval_seconds.value === "150"`)
		got := evalJS[[]string](tb, `(() => { const e = document.querySelector("#settings-form").elements;
			return [e.enabled_for.value, e.types.value, e.completion_threshold.value, document.querySelector("#interval-out").textContent]; })()`)
		if strings.Join(got, "|") != "types|bug, docs|7|2 min 30 s" {
			t.Errorf("after a reload the form shows %q", got)
		}
		// A bad value is refused, naming the key, and nothing is written.
		before := set
		tb.do(chromedp.SetValue(chromedp.CSS("#settings-form input[name=failure_threshold]"), "0"),
			chromedp.Click(chromedp.CSS("#settings-save")))
		tb.waitJS(`document.querySelector("#settings-error").textContent.includes("recycler.failure_threshold")`)
		if cfg, _ := config.Load(statedir.Of(f.repo).Config()); cfg.RecyclerSettings().FailureThreshold != before.FailureThreshold {
			t.Error("a refused value was written")
		}
	})

	t.Run("a title with markup renders as text", func(t *testing.T) {
		tb := openTab(t, browser, url)
		const evil = `<img src=x onerror=alert(1)>`
		task, err := cli.Add(ctx, board.NewTask(evil))
		if err != nil {
			t.Fatal(err)
		}
		sel := cardSel(board.Pending, task.ID)
		tb.click(sel)
		tb.waitJS(fmt.Sprintf(`document.querySelector("#d-title").textContent === %q`, evil))
		if got := evalJS[string](tb, fmt.Sprintf(`document.querySelector(%q).textContent`, sel+" .title")); got != evil {
			t.Errorf("the title shows %q", got)
		}
		if n := evalJS[int](tb, `document.querySelectorAll("img").length`); n != 0 {
			t.Errorf("%d img elements on the page, want none", n)
		}
	})

	t.Run("after a WebSocket drop and reconnect no event is missed or repeated", func(t *testing.T) {
		tb := openTab(t, browser, url)
		start := evalJS[int64](tb, "window.cra.start")
		writer := openBoard(t, f.state)
		for round := range 4 {
			for i := range 10 {
				writer.Log.Event(ctx, world.SourceUser, "writer", fmt.Sprintf("round %d event %d", round, i))
			}
			d.Hub().DropAll() // the daemon closes every stream
			added, err := writer.Add(ctx, board.NewTask(fmt.Sprintf("round %d", round)))
			if err != nil {
				t.Fatal(err)
			}
			tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, added.ID))))
		}
		end, _, err := logEnd(world.Path(f.state))
		if err != nil {
			t.Fatal(err)
		}
		tb.waitJS(fmt.Sprintf("window.cra.received.length > 0 && window.cra.next === %d", end))
		var want []int64
		for _, m := range lines(t, f.b.Log, start) {
			want = append(want, m.Offset)
		}
		got := evalJS[[]int64](tb, "window.cra.received")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("offsets received: %v\nwant each line once, in order: %v", got, want)
		}
		if n := evalJS[int](tb, "window.cra.connects"); n < 5 {
			t.Errorf("%d connections, want one and a reconnect per drop", n)
		}
	})
}

// TestBrowserSteer: a person steers tasks from the web board (issue 30,
// items 3, 4 and 6): the add form takes every field of 'cra task add';
// the drawer stops a running task (held, no failure), closes and reopens
// one, edits and moves one, shows a verified task's diff inline and
// merges its branch.
func TestBrowserSteer(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	url, _ := startDaemon(t, f)
	ctx := context.Background()
	tb := openTab(t, browser, url)
	get := func(id string) (*board.Task, board.Folder) {
		t.Helper()
		task, folder, err := f.b.Store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return task, folder
	}
	drawer := func(folder board.Folder, id string) {
		t.Helper()
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(folder, id))))
		tb.click(cardSel(folder, id))
		tb.waitJS(fmt.Sprintf(`document.querySelector("#d-id").textContent === %q`, id+" · "+string(folder)))
	}
	// act sets the drawer's reason and presses a button in one step: the
	// drawer re-renders when the task changes, so a node found in one
	// step may be gone in the next.
	act := func(button, why, moveTo string) {
		t.Helper()
		tb.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
			document.querySelector("#d-why").value = %q;
			if (%q !== "") document.querySelector("#d-move-to").value = %q;
			document.querySelector(%q).click();
		})()`, why, moveTo, moveTo, button)))
	}
	last := func(id string) world.Entry {
		t.Helper()
		hist, err := f.b.History(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(hist) - 1; i >= 0; i-- {
			if hist[i].Kind == world.KindAgent {
				return hist[i]
			}
		}
		t.Fatalf("no agent entry for %s", id)
		return world.Entry{}
	}

	t.Run("the add form takes every field", func(t *testing.T) {
		first := f.add(t, "goes first", nil)
		tb.do(chromedp.Click(chromedp.CSS("#add-btn")), chromedp.WaitVisible(chromedp.CSS("#add-dialog")),
			chromedp.SetValue(chromedp.CSS("#add-form input[name=title]"), "every field"),
			chromedp.SetValue(chromedp.CSS("#add-form input[name=need]"), "it works"),
			chromedp.SetValue(chromedp.CSS("#add-form input[name=agent]"), "shell"),
			chromedp.SetValue(chromedp.CSS("#add-form input[name=milestone]"), "m1"),
			chromedp.SetValue(chromedp.CSS("#add-form input[name=after]"), first.ID),
			chromedp.Click(chromedp.CSS("#add-form input[name=no_change]")),
			chromedp.Click(chromedp.CSS("#add-form input[name=tests_may_change]")),
			chromedp.Click(chromedp.CSS("#add-submit")))
		tb.waitJS(`!document.querySelector("#add-dialog").open`)
		list, err := f.b.Store.List(ctx, board.Pending)
		if err != nil {
			t.Fatal(err)
		}
		var got *board.Task
		for _, lt := range list {
			if lt.Task != nil && lt.Task.Title == "every field" {
				got = lt.Task
			}
		}
		if got == nil || got.Need != "it works" || got.Agent != "shell" || got.Milestone != "m1" ||
			len(got.After) != 1 || got.After[0] != first.ID || !got.NoChange || !got.TestsMayChange {
			t.Errorf("the task added: %+v", got)
		}
	})

	t.Run("stop holds a running task, reopen gives it back", func(t *testing.T) {
		task := f.add(t, "runs long", nil)
		if _, err := f.b.Log.Agent(ctx, world.StatusActive, task.ID, "run 1: builtin", ""); err != nil {
			t.Fatal(err)
		}
		if err := f.b.Store.Move(ctx, task.ID, board.Pending, board.InProgress); err != nil {
			t.Fatal(err)
		}
		drawer(board.InProgress, task.ID)
		tb.waitJS(`document.querySelector("#d-stop") !== null`)
		act("#d-stop", "wrong approach", "")
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, task.ID))), chromedp.WaitVisible(chromedp.CSS("#d-held")))
		if e := last(task.ID); e.Status != world.StatusRetry || e.Output != "stopped by a person: wrong approach" {
			t.Errorf("the log's last entry: %+v", e)
		}
		if got, _ := get(task.ID); got.ProcessorAutoRequeue || got.ConsecutiveFailures != 0 {
			t.Errorf("after the stop: auto requeue %v, failures %d; want held, none", got.ProcessorAutoRequeue, got.ConsecutiveFailures)
		}
		act("#d-reopen", "", "")
		tb.waitJS(`document.querySelector("#d-held") === null && document.querySelector("#d-action-msg").textContent === "done"`)
		if got, _ := get(task.ID); !got.ProcessorAutoRequeue {
			t.Error("after the reopen: still held")
		}
	})

	t.Run("close takes a task out of needs-you, reopen brings it back", func(t *testing.T) {
		task := f.add(t, "maybe later", nil)
		f.run(t, task.ID, 1, "which database?")
		f.decide(t, task.ID, world.StatusFailed, "", "blocked", "say which database to use")
		drawer(board.FailedBlocked, task.ID)
		tb.do(chromedp.WaitVisible(chromedp.CSS("#d-answer-text")))
		act("#d-close-task", "not needed", "")
		tb.do(chromedp.WaitVisible(chromedp.CSS("#d-closed")))
		tb.waitJS(fmt.Sprintf(`document.querySelector("#d-answer").hidden && document.querySelector(%q) === null`, cardSel(board.FailedBlocked, task.ID)+" .badge.needs"))
		if e := last(task.ID); e.Status != world.StatusFailed || e.Output != "closed: not needed" {
			t.Errorf("the log's last entry: %+v", e)
		}
		act("#d-reopen", "", "")
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.Pending, task.ID))))
	})

	t.Run("edit and move from the drawer", func(t *testing.T) {
		task := f.add(t, "old title", nil)
		drawer(board.Pending, task.ID)
		tb.do(chromedp.Click(chromedp.CSS("#d-edit-btn")), chromedp.WaitVisible(chromedp.CSS("#d-edit")),
			chromedp.SetValue(chromedp.CSS("#d-edit input[name=title]"), "new title"),
			chromedp.SetValue(chromedp.CSS("#d-edit select[name=priority]"), "high"),
			chromedp.Click(chromedp.CSS("#d-edit-save")))
		tb.waitJS(fmt.Sprintf(`document.querySelector(%q).textContent === "new title"`, cardSel(board.Pending, task.ID)+" .title"))
		if got, _ := get(task.ID); got.Title != "new title" || got.Priority != board.High {
			t.Errorf("after the edit: %q %s", got.Title, got.Priority)
		}
		tb.waitJS(`document.querySelector("#d-edit").hidden && document.querySelector("#d-move-to") !== null`)
		act("#d-move", "", "failed-blocked")
		tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.FailedBlocked, task.ID))))
		if _, folder := get(task.ID); folder != board.FailedBlocked {
			t.Errorf("after the move: in %s", folder)
		}
	})

	t.Run("merge a verified task's branch", func(t *testing.T) {
		task := f.add(t, "add a greeting", nil)
		base := strings.TrimSpace(gittest.Run(t, f.repo, "symbolic-ref", "--short", "HEAD"))
		gittest.Run(t, f.repo, "checkout", "-q", "-b", board.BranchPrefix+task.ID)
		if err := os.WriteFile(filepath.Join(f.repo, "greeting.txt"), []byte("hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, f.repo, "add", "greeting.txt")
		gittest.Run(t, f.repo, "commit", "-qm", "greeting")
		gittest.Run(t, f.repo, "checkout", "-q", base)
		f.run(t, task.ID, 0, "added it")
		f.decide(t, task.ID, world.StatusVerified, "full_complete", "verified: 1 complete review", "")
		drawer(board.CompletedFinalized, task.ID)
		// The branch's diff is inline in the drawer, its lines marked.
		tb.waitJS(`document.querySelector("#d-diff-patch") !== null`)
		if got := evalJS[string](tb, `[...document.querySelectorAll("#d-diff-patch .add")].map((n) => n.textContent).join("")`); !strings.Contains(got, "+hello\n") {
			t.Errorf("the diff's added lines: %q, want +hello", got)
		}
		if got := evalJS[string](tb, `document.querySelector("#d-diff").textContent`); !strings.Contains(got, "diff --git a/greeting.txt b/greeting.txt") {
			t.Errorf("the drawer's diff: %q", got)
		}
		tb.waitJS(`document.querySelector("#d-merge") !== null`)
		act("#d-merge", "", "")
		tb.do(chromedp.WaitVisible(chromedp.CSS("#d-merged")))
		// Merged, the drawer shows the change the merge brought.
		tb.waitJS(`document.querySelector("#d-diff").textContent.startsWith("Merged: ") && document.querySelector("#d-diff-patch") !== null`)
		if got := evalJS[string](tb, `document.querySelector("#d-merged").textContent`); got != "merged into "+base {
			t.Errorf("the badge: %q", got)
		}
		if _, err := os.Stat(filepath.Join(f.repo, "greeting.txt")); err != nil {
			t.Errorf("the branch's file is not in the work tree: %v", err)
		}
		if got, _ := get(task.ID); got.Merged == nil || got.Merged.Into != base {
			t.Errorf("the task's merged: %+v", got.Merged)
		}
	})
}

// TestBrowserLiveOutput: the drawer of a running task shows its run log
// as it grows, and a line written after the drawer opened appears without
// a reload.
func TestBrowserLiveOutput(t *testing.T) {
	browser := newBrowser(t)
	f := newFixture(t)
	url, _ := startDaemon(t, f)
	ctx := context.Background()
	task := f.add(t, "runs and talks", nil)
	if _, err := f.b.Log.Agent(ctx, world.StatusActive, task.ID, "run 1: shell", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Store.Move(ctx, task.ID, board.Pending, board.InProgress); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.state, board.RunsDir, task.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "run-1.log")
	if err := os.WriteFile(logPath, []byte("compiling the first part\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := openTab(t, browser, url)
	tb.do(chromedp.WaitVisible(chromedp.CSS(cardSel(board.InProgress, task.ID))))
	tb.click(cardSel(board.InProgress, task.ID))
	tb.waitJS(`document.querySelector("#d-output") !== null && document.querySelector("#d-output").textContent.includes("compiling the first part")`)
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(lf, "tests: 12 passed, 1 failed ✗")
	lf.Close()
	tb.waitJS(`document.querySelector("#d-output").textContent.includes("tests: 12 passed, 1 failed ✗")`)
	if got := evalJS[string](tb, `document.querySelector("#d-output").textContent`); strings.Count(got, "compiling the first part") != 1 {
		t.Errorf("the output shows the first line %d times: %q", strings.Count(got, "compiling the first part"), got)
	}
}
