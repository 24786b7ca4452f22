package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/workspace"
)

type doctorOptions struct {
	repo    string
	json    bool
	timeout time.Duration
}

func newDoctorCmd(d *deps, runF func(context.Context, *deps, *doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check git, config, databases, model servers and models",
		Long: `Check what cra needs, one line per check, and say how to fix each
failure:

  git          installed, and the repository a git work tree with a commit
  config       .clean_room/config.toml parses, has no unknown keys, valid
               default stages, and names the coding and reasoning models,
               the server and their context windows
  index        the repository is indexed (files, last indexed), the last
               index run, recorded LLM calls, and whether enrichment was
               promoted
  endpoints    every configured model server answers (Ollama /api/tags,
               OpenAI-compatible /v1/models), with its API key when one is
               configured
  models       every configured model, per-stage override and active
               adapter is on its server

The supervisor and summarizer roles are optional (they degrade
gracefully); their failures are warnings. The exit status is 1 when a
required check fails.`,
		Example: `  cra doctor
  cra doctor --repo ~/src/project --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return doctorRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	f.BoolVar(&opts.json, "json", false, "print the checks as JSON")
	f.DurationVar(&opts.timeout, "timeout", 5*time.Second, "how long to wait for each model server")
	return cmd
}

type doctorReport struct {
	OK     bool              `json:"ok"`
	Checks []workspace.Check `json:"checks"`
}

func doctorRun(ctx context.Context, d *deps, opts *doctorOptions) error {
	if opts.timeout <= 0 {
		return usageError{err: errors.New("--timeout must be > 0")}
	}
	root, err := workspace.Find(opts.repo)
	if err != nil {
		return err
	}
	checks := workspace.Doctor(ctx, root, opts.timeout)
	report := doctorReport{OK: true, Checks: checks}
	failed, warned := 0, 0
	for _, c := range checks {
		switch c.Status {
		case workspace.StatusFail:
			failed++
			report.OK = false
		case workspace.StatusWarn:
			warned++
		}
	}
	if opts.json {
		if err := encodeJSON(d.out, report); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-4s  %s: %s", c.Status, c.Name, c.Detail)
			if c.Fix != "" {
				line += " (fix: " + c.Fix + ")"
			}
			fmt.Fprintln(d.out, line)
		}
		switch {
		case failed > 0:
			fmt.Fprintf(d.out, "%d required check%s failed", failed, plural(failed))
		case warned > 0:
			fmt.Fprint(d.out, "required checks passed")
		default:
			fmt.Fprint(d.out, "all checks passed")
		}
		if warned > 0 {
			fmt.Fprintf(d.out, ", %d warning%s", warned, plural(warned))
		}
		fmt.Fprintln(d.out)
	}
	if failed > 0 {
		return silentError{code: exitFailure}
	}
	return nil
}
