package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/workspace"
)

// taskFields are the flags that set a task's descriptive fields, shared by
// add and edit.
type taskFields struct {
	need        string
	description string
	file        string
	typ         string
	kind        string
	priority    string
	milestone   string
	after       []string
	agent       string
	force       bool
	noChange    bool
	testsMay    bool
}

func addTaskFieldFlags(cmd *cobra.Command, tf *taskFields) {
	f := cmd.Flags()
	f.StringVar(&tf.need, "need", "", "success criteria: what must be true when the task is done")
	f.StringVar(&tf.description, "description", "", "what to do, in as many lines as it takes")
	f.StringVar(&tf.file, "file", "", "read the description from this file (- for standard input)")
	f.StringVar(&tf.typ, "type", "", "a free label, such as resources or scenarios")
	f.StringVar(&tf.kind, "kind", "", "task (planned work) or directive (a supervisor's instruction) (default task)")
	f.StringVar(&tf.priority, "priority", "", "critical, high, normal or low (default normal)")
	f.StringVar(&tf.milestone, "milestone", "", "the milestone the task belongs to")
	f.StringSliceVar(&tf.after, "after", nil, "an id this task waits for until it is verified (repeatable)")
	f.StringVar(&tf.agent, "agent", "", "the agent profile that runs the task (default: the board's)")
	f.BoolVar(&tf.force, "force", false, "set --agent even to a profile config.toml does not define (yet)")
	f.BoolVar(&tf.noChange, "no-change", false, "the task is done without changing files (a review, an investigation): its review needs no diff")
	f.BoolVar(&tf.testsMay, "tests-may-change", false, "the task may change tests and the validation's own files: its review runs the branch's tests, not the base's")
	cmd.MarkFlagsMutuallyExclusive("description", "file")
}

// patch returns the edit the field flags given on cmd's line make.
func (tf *taskFields) patch(d *deps, cmd *cobra.Command) (fleet.Patch, error) {
	var p fleet.Patch
	set := func(name string) bool { return cmd.Flags().Changed(name) }
	str := func(v string) *string { return &v }
	if set("need") {
		p.Need = str(tf.need)
	}
	if set("description") {
		p.Description = str(tf.description)
	}
	if set("file") {
		text, err := readTaskFile(d, tf.file)
		if err != nil {
			return p, err
		}
		p.Description = &text
	}
	if set("type") {
		p.Type = str(tf.typ)
	}
	if set("kind") {
		k := fleet.Kind(tf.kind)
		if k != fleet.KindTask && k != fleet.KindDirective {
			return p, usageError{err: fmt.Errorf("--kind %q: use task or directive", tf.kind)}
		}
		p.Kind = &k
	}
	if set("priority") {
		pr := fleet.Priority(tf.priority)
		if !strings.Contains(","+priorityNames()+",", ","+tf.priority+",") {
			return p, usageError{err: fmt.Errorf("--priority %q: use one of %s", tf.priority, priorityNames())}
		}
		p.Priority = &pr
	}
	if set("milestone") {
		p.Milestone = str(tf.milestone)
	}
	if set("after") {
		after := []string{}
		for _, id := range tf.after {
			if id = strings.TrimSpace(id); id != "" {
				after = append(after, id)
			}
		}
		p.After = &after
	}
	if set("agent") {
		p.Agent = str(tf.agent)
	}
	if set("no-change") {
		v := tf.noChange
		p.NoChange = &v
	}
	if set("tests-may-change") {
		v := tf.testsMay
		p.TestsMayChange = &v
	}
	return p, nil
}

// checkAgent refuses an --agent that the repository's config.toml at root
// does not define, unless --force: such a task could only fail.
func (tf *taskFields) checkAgent(root string, cmd *cobra.Command) error {
	if !cmd.Flags().Changed("agent") || tf.force {
		return nil
	}
	cfg, err := workspace.LoadConfig(root)
	if err != nil {
		return fmt.Errorf("--agent: check the profile: %w (or pass --force)", err)
	}
	if err := cfg.AgentDefined(tf.agent); err != nil {
		return usageError{err: fmt.Errorf("--agent: %w, or pass --force to set it anyway", err)}
	}
	return nil
}

func priorityNames() string {
	var names []string
	for _, p := range fleet.Priorities() {
		names = append(names, string(p))
	}
	return strings.Join(names, ",")
}

// readTaskFile reads a description from path, or standard input for "-".
func readTaskFile(d *deps, path string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(d.in)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", usageError{err: fmt.Errorf("--file: %w", err)}
	}
	return strings.TrimRight(string(data), "\n"), nil
}

// taskAddOptions are the inputs of 'cra task add'.
type taskAddOptions struct {
	taskCommon
	fields taskFields
	title  string
	cmd    *cobra.Command // which field flags were given
}

func newTaskAddCmd(d *deps, runF func(context.Context, *deps, *taskAddOptions) error) *cobra.Command {
	opts := &taskAddOptions{}
	cmd := &cobra.Command{
		Use:   "add <title>",
		Short: "Add a task to pending and print its id",
		Long: `Add a task: its start entry, [agent:start][ID] TITLE | need: NEED, is
appended to the world log first, then its file is written into
.clean_room/tasks/pending/. The new id (t- and 8 hex digits) is printed.

The processor picks critical directives first, then other directives, then
planned tasks by priority and age, then low-priority (cleanup) directives;
a task waits while any task in its --after list is not verified.`,
		Example: `  cra task add "add a --json flag to cra query" --need "go test ./... passes"
  cra task add "tidy the README" --kind directive --priority low
  cra task add "ship the board" --after t-1a2b3c4d --file plan.md --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.title, opts.cmd = args[0], cmd
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return taskAddRun(cmd.Context(), d, opts)
		},
	}
	addTaskCommon(cmd, &opts.taskCommon)
	addTaskFieldFlags(cmd, &opts.fields)
	return cmd
}

func taskAddRun(ctx context.Context, d *deps, opts *taskAddOptions) error {
	t := fleet.NewTask(strings.TrimSpace(opts.title))
	p, err := opts.fields.patch(d, opts.cmd)
	if err != nil {
		return err
	}
	p.Apply(t)
	if err := t.CheckFields(); err != nil {
		return usageError{err: err}
	}
	b, err := openOps(ctx, d, opts.repo, true, "cra task add")
	if err != nil {
		return err
	}
	defer b.Close()
	if err := opts.fields.checkAgent(b.root, opts.cmd); err != nil {
		return err
	}
	added, err := b.Add(ctx, t)
	if err != nil {
		return inputError(err)
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			ID     string       `json:"id"`
			Folder fleet.Folder `json:"folder"`
		}{added.ID, fleet.Pending})
	}
	_, err = fmt.Fprintln(d.out, added.ID)
	return err
}
