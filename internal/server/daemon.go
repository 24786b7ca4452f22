package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/statedir"
)

// The daemon's files in the state directory: the lock that makes it one
// per repository, and where it says how to reach it.
const (
	LockName = statedir.ServeLock
	InfoName = statedir.ServeInfo
)

// Info is what a running daemon writes to serve.json: a second daemon
// names it, and clients find it.
type Info struct {
	PID     int       `json:"pid"`
	Addr    string    `json:"addr"`
	Started time.Time `json:"started"`
	// Token is the token requests need, empty on loopback; TokenMade
	// says the daemon made it (and wrote it to TokenName) at this start,
	// so that it is printed once. Neither is written to serve.json.
	Token     string `json:"-"`
	TokenMade bool   `json:"-"`
}

// Daemon is 'cra serve' for one repository: the lock that makes it one
// per repository, the listener, the token and serve.json. The work is the
// fleet's: the API answers its operations, and its loops (Level 1, the
// processor, the recycler, the supervisors) run as one group
// (fleet.Serve).
type Daemon struct {
	// Fleet is the repository's fleet; required.
	Fleet Fleet
	// Addr is HOST:PORT to listen on; port 0 picks a free one.
	Addr string
	// Token is required of every request. Off loopback an empty one is
	// read from the state directory's serve.token, or made and written
	// there (LoadToken); on loopback empty means none.
	Token string
	// Workers says which of the fleet's loops run, and how often.
	Workers fleetapi.Workers
	// MCP serves the Model Context Protocol at /mcp (issue 31); nil
	// leaves /mcp out.
	MCP http.Handler
	// Out gets a line per action and event a person should see; nil
	// discards.
	Out io.Writer
	// Logger gets diagnostics; nil discards.
	Logger *slog.Logger

	hub *Hub // set by Run
}

// Hub returns the running daemon's event hub; nil before Run.
func (d *Daemon) Hub() *Hub { return d.hub }

// AlreadyRunningError is a second daemon for a repository.
type AlreadyRunningError struct{ Info Info }

func (e *AlreadyRunningError) Error() string {
	if e.Info.PID == 0 {
		return "cra serve is already running for this repository: stop it first"
	}
	return fmt.Sprintf("cra serve is already running for this repository (pid %d, on %s): stop it first (kill %d)", e.Info.PID, e.Info.Addr, e.Info.PID)
}

// Run serves until ctx ends (SIGINT, SIGTERM), then shuts down: the
// listener closes, requests in flight get a few seconds, serve.json goes
// and the lock is released. ready, when set, is called with the address
// once the daemon listens.
func (d *Daemon) Run(ctx context.Context, ready func(Info)) error {
	host, _, err := net.SplitHostPort(d.Addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w (use HOST:PORT, e.g. 127.0.0.1:7777)", d.Addr, err)
	}
	stateDir := d.Fleet.StateDir()
	lk, ok, err := flock.TryLock(statedir.At(stateDir).ServeLock())
	if err != nil {
		return fmt.Errorf("lock the daemon: %w", err)
	}
	if !ok {
		var info Info
		if data, err := os.ReadFile(statedir.At(stateDir).ServeInfo()); err == nil {
			json.Unmarshal(data, &info)
		}
		return &AlreadyRunningError{Info: info}
	}
	defer lk.Close()
	token, made := strings.TrimSpace(d.Token), false
	if token != "" && len(token) < minTokenLen {
		// The only guard of an API open to the network: a short one is
		// guessed.
		return fmt.Errorf("the token given ($CRA_SERVE_TOKEN) has %d characters: use %d or more (e.g. $(openssl rand -hex 32)), or unset it and cra makes one", len(token), minTokenLen)
	}
	if !Loopback(host) && token == "" {
		if token, made, err = LoadToken(stateDir); err != nil {
			return err
		}
	}
	// A serve.json left by a daemon killed with -9 names a dead pid.
	os.Remove(statedir.At(stateDir).ServeInfo())
	// After a crash the views are rebuilt from the log (DESIGN.md
	// principle 1): a half-written temp file, a task in two folders, a
	// folder that disagrees with the log.
	rep, err := d.Fleet.Repair(ctx)
	if err != nil {
		return fmt.Errorf("repair the board from the world log: %w", err)
	}
	for _, r := range rep.Repairs {
		d.say("board at start: %s %s: %s", r.What, r.ID, r.Detail)
	}
	ln, err := net.Listen("tcp", d.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", d.Addr, err)
	}
	// No agent may reach this API: it would move its own task to
	// completed-finalized as a person does. Every confined process is
	// kept off the port from now on (package sandbox).
	release, err := sandbox.Guard(ln.Addr().(*net.TCPAddr).Port)
	if err != nil {
		ln.Close()
		return fmt.Errorf("keep agents off the daemon's port: %w", err)
	}
	defer release()
	info := Info{PID: os.Getpid(), Addr: ln.Addr().String(), Started: time.Now().UTC(), Token: token, TokenMade: made}
	infoPath := statedir.At(stateDir).ServeInfo()
	data, _ := json.Marshal(info)
	if err := atomicfile.Write(infoPath, data, 0o644); err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(infoPath)

	// The loops end with ctx, or when serving fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := &Hub{Log: d.Fleet.Tasks().Log, Logger: d.Logger}
	if err := hub.Begin(ctx); err != nil {
		ln.Close()
		return err
	}
	d.hub = hub
	hubbed := make(chan struct{})
	go func() {
		defer close(hubbed)
		if err := hub.Run(ctx); err != nil && d.Logger != nil {
			d.Logger.Error("event hub stopped", "err", err)
		}
	}()
	api := &Server{Fleet: d.Fleet, Hub: hub, Token: token, Logger: d.Logger, Out: d.Out,
		Started: info.Started, PID: info.PID, MCP: d.MCP}
	cleaner := &daemonCleaner{ctx: ctx, fleet: d.Fleet, say: d.say}
	api.Cleaner = cleaner
	defer cleaner.wg.Wait() // after the listener closed: no pass starts anew
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// A kept-alive connection idle that long is closed: one request
		// (a refused one too) must not hold a connection for ever.
		IdleTimeout: time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready(info)
	}
	workers := d.Workers
	if workers.Out == nil {
		workers.Out = d.Out
	}
	served2 := make(chan error, 1)
	go func() { served2 <- d.Fleet.Serve(ctx, workers) }()
	var serveErr, loopErr error
	looped := false
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	case loopErr = <-served2:
		looped = true
	}
	cancel()
	shut, cancelShut := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelShut()
	srv.Shutdown(shut)
	<-hubbed // its clients' connections closed
	if !looped {
		// The loops stop together; the runs the processor started are
		// stopped, their finish lines written.
		loopErr = <-served2
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, loopErr)
}

func (d *Daemon) say(format string, args ...any) {
	if d.Out != nil {
		fmt.Fprintf(d.Out, format+"\n", args...)
	}
}
