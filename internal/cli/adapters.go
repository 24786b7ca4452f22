package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/adapter"
)

func newAdaptersCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adapters",
		Short: "Register, evaluate and deploy LoRA adapters as per-stage models",
		Long: `A LoRA adapter serves one pipeline stage (seed 001 §16): task_analysis,
scope, precision or execute_plan on the reasoning model, execute_code on
the coding model. 'register' creates it on Ollama as a model of its own,
FROM the configured base model; 'eval' scores it against the model the
stage runs on now, on a dataset's validation split; 'activate' makes it
serve its stage (the router's order is: [models.overrides], then the
stage's active adapter, then the role's model), and refuses an adapter
that did not beat the model it replaces unless --force.

The registry (adapter_registry) is in .clean_room/raw.sqlite; which
adapter is active (adapter_metadata) is in the index, curated.sqlite.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAdaptersRegisterCmd(d, nil), newAdaptersListCmd(d, nil), newAdaptersActivateCmd(d, nil),
		newAdaptersDeactivateCmd(d, nil), newAdaptersRollbackCmd(d, nil), newAdaptersEvalCmd(d, nil))
	return cmd
}

type adaptersListOptions struct {
	repo string
	json bool
}

func newAdaptersListCmd(d *deps, runF func(context.Context, *deps, *adaptersListOptions) error) *cobra.Command {
	opts := &adaptersListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the registered adapters, which are active, and how they evaluated",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return adaptersListRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	return cmd
}

func adaptersListRun(ctx context.Context, d *deps, opts *adaptersListOptions) error {
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	entries, err := adapter.List(ctx, ws)
	if err != nil {
		return err
	}
	if opts.json {
		if entries == nil {
			entries = []adapter.Entry{}
		}
		return encodeJSON(d.out, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(d.out, "no adapters: register one with 'cra adapters register --stage S --base-model M --adapter FILE.gguf'")
		return nil
	}
	rows := [][]string{{"TAG", "STAGE", "BASE", "VERSION", "ACTIVE", "EVAL"}}
	for _, e := range entries {
		active := "no"
		if e.Active {
			active = "yes"
		}
		ev := "not evaluated"
		if e.Eval != nil {
			ev = fmt.Sprintf("%s %.2f vs %.2f (%s)", e.Eval.Metric, e.Eval.Adapter.Score, e.Eval.Baseline.Score, e.Eval.Baseline.Model)
		}
		if !e.Registered {
			ev = "not in adapter_registry"
		}
		rows = append(rows, []string{e.Tag, e.Stage, e.BaseModel, "v" + strconv.Itoa(e.Version), active, ev})
	}
	writeColumns(d.out, "", rows)
	return nil
}

type adaptersActivateOptions struct {
	repo  string
	tag   string
	force bool
}

func newAdaptersActivateCmd(d *deps, runF func(context.Context, *deps, *adaptersActivateOptions) error) *cobra.Command {
	opts := &adaptersActivateOptions{}
	cmd := &cobra.Command{
		Use:   "activate TAG",
		Short: "Make a registered adapter serve its stage",
		Long: `Make the adapter TAG the one active adapter of its stage; the stage's
previous adapter is deactivated. The adapter must have been evaluated
('cra adapters eval TAG') and have beaten the model the stage runs on
now; --force activates it anyway.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.tag = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return adaptersActivateRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().BoolVar(&opts.force, "force", false, "activate without (or against) the evaluation")
	return cmd
}

func adaptersActivateRun(ctx context.Context, d *deps, opts *adaptersActivateOptions) error {
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	act, err := adapter.Activate(ctx, ws, opts.tag, opts.force)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "activated %s for stage %s (v%d)\n", act.Adapter.ModelTag, act.Adapter.Stage, act.Adapter.Version)
	for _, t := range act.Deactivated {
		fmt.Fprintf(d.out, "deactivated %s\n", t)
	}
	if act.Overridden != "" {
		fmt.Fprintf(d.errOut, "warning: [models.overrides] %s = %q comes before adapters: stage %s keeps running on %s until that override is removed from .clean_room/config.toml\n",
			act.Adapter.Stage, act.Overridden, act.Adapter.Stage, act.Overridden)
	}
	return nil
}

type adaptersDeactivateOptions struct {
	repo string
	tag  string
}

func newAdaptersDeactivateCmd(d *deps, runF func(context.Context, *deps, *adaptersDeactivateOptions) error) *cobra.Command {
	opts := &adaptersDeactivateOptions{}
	cmd := &cobra.Command{
		Use:   "deactivate TAG",
		Short: "Stop an adapter from serving its stage; the stage goes back to its role's model",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.tag = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return adaptersDeactivateRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	return cmd
}

func adaptersDeactivateRun(ctx context.Context, d *deps, opts *adaptersDeactivateOptions) error {
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := adapter.Deactivate(ctx, ws, opts.tag); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "deactivated %s\n", opts.tag)
	return nil
}

type adaptersRollbackOptions struct {
	repo  string
	stage string
}

func newAdaptersRollbackCmd(d *deps, runF func(context.Context, *deps, *adaptersRollbackOptions) error) *cobra.Command {
	opts := &adaptersRollbackOptions{}
	cmd := &cobra.Command{
		Use:   "rollback STAGE",
		Short: "Serve a stage with its previous adapter version again",
		Long: `Deactivate the active adapter of STAGE and activate the highest earlier
version of the stage that was ever active. No evaluation is asked: that
version served the stage before.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.stage = args[0]
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return adaptersRollbackRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	return cmd
}

func adaptersRollbackRun(ctx context.Context, d *deps, opts *adaptersRollbackOptions) error {
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	from, to, err := adapter.Rollback(ctx, ws, opts.stage)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "rolled back stage %s: %s (v%d) deactivated, %s (v%d) active\n", opts.stage, from.ModelTag, from.Version, to.ModelTag, to.Version)
	return nil
}
