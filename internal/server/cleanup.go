package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/cra-dev/cra/internal/fleetapi"
)

// Cleaner runs the fleet's cleanup pass (seed 000) for the board's Clean
// Up button and for 'cra cleanup' through the daemon: one at a time.
type Cleaner interface {
	// Start starts a pass in the background and returns at once;
	// fleetapi.ErrCleanupRunning when one runs already.
	Start() error
	// Run runs a pass and returns its report when it ends; a dry run
	// asks no model and writes nothing, so it waits for no other.
	// fleetapi.ErrCleanupRunning when one runs already.
	Run(ctx context.Context, dryRun bool) (*fleetapi.CleanupReport, error)
	// Running reports whether a pass runs, started here or by 'cra
	// cleanup' in another process.
	Running() bool
}

// daemonCleaner runs passes through the fleet's operation (Fleet.Cleanup)
// with the daemon's context, so that they stop with it, and counts them
// so that the daemon waits for them.
type daemonCleaner struct {
	ctx   context.Context
	fleet Fleet
	say   func(format string, args ...any)

	mu   sync.Mutex
	busy bool
	wg   sync.WaitGroup
}

var _ Cleaner = (*daemonCleaner)(nil)

// claim takes the one pass this daemon runs at a time; release gives it
// back.
func (c *daemonCleaner) claim() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy || c.fleet.CleanupRunning() {
		return fleetapi.ErrCleanupRunning
	}
	c.busy = true
	c.wg.Add(1)
	return nil
}

func (c *daemonCleaner) release() {
	c.mu.Lock()
	c.busy = false
	c.mu.Unlock()
	c.wg.Done()
}

func (c *daemonCleaner) Start() error {
	if err := c.claim(); err != nil {
		return err
	}
	go func() {
		defer c.release()
		if _, err := c.fleet.Cleanup(c.ctx, false); err != nil && c.ctx.Err() == nil {
			c.say("warning: cleanup from the board: %v", err)
		}
	}()
	return nil
}

// Run runs the pass until it ends, ctx ends (the command that asked went
// away) or the daemon stops.
func (c *daemonCleaner) Run(ctx context.Context, dryRun bool) (*fleetapi.CleanupReport, error) {
	if !dryRun {
		if err := c.claim(); err != nil {
			return nil, err
		}
		defer c.release()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.ctx, cancel)()
	return c.fleet.Cleanup(ctx, dryRun)
}

func (c *daemonCleaner) Running() bool {
	c.mu.Lock()
	busy := c.busy
	c.mu.Unlock()
	return busy || c.fleet.CleanupRunning()
}

// cleanupStatus answers GET /api/cleanup: whether the button can start
// a pass, and the last pass's report.
func (s *Server) cleanupStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.cleanupState())
}

type cleanupState struct {
	// Available says this daemon can run a pass.
	Available bool `json:"available"`
	// Running says a pass runs now.
	Running bool `json:"running"`
	// Last is the last pass the daemon's fleet ran, absent before the
	// first.
	Last *fleetapi.CleanupPass `json:"last,omitempty"`
}

func (s *Server) cleanupState() cleanupState {
	st := cleanupState{Available: s.Cleaner != nil}
	if s.Cleaner != nil {
		st.Running = s.Cleaner.Running()
	} else if s.Fleet != nil {
		st.Running = s.Fleet.CleanupRunning()
	}
	if s.Fleet != nil {
		st.Last = s.Fleet.LastCleanup()
	}
	return st
}

// startCleanup answers POST /api/cleanup. Without options it starts a
// pass in the background (the Clean Up button): 202, and what the pass
// does reaches the board through the log ([event:system][cleanup], and
// the tasks it adds and collapses). With ?wait=true it answers when the
// pass ends, 200 with its report ('cra cleanup' through the daemon; the
// pass stops if the client goes away); ?dry_run=true runs the pre-pass
// alone and answers its report. 409 while a pass runs.
func (s *Server) startCleanup(w http.ResponseWriter, r *http.Request) {
	if s.Cleaner == nil {
		writeError(w, http.StatusServiceUnavailable, "this daemon runs no cleanup: run 'cra cleanup'")
		return
	}
	var wait, dryRun bool
	for _, o := range []struct {
		name string
		v    *bool
	}{{"wait", &wait}, {"dry_run", &dryRun}} {
		q := r.URL.Query()
		if !q.Has(o.name) {
			continue
		}
		b, err := strconv.ParseBool(q.Get(o.name))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("%s=%q is not true or false", o.name, q.Get(o.name)),
				Field: o.name, Fix: "use " + o.name + "=true or " + o.name + "=false"})
			return
		}
		*o.v = b
	}
	if !wait && !dryRun {
		if err := s.Cleaner.Start(); err != nil {
			s.cleanupError(w, r, err)
			return
		}
		writeJSON(w, http.StatusAccepted, cleanupState{Available: true, Running: true})
		return
	}
	rep, err := s.Cleaner.Run(r.Context(), dryRun)
	if err != nil {
		s.cleanupError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *Server) cleanupError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, fleetapi.ErrCleanupRunning) {
		writeError(w, http.StatusConflict, "a cleanup is running: wait for it to finish")
		return
	}
	s.fail(w, r, err)
}
