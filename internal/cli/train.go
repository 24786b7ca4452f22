package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/train"
)

type trainOptions struct {
	repo    string
	dataset int64
	list    bool
	json    bool
}

func newTrainCmd(d *deps, runF func(context.Context, *deps, *trainOptions) error) *cobra.Command {
	opts := &trainOptions{}
	cmd := &cobra.Command{
		Use:   "train --dataset ID",
		Short: "Hand a dataset to a LoRA trainer: mlx-lm and axolotl configurations, and the [train] command",
		Long: `Write ready configurations for mlx-lm (mlx-lm.yaml: 'mlx_lm.lora --config')
and axolotl (axolotl.yaml: 'axolotl train') under
.clean_room/training/train/dataset-<id>/: the stage's base model, the
dataset's train.jsonl and valid.jsonl, the plan's hyperparameters, and the
output directory out/. cra assumes no GPU and trains nothing itself.

When [train] command is configured, it runs it (sh -c, in the repository
root, its output shown as it comes) with CRA_TRAIN_MLX_CONFIG,
CRA_TRAIN_AXOLOTL_CONFIG, CRA_TRAIN_DATASET_DIR, CRA_TRAIN_OUTPUT_DIR,
CRA_TRAIN_STAGE, CRA_TRAIN_BASE_MODEL and CRA_TRAIN_MODEL set, then takes
the adapter it left in the output directory (.gguf first, else
.safetensors) and prints the 'cra adapters register' command for it.

--list shows the datasets (curated and bootstrapped).`,
		Example: `  cra train --list
  cra train --dataset 3
  cra train --dataset 3 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return trainRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.Int64Var(&opts.dataset, "dataset", 0, "the training_datasets id ('cra curate-data' prints it; --list shows them)")
	f.BoolVar(&opts.list, "list", false, "list the datasets")
	f.BoolVar(&opts.json, "json", false, "print as JSON")
	return cmd
}

func trainRun(ctx context.Context, d *deps, opts *trainOptions) error {
	if opts.list == (opts.dataset != 0) {
		return usageError{err: errors.New("pass --dataset ID, or --list to see the datasets")}
	}
	if opts.dataset < 0 {
		return usageError{err: fmt.Errorf("--dataset %d: pass a dataset id ('cra train --list')", opts.dataset)}
	}
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	c, err := ws.Corpus(ctx)
	if err != nil {
		return err
	}
	if opts.list {
		return trainList(ctx, d, c, ws.Root, opts.json)
	}
	job, err := train.NewJob(ctx, c, train.NewLayout(ws.Root), ws.Config, opts.dataset)
	if err != nil {
		return err
	}
	mlx, axolotl, err := job.WriteConfigs()
	if err != nil {
		return err
	}
	fmt.Fprintf(d.errOut, "configurations: %s, %s\n", relPath(ws.Root, mlx), relPath(ws.Root, axolotl))
	if job.Dataset.Negative > 0 {
		fmt.Fprintln(d.errOut, negativesNote(job.Dataset.Negative))
	}
	if note := job.SmallNote(); note != "" {
		fmt.Fprintln(d.errOut, note)
	}
	if !job.Weights.Known {
		fmt.Fprintf(d.errOut, "warning: %s is an Ollama tag, not the Hugging Face id of its weights: set [train] %s_hf_model, or edit the configurations\n",
			job.Weights.Tag, job.Dataset.BaseModel)
	}
	report := struct {
		DatasetID       int64  `json:"dataset_id"`
		Stage           string `json:"stage"`
		BaseModel       string `json:"base_model"`
		Model           string `json:"model"`
		MLXConfig       string `json:"mlx_config"`
		AxolotlConfig   string `json:"axolotl_config"`
		OutputDir       string `json:"output_dir"`
		Ran             bool   `json:"ran"`
		Adapter         string `json:"adapter,omitempty"`
		RegisterCommand string `json:"register_command,omitempty"`
	}{job.Dataset.ID, job.Dataset.Stage, job.Dataset.BaseModel, job.Weights.ID, mlx, axolotl, job.Out(), false, "", ""}
	command := ""
	if ws.Config != nil && ws.Config.Train != nil {
		command = ws.Config.Train.Command
	}
	if command != "" {
		fmt.Fprintf(d.errOut, "running [train] command: %s\n", command)
		adapter, err := job.Run(ctx, ws.Root, command, mlx, axolotl, d.errOut)
		if err != nil {
			return err
		}
		report.Ran, report.Adapter, report.RegisterCommand = true, adapter, job.RegisterCommand(adapter)
		fmt.Fprintf(d.errOut, "[train] command exited 0; adapter: %s\n", relPath(ws.Root, adapter))
		if !strings.EqualFold(filepath.Ext(adapter), ".gguf") {
			fmt.Fprintln(d.errOut, "note: Ollama applies a LoRA to a Qwen model only from GGUF: convert this adapter with llama.cpp's convert_lora_to_gguf.py first (cra adapters register names the command), or have the [train] command do it")
		}
	}
	if opts.json {
		return encodeJSON(d.out, report)
	}
	if !report.Ran {
		fmt.Fprintf(d.out, "no [train] command configured: train with one of\n  mlx_lm.lora --config %s\n  axolotl train %s\n", mlx, axolotl)
		fmt.Fprintf(d.out, "then register the adapter it writes to %s:\n  %s\n", job.Out(), job.RegisterCommand(job.Out()+"/ADAPTER"))
		return nil
	}
	fmt.Fprintf(d.out, "register it:\n  %s\n", report.RegisterCommand)
	return nil
}

func trainList(ctx context.Context, d *deps, c *train.Corpus, root string, asJSON bool) error {
	ds, err := c.Datasets(ctx, "")
	if err != nil {
		return err
	}
	if asJSON {
		if ds == nil {
			ds = []train.Dataset{}
		}
		return encodeJSON(d.out, ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(d.out, "no datasets: curate one with 'cra curate-data --plan FILE', or bootstrap with 'cra bootstrap REPO'")
		return nil
	}
	for _, x := range ds {
		fmt.Fprintf(d.out, "%d\t%s\t%s\t%s\t%d examples (%d positive, %d negative)\tplan %d\t%s\n",
			x.ID, x.Stage, x.BaseModel, x.Source, x.Examples, x.Positive, x.Negative, x.PlanID, relPath(root, x.Path))
	}
	return nil
}
