package agent

import (
	"context"
	"slices"

	"github.com/cra-dev/cra/internal/retrieve"
)

// SeedPlanFiles makes files the tier-0 seeds of a retrieval run (seed 001
// §5.6, §8.2: with --plan, the plan's files come first): it wraps the
// first stage so that the task carries them as PlanFiles before anything
// is ranked, and ranks again if the pipeline ranked before that stage.
// retrieve.Pipeline.Run analyses the task itself, so this is where the
// plan gets in; Refine keeps them, since it starts from the analysed task.
func SeedPlanFiles(stages []retrieve.Stage, files []string) []retrieve.Stage {
	if len(stages) == 0 || len(files) == 0 {
		return stages
	}
	out := slices.Clone(stages)
	out[0] = &planSeeds{Stage: stages[0], files: files}
	return out
}

// planSeeds is a stage that adds plan files to the task first.
type planSeeds struct {
	retrieve.Stage
	files []string
}

// candidateLimit is how many files a re-ranking considers, as the scope
// stage does by default.
const candidateLimit = 60

// Run implements retrieve.Stage.
func (s *planSeeds) Run(ctx context.Context, sc *retrieve.StageContext) error {
	for _, f := range s.files {
		if !slices.Contains(sc.Task.PlanFiles, f) {
			sc.Task.PlanFiles = append(sc.Task.PlanFiles, f)
		}
	}
	if sc.Candidates != nil {
		cands, err := sc.Ranker.Rank(ctx, sc.Task, max(candidateLimit, len(sc.Candidates)))
		if err != nil {
			return err
		}
		sc.Candidates = cands
	}
	return s.Stage.Run(ctx, sc)
}
