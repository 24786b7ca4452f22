package run

import (
	"context"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/retrieve"
)

// The names of the execution half's parts that its callers take and
// give: a front end calls run and names what it hands over as run's,
// rather than importing agent and retrieve for a type or a constant.
type (
	// PlanDoc is a plan as 'cra plan' writes and 'cra solve --plan'
	// reads it (agent.Plan).
	PlanDoc = agent.Plan
	// TaskResult is what a solve did (agent.TaskResult); WorktreeOutcome
	// what became of its worktree (agent.Outcome).
	TaskResult      = agent.TaskResult
	WorktreeOutcome = agent.Outcome
	// Budget is a context package's token budget; Stage a retrieval
	// stage; Result a retrieval; Made how a package was made; WeightChoice
	// the ranking weights chosen (retrieve's).
	Budget       = retrieve.Budget
	Stage        = retrieve.Stage
	Result       = retrieve.Result
	Made         = retrieve.Made
	WeightChoice = retrieve.WeightChoice
)

// Retrieval's defaults and the source of learned weights (retrieve's).
const (
	DefaultSafetyMargin = retrieve.DefaultSafetyMargin
	WeightsRepository   = retrieve.WeightsRepository
)

// ErrEmptyTask is a task with no text (retrieve.ErrEmptyTask).
var ErrEmptyTask = retrieve.ErrEmptyTask

// StageNames lists the retrieval stages (retrieve.StageNames).
func StageNames() []string { return retrieve.StageNames() }

// ParseStages reads a comma-separated list of stages (retrieve.ParseStages).
func ParseStages(list string) ([]Stage, error) { return retrieve.ParseStages(list) }

// WeightsFor returns the ranking weights retrieval uses for a repository
// (retrieve.WeightsFor).
func WeightsFor(ctx context.Context, k *kb.KnowledgeBase, repoID int64) (WeightChoice, error) {
	return retrieve.WeightsFor(ctx, k, repoID)
}

// LoadPlan reads a plan file (agent.LoadPlan); CheckPlanPath says why a
// path cannot take one (agent.CheckPlanPath).
func LoadPlan(path string) (*PlanDoc, error) { return agent.LoadPlan(path) }
func CheckPlanPath(path string) error        { return agent.CheckPlanPath(path) }
