package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/server"
)

// tokenEnv names the variable the daemon's token comes from: secrets come
// only from the environment.
const tokenEnv = "CRA_SERVE_TOKEN"

type serveOptions struct {
	repo      string
	addr      string
	passEvery time.Duration
	// noProcessor serves and supervises without running tasks.
	noProcessor bool
	// noRecycler serves without reviewing finished runs.
	noRecycler bool
	// noSupervisors serves without the supervisor agents.
	noSupervisors bool
}

func newServeCmd(d *deps, runF func(context.Context, *deps, *serveOptions) error) *cobra.Command {
	opts := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the repository's daemon: the board's API and Level 1 supervision",
		Long: `Run cra's daemon for this repository until Ctrl-C (SIGINT) or SIGTERM:

  GET /healthz       {"ok": true, "pid": …}
  GET /api/tasks     the board as JSON, each task with its folder (?folder=NAME)

the board's processor, which runs pending tasks in order (critical
directives, functional directives, planned tasks by priority then age,
cleanup directives) up to [board] max_parallel at once, each with its
agent profile (as 'cra task run' does one), the recycler every
recycler.interval_seconds (what 'cra recycle --once' does once: review
finished runs, stop stale ones, notify), the supervisor agents when their
triggers hold, each run followed by the cleanup pass (what 'cra supervisors
run' and 'cra cleanup' do now), and a Level 1 pass at start and every
--pass-every (what 'cra supervise --once' does once). One daemon per
repository: a second is refused with the first one's pid. It writes its
address to .clean_room/serve.json.

It listens on 127.0.0.1 by default. Any other address needs a token, read
from $CRA_SERVE_TOKEN only; clients send it as 'Authorization: Bearer
<token>'.

On shutdown the listener closes, the passes stop, and the runs the
processor started are stopped (their process groups, SIGTERM then
SIGKILL): each ends failed in the log, 'run failed: stopped', its edits
kept on its branch. A daemon killed with -9 leaves its runs with no one
waiting for them: the next daemon's first pass stops them and restarts
their tasks, after repairing the board from the log.`,
		Example: `  cra serve
  cra serve --addr 127.0.0.1:0
  CRA_SERVE_TOKEN=$(openssl rand -hex 32) cra serve --addr 0.0.0.0:7777`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return serveRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.StringVar(&opts.addr, "addr", "127.0.0.1:7777", "HOST:PORT to listen on (port 0: any free one)")
	f.DurationVar(&opts.passEvery, "pass-every", server.DefaultPassEvery, "interval of the Level 1 passes")
	f.BoolVar(&opts.noProcessor, "no-processor", false, "serve and supervise, but start no task runs")
	f.BoolVar(&opts.noRecycler, "no-recycler", false, "serve and supervise, but review no finished runs")
	f.BoolVar(&opts.noSupervisors, "no-supervisors", false, "serve without the supervisor agents (code_style, design, internaliser) and their cleanup")
	return cmd
}

func serveRun(ctx context.Context, d *deps, opts *serveOptions) error {
	if opts.passEvery <= 0 {
		return usageError{err: errors.New("--pass-every must be > 0")}
	}
	tb, err := openBoard(ctx, d, opts.repo, true)
	if err != nil {
		return err
	}
	defer tb.Close()
	daemon := &server.Daemon{StateDir: tb.ws.StateDir, Addr: opts.addr, Token: os.Getenv(tokenEnv), Board: tb.Board,
		PassEvery: opts.passEvery, Out: d.errOut, Logger: d.logger}
	if !opts.noProcessor {
		daemon.Processor = newProcessor(d, tb)
	}
	if !opts.noRecycler {
		r, err := newRecycler(ctx, d, tb, d.errOut)
		if err != nil {
			return err
		}
		daemon.Recycler = r
	}
	if !opts.noSupervisors {
		r, err := newSupervisorRunner(ctx, d, tb, d.errOut)
		if err != nil {
			return err
		}
		daemon.Supervisors = r
	}
	err = daemon.Run(ctx, func(info server.Info) {
		fmt.Fprintf(d.out, "cra serve: listening on http://%s (pid %d); Ctrl-C stops it\n", info.Addr, info.PID)
	})
	if errors.Is(err, server.ErrTokenRequired) {
		return usageError{err: err}
	}
	if err == nil && ctx.Err() != nil {
		fmt.Fprintln(d.out, "cra serve: stopped")
	}
	return err
}
