package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/procgroup"
)

// Files of a training directory (Layout.TrainDir).
const (
	MLXConfigFile     = "mlx-lm.yaml"
	AxolotlConfigFile = "axolotl.yaml"
	OutputDir         = "out"
)

// Environment of the [train] command.
const (
	EnvMLXConfig     = "CRA_TRAIN_MLX_CONFIG"
	EnvAxolotlConfig = "CRA_TRAIN_AXOLOTL_CONFIG"
	EnvDatasetDir    = "CRA_TRAIN_DATASET_DIR"
	EnvOutputDir     = "CRA_TRAIN_OUTPUT_DIR"
	EnvStage         = "CRA_TRAIN_STAGE"
	EnvBaseModel     = "CRA_TRAIN_BASE_MODEL" // coding or reasoning
	EnvModel         = "CRA_TRAIN_MODEL"      // the weights' id as the configs name them
)

// knownWeights maps the Ollama tags whose weights are known to their
// Hugging Face ids; others need [train] coding_hf_model or
// reasoning_hf_model.
var knownWeights = map[string]string{
	"qwen2.5-coder:3b-instruct": "Qwen/Qwen2.5-Coder-3B-Instruct",
	"qwen2.5-coder:7b-instruct": "Qwen/Qwen2.5-Coder-7B-Instruct",
	"qwen3:4b-instruct-2507":    "Qwen/Qwen3-4B-Instruct-2507",
}

// Weights is the base model a trainer loads.
type Weights struct {
	// ID is a Hugging Face id, or the Ollama tag when none is known.
	ID string
	// Tag is the configured Ollama tag ([models] coding or reasoning).
	Tag string
	// Known says ID is real weights; false means the user must replace it.
	Known bool
}

// BaseWeights resolves the weights of base ("coding" or "reasoning"):
// [train] <base>_hf_model, else the known id of the [models] tag, else the
// tag itself, marked unknown.
func BaseWeights(cfg *config.Config, base string) (Weights, error) {
	if cfg == nil || cfg.Models == nil {
		return Weights{}, config.ErrNoModels
	}
	var w Weights
	var hf string
	switch base {
	case dataset.Coding:
		w.Tag = cfg.Models.Coding
		if cfg.Train != nil {
			hf = cfg.Train.CodingHFModel
		}
	case dataset.Reasoning:
		w.Tag = cfg.Models.Reasoning
		if cfg.Train != nil {
			hf = cfg.Train.ReasoningHFModel
		}
	default:
		return Weights{}, fmt.Errorf("unknown base model %q", base)
	}
	if w.Tag == "" && hf == "" {
		return Weights{}, fmt.Errorf("no [models] %s model in config: run 'cra init --%s MODEL' first", base, base)
	}
	switch {
	case hf != "":
		w.ID, w.Known = hf, true
	case knownWeights[w.Tag] != "":
		w.ID, w.Known = knownWeights[w.Tag], true
	default:
		w.ID = w.Tag
	}
	return w, nil
}

// Job is one dataset's training: its configurations and where the adapter
// goes.
type Job struct {
	Dataset corpus.Dataset
	Plan    *Plan // the hyperparameters; from the dataset's training_plans row
	Weights Weights
	Dir     string // Layout.TrainDir
	// Small names each split of fewer examples than a batch, which
	// mlx_lm refuses ("Dataset must have at least batch_size examples")
	// once it has loaded the model; empty when none is.
	Small []string
}

// SmallNote says what Small means for the trainer, and the fix; "" when
// no split is small.
func (j *Job) SmallNote() string {
	if len(j.Small) == 0 {
		return ""
	}
	return fmt.Sprintf("warning: dataset %d has %s, fewer than the plan's batch_size %d, which mlx_lm.lora refuses: "+
		"log more runs, or raise data.max_examples or data.valid_share or lower hyperparameters.batch_size in the plan, then 'cra curate-data --plan FILE' again",
		j.Dataset.ID, strings.Join(j.Small, " and "), j.Plan.Hyper.BatchSize)
}

