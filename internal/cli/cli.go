// Package cli is cra's command line: one file per command, each an options
// struct, a newXCmd that wires cobra, and a plain xRun that does the work.
// It is the only package that picks exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cra-dev/cra/internal/workspace"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line was wrong
)

// deps are what every command needs from the outside world; tests replace
// them.
type deps struct {
	in       io.Reader
	out      io.Writer
	errOut   io.Writer
	logger   *slog.Logger
	terminal bool // stdin and stdout are both terminals: prompts and progress bars are allowed
	now      func() time.Time
	// process says cra runs as a process of its own (Main), whose
	// runtime a command may tune (relaxGC); false where it runs inside
	// another program's, a test's.
	process bool
}

// usageError marks an error in the command line itself.
type usageError struct {
	err error
	cmd string // the command path whose help to point at; "" for the root's
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// silentError carries an exit code for a failure already reported to the
// user (e.g. 'cra doctor' printed its findings).
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs cra with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	d := &deps{
		in:       stdin,
		out:      stdout,
		errOut:   stderr,
		logger:   newWarnLogger(stderr),
		terminal: isTerminal(stdin) && isTerminal(stdout),
		now:      time.Now,
		process:  true,
	}
	root := newRootCmd(d)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	var ue usageError
	if errors.As(err, &ue) && ue.cmd == "" && cmd != nil {
		ue.cmd = cmd.CommandPath() // point at the help of the command that refused
		err = ue
	}
	return exitCode(err, stderr)
}

// relaxGC lets the heap of a command that keeps what it reads until it
// exits grow to five times what is live between collections (GOGC=400),
// unless GOGC says otherwise: 'cra task list' on 10,000 tasks ran two
// collections, a tenth of its CPU, to free memory it was about to give
// back anyway, and runs none now. Only a process of its own does
// (deps.process): a test's runtime is left alone.
func (d *deps) relaxGC() {
	if d.process && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var se silentError
	if errors.As(err, &se) {
		return se.code
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "cra: interrupted")
		return 130
	}
	fmt.Fprintf(stderr, "cra: %v\n", err)
	if workspace.Damaged(err) && !strings.Contains(err.Error(), "cra index") {
		// A query that met a damaged page says only "malformed".
		fmt.Fprintln(stderr, "A database file is damaged: 'cra doctor' says which. The index is rebuilt with 'cra index --rebuild'.")
	}
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra reports a mistyped subcommand of the root as a plain error.
		cmd := ue.cmd
		if cmd == "" {
			cmd = "cra"
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd)
		return exitUsage
	}
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return exitFailure
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "cra",
		Short: "A local-first coding agent for one repository",
		Long: `cra indexes a repository into a deterministic knowledge base (symbols,
imports, references, git co-change), retrieves budgeted context for a task,
plans and solves tasks with small local models, and records every LLM call.

All state lives in .clean_room/ beside the repository (git-ignored).

Start with:
  cra index .                 build the knowledge base of the current repository
  cra query overview          see what it found
  cra init --coding M --reasoning M --base-url URL
                              configure models for the LLM-using commands`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.Version = versionText()
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err: textAsFlag(c.CommandPath(), err), cmd: c.CommandPath()}
	})
	root.AddCommand(
		newInitCmd(d, nil),
	)
	root.AddCommand(extraCommands(d)...)
	root.AddCommand(newVersionCmd(d))
	groupCommands(root)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// version is set at build time with -ldflags "-X github.com/cra-dev/cra/internal/cli.version=…".
var version = "dev"

// wrapArgs makes argument-count errors usage errors, recursively, and
// says what the arguments are: a task of several words given unquoted is
// the common slip.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			if err == nil {
				return nil
			}
			use := cmd.CommandPath() + strings.TrimPrefix(cmd.Use, cmd.Name())
			switch {
			case strings.HasSuffix(cmd.Use, " <task>") && len(args) > 1:
				err = fmt.Errorf("%w: quote the task as one argument: %s %q", err, cmd.CommandPath(), strings.Join(args, " "))
			case strings.Contains(cmd.Use, "<"):
				err = fmt.Errorf("%w: usage: %s", err, use)
			}
			return usageError{err: err, cmd: cmd.CommandPath()}
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// textAsFlag adds the fix to a flag error that text starting with '-'
// caused ("cra answer t-1 '-1 is fine'": unknown shorthand flag '1' in
// -1 is fine): such text goes after --.
func textAsFlag(path string, err error) error {
	msg := err.Error()
	_, arg, ok := strings.Cut(msg, " in -")
	if !ok || !strings.HasPrefix(msg, "unknown shorthand flag") {
		return err
	}
	if !strings.ContainsAny(arg, " \t") && (arg == "" || arg[0] < '0' || arg[0] > '9') {
		return err // a mistyped flag, not text
	}
	return fmt.Errorf("%w: text that starts with '-' goes after --, e.g. %s … -- '-%s'", err, path, arg)
}
