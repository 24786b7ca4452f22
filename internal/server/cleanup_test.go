package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/cleanup"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/flock"
)

// TestCleanupOp: the cleanup operation through the daemon returns the
// pass's report, the one the fleet gives in process; the daemon keeps
// the last pass (not a dry run) for GET /api/cleanup; a pass refused
// because another holds the lock is fleetapi.ErrCleanupRunning either
// way.
func TestCleanupOp(t *testing.T) {
	f := newFixture(t)
	for _, title := range []string{"fix the login page crash", "Fix the login-page crash!", "write the release notes"} {
		f.add(t, title, nil)
	}
	d := &Daemon{Fleet: f.fleet, Addr: "127.0.0.1:0", Workers: fleet.Workers{PassEvery: time.Hour}}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, func(i Info) { ready <- i }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	info := <-ready
	c := &Client{Base: "http://" + info.Addr, Command: "cra cleanup"}
	ts := &httptest.Server{URL: c.Base}

	local, err := f.fleet.Cleanup(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := c.Cleanup(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(local.Groups) != 1 || len(local.Groups[0].IDs) != 2 || local.Pending != 3 {
		t.Errorf("the dry run in process: %+v, want one group of two among 3 pending", local)
	}
	if diff := cmp.Diff(jsonOf(t, local), jsonOf(t, remote)); diff != "" {
		t.Errorf("the dry run through the daemon differs (-in process +daemon):\n%s", diff)
	}
	if _, body := call(t, ts, "GET", "/api/cleanup", nil); body["last"] != nil {
		t.Errorf("after dry runs only: last is %v, want none", body["last"])
	}

	// A pass with no model to ask: each call fails alone, and the report
	// says so.
	rep, err := c.Cleanup(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.DryRun || rep.RunID == "" || !rep.Rewrite.Failed() || !rep.Collapse.Failed() || len(rep.Groups) != 1 {
		t.Errorf("the pass through the daemon: %+v, want a run with both calls failed and the pre-pass's group", rep)
	}
	last := f.fleet.LastCleanup()
	if last == nil || last.Error != "" || last.Finished.IsZero() {
		t.Fatalf("the fleet's last pass: %+v", last)
	}
	if diff := cmp.Diff(jsonOf(t, rep), jsonOf(t, last.Report)); diff != "" {
		t.Errorf("the last pass is not the one answered (-answered +kept):\n%s", diff)
	}
	code, body := call(t, ts, "GET", "/api/cleanup", nil)
	if got, _ := body["last"].(map[string]any); code != 200 || got == nil || got["report"].(map[string]any)["run_id"] != rep.RunID {
		t.Errorf("GET /api/cleanup: %d %v, want the last pass, %s", code, body, rep.RunID)
	}

	// 'cra cleanup' in another process holds the lock.
	lk, ok, err := flock.TryLock(filepath.Join(f.state, cleanup.LockFile))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer lk.Close()
	if _, err := c.Cleanup(ctx, false); !errors.Is(err, fleetapi.ErrCleanupRunning) {
		t.Errorf("a pass while another runs: got %v, want ErrCleanupRunning", err)
	}
	if _, err := c.Cleanup(ctx, true); err != nil {
		t.Errorf("a dry run while another pass runs: %v, want its report", err)
	}
	if now := f.fleet.LastCleanup(); now.Report.RunID != rep.RunID {
		t.Errorf("a refused pass replaced the last one: %+v", now)
	}
	if code, _ := call(t, ts, "POST", "/api/cleanup?wait=maybe", nil); code != 400 {
		t.Errorf("wait=maybe: %d, want 400", code)
	}
}
