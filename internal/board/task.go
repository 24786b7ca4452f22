package board

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/cra-dev/cra/internal/lazyre"
)

// Folder is a queue folder under .clean_room/tasks/.
type Folder string

// The six folders (seed 004), in lifecycle order.
const (
	Pending            Folder = "pending"
	InProgress         Folder = "in-progress"
	Completed          Folder = "completed"
	Failed             Folder = "failed"
	CompletedFinalized Folder = "completed-finalized"
	FailedBlocked      Folder = "failed-blocked"
)

// Folders returns every folder in lifecycle order.
func Folders() []Folder {
	return []Folder{Pending, InProgress, Completed, Failed, CompletedFinalized, FailedBlocked}
}

// Valid reports whether f is one of Folders.
func (f Folder) Valid() bool { return slices.Contains(Folders(), f) }

// Terminal reports whether the processor leaves tasks in f alone for good
// (seed 004, "Terminal Columns").
func (f Folder) Terminal() bool { return f == CompletedFinalized || f == FailedBlocked }

// ParseFolder reads a folder name, saying which ones exist when it is none.
func ParseFolder(s string) (Folder, error) {
	f := Folder(s)
	if !f.Valid() {
		return "", fmt.Errorf("folder %q is not one of %s", s, joinNames(Folders()))
	}
	return f, nil
}

// Kind says whether a task is planned work or a supervisor's directive
// (seed 003's pending_directives).
type Kind string

// Task kinds.
const (
	KindTask      Kind = "task"
	KindDirective Kind = "directive"
)

// The types of a directive (seed 003): a functional directive goes before
// planned work, a cleanup directive after it. For kind task, type is a
// free label.
const (
	DirectiveFunctional = "functional"
	DirectiveCleanup    = "cleanup"
)

// Priority orders tasks of one kind; for directives it also says which
// class they are in (seed 003: critical, functional, cleanup).
type Priority string

// Priorities, most urgent first.
const (
	Critical Priority = "critical"
	High     Priority = "high"
	Normal   Priority = "normal"
	Low      Priority = "low"
)

// Priorities returns every priority, most urgent first.
func Priorities() []Priority { return []Priority{Critical, High, Normal, Low} }

// rank is the priority's place in Priorities; unknown ones sort last.
func (p Priority) rank() int {
	if i := slices.Index(Priorities(), p); i >= 0 {
		return i
	}
	return len(Priorities())
}

// Results are the last run's results, written by the processor and the
// recycler (seed 004).
type Results struct {
	// Output is the tail of the run's output, capped at MaxOutput bytes.
	Output     string    `yaml:"output,omitempty" json:"output,omitempty"`
	ExitCode   *int      `yaml:"exit_code,omitempty" json:"exit_code,omitempty"`
	StartedAt  time.Time `yaml:"started_at,omitempty" json:"started_at,omitzero"`
	FinishedAt time.Time `yaml:"finished_at,omitempty" json:"finished_at,omitzero"`
	DurationMS int64     `yaml:"duration_ms,omitempty" json:"duration_ms,omitempty"`
	Branch     string    `yaml:"branch,omitempty" json:"branch,omitempty"`
	// Host is the fleet's host the run ran on ([fleet] host), whose
	// working copy of the task is the newest; empty on one machine.
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// Commit is the commit the run left its branch at, which its host
	// pushed to the fleet's shared remote ([fleet] push; empty without
	// it). Another host takes the remote's branch only at this commit:
	// an agent that can push to the remote itself cannot have its
	// forgery reviewed or built on (DESIGN.md, "Trust").
	Commit     string `yaml:"commit,omitempty" json:"commit,omitempty"`
	DiffStat   string `yaml:"diff_stat,omitempty" json:"diff_stat,omitempty"`
	Validation string `yaml:"validation,omitempty" json:"validation,omitempty"`
	// TimedOut says the run was stopped at its profile's timeout.
	TimedOut bool `yaml:"timed_out,omitempty" json:"timed_out,omitempty"`
	// Classification is the recycler's last verdict: full_complete,
	// significant_progress, some_progress or uncertain (seed 004).
	Classification string `yaml:"classification,omitempty" json:"classification,omitempty"`
	// Usage is the token usage the run's agent reported (a preset's
	// output, issue 29 item 3); nil when it reported none.
	Usage *Usage `yaml:"usage,omitempty" json:"usage,omitempty"`
}

// Usage is a run's token usage: the whole prompt (its cached part
// included), the output, the cached part, and the agent's model.
type Usage struct {
	Model  string `yaml:"model,omitempty" json:"model,omitempty"`
	Input  int64  `yaml:"input" json:"input"`
	Output int64  `yaml:"output" json:"output"`
	Cached int64  `yaml:"cached" json:"cached"`
}

// String is the usage as the card and 'cra task show' give it.
func (u *Usage) String() string {
	if u == nil {
		return ""
	}
	s := fmt.Sprintf("%d in (%d cached), %d out", u.Input, u.Cached, u.Output)
	if u.Model != "" {
		s += ", " + u.Model
	}
	return s
}

