package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/workspace"
)

// Eval is an adapter's evaluation, stored as JSON in
// adapter_registry.eval_metrics: the stage's metric on a dataset's
// validation split, for the model the stage runs on without the adapter
// and for the adapter.
type Eval struct {
	Stage     string `json:"stage"`
	Metric    string `json:"metric"` // see Metric
	DatasetID int64  `json:"dataset_id"`
	// Examples is how many validation examples were scored; Skipped ones
	// had nothing to score against (no gold files, no reference).
	Examples int   `json:"examples"`
	Skipped  int   `json:"skipped,omitempty"`
	Baseline Score `json:"baseline"`
	Adapter  Score `json:"adapter"`
	// Better is set when the adapter scored strictly higher.
	Better      bool   `json:"better"`
	EvaluatedAt string `json:"evaluated_at"`
}

// Score is one model's result.
type Score struct {
	Model  string `json:"model"`
	Source string `json:"source"` // how the router chose it: role, override, adapter
	// Score is the mean of the examples' scores, each in [0, 1].
	Score float64 `json:"score"`
	// Unusable counts replies that could not be read (each scored 0).
	Unusable int `json:"unusable,omitempty"`
}

// Summary is one line for people and adapter_metadata.performance_notes:
// "scope gold_file_recall 0.83 for qwen3:4b-scope-v1 vs 0.50 for qwen3:4b
// on 6 examples of dataset 3".
func (e *Eval) Summary() string {
	return fmt.Sprintf("%s %s %.2f for %s vs %.2f for %s on %d examples of dataset %d",
		e.Stage, e.Metric, e.Adapter.Score, e.Adapter.Model, e.Baseline.Score, e.Baseline.Model, e.Examples, e.DatasetID)
}

func parseEval(rec corpus.AdapterRecord) (*Eval, error) {
	if rec.EvalMetrics == "" {
		return nil, nil
	}
	var ev Eval
	if err := json.Unmarshal([]byte(rec.EvalMetrics), &ev); err != nil {
		return nil, fmt.Errorf("adapter %s: eval_metrics is not an evaluation (%v): run 'cra adapters eval %s' again", rec.ModelTag, err, rec.ModelTag)
	}
	return &ev, nil
}

// EvalOptions are the optional inputs of Evaluate.
type EvalOptions struct {
	// DatasetID is the training_datasets row whose validation split is
	// used; 0 uses the one the adapter was trained on.
	DatasetID int64
	// Progress is called after each example; nil discards.
	Progress func(done, total int)
}

// ErrNoValidation is returned when the dataset's validation split holds
// nothing to score.
var ErrNoValidation = errors.New("nothing to evaluate")

