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
	"path/filepath"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/supervise"
)

// The daemon's files in the state directory: the lock that makes it one
// per repository, and where it says how to reach it.
const (
	LockName = "serve.lock"
	InfoName = "serve.json"
)

// DefaultPassEvery is how often the daemon runs a Level 1 pass, and
// DefaultTickEvery how often its processor looks for pending tasks.
const (
	DefaultPassEvery = 5 * time.Second
	DefaultTickEvery = 2 * time.Second
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

// Daemon is 'cra serve' for one repository: the API, the board's
// processor, the recycler, and a Level 1 pass at start and every
// PassEvery.
type Daemon struct {
	// StateDir is the repository's .clean_room/; required.
	StateDir string
	// Addr is HOST:PORT to listen on; port 0 picks a free one.
	Addr string
	// Token is required of every request. Off loopback an empty one is
	// read from StateDir/serve.token, or made and written there
	// (LoadToken); on loopback empty means none.
	Token string
	// Root is the repository's root, whose config.toml holds the
	// settings the board shows and changes.
	Root string

	// Board is the repository's board; required.
	Board *board.Board
	// PassEvery is the Level 1 interval; 0 is DefaultPassEvery.
	PassEvery time.Duration
	// Processor runs the board's pending tasks every TickEvery; nil runs
	// none (the daemon then only serves and supervises).
	Processor *board.Processor
	// TickEvery is the processor's interval; 0 is DefaultTickEvery.
	TickEvery time.Duration
	// Recycler reviews finished runs (the recycler and Level 2); nil
	// reviews none.
	Recycler Looper
	// Supervisors runs the supervisor agents when their triggers hold,
	// and the cleanup pass after them; nil runs none.
	Supervisors Looper
	// Cleanup is one cleanup pass (cleanup.Run), which the board's Clean
	// Up button starts in the background; nil leaves the button disabled.
	Cleanup func(ctx context.Context) error
	// Out gets a line per action and event a person should see; nil
	// discards.
	Out io.Writer
	// Logger gets diagnostics; nil discards.
	Logger *slog.Logger

	hub *Hub // set by Run
}

// Hub returns the running daemon's event hub; nil before Run.
func (d *Daemon) Hub() *Hub { return d.hub }

// Looper is a loop the daemon runs until its context ends: the
// recycler (*review.Recycler).
type Looper interface {
	Loop(ctx context.Context) error
}

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
	lk, ok, err := flock.TryLock(filepath.Join(d.StateDir, LockName))
	if err != nil {
		return fmt.Errorf("lock the daemon: %w", err)
	}
	if !ok {
		var info Info
		if data, err := os.ReadFile(filepath.Join(d.StateDir, InfoName)); err == nil {
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
		if token, made, err = LoadToken(d.StateDir); err != nil {
			return err
		}
	}
	// A serve.json left by a daemon killed with -9 names a dead pid.
	os.Remove(filepath.Join(d.StateDir, InfoName))
	// After a crash the views are rebuilt from the log (DESIGN.md
	// principle 1): a half-written temp file, a task in two folders, a
	// folder that disagrees with the log.
	rep, err := d.Board.Rebuild(ctx, false)
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
	info := Info{PID: os.Getpid(), Addr: ln.Addr().String(), Started: time.Now().UTC(), Token: token, TokenMade: made}
	infoPath := filepath.Join(d.StateDir, InfoName)
	data, _ := json.Marshal(info)
	if err := atomicfile.Write(infoPath, data, 0o644); err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(infoPath)

	// The loops end with ctx, or when serving fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := &Hub{Log: d.Board.Log, Logger: d.Logger}
	if err := hub.Begin(); err != nil {
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
	api := &Server{Board: d.Board, Root: d.Root, StateDir: d.StateDir, Hub: hub, Token: token,
		Logger: d.Logger, Started: info.Started, PID: info.PID}
	var cleaner *daemonCleaner
	if d.Cleanup != nil {
		cleaner = &daemonCleaner{ctx: ctx, stateDir: d.StateDir, run: d.Cleanup, say: d.say}
		api.Cleaner = cleaner
		defer cleaner.wg.Wait() // after the listener closed: no pass starts anew
	}
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
	d.takeOver(ctx)
	passes := make(chan struct{})
	go func() {
		defer close(passes)
		d.supervise(ctx)
	}()
	ticks := make(chan struct{})
	go func() {
		defer close(ticks)
		if d.Processor != nil {
			every := d.TickEvery
			if every <= 0 {
				every = DefaultTickEvery
			}
			d.Processor.Loop(ctx, every)
		}
	}()
	recycled := make(chan struct{})
	go func() {
		defer close(recycled)
		if d.Recycler != nil {
			d.Recycler.Loop(ctx)
		}
	}()
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		if d.Supervisors != nil {
			d.Supervisors.Loop(ctx)
		}
	}()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	cancel()
	shut, cancelShut := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelShut()
	srv.Shutdown(shut)
	<-hubbed // its clients' connections closed
	<-passes
	<-recycled
	<-supervised
	<-ticks // the runs it started are stopped, their finish lines written
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

func (d *Daemon) say(format string, args ...any) {
	if d.Out != nil {
		fmt.Fprintf(d.Out, format+"\n", args...)
	}
}

// supervise runs a Level 1 pass every PassEvery until ctx ends (the
// first ran at start, in takeOver). A failed pass is reported and the
// next one goes on.
func (d *Daemon) supervise(ctx context.Context) {
	every := d.PassEvery
	if every <= 0 {
		every = DefaultPassEvery
	}
	p := d.pass()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := p.Run(ctx); err != nil && ctx.Err() == nil {
			d.say("warning: Level 1 pass: %v", err)
		}
	}
}

func (d *Daemon) pass() *supervise.Pass {
	p := &supervise.Pass{Log: d.Board.Log, Board: d.Board, StateDir: d.StateDir, Out: d.Out}
	if d.Processor != nil {
		p.Held = d.Processor.Holds // its runs, from claim to finish, are its own
	}
	return p
}

// takeOver is the daemon's first pass, before its processor starts: it
// takes over from a daemon that died (kill -9), whose runs, still alive,
// have no one waiting for them: they are stopped and their tasks
// restarted.
func (d *Daemon) takeOver(ctx context.Context) {
	p := d.pass()
	p.TakeOver = true
	if _, err := p.Run(ctx); err != nil && ctx.Err() == nil {
		d.say("warning: Level 1 pass: %v", err)
	}
}
