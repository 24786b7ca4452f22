package server

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/review"
	"github.com/cra-dev/cra/internal/world"
)

var shots = flag.Bool("shots", false, "write the README's screenshots, docs/board.png and docs/drawer-blocked.png")

// start does what the processor does when a run begins: [agent:active]
// and the file into in-progress.
func (f *fixture) start(t testing.TB, id string) {
	t.Helper()
	ctx := context.Background()
	task, from, err := f.b.Store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.b.Log.Agent(ctx, world.StatusActive, id, fmt.Sprintf("run %d: builtin", task.Runs+1), ""); err != nil {
		t.Fatal(err)
	}
	task.Runs++
	if err := f.b.Store.Move(ctx, id, from, board.InProgress); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Store.Put(ctx, task, board.InProgress); err != nil {
		t.Fatal(err)
	}
}

// addReview records a review of task id's last run as the recycler does
// (review.HistoryPath), for the drawer to show.
func (f *fixture) addReview(t testing.TB, r review.Review) {
	t.Helper()
	path := review.HistoryPath(f.state, r.TaskID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	file.Write(append(line, '\n'))
}

// showcase fills f with tasks in every column, as a board looks after a
// day's work, and returns the id of a blocked task with a review.
func showcase(t testing.TB, f *fixture) string {
	t.Helper()
	ctx := context.Background()
	// A day's work: each entry seven minutes after the last.
	clock := time.Now().Add(-26 * time.Hour)
	f.b.Log.(*world.Log).Now = func() time.Time { clock = clock.Add(7 * time.Minute); return clock }
	f.b.Now = f.b.Log.(*world.Log).Now
	defer func() { f.b.Log.(*world.Log).Now, f.b.Now = time.Now, time.Now }()
	typ := func(typ string, p board.Priority) func(*board.Task) {
		return func(t *board.Task) { t.Type, t.Priority = typ, p }
	}
	f.add(t, "Add --json output to cra query deps", typ("feature", board.Normal))
	f.add(t, "Document the [recycler] settings in the README", typ("docs", board.Low))
	f.add(t, "Retry model calls on 429 with backoff", typ("bug", board.High))
	f.b.Log.Event(ctx, world.SourceSystem, "level1", "pass: 14 agents, 1 active, 0 in limbo")

	running := f.add(t, "Index TypeScript path aliases from tsconfig.json", typ("feature", board.High))
	f.start(t, running.ID)
	running2 := f.add(t, "Speed up the co-change miner on large histories", typ("perf", board.Normal))
	f.start(t, running2.ID)

	done := f.add(t, "Fix the off-by-one in the context budget", typ("bug", board.Critical))
	f.run(t, done.ID, 0, "ok  github.com/cra-dev/cra/internal/retrieve 0.412s")

	broke := f.add(t, "Parse Python decorators with arguments", typ("bug", board.Normal))
	f.run(t, broke.ID, 1, "--- FAIL: TestDecorators (0.00s)")

	fin := f.add(t, "Make world log appends atomic under PIPE_BUF", typ("bug", board.Critical))
	for range 3 {
		f.run(t, fin.ID, 0, "ok  github.com/cra-dev/cra/internal/world 1.9s")
		status := world.StatusRetry
		if task, _, _ := f.b.Store.Get(ctx, fin.ID); task.ConsecutiveCompletionClaims == 2 {
			status = world.StatusVerified
		}
		f.decide(t, fin.ID, status, "full_complete", "full_complete: completion streak", "")
	}
	fin2 := f.add(t, "Golden tests for the edit-block parser", typ("test", board.Normal))
	f.run(t, fin2.ID, 0, "ok")
	f.decide(t, fin2.ID, world.StatusVerified, "full_complete", "verified", "")

	blocked := f.add(t, "Connect the corpus exporter to the staging database", func(t *board.Task) {
		t.Type, t.Priority = "feature", board.High
		t.Description = "Export the curated training rows to the staging PostgreSQL so the trainer can read them."
		t.Need = "cra curate-data --export staging writes every row and the row count matches"
	})
	for i := range 3 {
		f.run(t, blocked.ID, 1, "dial tcp 10.0.4.12:5432: connect: connection refused")
		f.decide(t, blocked.ID, map[bool]world.Status{true: world.StatusFailed, false: world.StatusRetry}[i == 2], "",
			"failure streak", map[bool]string{true: "give the agent the staging database URL and a read-write role", false: ""}[i == 2])
	}
	f.b.Log.Event(ctx, world.SourceSystem, "recycler", "reviewed "+blocked.ID+" run 3: blocked after 3 failures; a person is asked")
	ev, _ := json.Marshal(map[string]any{
		"run": map[string]any{"exit_code": 1, "run_failed": true},
		"diff": map[string]any{"base": "4f2c1e9", "lines_added": 41, "lines_removed": 6,
			"files": []any{map[string]any{"path": "internal/corpus/export.go", "status": "modified", "lines_added": 41, "lines_removed": 6}},
			"stat":  " internal/corpus/export.go | 47 +++++++++++++++++++++++++++++++++++------\n 1 file changed, 41 insertions(+), 6 deletions(-)"},
		"uncommitted":           []string{},
		"deleted_tests":         []string{},
		"weakened_tests":        []string{},
		"validation_configured": true,
		"validation": map[string]any{"success": false, "failing_tests": []string{"TestExportStaging"},
			"checks": []any{map[string]any{"name": "test", "command": "go test ./...", "passed": false, "exit_code": 1, "duration_ns": 4100000000,
				"output": "--- FAIL: TestExportStaging (0.02s)\n    export_test.go:41: dial tcp 10.0.4.12:5432: connect: connection refused"}}},
		"output_tail": "dial tcp 10.0.4.12:5432: connect: connection refused",
	})
	now := time.Now().UTC()
	f.addReview(t, review.Review{Time: now, TaskID: blocked.ID, Run: 3, Folder: string(board.Failed), Evidence: ev,
		Blockers: []string{"the run failed: exit 1", "validation did not pass: go test ./internal/corpus/..."},
		Model:    review.Uncertain, Classification: review.Uncertain,
		Need:   "give the agent the staging database URL and a read-write role",
		Before: review.Streaks{Failure: 2}, After: review.Streaks{Failure: 3}, Action: review.Block,
		Note: review.Note{
			Accomplished: "Wrote the exporter (internal/corpus/export.go) and its flags; unit tests with SQLite pass.",
			Status:       "Every run stops at the first connection: the staging host refuses it.",
			Remaining:    "No credentials for staging; the row count check is untested against PostgreSQL.",
			Next:         "A person provides CRA_STAGING_DSN; then run cra curate-data --export staging --dry-run.",
			Evidence:     "go test ./internal/corpus/... fails in TestExportStaging: connection refused (3 runs).",
		}})
	f.b.Log.Event(ctx, world.SourceSystem, "t-level2", "restarted | reason: silent for 15m (Level 2)")

	xss := f.add(t, "<img src=x onerror=alert(1)> renders as text", typ("security", board.Normal))
	_ = xss
	return blocked.ID
}

// TestScreenshots writes the README's screenshots with -shots:
//
//	go test ./internal/server -run TestScreenshots -shots
func TestScreenshots(t *testing.T) {
	if !*shots {
		t.Skip("writes docs/*.png only with -shots")
	}
	browser := newBrowser(t)
	f := newFixture(t)
	url, _ := startDaemon(t, f, func(d *Daemon) { d.Fleet = &slowCleanup{Fleet: f.fleet, pass: func(context.Context) {}} }) // first: its start would restart the runs shown going
	blocked := showcase(t, f)
	tb := openTab(t, browser, url)
	tb.do(chromedp.EmulateViewport(1600, 900), chromedp.WaitVisible(chromedp.CSS(cardSel(board.FailedBlocked, blocked))))
	tb.waitJS(`document.querySelectorAll("#activity-list li").length >= 3`)
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	write(t, "board.png", png)
	tb.do(chromedp.EmulateViewport(1600, 1150))
	tb.click(cardSel(board.FailedBlocked, blocked))
	tb.waitJS(`document.querySelector("#d-log") && document.querySelector("#d-log").children.length > 5`)
	png, err = chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	write(t, "drawer-blocked.png", png)
}

func write(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "docs", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(data))
}
