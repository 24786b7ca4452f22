package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/adapter"
	"github.com/cra-dev/cra/internal/train"
)

type adaptersRegisterOptions struct {
	repo      string
	stage     string
	baseModel string
	path      string
	tag       string
	datasetID int64
	json      bool
}

func newAdaptersRegisterCmd(d *deps, runF func(context.Context, *deps, *adaptersRegisterOptions) error) *cobra.Command {
	opts := &adaptersRegisterOptions{}
	cmd := &cobra.Command{
		Use:   "register --stage S --base-model coding|reasoning --adapter PATH",
		Short: "Create an Ollama model from a GGUF LoRA adapter and record it",
		Long: `Upload the GGUF adapter to the configured Ollama server (unless it has
the blob already) and create a model FROM the stage's base model
([models] coding for execute_code, reasoning for the other stages) with
the adapter. The model's tag is --tag, or the base model's tag, the stage
and the next version: qwen3:4b-scope-v1. The adapter is recorded in
adapter_registry, inactive: evaluate it with 'cra adapters eval', then
'cra adapters activate' it.

A safetensors adapter (PEFT's adapter_model.safetensors, mlx-lm's
adapters.safetensors) must be converted first with llama.cpp's
convert_lora_to_gguf.py: Ollama applies a LoRA to a Qwen model only from
GGUF.`,
		Example: `  cra adapters register --stage scope --base-model reasoning --adapter out/adapter.gguf
  cra adapters register --stage execute_code --base-model coding --adapter out/ --dataset 4 --tag coder:3b-code-v2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return adaptersRegisterRun(cmd.Context(), d, opts)
		},
	}
	cmd.Flags().StringVar(&opts.repo, "repo", ".", "repository root, or a directory inside it")
	cmd.Flags().StringVar(&opts.stage, "stage", "", "the stage the adapter serves: task_analysis, scope, precision, execute_plan or execute_code")
	cmd.Flags().StringVar(&opts.baseModel, "base-model", "", "the model it was trained on: reasoning, or coding (execute_code)")
	cmd.Flags().StringVar(&opts.path, "adapter", "", "the GGUF adapter file, or the trainer's output directory")
	cmd.Flags().StringVar(&opts.tag, "tag", "", "the new model's tag (default: <base model>-<stage>-v<N>)")
	cmd.Flags().Int64Var(&opts.datasetID, "dataset", 0, "the training_datasets id it was trained on")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the registered adapter as JSON")
	for _, f := range []string{"stage", "base-model", "adapter"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}

func adaptersRegisterRun(ctx context.Context, d *deps, opts *adaptersRegisterOptions) error {
	if err := train.CheckStage(opts.stage); err != nil {
		return usageError{err: fmt.Errorf("--stage: %w", err)}
	}
	if opts.baseModel != train.Coding && opts.baseModel != train.Reasoning {
		return usageError{err: fmt.Errorf("--base-model %q: use coding or reasoning", opts.baseModel)}
	}
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	progress := func(status string) { fmt.Fprintf(d.errOut, "ollama: %s\n", status) }
	if opts.json {
		progress = nil
	}
	reg, err := adapter.Register(ctx, ws, adapter.RegisterOptions{Stage: opts.stage, BaseModel: opts.baseModel, Path: opts.path,
		Tag: opts.tag, DatasetID: opts.datasetID, Progress: progress,
		Waiting: func() {
			fmt.Fprintln(d.errOut, "waiting for another 'cra adapters register' (of this repository, or on the same server) to finish…")
		}})
	if err != nil {
		return err
	}
	a := reg.Adapter
	if opts.json {
		return encodeJSON(d.out, map[string]any{"id": a.ID, "tag": a.ModelTag, "stage": a.Stage, "base_model": a.BaseModel,
			"from": reg.From.Model, "version": a.Version, "digest": reg.Deployment.Digest, "uploaded": reg.Deployment.Uploaded,
			"dataset_id": a.DatasetID, "file": reg.File})
	}
	if reg.Deployment.Uploaded {
		fmt.Fprintf(d.out, "uploaded %s as blob %s\n", relPath(ws.Root, reg.File), reg.Deployment.Digest)
	} else {
		fmt.Fprintf(d.out, "blob %s is on the server already\n", reg.Deployment.Digest)
	}
	fmt.Fprintf(d.out, "created %s FROM %s\n", a.ModelTag, reg.From.Model)
	fmt.Fprintf(d.out, "registered adapter %s for stage %s (v%d), inactive: run 'cra adapters eval %s', then 'cra adapters activate %s'\n",
		a.ModelTag, a.Stage, a.Version, a.ModelTag, a.ModelTag)
	return nil
}
