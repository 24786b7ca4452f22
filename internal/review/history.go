package review

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/jsonl"
	"github.com/cra-dev/cra/internal/statedir"
)

// Review is one review of one run: what the recycler saw, what the model
// said, and what was decided. Every review of a task is kept, so the
// audit trail of its verdicts is never overwritten (seed 004's open
// question: a historical note archive).
type Review struct {
	Time   time.Time    `json:"time"`
	TaskID string       `json:"task_id"`
	Run    int          `json:"run"`
	Folder board.Folder `json:"folder"` // where the run left the task: completed or failed
	// Evidence is the harness's evidence (evidence.Evidence as JSON).
	Evidence json.RawMessage `json:"evidence,omitempty"`
	// Blockers is what in the evidence stands against completion.
	Blockers []string `json:"blockers,omitempty"`
	// Unverified says why nothing checked the work (no [validation]):
	// a claim of completion stands as significant_progress at most.
	Unverified []string `json:"unverified,omitempty"`
	// Model is the model's classification; "" when the review fell back.
	Model    Classification `json:"model,omitempty"`
	Criteria Criteria       `json:"criteria,omitempty"`
	// Classification is the final verdict, after the evidence's gate.
	Classification Classification `json:"classification"`
	// Lowered says why the final verdict is below the model's.
	Lowered []string `json:"lowered,omitempty"`
	// Fallback says why the conservative note was used, or, for a review
	// that waits (Action wait), why the model gave none.
	Fallback string `json:"fallback,omitempty"`
	// Malformed says the model answered, twice out of format.
	Malformed bool    `json:"malformed,omitempty"`
	Need      string  `json:"need,omitempty"`
	Note      Note    `json:"note"`
	Before    Streaks `json:"before"`
	After     Streaks `json:"after"`
	Action    Action  `json:"action"`
	// Entry is the output of the lifecycle entry the review wrote.
	Entry string `json:"entry"`
	// Calls is how many model calls the review made (0, 1 or 2).
	Calls int `json:"calls"`
	// Withdrawn says why the review was not carried out (the task moved
	// or ran meanwhile, its file could not be written): the history keeps
	// the review, and a record saying so after it, which History folds
	// into it.
	Withdrawn string `json:"withdrawn,omitempty"`
}

// HistoryName is the file of a task's reviews in its run directory,
// .clean_room/runs/<id>/reviews.jsonl: one JSON object a line, appended.
const HistoryName = statedir.ReviewsFile

// HistoryPath returns the reviews file of task id.
func HistoryPath(stateDir, id string) string {
	return statedir.At(stateDir).Run(id).Reviews()
}

// appendHistory appends r to its task's reviews file and syncs it.
func appendHistory(stateDir string, r *Review) error {
	if err := jsonl.Append(HistoryPath(stateDir, r.TaskID), r); err != nil {
		return fmt.Errorf("record the review: %w", err)
	}
	return nil
}

// History returns task id's reviews, oldest first, and how many lines
// could not be read (a line torn by a crash, an edit by hand): those are
// skipped, never fatal. A task never reviewed has none.
func History(stateDir, id string) ([]Review, int, error) {
	recs, bad, err := jsonl.Read(HistoryPath(stateDir, id), validReview)
	if err != nil {
		return nil, 0, fmt.Errorf("read the reviews of %s: %w", id, err)
	}
	return foldWithdrawn(recs), bad, nil
}

func readHistory(r io.Reader) ([]Review, int, error) {
	recs, bad, err := jsonl.Decode(r, validReview)
	return foldWithdrawn(recs), bad, err
}

func validReview(r *Review) bool { return r.TaskID != "" }

// foldWithdrawn folds each record saying a review was withdrawn into the
// review before it, of the same run.
func foldWithdrawn(recs []Review) []Review {
	var out []Review
	for _, rv := range recs {
		if rv.Withdrawn != "" && rv.Action == "" && len(out) > 0 && out[len(out)-1].Run == rv.Run {
			out[len(out)-1].Withdrawn = rv.Withdrawn
			continue
		}
		out = append(out, rv)
	}
	return out
}
