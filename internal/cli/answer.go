package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

type answerOptions struct {
	repo string
	id   string
	text string
}

func newAnswerCmd(d *deps, runF func(context.Context, *deps, *answerOptions) error) *cobra.Command {
	opts := &answerOptions{}
	cmd := &cobra.Command{
		Use:   "answer <id> <text>",
		Short: "Answer a task that waits for a person; its next run reads the answer",
		Long: `Write a person's answer to task <id> as [event:user][<id>] <text> in the
world log. The task's next run finds it in its prompt, under "A person's
answer".

A task blocked for a person (failed-blocked: its need: line says what is
wanted) goes back to pending at once, with [agent:retry][<id>] and both
streaks reset. An answer to a task in another folder waits for its next
run. A verified task takes no answer: add a new task instead.

'cra task list --needs-you' lists the tasks that wait for a person.`,
		Example: `  cra answer t-1a2b3c4d "use the v2 API; the token is in CI_TOKEN"
  cra task list --needs-you`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.id, opts.text = args[0], strings.Join(args[1:], " ")
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return answerRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	return cmd
}

func answerRun(ctx context.Context, d *deps, opts *answerOptions) error {
	b, err := openTaskOps(ctx, d, opts.repo, opts.id, "cra answer")
	if err != nil {
		return err
	}
	defer b.Close()
	resumed, err := b.Answer(ctx, opts.id, opts.text)
	if err != nil {
		return err
	}
	if resumed {
		_, err = fmt.Fprintf(d.out, "answered %s: it is back in pending, and its next run reads the answer\n", opts.id)
	} else {
		_, err = fmt.Fprintf(d.out, "answered %s: its next run reads the answer\n", opts.id)
	}
	return err
}
