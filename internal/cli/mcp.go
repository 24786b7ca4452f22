package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/mcp"
)

type mcpOptions struct {
	repo     string
	files    string
	readOnly bool
	verbose  bool
}

func newMCPCmd(d *deps, runF func(context.Context, *deps, *mcpOptions) error) *cobra.Command {
	opts := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the repository's index, retrieval and knowledge to coding agents over MCP (stdio)",
		Long: `Serve this repository to a coding agent as a Model Context Protocol server
on standard input and output: the agent starts it and calls its tools.

  localize      a task's text → the files it needs, ranked, with reasons
  context       a task's text and a token budget → the code it needs, as
                Markdown ('cra retrieve --deterministic')
  symbols       a name or pattern → definitions with signature and doc
  file_context  a path → symbols, imports both ways, co-change neighbours,
                recent commits, rationale comments ('cra query context')
  overview      the repository's shape ('cra query overview')
  knowledge     a task's text → the project knowledge that applies
  task_list     the board's tasks; task_show: one task with its history
  task_add      a new pending task, logged as added by this client
                (not in a board run, not with --read-only)
  report        in a board run: active, finish, failed with a need, or an
                event, for the run's own task, through the run's token
  ask_person    in a board run: block the task with a question for a person

The knowledge store's documents are resources, cra://knowledge/<path>.
The board's tools go through the running daemon ('cra serve', which also
serves all but the run's tools at /mcp over HTTP) or the board itself.
No tool calls a model. Each call first re-indexes the files changed since
the last index (up to 200; more, and it says to run 'cra index'); where
.clean_room/ cannot be written (a sandboxed run) it reads the index as it
stands and names the changed files. Each call is logged in the world log
as an [event:mcp] line, under $CRA_TASK_ID when an agent run started it.

The repository must be indexed first ('cra index'). Add it to an agent
with, for example:

  claude mcp add cra -- cra mcp --repo /path/to/repo
  codex mcp add cra -- cra mcp --repo /path/to/repo`,
		Example: `  cra mcp --repo ~/src/project
  cra mcp --read-only
  cra mcp --repo ~/src/project --files ~/src/project/.clean_room/worktrees/t-1a2b3c4d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return mcpRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.StringVar(&opts.files, "files", "", "read and compare the files of this directory, a copy of the repository (a board run's working copy), against the repository's index")
	f.BoolVar(&opts.readOnly, "read-only", false, "never write .clean_room/: no re-indexing, no world-log lines (set by itself in a sandbox)")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "log each call and the protocol's diagnostics on standard error")
	return cmd
}

func mcpRun(ctx context.Context, d *deps, opts *mcpOptions) error {
	level := slog.LevelWarn
	if opts.verbose {
		level = slog.LevelInfo
	}
	// Standard output is the protocol's: diagnostics go to standard error.
	logger := slog.New(slog.NewTextHandler(d.errOut, &slog.HandlerOptions{Level: level}))
	// The board's tools go through the running daemon when there is one,
	// else through the board in process, as 'cra task' commands do.
	// A board that cannot be opened here (a sandboxed run may not write
	// the log, and no daemon answers) leaves those tools out, not the
	// server.
	ops, err := openOps(ctx, d, opts.repo, false, "cra mcp")
	if err != nil {
		level := slog.LevelWarn
		if os.Getenv(fleet.EnvTaskID) != "" {
			level = slog.LevelInfo // a sandboxed run, as expected
		}
		logger.Log(ctx, level, "the board's tools are left out: the board cannot be opened", "err", err)
		ops = nil
	}
	o := mcp.Options{
		TaskID:    os.Getenv(fleet.EnvTaskID),
		Run:       os.Getenv(fleet.EnvRunID),
		ReportURL: os.Getenv(fleet.EnvReportURL),
		RunToken:  os.Getenv(fleet.EnvRunToken),
		Files:     opts.files,
		ReadOnly:  opts.readOnly,
		Version:   version,
		Logger:    logger,
	}
	if ops != nil {
		defer ops.Close()
		o.Board = ops
	}
	s, err := mcp.New(ctx, opts.repo, o)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Serve(ctx, d.in, d.out); err != nil {
		return fmt.Errorf("mcp server: %w", err)
	}
	return nil
}