// Out is the trainer's output directory.
func (j *Job) Out() string { return filepath.Join(j.Dir, OutputDir) }

// NewJob reads dataset id and its plan's hyperparameters.
func NewJob(ctx context.Context, c *corpus.Corpus, l Layout, cfg *config.Config, id int64) (*Job, error) {
	d, err := c.Dataset(ctx, id)
	if errors.Is(err, corpus.ErrNoRow) {
		return nil, fmt.Errorf("no training dataset %d: list them with 'cra train --list', or curate one with 'cra curate-data --plan FILE'", id)
	}
	if err != nil {
		return nil, err
	}
	p := &Plan{ID: d.PlanID, Stage: d.Stage, BaseModel: d.BaseModel, Hyper: defaultHyper(4096)}
	// The plan as curated (a person may have edited the file), else the
	// row's hyperparameters: a bootstrap's plan may hold fewer keys, and
	// the defaults stay.
	snapshot := filepath.Join(filepath.Dir(filepath.Dir(d.Path)), PlanSnapshot)
	if curated, err := ReadPlan(snapshot); err == nil {
		p.Hyper = curated.Hyper
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("dataset %d: %w", id, err)
	} else {
		row, err := c.Plan(ctx, d.PlanID)
		if err != nil {
			return nil, fmt.Errorf("dataset %d: %w", id, err)
		}
		if row.Hyperparameters != "" {
			if err := json.Unmarshal([]byte(row.Hyperparameters), &p.Hyper); err != nil {
				return nil, fmt.Errorf("training plan %d: hyperparameters %q: %w", row.ID, row.Hyperparameters, err)
			}
		}
	}
	for _, f := range []string{dataset.TrainFile, dataset.ValidFile} {
		if _, err := os.Stat(filepath.Join(d.Path, f)); err != nil {
			return nil, fmt.Errorf("dataset %d: %w (curate it again with 'cra curate-data --plan FILE')", id, err)
		}
	}
	// mlx_lm refuses a split smaller than a batch, after loading the
	// model: say so first (Small).
	var small []string
	for _, split := range []dataset.Split{dataset.Train, dataset.Valid} {
		recs, err := dataset.Read(d.Path, split)
		if err != nil {
			return nil, fmt.Errorf("dataset %d: %w (curate it again with 'cra curate-data --plan FILE')", id, err)
		}
		if len(recs) < p.Hyper.BatchSize {
			small = append(small, fmt.Sprintf("%d %s examples", len(recs), split))
		}
	}
	w, err := BaseWeights(cfg, d.BaseModel)
	if err != nil {
		return nil, err
	}
	return &Job{Dataset: d, Plan: p, Weights: w, Dir: l.TrainDir(id), Small: small}, nil
}

// WriteConfigs writes the mlx-lm and axolotl configurations into j.Dir
// and makes the output directory; it returns their paths.
func (j *Job) WriteConfigs() (mlx, axolotl string, err error) {
	if err := os.MkdirAll(j.Out(), 0o755); err != nil {
		return "", "", fmt.Errorf("make %s: %w", j.Out(), err)
	}
	mlx, axolotl = filepath.Join(j.Dir, MLXConfigFile), filepath.Join(j.Dir, AxolotlConfigFile)
	if err := atomicfile.Write(mlx, []byte(j.mlxConfig()), 0o644); err != nil {
		return "", "", err
	}
	if err := atomicfile.Write(axolotl, []byte(j.axolotlConfig()), 0o644); err != nil {
		return "", "", err
	}
	return mlx, axolotl, nil
}

// q quotes s as a YAML double-quoted scalar (JSON's escapes are YAML's).
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (j *Job) modelComment() string {
	if j.Weights.Known {
		return fmt.Sprintf("# Base model: the weights of the Ollama model %s (%s).\n", q(j.Weights.Tag), j.Dataset.BaseModel)
	}
	return fmt.Sprintf("# Base model: %s is the Ollama tag of the %s model; cra does not know its\n"+
		"# Hugging Face weights. Replace it with their id (for Qwen, e.g. Qwen/Qwen2.5-Coder-3B-Instruct\n"+
		"# or Qwen/Qwen3-4B-Instruct-2507), or set [train] %s_hf_model in .clean_room/config.toml and run\n"+
		"# 'cra train' again. The adapter must be trained on the weights the Ollama model runs.\n",
		q(j.Weights.Tag), j.Dataset.BaseModel, j.Dataset.BaseModel)
}

