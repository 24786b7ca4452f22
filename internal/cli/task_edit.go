package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// taskEditOptions are the inputs of 'cra task edit'.
type taskEditOptions struct {
	taskCommon
	fields taskFields
	id     string
	title  string
	cmd    *cobra.Command // which field flags were given
}

func newTaskEditCmd(d *deps, runF func(context.Context, *deps, *taskEditOptions) error) *cobra.Command {
	opts := &taskEditOptions{}
	cmd := &cobra.Command{
		Use:   "edit <id>",
		Short: "Change a task's fields; only the flags given change",
		Long: `Change the fields named by the flags given, and nothing else. The edit is
logged first as [event:user][ID] edited: FIELD=VALUE; …, then the file is
rewritten in its folder; fields cra does not know stay as they were.
--after replaces the whole list (--after "" empties it).`,
		Example: `  cra task edit t-1a2b3c4d --priority high
  cra task edit t-1a2b3c4d --title "add --json to every query" --need "go test ./... passes"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id, opts.cmd = args[0], cmd
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskEditRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	cmd.Flags().StringVar(&opts.title, "title", "", "a new one-line title")
	addTaskFieldFlags(cmd, &opts.fields)
	return cmd
}

func taskEditRun(ctx context.Context, d *deps, opts *taskEditOptions) error {
	p, err := opts.fields.patch(d, opts.cmd)
	if err != nil {
		return err
	}
	if opts.cmd.Flags().Changed("title") {
		title := strings.TrimSpace(opts.title)
		p.Title = &title
	}
	b, err := openTaskOps(ctx, d, opts.repo, opts.id, "cra task edit")
	if err != nil {
		return err
	}
	defer b.Close()
	if err := opts.fields.checkAgent(b.root, opts.cmd); err != nil {
		return err
	}
	t, changed, err := b.Edit(ctx, opts.id, p)
	if err != nil {
		return inputError(err)
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			ID      string   `json:"id"`
			Changed []string `json:"changed"`
		}{t.ID, append([]string{}, changed...)})
	}
	if len(changed) == 0 {
		_, err = fmt.Fprintf(d.out, "%s: nothing changed\n", t.ID)
		return err
	}
	_, err = fmt.Fprintf(d.out, "edited %s: %s\n", t.ID, strings.Join(changed, ", "))
	return err
}