// Evaluate runs the adapter's stage on the validation split of a dataset
// (seed 001 §16; dataset.Read) with the model the stage runs on without
// the adapter (Baseline) and with the adapter, scores each reply with the
// stage's metric (see Metric), and stores the result in
// adapter_registry.eval_metrics. Every call is recorded in llm_calls
// (call type "adapter_eval"). A call that fails ends the evaluation and
// stores nothing: a comparison needs both models to answer. An adapter
// whose tag the server no longer has is refused before any call.
func Evaluate(ctx context.Context, ws *workspace.Workspace, tag string, opts EvalOptions) (*Eval, error) {
	raw, rec, err := registered(ctx, ws, tag)
	if err != nil {
		return nil, err
	}
	id := opts.DatasetID
	if id == 0 {
		id = rec.DatasetID
	}
	if id == 0 {
		return nil, fmt.Errorf("adapter %s was registered without a dataset: pass --dataset ID (a training_datasets row of stage %s)", tag, rec.Stage)
	}
	ds, err := raw.Dataset(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: pass --dataset ID of a training_datasets row of stage %s ('cra curate-data' or 'cra bootstrap' make them)", err, rec.Stage)
	}
	if ds.Stage != rec.Stage {
		return nil, fmt.Errorf("training dataset %d is of stage %s, but adapter %s serves %s: pass a dataset of stage %s", ds.ID, ds.Stage, tag, rec.Stage, rec.Stage)
	}
	recs, err := dataset.Read(ds.Path, dataset.Valid)
	if err != nil {
		return nil, fmt.Errorf("read the validation split of dataset %d: %w", ds.ID, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: the validation split of dataset %d (%s) is empty: pass --dataset ID of a dataset of stage %s with more examples", ErrNoValidation, ds.ID, ds.Path, rec.Stage)
	}
	if err := preflight.CheckModels(ws.Config); err != nil {
		return nil, err
	}
	if err := checkServed(ctx, ws, rec.BaseModel, rec.ModelTag); err != nil {
		return nil, err
	}
	base, err := Baseline(ctx, ws, rec)
	if err != nil {
		return nil, err
	}
	adapted, err := llm.NewRouter(ws.Config, nil).Resolve(ctx, llm.Role(rec.BaseModel), "")
	if err != nil {
		return nil, err
	}
	adapted.Model, adapted.Stage, adapted.Source = rec.ModelTag, rec.Stage, "adapter"
	recorder := llm.NewRecorder(raw)
	info := llm.CallInfo{Type: "adapter_eval", Role: llm.Role(rec.BaseModel), Stage: rec.Stage}
	clients := [2]llm.Client{}
	for i, m := range []llm.ModelConfig{base, adapted} {
		c, err := llm.New(m)
		if err != nil {
			return nil, err
		}
		llm.SetLogger(c, ws.Logger())
		clients[i] = recorder.Wrap(c, m, info)
	}
	scorer := scorerFor(rec.Stage)
	defer scorer.close()
	ev := &Eval{Stage: rec.Stage, Metric: Metric(rec.Stage), DatasetID: ds.ID,
		Baseline: Score{Model: base.Model, Source: base.Source}, Adapter: Score{Model: adapted.Model, Source: adapted.Source}}
	var sums [2]float64
	for n, r := range recs {
		req, ok := request(r, rec.Stage)
		if ok {
			// Whether an example can be scored depends on it alone: an
			// empty reply asks without a call.
			_, ok, _ = scorer.score(ctx, r, "")
		}
		if !ok {
			ev.Skipped++
			continue
		}
		var scores [2]float64
		for i, c := range clients {
			resp, err := c.Complete(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("evaluate %s on example %d of dataset %d: %w", tag, n+1, ds.ID, err)
			}
			s, _, err := scorer.score(ctx, r, resp.Text)
			switch {
			case errors.Is(err, errUnusable):
				[]*Score{&ev.Baseline, &ev.Adapter}[i].Unusable++
			case err != nil:
				return nil, fmt.Errorf("evaluate %s on example %d of dataset %d: %w", tag, n+1, ds.ID, err)
			}
			scores[i] = s
		}
		if opts.Progress != nil {
			opts.Progress(n+1, len(recs))
		}
		ev.Examples++
		sums[0] += scores[0]
		sums[1] += scores[1]
	}
	if ev.Examples == 0 {
		return nil, fmt.Errorf("%w: none of the %d validation examples of dataset %d has what %s is scored against (%s)", ErrNoValidation, len(recs), ds.ID, ev.Metric, metricNeeds(rec.Stage))
	}
	ev.Baseline.Score = round(sums[0] / float64(ev.Examples))
	ev.Adapter.Score = round(sums[1] / float64(ev.Examples))
	ev.Better = ev.Adapter.Score > ev.Baseline.Score
	ev.EvaluatedAt = time.Now().UTC().Format(time.RFC3339)
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	if err := raw.SetAdapterEval(ctx, rec.ID, string(data)); err != nil {
		return nil, err
	}
	return ev, nil
}

// round keeps four decimals, so that stored scores compare as shown.
func round(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

// request is the prompt of an example: its system and user messages, as
// the stage sends them at inference (the reasoning stages ask for JSON).
func request(r dataset.Record, stage string) (llm.Request, bool) {
	var req llm.Request
	for _, m := range r.Example.Messages {
		switch m.Role {
		case "system":
			req.System = m.Content
		case "user":
			req.Messages = append(req.Messages, llm.Message{Role: "user", Content: m.Content})
		}
	}
	req.JSON = stage != dataset.ExecuteCode
	return req, len(req.Messages) == 1
}