func (j *Job) header(tool string) string {
	return fmt.Sprintf("# %s configuration written by 'cra train --dataset %d' (stage %s, plan %d).\n",
		tool, j.Dataset.ID, j.Dataset.Stage, j.Plan.ID) + j.modelComment()
}

// mlxConfig is mlx-lm's LoRA configuration ('mlx_lm.lora --config FILE'):
// it reads train.jsonl and valid.jsonl of data, chat format as they are.
func (j *Job) mlxConfig() string {
	h := j.Plan.Hyper
	var b strings.Builder
	b.WriteString(j.header("mlx-lm"))
	b.WriteString("# Run: mlx_lm.lora --config " + MLXConfigFile + "\n")
	fmt.Fprintf(&b, "model: %s\n", q(j.Weights.ID))
	b.WriteString("train: true\nfine_tune_type: lora\n")
	fmt.Fprintf(&b, "data: %s\n", q(j.Dataset.Path))
	fmt.Fprintf(&b, "adapter_path: %s\n", q(j.Out()))
	fmt.Fprintf(&b, "iters: %d\n", h.Iters)
	fmt.Fprintf(&b, "learning_rate: %s\n", strconv.FormatFloat(h.LearningRate, 'g', -1, 64))
	fmt.Fprintf(&b, "batch_size: %d\n", h.BatchSize)
	fmt.Fprintf(&b, "max_seq_length: %d\n", h.MaxSeqLength)
	b.WriteString("seed: 0\nsave_every: 100\nsteps_per_eval: 100\n")
	b.WriteString("lora_parameters:\n")
	fmt.Fprintf(&b, "  rank: %d\n", h.LoraRank)
	fmt.Fprintf(&b, "  scale: %s\n", strconv.FormatFloat(float64(h.LoraAlpha)/float64(h.LoraRank), 'g', -1, 64))
	b.WriteString("  dropout: 0.05\n")
	return b.String()
}

// axolotlConfig is axolotl's configuration ('axolotl train FILE'): the
// chat files as chat_template datasets.
func (j *Job) axolotlConfig() string {
	h := j.Plan.Hyper
	var b strings.Builder
	b.WriteString(j.header("axolotl"))
	b.WriteString("# Run: axolotl train " + AxolotlConfigFile + "\n")
	fmt.Fprintf(&b, "base_model: %s\n", q(j.Weights.ID))
	b.WriteString("chat_template: tokenizer_default\n")
	b.WriteString("datasets:\n")
	fmt.Fprintf(&b, "  - path: %s\n    ds_type: json\n    type: chat_template\n    field_messages: messages\n", q(filepath.Join(j.Dataset.Path, dataset.TrainFile)))
	b.WriteString("test_datasets:\n")
	fmt.Fprintf(&b, "  - path: %s\n    ds_type: json\n    split: train\n    type: chat_template\n    field_messages: messages\n", q(filepath.Join(j.Dataset.Path, dataset.ValidFile)))
	b.WriteString("adapter: lora\n")
	fmt.Fprintf(&b, "lora_r: %d\nlora_alpha: %d\nlora_dropout: 0.05\nlora_target_linear: true\n", h.LoraRank, h.LoraAlpha)
	fmt.Fprintf(&b, "sequence_len: %d\n", h.MaxSeqLength)
	fmt.Fprintf(&b, "micro_batch_size: %d\ngradient_accumulation_steps: 1\n", h.BatchSize)
	fmt.Fprintf(&b, "max_steps: %d\n", h.Iters)
	fmt.Fprintf(&b, "learning_rate: %s\n", strconv.FormatFloat(h.LearningRate, 'g', -1, 64))
	b.WriteString("optimizer: adamw_torch\nlr_scheduler: cosine\ntrain_on_inputs: false\n")
	fmt.Fprintf(&b, "output_dir: %s\n", q(j.Out()))
	return b.String()
}

