package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/llm"
)

// CallTrainPlan is the call type of the planning calls in llm_calls.
const CallTrainPlan = "train_plan"

// PlanModel returns the model a train plan is drafted with (the reasoning
// role of router), its calls recorded in c's raw database under taskID,
// diagnostics to logger. It reads no index: a repository that only
// bootstrapped data has none.
func PlanModel(ctx context.Context, router *llm.Router, c *corpus.Corpus, logger *slog.Logger, taskID string) (llm.Client, llm.ModelConfig, error) {
	gw := llm.NewGateway(router, llm.NewRecorder(c))
	gw.Logger = logger
	return gw.Client(ctx, llm.CallInfo{Kind: llm.KindGeneral, TaskID: taskID, Type: CallTrainPlan, Role: llm.RoleReasoning})
}

// planSystem is the planning prompt's system message.
const planSystem = `You plan LoRA fine-tuning for one stage of a coding agent that runs small local models.
Read the evidence from the agent's logs, choose the stage to train and the data and settings, and answer with one JSON object only.`

// Planner asks the reasoning model for a training plan (seed 001 §8.3).
type Planner struct {
	// Model is the reasoning model, through the recording gateway;
	// required.
	Model llm.Client
	// PromptTokens bounds the planning prompt (the budget's context
	// window less its reserved tokens); ReplyTokens the reply.
	PromptTokens int
	ReplyTokens  int
	// ContextWindow is the budget's window, the examples' bound
	// (hyperparameters.max_seq_length).
	ContextWindow int
}

// Drafted is a plan not yet recorded (its ID is 0).
type Drafted struct {
	Plan *Plan
	// Raw is the plan as written: the reply that parsed, or for a
	// fallback why it was needed and the replies refused.
	Raw string
	// Problems are the replies' problems, in order (one per refused
	// reply).
	Problems []string
}

// Draft asks the model for a plan from e: one retry that names the
// problem of a reply that does not parse, then the conservative fallback
// derived from e (Plan.Fallback). Only a failed call is an error.
func (p *Planner) Draft(ctx context.Context, e *Evidence) (*Drafted, error) {
	if p.Model == nil || p.PromptTokens <= 0 || p.ReplyTokens <= 0 || p.ContextWindow <= 0 {
		return nil, errors.New("planner: model and budget are required")
	}
	prompt, err := e.Prompt(p.PromptTokens)
	if err != nil {
		return nil, err
	}
	d := &Drafted{}
	req := llm.UserPrompt(planSystem, prompt)
	// The prompt was bounded by the budget's window; Ollama must be told
	// it (num_ctx) or it truncates silently.
	req.JSON, req.MaxTokens, req.ContextWindow = true, p.ReplyTokens, p.ContextWindow
	var replies []string
	for attempt := 0; attempt < 2; attempt++ {
		resp, err := p.Model.Complete(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("ask the reasoning model for a plan: %w", err)
		}
		replies = append(replies, resp.Text)
		r, perr := ParseReply(resp.Text, e.candidates())
		if perr == nil {
			d.Plan, d.Raw = p.fromReply(e, r), resp.Text
			return d, nil
		}
		d.Problems = append(d.Problems, perr.Error())
		if err := llm.MarkMalformed(ctx, p.Model, perr); err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: "assistant", Content: resp.Text},
			llm.Message{Role: "user", Content: fmt.Sprintf("That reply is not a valid plan: %v. Reply again with the JSON object only, every key present, values as stated.", perr)})
	}
	d.Plan = p.Fallback(e)
	var raw strings.Builder
	fmt.Fprintf(&raw, "fallback: the reasoning model's replies did not parse (%s); plan derived from the evidence: %s\n", strings.Join(d.Problems, "; "), e.Why)
	for i, r := range replies {
		fmt.Fprintf(&raw, "\n--- reply %d ---\n%s\n", i+1, r)
	}
	d.Raw = raw.String()
	return d, nil
}

// Fallback is the conservative plan derived from e alone: the weakest
// stage, positives only, the stage's bootstrapped data when there is some,
// common LoRA settings for a 3–4B model, and a target ten points above
// the baseline.
func (p *Planner) Fallback(e *Evidence) *Plan {
	pl := p.base(e, e.Weakest)
	pl.Fallback = true
	pl.Rationale = "derived by rule from the evidence: " + e.Why
	return pl
}

// base is the plan for stage with the conservative settings.
func (p *Planner) base(e *Evidence, stage string) *Plan {
	baseline := e.Baseline
	if stage != e.Weakest {
		baseline = 0
		for _, s := range e.Rates {
			if r, ok := s.SuccessRate(); ok && s.Stage == stage {
				baseline = r
			}
		}
	}
	return &Plan{
		Stage: stage, BaseModel: dataset.BaseModel(stage), Source: e.Source,
		Data: Criteria{
			MaxNegativeShare: 0.3,
			WithDecisions:    stage == dataset.Scope || stage == dataset.Precision,
			MaxExamples:      2000,
			MixSynthetic:     e.Synthetic[stage] > 0,
			SyntheticShare:   0.5,
			ValidShare:       dataset.DefaultValidShare,
		},
		Hyper: defaultHyper(p.ContextWindow),
		Targets: Targets{Metric: MetricRunSuccess, Baseline: round2(baseline),
			Target: round2(math.Min(1, baseline+0.1))},
	}
}

func (p *Planner) fromReply(e *Evidence, r *Reply) *Plan {
	pl := p.base(e, r.TargetStage)
	pl.Rationale = r.Rationale
	pl.Data.IncludeNegatives = r.IncludeNegatives
	pl.Data.MixSynthetic = r.MixSynthetic
	pl.Data.MaxExamples = r.MaxExamples
	pl.Hyper.Iters, pl.Hyper.LearningRate = r.Iters, r.LearningRate
	pl.Hyper.LoraRank, pl.Hyper.LoraAlpha = r.LoraRank, 2*r.LoraRank
	pl.Targets.Target = round2(r.TargetRate)
	return pl
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// Save records d's plan in training_plans under taskID, the command's
// task id, and writes its editable file; it returns the file's path. The
// plans directory is made first, so a plan is not recorded without the
// file that curate-data reads.
func Save(ctx context.Context, c *corpus.Corpus, l Layout, d *Drafted, taskID string) (string, error) {
	if err := os.MkdirAll(l.Plans(), 0o755); err != nil {
		return "", fmt.Errorf("save plan: %w", err)
	}
	// The id comes with the row; the rest must be valid before it is
	// recorded.
	probe := *d.Plan
	probe.ID = 1
	if err := probe.Check(); err != nil {
		return "", fmt.Errorf("save plan: %w", err)
	}
	id, err := c.RecordPlan(ctx, d.Plan.Row(taskID, d.Raw))
	if err != nil {
		return "", err
	}
	d.Plan.ID = id
	data, err := d.Plan.Encode()
	if err != nil {
		return "", fmt.Errorf("save plan %d: %w", id, err)
	}
	path := l.PlanFile(id)
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return "", fmt.Errorf("save plan %d (recorded in training_plans): %w", id, err)
	}
	return path, nil
}
