package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/world"
)

// logEventOptions are the inputs of 'cra log event'.
type logEventOptions struct {
	logCommon
	source string
	id     string
	output string
	fsync  string
}

func newLogEventCmd(d *deps, runF func(context.Context, *deps, *logEventOptions) error) *cobra.Command {
	opts := &logEventOptions{}
	cmd := &cobra.Command{
		Use:   "event <source> <identifier> <output>",
		Short: "Append an event: a fact, not tracked",
		Long: `Append [now][event:SOURCE][IDENTIFIER] OUTPUT to the world log.

Sources: ` + logSourceNames() + `.
An [event:user] for a failed agent is a person's answer: it allows the
agent's retry. OUTPUT "-" reads the output from standard input.`,
		Example: `  cra log event bash git-status "clean"
  cra log event user T-12 "captcha solved: boats"
  go test ./... 2>&1 | cra log event bash go-test -`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.source, opts.id, opts.output = args[0], args[1], args[2]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return logEventRun(cmd.Context(), d, opts)
		},
	}
	addLogCommon(cmd, &opts.logCommon)
	cmd.Flags().StringVar(&opts.fsync, "fsync", "", "when appends are fsynced: agent (lifecycle entries only), always, never (default: [world] fsync in config, else agent)")
	return cmd
}

func logEventRun(ctx context.Context, d *deps, opts *logEventOptions) error {
	src := world.Source(opts.source)
	if !src.Known() {
		return usageError{err: fmt.Errorf("unknown event source %q: use one of %s", opts.source, logSourceNames())}
	}
	if opts.id == "" {
		return usageError{err: errors.New("empty identifier: name what the event is about")}
	}
	if sent, err := reportFromRun(ctx, d, opts.logCommon, opts.output, fleet.RunReport{Kind: world.KindEvent, Source: src, ID: opts.id}); sent || err != nil {
		return err
	}
	l, output, closeLog, err := openForAppend(ctx, d, opts.logCommon, opts.fsync, opts.output)
	if err != nil {
		return err
	}
	defer closeLog()
	e, err := l.Event(ctx, src, opts.id, output)
	if err != nil {
		return err
	}
	return logPrintEntry(d, opts.json, e)
}
