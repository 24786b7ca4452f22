package retrieve

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cra-dev/cra/internal/kb"
)

// Where a ranking's weights come from (WeightChoice.Source).
const (
	WeightsGlobal     = "global"     // DefaultWeights
	WeightsRepository = "repository" // learned from the repository's history by 'cra tune'
)

// WeightChoice is the weights a repository's retrieval ranks with, and
// why.
type WeightChoice struct {
	Weights Weights `json:"weights"`
	Source  string  `json:"source"`
	Reason  string  `json:"reason"`
	// Learned is what 'cra tune' stored, used or not; nil when it never
	// ran.
	Learned *kb.RankingWeights `json:"learned,omitempty"`
}

// WeightsFor chooses the weights for the repository repoID: its own,
// learned by 'cra tune', when they beat the global weights on its newer
// commits and were judged against the global weights cra ships now;
// DefaultWeights otherwise. Stored weights that do not parse or validate
// are an error that names the fix.
func WeightsFor(ctx context.Context, k *kb.KnowledgeBase, repoID int64) (WeightChoice, error) {
	c := WeightChoice{Weights: DefaultWeights, Source: WeightsGlobal}
	rw, err := k.RankingWeights(ctx, repoID)
	if err != nil {
		return c, err
	}
	if rw == nil {
		c.Reason = "the repository has no weights of its own ('cra tune' learns them from its history)"
		return c, nil
	}
	c.Learned = rw
	var own, judged Weights
	if err := decodeWeights(rw.Weights, &own); err != nil {
		return c, err
	}
	if err := decodeWeights(rw.GlobalWeights, &judged); err != nil {
		return c, err
	}
	switch {
	case !rw.Used:
		c.Reason = "the repository's learned weights did not beat the global ones: " + rw.Reason
	case judged != DefaultWeights:
		c.Reason = "the repository's weights were judged against global weights cra no longer ships: run 'cra tune' again"
	default:
		c.Weights, c.Source, c.Reason = own, WeightsRepository, "learned from the repository's history ("+rw.LearnedAt+"), "+rw.Reason
	}
	return c, nil
}

func decodeWeights(text string, w *Weights) error {
	if err := json.Unmarshal([]byte(text), w); err != nil {
		return fmt.Errorf("stored ranking weights %.80q: %w (run 'cra tune' again, or 'cra tune --forget')", text, err)
	}
	if err := w.Validate(); err != nil {
		return fmt.Errorf("stored ranking weights: %w (run 'cra tune' again, or 'cra tune --forget')", err)
	}
	return nil
}
