package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/mcp"
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
		Short: "Run the repository's daemon: the web board, its API, the processor and Level 1 supervision",
		Long: `Run cra's daemon for this repository until Ctrl-C (SIGINT) or SIGTERM:
the web board and its API, the board's processor, and Level 1
supervision.

Open the printed address in a browser for the live board: six columns,
cards that move as the world log changes (over a WebSocket), a drawer
per task with its notes, evidence, runs and log lines, an answer box for
blocked tasks, an add-task form, the recycler's settings, and a Clean
Up button that runs 'cra cleanup' in the background. The API
(JSON, see 'go doc ./internal/server'):

  GET  /healthz                 {"ok": true, "pid": …}
  GET  /api/tasks               the board, each task with its folder (?folder=NAME)
  GET  /api/tasks/ID            a task with its log lines and runs
  POST /api/tasks               add a task
  POST /api/tasks/ID/answer     answer a task that waits for a person
  POST /api/tasks/ID/move       move a task; /retry sends it back to pending
  GET|PUT /api/settings         the recycler's settings (config.toml)
  GET|POST /api/cleanup         whether a cleanup runs and the last one's report; start one
  GET  /api/log?since=OFFSET    world log lines
  GET  /api/events?since=OFFSET&file=FILE
                                a WebSocket of the world log

The processor runs pending tasks in order (critical directives,
functional directives, planned tasks by priority then age, cleanup
directives) up to [board] max_parallel at once, each with its agent
profile (as 'cra task run' does one); the recycler runs every
recycler.interval_seconds (what 'cra recycle --once' does once: review
finished runs, stop stale ones, notify), the supervisor agents when their
triggers hold, each run followed by the cleanup pass (what 'cra supervisors
run' and 'cra cleanup' do now), and a Level 1 pass at start and every
--pass-every (what 'cra supervise --once' does once). One daemon per
repository: a second is refused with the first one's pid. It writes its
address to .clean_room/serve.json.

It listens on 127.0.0.1 by default, where no token is needed. On any
other address every request needs a token: $CRA_SERVE_TOKEN, or else one
the daemon makes and keeps in .clean_room/serve.token (mode 0600),
printed when made. Clients send 'Authorization: Bearer <token>'; a
browser opens http://HOST:PORT/?token=<token> once and keeps it in an
HttpOnly cookie.

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
	f.DurationVar(&opts.passEvery, "pass-every", fleet.DefaultPassEvery, "interval of the Level 1 passes")
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
	warnConfig(d, tb.ws.Config)
	// /mcp: the tools of 'cra mcp', the board's through the daemon's
	// fleet (issue 31).
	mcpHTTP := mcp.NewHTTP(ctx, tb.fleet.Root(), mcp.Options{Board: tb.fleet, Version: version, Logger: d.logger})
	defer mcpHTTP.Close()
	daemon := &server.Daemon{Fleet: tb.fleet, Addr: opts.addr, Token: os.Getenv(tokenEnv), MCP: mcpHTTP,
		Workers: fleet.Workers{Processor: !opts.noProcessor, Recycler: !opts.noRecycler, Supervisors: !opts.noSupervisors,
			PassEvery: opts.passEvery},
		Out: d.errOut, Logger: d.logger}
	err = daemon.Run(ctx, func(info server.Info) {
		fmt.Fprintf(d.out, "cra serve: listening on http://%s (pid %d); Ctrl-C stops it\n", info.Addr, info.PID)
		switch {
		case info.TokenMade:
			fmt.Fprintf(d.out, "cra serve: token %s (kept in .clean_room/%s); open http://%s/?token=%s once in a browser\n",
				info.Token, server.TokenName, browsable(info.Addr), info.Token)
		case info.Token != "" && os.Getenv(tokenEnv) == "":
			fmt.Fprintf(d.out, "cra serve: requests need the token in .clean_room/%s\n", server.TokenName)
		case info.Token != "":
			fmt.Fprintf(d.out, "cra serve: requests need the token in $%s\n", tokenEnv)
		}
	})
	if err == nil && ctx.Err() != nil {
		fmt.Fprintln(d.out, "cra serve: stopped")
	}
	return err
}

// browsable turns the address the daemon listens on into one a browser
// can open: an unspecified host (0.0.0.0, ::) becomes this machine's name.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return net.JoinHostPort(host, port)
}
