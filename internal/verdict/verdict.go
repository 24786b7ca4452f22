// Package verdict holds what the supervision half decided, as records
// others read: a Review of one run with its classification, criteria,
// note, streaks and action; the Report of one recycler tick; a task's
// review history (.clean_room/runs/<id>/reviews.jsonl, or a fleet's
// database: HistoryStore) with its reader;
// and the CleanupReport of a cleanup pass. review and cleanup make them;
// the supervisors, the fleet's operations and the front ends read them
// without importing the recycler, cleanup and what they run.
package verdict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/jsonl"
	"github.com/cra-dev/cra/internal/notify"
	"github.com/cra-dev/cra/internal/statedir"
)

// Review is one review of one run: what the recycler saw, what the model
// said, and what was decided. Every review of a task is kept, so the
// audit trail of its verdicts is never overwritten (seed 004's open
// question: a historical note archive).
type Review struct {
	Time   time.Time `json:"time"`
	TaskID string    `json:"task_id"`
	Run    int       `json:"run"`
	Folder string    `json:"folder"` // where the run left the task (a board.Folder): completed or failed
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

// HistoryStore keeps the tasks' review histories, one record (a Review
// as one line of JSON) after another: Files, the state directory's
// reviews.jsonl files, or, on a fleet whose board is in PostgreSQL, its
// database (pgstore.Log), so that whichever host leads the recycler
// reads the reviews the one before it wrote.
type HistoryStore interface {
	// AppendReview adds line, one record, to the end of task id's
	// history, durably.
	AppendReview(ctx context.Context, id string, line []byte) error
	// ReviewLines returns task id's records, oldest first, as they were
	// appended (a file's torn or edited lines included); a task never
	// reviewed has none.
	ReviewLines(ctx context.Context, id string) ([][]byte, error)
}

// Files is the review histories as files under the state directory:
// HistoryPath's, one record a line.
type Files struct{ StateDir string }

var _ HistoryStore = Files{}

// AppendReview appends line to task id's reviews file and syncs it.
func (f Files) AppendReview(_ context.Context, id string, line []byte) error {
	return jsonl.AppendLine(HistoryPath(f.StateDir, id), line)
}

// ReviewLines returns the lines of task id's reviews file.
func (f Files) ReviewLines(_ context.Context, id string) ([][]byte, error) {
	return jsonl.ReadLines(HistoryPath(f.StateDir, id))
}

// AppendHistory records r at the end of its task's history in s.
func AppendHistory(ctx context.Context, s HistoryStore, r *Review) error {
	line, err := json.Marshal(r)
	if err == nil {
		err = s.AppendReview(ctx, r.TaskID, line)
	}
	if err != nil {
		return fmt.Errorf("record the review: %w", err)
	}
	return nil
}

// ReadHistory returns task id's reviews in s, oldest first, and how many
// of its records could not be read, as History does from its file.
func ReadHistory(ctx context.Context, s HistoryStore, id string) ([]Review, int, error) {
	lines, err := s.ReviewLines(ctx, id)
	if err != nil {
		return nil, 0, fmt.Errorf("read the reviews of %s: %w", id, err)
	}
	recs, bad := jsonl.DecodeLines(lines, validReview)
	return foldWithdrawn(recs), bad, nil
}

// Decode reads a review history from r, as History does from its file.
func Decode(r io.Reader) ([]Review, int, error) {
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

// Classification is the recycler's verdict on one run (seed 004's Prompt
// Contract).
type Classification string

// The four classifications, from most to least done.
const (
	FullComplete        Classification = "full_complete"
	SignificantProgress Classification = "significant_progress"
	SomeProgress        Classification = "some_progress"
	Uncertain           Classification = "uncertain"
)

// Classifications lists them from most to least done.
func Classifications() []Classification {
	return []Classification{FullComplete, SignificantProgress, SomeProgress, Uncertain}
}

// Criteria is the model's judgement of the task's need: (seed 002 Phase 4).
type Criteria string

// The judgements of the criteria.
const (
	CriteriaMet     Criteria = "met"
	CriteriaNotMet  Criteria = "not_met"
	CriteriaUnclear Criteria = "unclear"
)

// Note is the five sections of a review's note, in the contract's order.
type Note struct {
	Accomplished string `json:"accomplished"`
	Status       string `json:"status"`
	Remaining    string `json:"remaining"`
	Next         string `json:"next"`
	Evidence     string `json:"evidence"`
}

// SectionNames returns the note's headings, in order (seed 004).
func SectionNames() [5]string {
	return [5]string{
		"What was accomplished",
		"Current status",
		"Remaining issues or limitations",
		"Suggested next actions",
		"Validation evidence",
	}
}

// Sections returns the note's five sections, in order, to fill or cut.
func (n *Note) Sections() [5]*string {
	return [5]*string{&n.Accomplished, &n.Status, &n.Remaining, &n.Next, &n.Evidence}
}

// String renders the note as the task file keeps it: each heading on its
// own line, its text below, a blank line between sections.
func (n Note) String() string {
	var b strings.Builder
	names := SectionNames()
	for i, s := range n.Sections() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(names[i])
		b.WriteString(":\n")
		b.WriteString(strings.TrimSpace(*s))
	}
	return b.String()
}

// MaxNote caps a note's characters (seed 004).
const MaxNote = 4000

// Fit cuts the note to MaxNote characters as rendered. Seed 004 keeps
// validation commands and blockers first, so the accomplished and status
// sections shrink before the remaining issues and the evidence; the
// longest section of a group is cut first.
func (n *Note) Fit() {
	groups := [][]*string{{&n.Accomplished, &n.Status, &n.Next}, {&n.Remaining, &n.Evidence}}
	for _, g := range groups {
		for over := utf8.RuneCountInString(n.String()) - MaxNote; over > 0; over = utf8.RuneCountInString(n.String()) - MaxNote {
			longest := g[0]
			for _, s := range g[1:] {
				if utf8.RuneCountInString(*s) > utf8.RuneCountInString(*longest) {
					longest = s
				}
			}
			r := []rune(*longest)
			if len(r) <= 40 {
				break
			}
			keep := max(len(r)-over-1, 40)
			*longest = strings.TrimSpace(string(r[:keep])) + "…"
		}
	}
}

// Streaks are a task's two counters (seed 004): consecutive claims of
// completion and consecutive failures.
type Streaks struct {
	Completion int `json:"completion"`
	Failure    int `json:"failure"`
}

// Action is what the recycler does with a reviewed task (seed 004 step 6).
type Action string

// The recycler's actions.
const (
	Requeue  Action = "retry"    // back to pending with guidance
	Finalize Action = "verified" // completed-finalized
	Block    Action = "blocked"  // failed-blocked: a person must look
	// Wait is a review the model could not give (it could not be
	// reached, failed, timed out, or replied out of format): the task
	// stays where it is, no streak moves, and the run is reviewed again
	// when the model is back.
	Wait Action = "wait"
)

// Report is what one tick did.
type Report struct {
	// Disabled says why no review was made (enabled_for is off, no
	// model is configured).
	Disabled string `json:"disabled,omitempty"`
	// PausedUntil is set while the circuit breaker holds reviews off.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Resumed are the tasks sent back to pending after a person answered.
	Resumed []string `json:"resumed,omitempty"`
	// Restarted are the live runs Level 2 stopped.
	Restarted []Restart `json:"restarted,omitempty"`
	// Review is the review made, if any.
	Review *Review `json:"review,omitempty"`
	// Notified are the notifications sent.
	Notified []Notice `json:"notified,omitempty"`
	// Warnings are what went wrong without stopping the tick.
	Warnings []string `json:"warnings,omitempty"`
}

// Restart is a live run Level 2 stopped (seed 002 Phase 4: an active
// agent with no activity for the threshold gets [agent:retry][id]
// continue).
type Restart struct {
	ID     string `json:"id"`
	Run    int    `json:"run"`
	Reason string `json:"reason"`
	// Blocked says the start limit was reached: the task went to
	// failed-blocked instead of back to pending.
	Blocked bool `json:"blocked,omitempty"`
}

// Notice is a notification sent, and why it failed if it did.
type Notice struct {
	notify.Event
	Err string `json:"error,omitempty"`
}

// DuplicateGroup is a set of items the pre-pass takes for duplicates of each
// other: each is at least cleanup.Threshold similar to another of the group.
type DuplicateGroup struct {
	IDs   []string `json:"ids"`
	Texts []string `json:"texts"`
	// Score is the highest similarity of a pair in the group.
	Score float64 `json:"score"`
}

// CleanupReport is what a cleanup pass did (seed 000).
type CleanupReport struct {
	// RunID is the task id the calls are recorded under in raw.sqlite.
	RunID   string           `json:"run_id,omitempty"`
	DryRun  bool             `json:"dry_run,omitempty"`
	Pending int              `json:"pending"`
	Groups  []DuplicateGroup `json:"groups"`

	Rewrite  CallResult    `json:"rewrite"`
	Index    string        `json:"index,omitempty"` // the path written, relative to the repository
	Removed  int           `json:"duplicate_lines_removed,omitempty"`
	Added    []AddedTask   `json:"added"`
	Ignored  []IgnoredLine `json:"ignored,omitempty"`
	Collapse CallResult    `json:"collapse"`
	Merged   []MergedGroup `json:"merged"`
	Skipped  []SkippedLine `json:"skipped,omitempty"`
	// Suggested are Call 2's groups the pre-pass does not find alike:
	// left for a person, never applied.
	Suggested []Suggestion `json:"suggested,omitempty"`
}

// Suggestion is a group Call 2 named that the pass did not apply,
// because the pre-pass does not find its tasks alike: a person may merge
// them by hand.
type Suggestion struct {
	Keep      string   `json:"keep"`
	Canonical string   `json:"canonical"`
	Drops     []string `json:"drops"`
	Reason    string   `json:"reason"`
}

// CallResult is how a call went.
type CallResult struct {
	// Done says the reply parsed and was carried out.
	Done bool `json:"done"`
	// Requests is how many requests it took: 2 after a malformed reply.
	Requests int    `json:"requests"`
	Err      string `json:"error,omitempty"`
}

// Failed reports whether a call was made, or meant to be, and failed.
func (c CallResult) Failed() bool { return c.Err != "" }

// AddedTask is a task a TODOS line added.
type AddedTask struct {
	ID       string `json:"id"`
	Priority string `json:"priority"` // a board.Priority
	Title    string `json:"title"`
}

// IgnoredLine is a TODOS line that added nothing, and why.
type IgnoredLine struct {
	Line   string `json:"line"`
	Reason string `json:"reason"`
}

// MergedGroup is a group Call 2 collapsed.
type MergedGroup struct {
	Keep      string   `json:"keep"`
	Canonical string   `json:"canonical"`
	Dropped   []string `json:"dropped"`
	Relinked  []string `json:"relinked,omitempty"`
}

// SkippedLine is a line of Call 2's reply that was not carried out, and why.
type SkippedLine struct {
	Line   string `json:"line"`
	Reason string `json:"reason"`
}

// Summary says in one line what the pass did, as its log line does.
func (r *CleanupReport) Summary() string {
	var parts []string
	dropped := 0
	for _, m := range r.Merged {
		dropped += len(m.Dropped)
	}
	parts = append(parts, fmt.Sprintf("merged %d group(s), %d task(s) dropped", len(r.Merged), dropped))
	parts = append(parts, fmt.Sprintf("added %d task(s)", len(r.Added)))
	if r.Index != "" {
		parts = append(parts, "rewrote "+r.Index)
	}
	if r.Rewrite.Failed() {
		parts = append(parts, "knowledge rewrite failed")
	}
	if r.Collapse.Failed() {
		parts = append(parts, "collapse failed")
	}
	return "pass " + r.RunID + ": " + strings.Join(parts, "; ")
}

// ErrCleanupRunning is a cleanup pass refused because one runs already,
// in this process or another (cleanup.ErrRunning, the fleet's too).
var ErrCleanupRunning = errors.New("a cleanup is running")
