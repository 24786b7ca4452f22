// Package train is cra's self-improvement loop after the logs (seed 001
// §8.3–8.4, §16): it reads the raw database through the corpus's
// LogAnalysisAPI to find the weakest pipeline stage, has the reasoning
// model write a training plan for it (or derives one from the evidence
// when the model's replies do not parse), curates the plan's examples into
// a chat dataset in the format cra uses at inference, and hands the
// dataset to a trainer: ready configurations for mlx-lm and axolotl, and
// optionally the [train] command that runs one.
//
// Artifacts live under the repository's .clean_room/training/ (see
// Layout): plans/plan-<id>.toml, datasets/<name>/<base>/<stage>/,
// train/dataset-<id>/. A plan file is TOML a person may edit between
// train-plan and curate-data; its format is Plan's, documented on each
// field and in the README ("Training plans, curated data and training").
package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/statedir"
)

// Layout is where a repository's training artifacts go. Root is the
// training directory of a state directory, .clean_room/training; the paths
// under it are statedir's.
type Layout struct{ Root string }

// NewLayout returns the layout of the repository at root.
func NewLayout(root string) Layout {
	return Layout{Root: statedir.Of(root).Training()}
}

// state is the state directory Root is the training directory of.
func (l Layout) state() statedir.Dir { return statedir.At(filepath.Dir(l.Root)) }

// Plans is the directory of the plan files.
func (l Layout) Plans() string { return l.state().TrainingPlans() }

// PlanFile is the editable file of plan id.
func (l Layout) PlanFile(id int64) string { return l.state().TrainingPlan(id) }

// Datasets is the directory of the curated datasets.
func (l Layout) Datasets() string { return l.state().TrainingDatasets() }

// Bootstrap is cra bootstrap's scratch directory for the repository it
// calls name.
func (l Layout) Bootstrap(name string) string { return l.state().TrainingBootstrap(name) }

// TrainDir is the directory of dataset id's trainer configurations and
// output.
func (l Layout) TrainDir(id int64) string { return l.state().TrainingJob(id) }

// Plan is a training plan (seed 001 §8.3): which stage to train, what data
// to select, the hyperparameters and the improvement expected. It is the
// plan file's format.
type Plan struct {
	// ID is the plan's training_plans row; curate-data records its
	// dataset under it.
	ID int64 `toml:"id" json:"id"`
	// Stage is the stage to train (task_analysis, scope, precision,
	// execute_plan, execute_code); BaseModel follows from it.
	Stage     string `toml:"stage" json:"stage"`
	BaseModel string `toml:"base_model" json:"base_model"`
	// Source is where the evidence came from: logged or synthetic.
	Source string `toml:"source" json:"source"`
	// Fallback says the plan was derived from the evidence by rule, not
	// written by the model (whose replies did not parse).
	Fallback  bool   `toml:"fallback" json:"fallback"`
	Rationale string `toml:"rationale" json:"rationale"`

	Data    Criteria        `toml:"data" json:"data"`
	Hyper   Hyperparameters `toml:"hyperparameters" json:"hyperparameters"`
	Targets Targets         `toml:"targets" json:"targets"`
}

// Criteria say which examples curate-data selects (seed 001 §16.2).
type Criteria struct {
	// Positives are the stage's calls in runs that succeeded. With
	// IncludeNegatives the calls of runs that failed are added as
	// negatives (rejected.jsonl, never the train or valid files), at most
	// MaxNegativeShare of the examples.
	IncludeNegatives bool    `toml:"include_negatives" json:"include_negatives"`
	MaxNegativeShare float64 `toml:"max_negative_share" json:"max_negative_share"`
	// WithDecisions keeps scope and precision calls only from runs that
	// recorded included decisions of the stage.
	WithDecisions bool `toml:"with_decisions" json:"with_decisions"`
	// MaxExamples bounds the logged examples (newest kept).
	MaxExamples int `toml:"max_examples" json:"max_examples"`
	// MixSynthetic adds the newest bootstrapped (synthetic) dataset of
	// the stage, at most SyntheticShare of the examples when there are
	// logged ones.
	MixSynthetic   bool    `toml:"mix_synthetic" json:"mix_synthetic"`
	SyntheticShare float64 `toml:"synthetic_share" json:"synthetic_share"`
	// ValidShare is the share of the newest examples kept for validation.
	ValidShare float64 `toml:"valid_share" json:"valid_share"`
}