// MaxOutput caps Results.Output: the tail is kept, since a run's last lines
// say how it ended. The recycler reads at most 12,000 characters (seed 004).
const MaxOutput = 12000

// Merge is where and how a task's branch was merged.
type Merge struct {
	Into   string    `yaml:"into" json:"into"`
	Commit string    `yaml:"commit" json:"commit"`
	Squash bool      `yaml:"squash,omitempty" json:"squash,omitempty"`
	At     time.Time `yaml:"at" json:"at"`
}

// Task is one task file. Its fields are seed 004's TaskItem with cra's
// additions (kind, need, after, agent); the YAML keys are the contract of
// the file format.
type Task struct {
	ID          string `yaml:"id" json:"id"`
	Title       string `yaml:"title" json:"title"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Need is the success criteria, logged on the task's start entry.
	Need string `yaml:"need,omitempty" json:"need,omitempty"`
	// Type is a free label (seed 004's resources and scenarios are examples).
	Type      string   `yaml:"type,omitempty" json:"type,omitempty"`
	Kind      Kind     `yaml:"kind" json:"kind"`
	Priority  Priority `yaml:"priority" json:"priority"`
	Milestone string   `yaml:"milestone,omitempty" json:"milestone,omitempty"`
	// Source says who made the task: "" for a person, a supervisor's name
	// (code_style, design, internaliser) or "cleanup" (seed 003, seed 000).
	Source string `yaml:"source,omitempty" json:"source,omitempty"`
	// Rationale is why a directive was issued, and Files the files it is
	// about (seed 003's directive fields).
	Rationale string   `yaml:"rationale,omitempty" json:"rationale,omitempty"`
	Files     []string `yaml:"files,omitempty" json:"files,omitempty"`
	// After lists the ids this task waits for: it is not picked until
	// each of them is verified (in completed-finalized).
	After []string `yaml:"after,omitempty" json:"after,omitempty"`
	// Agent names the agent profile that runs the task; empty means the
	// board's default.
	Agent string `yaml:"agent,omitempty" json:"agent,omitempty"`
	// NoChange says the task is done without changing files (a review,
	// an answer, an investigation): the recycler then does not require a
	// diff before it accepts a claim of completion.
	NoChange bool `yaml:"no_change,omitempty" json:"no_change,omitempty"`
	// TestsMayChange says the task may change the tests and the other
	// protected files (rewrite a test, change the validation script):
	// the recycler then validates the branch's own tests, and a change to
	// them does not stand against a claim of completion.
	TestsMayChange              bool      `yaml:"tests_may_change,omitempty" json:"tests_may_change,omitempty"`
	CreatedAt                   time.Time `yaml:"created_at,omitempty" json:"created_at,omitzero"`
	UpdatedAt                   time.Time `yaml:"updated_at,omitempty" json:"updated_at,omitzero"`
	Runs                        int       `yaml:"runs" json:"runs"`
	ConsecutiveCompletionClaims int       `yaml:"consecutive_completion_claims" json:"consecutive_completion_claims"`
	ConsecutiveFailures         int       `yaml:"consecutive_failures" json:"consecutive_failures"`
	// EndpointFailures counts the runs in a row whose agent's model
	// endpoint failed (issue 29 item 5): no failure streak, a backoff
	// instead, doubling with each; RetryAfter is when the processor may
	// start the next run of the task, zero for now.
	EndpointFailures int       `yaml:"endpoint_failures,omitempty" json:"endpoint_failures,omitempty"`
	RetryAfter       time.Time `yaml:"retry_after,omitempty" json:"retry_after,omitzero"`
	// ProcessorAutoRequeue false keeps the processor away from the task
	// (seed 004); a missing key reads as true.
	ProcessorAutoRequeue bool     `yaml:"processor_auto_requeue" json:"processor_auto_requeue"`
	Notes                string   `yaml:"notes,omitempty" json:"notes,omitempty"`
	Results              *Results `yaml:"results,omitempty" json:"results,omitempty"`
	// Merged says a person merged the task's branch (cra task merge).
	Merged *Merge `yaml:"merged,omitempty" json:"merged,omitempty"`

	// node is the document the task was parsed from: Encode writes the
	// known fields into it and keeps every other key where it was.
	node *yaml.Node
	// srcDir is the folder of the file a task from the list index was
	// read from (node is nil): Encode reads and parses the file when it
	// needs its document.
	srcDir string
}

// NewTask returns a task with the defaults of a new task: kind task, priority
// normal, processor_auto_requeue true.
func NewTask(title string) *Task {
	t := &Task{Title: title, ProcessorAutoRequeue: true}
	t.applyDefaults()
	return t
}

// applyDefaults sets the defaults of the fields whose empty value is not
// theirs (cra: kind task, priority normal). Seed 004's counters default to
// 0, their zero value; processor_auto_requeue's true is set before
// decoding (see Parse), since false is a value.
func (t *Task) applyDefaults() {
	if t.Kind == "" {
		t.Kind = KindTask
	}
	if t.Priority == "" {
		t.Priority = Normal
	}
}

// Clone returns a deep copy of t, sharing the parsed document (which
// Encode does not change).
func (t *Task) Clone() *Task {
	c := *t
	c.After = slices.Clone(t.After)
	c.Files = slices.Clone(t.Files)
	if t.Results != nil {
		r := *t.Results
		if r.ExitCode != nil {
			code := *r.ExitCode
			r.ExitCode = &code
		}
		if r.Usage != nil {
			u := *r.Usage
			r.Usage = &u
		}
		c.Results = &r
	}
	if t.Merged != nil {
		m := *t.Merged
		c.Merged = &m
	}
	return &c
}

// FieldError is a task field whose value cannot be used: which, why, and
// how to fix it.
type FieldError struct {
	Field string
	Err   string // what is wrong
	Fix   string // what to do
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("field %s: %s: %s", e.Field, e.Err, e.Fix)
}

// idPattern keeps ids safe as file names and as world-log identifiers (no
// brackets, no control characters, no leading dot, which marks temp files).
// It is checked by hand (validID, which TestValidID holds to the
// pattern): a listing checks every file name, and the regular expression
// took a twentieth of 'cra task list' on 10,000 tasks.
var idPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// boardID is the shape of the ids NewID makes.
var boardID = lazyre.New(`^t-[0-9a-f]{8}$`)

// validID reports whether id matches idPattern.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// CheckID returns an error unless id can name a task: a file name and a
// world-log agent id.
func CheckID(id string) error {
	if !validID(id) {
		return &FieldError{Field: "id", Err: fmt.Sprintf("%q is not a task id", id),
			Fix: "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	return nil
}

// NewID returns a fresh id, "t-" and 8 random hex digits. Uniqueness
// across the folders is the store's check (Board.Add).
func NewID() string {
	var b [4]byte
	rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}

// MaxTitle bounds a title: it is one log line's output.
const MaxTitle = 200

// Validate checks every field a reader relies on and returns the first
// problem as a *FieldError.
func (t *Task) Validate() error {
	if err := CheckID(t.ID); err != nil {
		return err
	}
	return t.CheckFields()
}

// CheckFields is Validate without the id: the check of a task that
// Board.Add is yet to name.
func (t *Task) CheckFields() error {
	switch {
	case strings.TrimSpace(t.Title) == "":
		return &FieldError{Field: "title", Err: "is empty", Fix: "give the task a one-line title"}
	case strings.ContainsFunc(t.Title, unicode.IsControl):
		return &FieldError{Field: "title", Err: "holds a line break or control character", Fix: "keep the title on one line and put the rest in description"}
	case len(t.Title) > MaxTitle:
		return &FieldError{Field: "title", Err: fmt.Sprintf("is %d bytes long", len(t.Title)), Fix: fmt.Sprintf("keep it under %d bytes and put the rest in description", MaxTitle)}
	}
	if t.Kind != KindTask && t.Kind != KindDirective {
		return &FieldError{Field: "kind", Err: fmt.Sprintf("%q is not a kind", t.Kind), Fix: "use task or directive"}
	}
	if t.Kind == KindDirective && t.Type != "" && t.Type != DirectiveFunctional && t.Type != DirectiveCleanup {
		return &FieldError{Field: "type", Err: fmt.Sprintf("%q is not a directive's type", t.Type), Fix: "use functional or cleanup for a directive"}
	}
	if !slices.Contains(Priorities(), t.Priority) {
		return &FieldError{Field: "priority", Err: fmt.Sprintf("%q is not a priority", t.Priority), Fix: "use one of " + joinNames(Priorities())}
	}
	for _, a := range t.After {
		if err := CheckID(a); err != nil {
			return &FieldError{Field: "after", Err: fmt.Sprintf("%q is not a task id", a), Fix: "list the ids of tasks this one waits for"}
		}
		if a == t.ID && t.ID != "" {
			return &FieldError{Field: "after", Err: "the task waits for itself", Fix: "remove " + a + " from after"}
		}
	}
	for name, n := range map[string]int{"runs": t.Runs, "consecutive_completion_claims": t.ConsecutiveCompletionClaims, "consecutive_failures": t.ConsecutiveFailures, "endpoint_failures": t.EndpointFailures} {
		if n < 0 {
			return &FieldError{Field: name, Err: fmt.Sprintf("%d is negative", n), Fix: "set it to 0 or more"}
		}
	}
	if t.Results != nil && t.Results.DurationMS < 0 {
		return &FieldError{Field: "results.duration_ms", Err: fmt.Sprintf("%d is negative", t.Results.DurationMS), Fix: "set it to 0 or more"}
	}
	return nil
}

// SetOutput stores the tail of out in Results.Output, at most MaxOutput
// bytes, cut at a rune boundary.
func (t *Task) SetOutput(out string) {
	if t.Results == nil {
		t.Results = &Results{}
	}
	if len(out) > MaxOutput {
		out = strings.ToValidUTF8(out[len(out)-MaxOutput:], "")
	}
	t.Results.Output = out
}

func joinNames[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
