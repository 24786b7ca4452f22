package fleet

import (
	"context"
	"io"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/knowledge/supervisor"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// The names of the fleet's parts that its callers take and give: a front
// end calls the fleet and names what it hands over as the fleet's, rather
// than importing each part (the board, the runner, Level 1, the
// supervisors) for a type or a constant.
type (
	// Board is the repository's board (board.Board), the fleet's Board.
	Board = board.Board
	// Task is a board task (board.Task); Folder, Kind and Priority its
	// folder, kind and priority.
	Task     = board.Task
	Folder   = board.Folder
	Kind     = board.Kind
	Priority = board.Priority
	// FieldError is a task field the board refuses (board.FieldError).
	FieldError = board.FieldError
	// RepairReport is what Repair moved (board.Report), a Repair one move.
	RepairReport = board.Report
	Repair       = board.Repair
	// RunReport is what a run's agent reports through cra (runner.Report).
	RunReport = runner.Report
	// SupervisorRunner runs the supervisor agents; SupervisorRecord is
	// one of their runs (knowledge/supervisor).
	SupervisorRunner = supervisor.Runner
	SupervisorRecord = supervisor.Record
	// Supervisor names a supervisor agent (knowledge.Supervisor).
	Supervisor = knowledge.Supervisor
	// KnowledgeStore is the knowledge store the supervisors write in
	// docs/knowledge/ (knowledge.Store); KnowledgeDoc a document of it,
	// KnowledgeListed one as a listing shows it, KnowledgeStatus its
	// status.
	KnowledgeStore  = knowledge.Store
	KnowledgeDoc    = knowledge.Doc
	KnowledgeListed = knowledge.Listed
	KnowledgeStatus = knowledge.Status
)

// The board's folders, kinds and branch prefix, the run's environment,
// the supervisors' urgency threshold and the review that waits, as the
// fleet's parts define them.
const (
	Pending       = board.Pending
	FailedBlocked = board.FailedBlocked
	KindTask      = board.KindTask
	KindDirective = board.KindDirective
	BranchPrefix  = board.BranchPrefix

	EnvTaskID    = supervise.EnvTaskID
	EnvRunID     = supervise.EnvRunID
	EnvRunToken  = runner.EnvRunToken
	EnvReportURL = runner.EnvReportURL

	UrgencyThreshold = supervisor.UrgencyThreshold

	// KnowledgeDir is the knowledge store's directory in the repository;
	// KnowledgeEstablished and KnowledgeDeprecated two of its statuses.
	KnowledgeDir         = knowledge.Dir
	KnowledgeEstablished = knowledge.Established
	KnowledgeDeprecated  = knowledge.Deprecated

	// ReviewWaits is the action of a review the model could not give.
	ReviewWaits = verdict.Wait
)

// ErrNotFound is a task the board does not have (board.ErrNotFound);
// ErrKnowledgePath a path that is not a document of the knowledge store
// (knowledge.ErrBadPath).
var (
	ErrNotFound      = board.ErrNotFound
	ErrKnowledgePath = knowledge.ErrBadPath
)

// Supervisors lists the supervisor agents (knowledge.Supervisors);
// ParseSupervisor reads one's name.
func Supervisors() []Supervisor                    { return knowledge.Supervisors() }
func ParseSupervisor(s string) (Supervisor, error) { return knowledge.ParseSupervisor(s) }

// CheckID says why id is not a task id (board.CheckID).
func CheckID(id string) error { return board.CheckID(id) }

// ParseFolder reads a folder's name (board.ParseFolder).
func ParseFolder(s string) (Folder, error) { return board.ParseFolder(s) }

// NewTask returns a pending task titled title (board.NewTask).
func NewTask(title string) *Task { return board.NewTask(title) }

// Priorities lists the priorities, highest first (board.Priorities).
func Priorities() []Priority { return board.Priorities() }

// DescribeSupervisorRun says in a line what a supervisor run did
// (supervisor.Describe).
func DescribeSupervisorRun(rec *SupervisorRecord) string { return supervisor.Describe(rec) }

// SendReport sends a run's report to the cra that started the run, at url
// with the run's token (runner.Send).
func SendReport(ctx context.Context, url, token string, rep RunReport) (*world.Entry, error) {
	return runner.Send(ctx, url, token, rep)
}

// Supervise runs one Level 1 pass over the fleet's log and board ('cra
// supervise --once'), its lines to out; with dryRun it only says what it
// would do. It returns how many actions the pass took (or, dry, would
// take), those that only wait left out.
func (f *Fleet) Supervise(ctx context.Context, dryRun bool, out io.Writer) (int, error) {
	p := f.Level1(out, false)
	p.DryRun, p.Now = dryRun, f.now
	actions, err := p.Run(ctx)
	taken := 0
	for _, a := range actions {
		if _, wait := a.(supervise.Wait); !wait {
			taken++
		}
	}
	return taken, err
}