// Hyperparameters are the trainer's settings.
type Hyperparameters struct {
	Iters        int     `toml:"iters" json:"iters"`
	LearningRate float64 `toml:"learning_rate" json:"learning_rate"`
	LoraRank     int     `toml:"lora_rank" json:"lora_rank"`
	LoraAlpha    int     `toml:"lora_alpha" json:"lora_alpha"`
	BatchSize    int     `toml:"batch_size" json:"batch_size"`
	// MaxSeqLength bounds an example in tokens: the budget's context
	// window. Longer examples are left out by curate-data.
	MaxSeqLength int `toml:"max_seq_length" json:"max_seq_length"`
}

// defaultHyper is the hyperparameters of a plan that names none: a
// small LoRA, examples up to maxSeq tokens.
func defaultHyper(maxSeq int) Hyperparameters {
	return Hyperparameters{Iters: 600, LearningRate: 1e-4, LoraRank: 8, LoraAlpha: 16, BatchSize: 4, MaxSeqLength: maxSeq}
}

// Targets is the improvement expected.
type Targets struct {
	// Metric is what is measured: the stage's run success rate.
	Metric   string  `toml:"metric" json:"metric"`
	Baseline float64 `toml:"baseline" json:"baseline"`
	Target   float64 `toml:"target" json:"target"`
}

// MetricRunSuccess is the share of the stage's runs that succeed.
const MetricRunSuccess = "run_success_rate"

// Bounds of the values a plan may hold.
var (
	ranks = []int{4, 8, 16, 32, 64}
)

const (
	minIters, maxIters = 10, 100000
	maxLearningRate    = 0.01
	maxBatch           = 256
	maxExamplesLimit   = 1000000
)

// Check returns an error naming the first bad key of p and the fix.
func (p *Plan) Check() error {
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%s %s", key, fmt.Sprintf(format, args...))
	}
	if p.ID <= 0 {
		return bad("id", "is %d: keep the id train-plan wrote (its training_plans row)", p.ID)
	}
	if err := dataset.CheckStage(p.Stage); err != nil {
		return bad("stage", "is %q: use one of %s", p.Stage, strings.Join(dataset.Stages, ", "))
	}
	if want := dataset.BaseModel(p.Stage); p.BaseModel != want {
		return bad("base_model", "is %q but stage %s trains on %q: set base_model = %q", p.BaseModel, p.Stage, want, want)
	}
	if p.Source != corpus.SourceLogged && p.Source != corpus.SourceSynthetic {
		return bad("source", "is %q: use %q or %q", p.Source, corpus.SourceLogged, corpus.SourceSynthetic)
	}
	d := p.Data
	share := func(key string, v float64, hi float64) error {
		if math.IsNaN(v) || v < 0 || v >= hi {
			return bad(key, "is %v: use a number from 0 up to (not including) %v", v, hi)
		}
		return nil
	}
	if err := share("data.max_negative_share", d.MaxNegativeShare, 1); err != nil {
		return err
	}
	if d.IncludeNegatives && d.MaxNegativeShare == 0 {
		return bad("data.max_negative_share", "is 0 with include_negatives = true: set a share such as 0.3, or include_negatives = false")
	}
	if d.MaxExamples < 1 || d.MaxExamples > maxExamplesLimit {
		return bad("data.max_examples", "is %d: use 1 to %d", d.MaxExamples, maxExamplesLimit)
	}
	if err := share("data.synthetic_share", d.SyntheticShare, 1); err != nil {
		return err
	}
	if d.MixSynthetic && d.SyntheticShare == 0 {
		return bad("data.synthetic_share", "is 0 with mix_synthetic = true: set a share such as 0.5, or mix_synthetic = false")
	}
	if err := share("data.valid_share", d.ValidShare, 1); err != nil {
		return err
	}
	h := p.Hyper
	if h.Iters < minIters || h.Iters > maxIters {
		return bad("hyperparameters.iters", "is %d: use %d to %d", h.Iters, minIters, maxIters)
	}
	if !(h.LearningRate > 0 && h.LearningRate <= maxLearningRate) {
		return bad("hyperparameters.learning_rate", "is %v: use a number above 0 and at most %v, such as 1e-4", h.LearningRate, maxLearningRate)
	}
	if !slices.Contains(ranks, h.LoraRank) {
		return bad("hyperparameters.lora_rank", "is %d: use one of %s", h.LoraRank, intList(ranks))
	}
	if h.LoraAlpha < 1 || h.LoraAlpha > 4*64 {
		return bad("hyperparameters.lora_alpha", "is %d: use 1 to 256 (commonly twice lora_rank)", h.LoraAlpha)
	}
	if h.BatchSize < 1 || h.BatchSize > maxBatch {
		return bad("hyperparameters.batch_size", "is %d: use 1 to %d", h.BatchSize, maxBatch)
	}
	if h.MaxSeqLength < 256 {
		return bad("hyperparameters.max_seq_length", "is %d: use at least 256 tokens (the context window of the budget)", h.MaxSeqLength)
	}
	t := p.Targets
	if t.Metric != MetricRunSuccess {
		return bad("targets.metric", "is %q: use %q", t.Metric, MetricRunSuccess)
	}
	if math.IsNaN(t.Baseline) || t.Baseline < 0 || t.Baseline > 1 {
		return bad("targets.baseline", "is %v: use a share from 0 to 1", t.Baseline)
	}
	if math.IsNaN(t.Target) || t.Target < 0 || t.Target > 1 {
		return bad("targets.target", "is %v: use a share from 0 to 1", t.Target)
	}
	return nil
}

