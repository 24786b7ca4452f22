package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/llm"
)

// Reply is what the reasoning model answers to the planning prompt: one
// flat JSON object, every key required, so a small model has one shape to
// follow (see replyFormat).
type Reply struct {
	TargetStage      string  `json:"target_stage"`
	Rationale        string  `json:"rationale"`
	IncludeNegatives bool    `json:"include_negatives"`
	MixSynthetic     bool    `json:"mix_synthetic"`
	MaxExamples      int     `json:"max_examples"`
	Iters            int     `json:"iters"`
	LearningRate     float64 `json:"learning_rate"`
	LoraRank         int     `json:"lora_rank"`
	TargetRate       float64 `json:"target_success_rate"`
}

// replyKeys are Reply's keys, in the order the prompt shows them.
var replyKeys = []string{"target_stage", "rationale", "include_negatives", "mix_synthetic", "max_examples",
	"iters", "learning_rate", "lora_rank", "target_success_rate"}

// replyFormat is the part of the prompt that states the reply's format.
func replyFormat(stages []string) string {
	return fmt.Sprintf(`Reply with exactly one JSON object with these keys and nothing else:
{"target_stage": one of %s,
 "rationale": "one or two sentences citing the numbers above",
 "include_negatives": true or false (add calls of failed runs as negative examples),
 "mix_synthetic": true or false (add bootstrapped examples of the stage),
 "max_examples": an integer from 1 to %d,
 "iters": an integer from %d to %d,
 "learning_rate": a number above 0 and at most %v, such as 0.0001,
 "lora_rank": one of %s,
 "target_success_rate": the stage's run success rate to reach, a number from 0 to 1}`,
		quoteList(stages), maxExamplesLimit, minIters, maxIters, maxLearningRate, intList(ranks))
}

func quoteList(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// maxRationale bounds the rationale kept from a reply.
const maxRationale = 2000

// ParseReply reads a reply strictly: one JSON object (as llm.ExtractJSON
// finds it), no unknown key, no missing key, every value in range, the
// target one of stages. The error names what is wrong, for the retry
// prompt to quote.
func ParseReply(reply string, stages []string) (*Reply, error) {
	obj, err := llm.ExtractJSON(reply)
	if err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(obj, &keys); err != nil {
		return nil, fmt.Errorf("the reply is not a JSON object: %v", err)
	}
	for k := range keys {
		if !slices.Contains(replyKeys, k) {
			return nil, fmt.Errorf("unknown key %q: use only %s", k, strings.Join(replyKeys, ", "))
		}
	}
	for _, k := range replyKeys {
		if v, ok := keys[k]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return nil, fmt.Errorf("missing key %q", k)
		}
	}
	var r Reply
	dec := json.NewDecoder(bytes.NewReader(obj))
	if err := dec.Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s must be %s, not a JSON %s", te.Field, kindName(te.Type.Kind()), te.Value)
		}
		return nil, fmt.Errorf("the reply is not a valid plan: %v", err)
	}
	r.TargetStage = strings.TrimSpace(r.TargetStage)
	if !slices.Contains(stages, r.TargetStage) {
		return nil, fmt.Errorf("target_stage %q is not one of %s", r.TargetStage, quoteList(stages))
	}
	r.Rationale = strings.TrimSpace(r.Rationale)
	if r.Rationale == "" {
		return nil, errors.New("rationale is empty: cite the numbers that make this stage the one to train")
	}
	if len(r.Rationale) > maxRationale {
		r.Rationale = strings.ToValidUTF8(r.Rationale[:maxRationale], "") + "…"
	}
	switch {
	case r.MaxExamples < 1 || r.MaxExamples > maxExamplesLimit:
		return nil, fmt.Errorf("max_examples %d is out of range: use 1 to %d", r.MaxExamples, maxExamplesLimit)
	case r.Iters < minIters || r.Iters > maxIters:
		return nil, fmt.Errorf("iters %d is out of range: use %d to %d", r.Iters, minIters, maxIters)
	case !(r.LearningRate > 0 && r.LearningRate <= maxLearningRate):
		return nil, fmt.Errorf("learning_rate %v is out of range: use a number above 0 and at most %v", r.LearningRate, maxLearningRate)
	case !slices.Contains(ranks, r.LoraRank):
		return nil, fmt.Errorf("lora_rank %d is not one of %s", r.LoraRank, intList(ranks))
	case math.IsNaN(r.TargetRate) || r.TargetRate < 0 || r.TargetRate > 1:
		return nil, fmt.Errorf("target_success_rate %v is out of range: use a number from 0 to 1", r.TargetRate)
	}
	return &r, nil
}

// kindName names a Go kind as the prompt does.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return "a string"
}
