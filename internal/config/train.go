package config

import (
	"fmt"
	"strings"
)

// Train is the [train] section: the self-improvement loop's settings
// (seed 001 §8.3–8.4, §16). Every key is optional.
type Train struct {
	// Command is a shell command (sh -c, in the repository root) that
	// 'cra train --dataset ID' runs after writing the trainer
	// configurations, e.g. "mlx_lm.lora --config $CRA_TRAIN_MLX_CONFIG".
	// Its environment names them: CRA_TRAIN_MLX_CONFIG,
	// CRA_TRAIN_AXOLOTL_CONFIG, CRA_TRAIN_DATASET_DIR,
	// CRA_TRAIN_OUTPUT_DIR (where the adapter must go), CRA_TRAIN_STAGE,
	// CRA_TRAIN_BASE_MODEL (coding or reasoning) and CRA_TRAIN_MODEL.
	// Unset, 'cra train' writes the configurations only.
	Command string `toml:"command,omitempty"`
	// Stages are train-plan's default log-analysis stages
	// (stage_rates,failure_patterns,decision_outcomes), used without
	// --stages.
	Stages string `toml:"stages,omitempty"`
	// CodingHFModel and ReasoningHFModel are the Hugging Face ids of the
	// weights the [models] coding and reasoning tags run, for the
	// trainer configurations; unset, cra maps the tags it knows and
	// otherwise writes the tag with a comment saying what to put.
	CodingHFModel    string `toml:"coding_hf_model,omitempty"`
	ReasoningHFModel string `toml:"reasoning_hf_model,omitempty"`
}

// validate returns the problems of the section's values.
func (t *Train) validate() []string {
	if t == nil {
		return nil
	}
	var problems []string
	if t.Command != "" && strings.TrimSpace(t.Command) == "" {
		problems = append(problems, "train.command is blank: name a command or remove the key")
	}
	for _, k := range []struct{ key, v string }{{"train.coding_hf_model", t.CodingHFModel}, {"train.reasoning_hf_model", t.ReasoningHFModel}} {
		if k.v != "" && (strings.TrimSpace(k.v) != k.v || strings.ContainsAny(k.v, " \t\n")) {
			problems = append(problems, fmt.Sprintf("%s is %q: name a Hugging Face model id such as Qwen/Qwen2.5-Coder-3B-Instruct, or a local directory, without spaces", k.key, k.v))
		}
	}
	return problems
}