func intList(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// Encode returns the plan file's text: a header saying what to do with it,
// then the plan.
func (p *Plan) Encode() ([]byte, error) {
	var b bytes.Buffer
	// The file's path from the repository root, where the command runs.
	fmt.Fprintf(&b, "# cra training plan %d (seed 001 §8.3). Edit it, then run:\n#   cra curate-data --plan %s\n", p.ID, filepath.ToSlash(NewLayout("").PlanFile(p.ID)))
	if p.Fallback {
		b.WriteString("# fallback = true: the reasoning model's replies did not parse; this plan was derived from the evidence by rule.\n")
	}
	b.WriteString("\n")
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ErrPlanFile wraps every error of reading a plan file.
var ErrPlanFile = errors.New("bad plan file")

// ReadPlan reads and checks a plan file. An unknown key, a missing one or
// a bad value is an error naming the key and the fix.
func ReadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return ParsePlan(path, data)
}

// requiredKeys are the keys a plan file must have; a missing one would
// otherwise read as zero, which says nothing the person meant.
var requiredKeys = []string{
	"id", "stage", "base_model", "source",
	"data.include_negatives", "data.max_negative_share", "data.with_decisions", "data.max_examples",
	"data.mix_synthetic", "data.synthetic_share", "data.valid_share",
	"hyperparameters.iters", "hyperparameters.learning_rate", "hyperparameters.lora_rank", "hyperparameters.lora_alpha",
	"hyperparameters.batch_size", "hyperparameters.max_seq_length",
	"targets.metric", "targets.baseline", "targets.target",
}

// ParsePlan parses plan file text; name is the file's path for messages.
func ParsePlan(name string, data []byte) (*Plan, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrPlanFile, name, fmt.Sprintf(format, args...))
	}
	var p Plan
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, fail("line %d: %s (fix the TOML syntax, or run 'cra train-plan' again for a new file)", perr.Position.Line, perr.Message)
		}
		return nil, fail("%v (fix the value's type: numbers unquoted, true/false for switches, text in quotes)", err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return nil, fail("unknown key %s: remove it (the keys are documented in the README, 'Training plans, curated data and training')", u[0])
	}
	for _, k := range requiredKeys {
		if !md.IsDefined(strings.Split(k, ".")...) {
			return nil, fail("missing key %s: add it back (train-plan writes every key)", k)
		}
	}
	if err := p.Check(); err != nil {
		return nil, fail("%v", err)
	}
	return &p, nil
}

// Row returns the training_plans row of p; raw is the plan as written
// (the model's reply, or the fallback's explanation).
func (p *Plan) Row(taskID, raw string) corpus.Plan {
	criteria, _ := json.Marshal(p.Data) // plain values: cannot fail
	hyper, _ := json.Marshal(p.Hyper)
	targets, _ := json.Marshal(p.Targets)
	return corpus.Plan{TaskID: taskID, TargetStage: p.Stage, BaseModel: p.BaseModel, Source: p.Source,
		DataCriteria: string(criteria), Hyperparameters: string(hyper), ImprovementTargets: string(targets), RawPlan: raw}
}