// RunError is a [train] command that failed.
type RunError struct {
	Command string
	Err     error // the *exec.ExitError, or why it could not start
}

func (e *RunError) Error() string {
	return fmt.Sprintf("[train] command %q: %v (its output is above; fix the command in .clean_room/config.toml, or run the trainer by hand with the configurations)", e.Command, e.Err)
}
func (e *RunError) Unwrap() error { return e.Err }

// Run runs the [train] command in the repository root, its output copied
// to out as it comes, with the environment naming the configurations
// (EnvMLXConfig, …). Cancelling ctx ends the command's process group. It
// returns the adapter the command left in the output directory.
func (j *Job) Run(ctx context.Context, root, command, mlx, axolotl string, out io.Writer) (string, error) {
	before, err := adapterFiles(j.Out())
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		EnvMLXConfig+"="+mlx, EnvAxolotlConfig+"="+axolotl, EnvDatasetDir+"="+j.Dataset.Path, EnvOutputDir+"="+j.Out(),
		EnvStage+"="+j.Dataset.Stage, EnvBaseModel+"="+j.Dataset.BaseModel, EnvModel+"="+j.Weights.ID)
	cmd.Stdout, cmd.Stderr = out, out
	procgroup.Own(cmd)
	cmd.Cancel = func() error {
		procgroup.Stop(cmd.Process.Pid, 5*time.Second, 2*time.Second)
		cmd.Process.Kill() // where there are no process groups; gone already elsewhere
		return nil
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return "", &RunError{Command: command, Err: err}
	}
	adapter, err := FindAdapter(j.Out(), before)
	if err != nil {
		return "", fmt.Errorf("[train] command %q exited 0 but %w", command, err)
	}
	return adapter, nil
}

// stamp is what tells a file rewritten from the one before.
type stamp struct {
	mod  time.Time
	size int64
}

// adapterFiles returns the adapter files (.gguf, .safetensors) under dir with
// their stamps; a missing dir has none.
func adapterFiles(dir string) (map[string]stamp, error) {
	out := map[string]stamp{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && path == dir {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		ext := strings.ToLower(filepath.Ext(path))
		if ext != ".gguf" && ext != ".safetensors" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = stamp{info.ModTime(), info.Size()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for the adapter: %w", err)
	}
	return out, nil
}

// FindAdapter returns the adapter a trainer left in dir: among the files
// not in before (adapterFiles' result before it ran) or changed since, the
// newest GGUF file, else the newest safetensors file (what mlx-lm and
// axolotl write).
func FindAdapter(dir string, before map[string]stamp) (string, error) {
	now, err := adapterFiles(dir)
	if err != nil {
		return "", err
	}
	type cand struct {
		path string
		gguf bool
		mod  time.Time
	}
	var cands []cand
	for path, st := range now {
		if old, ok := before[path]; ok && old == st {
			continue
		}
		cands = append(cands, cand{path, strings.EqualFold(filepath.Ext(path), ".gguf"), st.mod})
	}
	if len(cands) == 0 {
		return "", fmt.Errorf("left no new adapter (.gguf or .safetensors) in %s: make it write the adapter there ($%s)", dir, EnvOutputDir)
	}
	sort.Slice(cands, func(a, b int) bool {
		if cands[a].gguf != cands[b].gguf {
			return cands[a].gguf
		}
		if !cands[a].mod.Equal(cands[b].mod) {
			return cands[a].mod.After(cands[b].mod)
		}
		return cands[a].path < cands[b].path
	})
	return cands[0].path, nil
}

// RegisterCommand is the command that registers adapter as an Ollama
// model for the job's stage (cra adapters register).
func (j *Job) RegisterCommand(adapter string) string {
	return fmt.Sprintf("cra adapters register --stage %s --base-model %s --adapter %s --dataset %d",
		j.Dataset.Stage, j.Dataset.BaseModel, shellQuote(adapter), j.Dataset.ID)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
