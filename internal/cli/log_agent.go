package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/world"
)

// logAgentOptions are the inputs of 'cra log agent'.
type logAgentOptions struct {
	logCommon
	status string
	id     string
	output string
	need   string
	fsync  string
}

func newLogAgentCmd(d *deps, runF func(context.Context, *deps, *logAgentOptions) error) *cobra.Command {
	opts := &logAgentOptions{}
	cmd := &cobra.Command{
		Use:   "agent <status> <session-id> <output>",
		Short: "Append an agent lifecycle step, if the lifecycle allows it",
		Long: `Append [now][agent:STATUS][SESSION-ID] OUTPUT | need: NEED to the world log.

Statuses: ` + logStatusNames() + `.
The step is checked against the agent's current status, read from the log;
an illegal one is refused, nothing is written, and the error names the
current status. --need on start gives the success criteria, kept with the
agent; on failed it says what a person must do. OUTPUT "-" reads the output
from standard input.`,
		Example: `  cra log agent start T-12 "add a --json flag" --need "tests pass"
  cra log agent active T-12 "running solve"
  cra log agent failed T-12 "captcha required" --need "solve the captcha"`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.status, opts.id, opts.output = args[0], args[1], args[2]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logAgentRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	cmd.Flags().StringVar(&opts.need, "need", "", "success criteria (on start) or what a person must do (on failed)")
	cmd.Flags().StringVar(&opts.fsync, "fsync", "", "when appends are fsynced: agent (lifecycle entries only), always, never (default: [world] fsync in config, else agent)")
	return cmd
}

func logAgentRun(ctx context.Context, d *deps, opts *logAgentOptions) error {
	status := world.Status(opts.status)
	if !status.Valid() {
		return usageError{err: fmt.Errorf("unknown agent status %q: use one of %s", opts.status, logStatusNames())}
	}
	if opts.id == "" {
		return usageError{err: errors.New("empty session id")}
	}
	if sent, err := reportFromRun(ctx, d, opts.logCommon, opts.output, fleet.RunReport{Kind: world.KindAgent, Status: status, ID: opts.id, Need: opts.need}); sent || err != nil {
		return err
	}
	l, output, closeLog, err := openForAppend(ctx, d, opts.logCommon, opts.fsync, opts.output)
	if err != nil {
		return err
	}
	defer closeLog()
	e, err := l.Agent(ctx, status, opts.id, output, opts.need)
	if err != nil {
		return err
	}
	return logPrintEntry(d, opts.json, e)
}

// reportFromRun sends rep through cra when this process runs inside a
// run cra started ($CRA_RUN_TOKEN and $CRA_REPORT_URL set): a run reports
// on its own task only, and never verifies or retries it; its sandbox
// keeps it from the log itself. sent is false outside a run.
func reportFromRun(ctx context.Context, d *deps, c logCommon, output string, rep fleet.RunReport) (sent bool, err error) {
	token, url := os.Getenv(fleet.EnvRunToken), os.Getenv(fleet.EnvReportURL)
	if token == "" || url == "" {
		return false, nil
	}
	if rep.Output, err = logReadOutput(d, output); err != nil {
		return true, err
	}
	e, err := fleet.SendReport(ctx, url, token, rep)
	if err != nil {
		return true, err
	}
	return true, logPrintEntry(d, c.json, *e)
}
