// Package agent plans and solves coding tasks (seed 001 Phase 3, §8.1,
// §8.2, §13, §17-19): the plan artifact and its Markdown form, the coding
// model's prompts and replies (edit blocks, read and applied by
// internal/edit, or a request for more context), the git worktree the
// edits go into, validation by the project's own test, lint and
// type-check commands, and the bounded retry loop that classifies each
// failure, carries its evidence into the next prompt and re-enters
// retrieval when the model names concretely what it is missing.
//
// Context comes only from internal/retrieve: this package never opens the
// curated database (seed 001 §13). A run's lifecycle around the loop (its
// id, session, records and world-log lines) is internal/run's.
package agent

import (
	"errors"
	"time"

	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/validation"
)

// Failure classes of an attempt (seed 001 §13: the retry context
// classifies the failure and carries its evidence).
const (
	ClassUnparseable         = "unparseable_reply"       // no usable edit blocks, or a NEED_CONTEXT without evidence
	ClassApply               = "apply_failure"           // a block matched nothing, several places, or a refused path
	ClassTest                = validation.ClassTest      // [validation] test failed
	ClassLint                = validation.ClassLint      // [validation] lint failed
	ClassTypecheck           = validation.ClassTypecheck // [validation] typecheck failed
	ClassInsufficientContext = "insufficient_context"    // a NEED_CONTEXT with concrete evidence
	ClassModelError          = "model_error"             // the call itself failed; the run stops
)

// ErrPromptTooLarge is returned when even the trimmed prompt and the
// reply's reserve do not fit the context window: the hard gate of seed
// 001 §7.4.
var ErrPromptTooLarge = errors.New("the prompt does not fit the context window")

// AttemptRecord is one call of the execute model and what came of it
// (seed 001 §18). It is a run_attempts row, with its validation_results
// row when edits were validated.
type AttemptRecord struct {
	Attempt int `json:"attempt"`
	// PromptTokens and CompletionTokens are the server's counts (0 when
	// it gave none); EstimatedTokens is the prompt's chars/4 estimate the
	// budget gate used.
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	EstimatedTokens  int           `json:"estimated_tokens"`
	Latency          time.Duration `json:"latency_ns"`
	RawResponse      string        `json:"raw_response"`
	// PatchApplied is set when every edit block of the reply applied (or
	// was already applied).
	PatchApplied bool          `json:"patch_applied"`
	Blocks       []edit.Result `json:"blocks,omitempty"`
	// Need is the model's refinement request, when it sent one.
	Need       *retrieve.RefinementRequest `json:"need_context,omitempty"`
	Refined    bool                        `json:"refined,omitempty"` // retrieval re-entered with Need
	Validation *validation.Result          `json:"validation,omitempty"`
	// Class is empty for the attempt that succeeded.
	Class string `json:"class,omitempty"`
	// Evidence is what the next prompt is told about this attempt.
	Evidence string `json:"evidence,omitempty"`
	// Trimmed lists what the budget gate left out of this attempt's
	// prompt.
	Trimmed []string `json:"trimmed,omitempty"`
}

// TaskResult is the outcome of a solve run (seed 001 §18).
type TaskResult struct {
	Success  bool            `json:"success"`
	Attempts []AttemptRecord `json:"attempts"`
	// Refinements is how many times retrieval was re-entered.
	Refinements int `json:"refinements"`
	// Validated is false when no [validation] command is configured: the
	// edits applied but nothing checked them.
	Validated bool `json:"validated"`
	// Diff is the unified diff of every edit made, from the base commit.
	Diff string `json:"diff"`
	// Files are the paths the edits touched, relative to the repository.
	Files []string `json:"files"`
	// Class and Evidence describe the last failure of a run that did not
	// succeed.
	Class    string `json:"class,omitempty"`
	Evidence string `json:"evidence,omitempty"`
}
