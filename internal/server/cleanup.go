package server

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/cra-dev/cra/internal/fleetapi"
)

// Cleaner runs the cleanup pass for the board's Clean Up button (seed
// 000): one at a time, in the background.
type Cleaner interface {
	// Start starts a pass and returns at once; fleetapi.ErrCleanupRunning when
	// one runs already.
	Start() error
	// Running reports whether a pass runs, started here or by 'cra
	// cleanup'.
	Running() bool
}

// daemonCleaner starts passes with the daemon's context, so that they
// stop with it, and counts them so that the daemon waits for them.
type daemonCleaner struct {
	ctx   context.Context
	fleet Fleet
	run   func(ctx context.Context) error
	say   func(format string, args ...any)

	mu   sync.Mutex
	busy bool
	wg   sync.WaitGroup
}

var _ Cleaner = (*daemonCleaner)(nil)

func (c *daemonCleaner) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy || c.fleet.CleanupRunning() {
		return fleetapi.ErrCleanupRunning
	}
	c.busy = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := c.run(c.ctx)
		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
		if err != nil && c.ctx.Err() == nil {
			c.say("warning: cleanup from the board: %v", err)
		}
	}()
	return nil
}

func (c *daemonCleaner) Running() bool {
	c.mu.Lock()
	busy := c.busy
	c.mu.Unlock()
	return busy || c.fleet.CleanupRunning()
}

// cleanupStatus answers GET /api/cleanup: whether the button can start
// a pass.
func (s *Server) cleanupStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.cleanupState())
}

type cleanupState struct {
	// Available says this daemon can run a pass.
	Available bool `json:"available"`
	// Running says a pass runs now.
	Running bool `json:"running"`
}

func (s *Server) cleanupState() cleanupState {
	st := cleanupState{Available: s.Cleaner != nil}
	if s.Cleaner != nil {
		st.Running = s.Cleaner.Running()
	} else if s.Fleet != nil {
		st.Running = s.Fleet.CleanupRunning()
	}
	return st
}

// startCleanup answers POST /api/cleanup: 202 when a pass started, 409
// while one runs. What the pass does reaches the board through the log
// ([event:system][cleanup], and the tasks it adds and collapses).
func (s *Server) startCleanup(w http.ResponseWriter, r *http.Request) {
	if s.Cleaner == nil {
		writeError(w, http.StatusServiceUnavailable, "this daemon runs no cleanup: run 'cra cleanup'")
		return
	}
	if err := s.Cleaner.Start(); err != nil {
		if errors.Is(err, fleetapi.ErrCleanupRunning) {
			writeError(w, http.StatusConflict, "a cleanup is running: wait for it to finish")
			return
		}
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, cleanupState{Available: true, Running: true})
}
