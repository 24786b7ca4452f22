package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// taskMigrateOptions are the inputs of 'cra task migrate'.
type taskMigrateOptions struct {
	taskCommon
}

func newTaskMigrateCmd(d *deps, runF func(context.Context, *deps, *taskMigrateOptions) error) *cobra.Command {
	opts := &taskMigrateOptions{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Write the defaults into older task files",
		Long: `Seed defaults into task files that lack them:
processor_auto_requeue true, runs and the streak counters 0, kind task,
priority normal, created_at the time of the task's start entry in the world
log (else the file's time) and updated_at the file's time. Fields cra does
not know and the folders stay as they are. Running it again changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskMigrateRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	return cmd
}

func taskMigrateRun(ctx context.Context, d *deps, opts *taskMigrateOptions) error {
	b, err := openBoard(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	if b == nil {
		_, err := fmt.Fprintln(d.out, "no tasks: nothing to migrate")
		return err
	}
	defer b.Close()
	rep, err := b.Migrate(ctx)
	if err != nil {
		return err
	}
	for _, m := range rep.Malformed {
		fmt.Fprintf(d.errOut, "warning: skipped: %s\n", m)
	}
	if opts.json {
		return encodeJSON(d.out, rep)
	}
	for _, m := range rep.Changed {
		fmt.Fprintf(d.out, "migrated %s (%s): %s\n", m.ID, m.Folder, strings.Join(m.Fields, ", "))
	}
	if len(rep.Changed) == 0 {
		_, err = fmt.Fprintf(d.out, "nothing to migrate: %s already current\n", countNoun(rep.Tasks, "task file"))
		return err
	}
	_, err = fmt.Fprintf(d.out, "migrated %d of %s\n", len(rep.Changed), countNoun(rep.Tasks, "task file"))
	return err
}
