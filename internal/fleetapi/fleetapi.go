// Package fleetapi names what front ends ask of one repository's fleet:
// the operations people, their commands and the daemon's API call (Ops)
// and the records they exchange (tasks with their folders, a task's
// runs and reviews, a run's outcome, a branch's diff, the settings).
// fleet.Fleet does them in process and server.Client asks a running
// daemon, so a command does not know which answered (gopls's connect).
// It sits below the fleet's workers: a front end that imports it pulls
// in the board and the records, never the recycler, evidence, Level 1
// or cleanup that carry the operations out.
package fleetapi

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/cra-dev/cra/internal/agentcli"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// Ops are the operations people, their commands and the daemon's API call
// on a repository's board. *Fleet does them in process; server.Client
// asks a running daemon to do them, so that a command does not know which
// answered (gopls's connect).
type Ops interface {
	// Add adds t to pending: its start entry first, then its file.
	Add(ctx context.Context, t *board.Task) (*board.Task, error)
	// Edit changes the fields p sets and returns the names of those that
	// changed.
	Edit(ctx context.Context, id string, p Patch) (*board.Task, []string, error)
	// Move is a person's move of task id to folder to, and returns the
	// folder it left.
	Move(ctx context.Context, id string, to board.Folder, why string) (board.Folder, error)
	// Answer records a person's answer; resumed says the task went back
	// to pending with it.
	Answer(ctx context.Context, id, text string) (resumed bool, err error)
	// List returns folder's tasks ("" for all), and the task files that
	// could not be read.
	List(ctx context.Context, folder board.Folder) (*Listing, error)
	// NeedsYou returns the tasks that wait for a person, with their need.
	NeedsYou(ctx context.Context) ([]NeedsYou, error)
	// Show returns a task with its log entries, runs and reviews.
	Show(ctx context.Context, id string) (*Detail, error)
	// RunOne runs task id once, now (a completed or failed task is moved
	// back to pending first, as a person's move), and returns how it
	// ended.
	RunOne(ctx context.Context, id string) (*Outcome, error)
	// RecycleOnce runs one recycler tick, its lines to out.
	RecycleOnce(ctx context.Context, out io.Writer) (*RecycleReport, error)
	// Stop stops task id's running run, as a person; no failure counts.
	Stop(ctx context.Context, id, why string) (*Stopped, error)
	// CloseTask closes task id as won't-do; Reopen undoes a close or a
	// stop.
	CloseTask(ctx context.Context, id, why string) (*board.Task, error)
	Reopen(ctx context.Context, id string) (*board.Task, error)
	// Merge merges task id's branch; PR pushes it and opens a pull
	// request.
	Merge(ctx context.Context, id string, o MergeOptions) (*board.Task, error)
	PR(ctx context.Context, id string, o PROptions) (*PullRequest, error)
	// Settings returns the board's settings (config.toml's [recycler]
	// and [models.summarizer]) with their bounds; SetSettings validates
	// in as config.toml's values are, logs [event:user][settings] with
	// what changed and then writes them, the other keys as they were. A
	// refused value is a *SettingError, and nothing is written.
	Settings(ctx context.Context) (*SettingsView, error)
	SetSettings(ctx context.Context, in Settings) (*SettingsView, error)
	// Cleanup runs one cleanup pass (seed 000) and returns its report
	// when it ends; a dry run asks no model and writes nothing.
	// ErrCleanupRunning while another pass runs.
	Cleanup(ctx context.Context, dryRun bool) (*CleanupReport, error)
	// Close releases what the operations hold.
	Close() error
}

// Review is a recycler's review of one run, as 'cra task show' and the
// board's drawer show it.
type Review = verdict.Review

// Patch is an edit of a task's descriptive fields: each set field
// replaces the task's.
type Patch struct {
	Title       *string         `json:"title,omitempty"`
	Need        *string         `json:"need,omitempty"`
	Description *string         `json:"description,omitempty"`
	Type        *string         `json:"type,omitempty"`
	Kind        *board.Kind     `json:"kind,omitempty"`
	Priority    *board.Priority `json:"priority,omitempty"`
	Milestone   *string         `json:"milestone,omitempty"`
	After       *[]string       `json:"after,omitempty"`
	Agent       *string         `json:"agent,omitempty"`
	NoChange    *bool           `json:"no_change,omitempty"`
	// TestsMayChange is --tests-may-change (board.Task.TestsMayChange).
	TestsMayChange *bool `json:"tests_may_change,omitempty"`
}

// Apply sets on t the fields p sets.
func (p Patch) Apply(t *board.Task) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&t.Title, p.Title)
	set(&t.Need, p.Need)
	set(&t.Description, p.Description)
	set(&t.Type, p.Type)
	set(&t.Milestone, p.Milestone)
	set(&t.Agent, p.Agent)
	if p.Kind != nil {
		t.Kind = *p.Kind
	}
	if p.Priority != nil {
		t.Priority = *p.Priority
	}
	if p.After != nil {
		t.After = append([]string(nil), (*p.After)...)
	}
	if p.NoChange != nil {
		t.NoChange = *p.NoChange
	}
	if p.TestsMayChange != nil {
		t.TestsMayChange = *p.TestsMayChange
	}
}

// TaskView is a task with its folder, as lists show it.
type TaskView struct {
	*board.Task
	Folder board.Folder `json:"folder"`
}

// Listing is what List read.
type Listing struct {
	Tasks []TaskView `json:"tasks"`
	// Problems are the task files that could not be read, skipped.
	Problems []string `json:"problems,omitempty"`
	// Skipped are the world log's agent entries the lifecycle forbids,
	// which moved no task (see Fleet.Skipped).
	Skipped []string `json:"skipped,omitempty"`
}

// NeedsYou is a task that waits for a person.
type NeedsYou struct {
	TaskView
	// Need is what a person must do: the need of the task's latest
	// [agent:failed] entry.
	Need string `json:"need_you"`
}

// Detail is one task as 'cra task show' and the board's drawer show it.
type Detail struct {
	Task   *board.Task  `json:"task"`
	Folder board.Folder `json:"folder"`
	// Entries are the task's world-log entries, oldest first.
	Entries []world.Entry `json:"entries"`
	// Runs are its runs, oldest first.
	Runs []Run `json:"runs"`
	// Reviews are the recycler's reviews, oldest first; BadReviews counts
	// the lines of the review history that could not be read.
	Reviews    []Review `json:"reviews"`
	BadReviews int      `json:"bad_reviews,omitempty"`
	// ReviewFile is the review history's path relative to the
	// repository (on a board in PostgreSQL, where the database keeps
	// it), set when BadReviews is.
	ReviewFile string `json:"review_file,omitempty"`
	// EvidenceText is the latest review's evidence as the recycler's
	// prompt shows it.
	EvidenceText string `json:"evidence_text,omitempty"`
	// WaitsForPerson: the task is failed in the log with an ending a
	// person must answer.
	WaitsForPerson bool `json:"waits_for_person"`
}

// WaitsForPerson says whether an agent whose latest lifecycle entry has
// status and output waits for a person's answer: failed, and not an
// ending that waits for no one (board.WaitsForNoOne).
func WaitsForPerson(status world.Status, output string) bool {
	return status == world.StatusFailed && !board.WaitsForNoOne(output)
}

// Run is one run of a task, from its [agent:active] entry to the entry
// that ended it.
type Run struct {
	N       int    `json:"n"`
	Profile string `json:"profile,omitempty"`
	// Host is the fleet's host that ran it; empty on one machine.
	Host string `json:"host,omitempty"`
	// Started and Finished are the times of its active entry and of the
	// entry that ended it; Finished is zero while it runs.
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished,omitzero"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	// Outcome is the ending entry's output: "exit 0: …", "run failed: …".
	Outcome  string `json:"outcome,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Log is the run's output file, runs/<id>/run-N.log relative to the
	// state directory, and LogBytes its size; empty when there is none.
	Log      string `json:"log,omitempty"`
	LogBytes int64  `json:"log_bytes,omitempty"`
}

// RecycleReport is what one recycler tick did.
type RecycleReport = verdict.Report

// Stopped is what Stop did.
type Stopped struct {
	Task *board.Task `json:"task"`
	Run  int         `json:"run"`
	// Killed says a live process group was signalled; false when the
	// run's process was gone already (its end is still logged).
	Killed bool `json:"killed"`
}

// MergeOptions are the choices of 'cra task merge'.
type MergeOptions struct {
	// Into is the branch merged into; "" is the branch the repository
	// has checked out.
	Into string `json:"into,omitempty"`
	// Squash makes one commit of the branch's changes.
	Squash bool `json:"squash,omitempty"`
	// Force merges a task that is not verified.
	Force bool `json:"force,omitempty"`
}

// PROptions are the choices of 'cra task pr'.
type PROptions struct {
	// Remote is where the branch is pushed; "" is origin, or the only
	// remote.
	Remote string `json:"remote,omitempty"`
	// Base is the pull request's base branch; "" is the branch the
	// repository has checked out.
	Base string `json:"base,omitempty"`
}

// PullRequest is what PR did, or what a person should run.
type PullRequest struct {
	Branch string `json:"branch"`
	Remote string `json:"remote"`
	Base   string `json:"base"`
	Pushed bool   `json:"pushed"`
	// URL is the pull request's address, as gh printed it; "" when gh
	// did not open one.
	URL string `json:"url,omitempty"`
	// Commands are what a person runs to open it by hand, when gh is
	// missing or not signed in.
	Commands []string `json:"commands,omitempty"`
	// Why says why gh was not used.
	Why string `json:"why,omitempty"`
}

// Workers says which of the fleet's loops a daemon runs.
type Workers struct {
	// Processor runs the board's pending tasks; Recycler reviews
	// finished runs; Supervisors runs the supervisor agents. Level 1
	// always runs.
	Processor, Recycler, Supervisors bool
	// PassEvery is the Level 1 interval; 0 is DefaultPassEvery.
	PassEvery time.Duration
	// TickEvery is the processor's interval; 0 is DefaultTickEvery.
	TickEvery time.Duration
	// Out gets a line per action and warning a person should see; nil
	// discards.
	Out io.Writer
}

// BranchDiff is the change a task's branch makes, as the web board's
// drawer shows it inline: the patch of cra/ID against the commit it forked
// from (the merge base with HEAD, as the review's evidence reads it), or,
// once the branch was merged, the change that merge brought.
type BranchDiff struct {
	Branch string `json:"branch"`
	// Base and Rev are the commits compared; empty with Missing.
	Base string `json:"base,omitempty"`
	Rev  string `json:"rev,omitempty"`
	// Patch is git's unified diff, cut to MaxDiff bytes at a line (Cut).
	Patch string `json:"patch"`
	Cut   bool   `json:"cut,omitempty"`
	// Merged says the patch is the merge's change into Merged.Into.
	Merged bool `json:"merged,omitempty"`
	// Missing says why there is no diff: the task has not run yet.
	Missing string `json:"missing,omitempty"`
}

// Outcome is one run as it ended: runner.Outcome, field for field (the
// fleet converts one into the other, so the two cannot drift apart).
type Outcome struct {
	ID      string `json:"id"`
	Run     int    `json:"run"`
	Profile string `json:"profile"`
	// Folder is where the task went: completed or failed.
	Folder board.Folder `json:"folder"`
	// ExitCode is the process's exit status; nil when it was killed, timed
	// out or never started.
	ExitCode *int `json:"exit_code,omitempty"`
	// Finish is the output of the run's [agent:finish] entry.
	Finish     string        `json:"finish"`
	Need       string        `json:"need,omitempty"`
	StartedAt  time.Time     `json:"started_at"`
	FinishedAt time.Time     `json:"finished_at"`
	Duration   time.Duration `json:"-"` // FinishedAt - StartedAt
	Branch     string        `json:"branch,omitempty"`
	Worktree   string        `json:"worktree,omitempty"`
	LogPath    string        `json:"log,omitempty"`
	PromptPath string        `json:"prompt,omitempty"`
	DiffStat   string        `json:"diff_stat,omitempty"`
	// Commit is the commit the run left its branch at when it pushed it
	// to the fleet's remote (Results.Commit); "" without [fleet] push.
	Commit string `json:"commit,omitempty"`
	// Command is the command a profile ran, its secrets masked; Summary
	// what a preset's output said, also in SummaryPath.
	Command     string            `json:"command,omitempty"`
	Summary     *agentcli.Summary `json:"summary,omitempty"`
	SummaryPath string            `json:"summary_path,omitempty"`
	// Class is how a preset's run was classified (agentcli.Class).
	Class string `json:"class,omitempty"`
}

// Completed reports whether the run ended in completed (exit 0).
func (o *Outcome) Completed() bool { return o.Folder == board.Completed }

// CleanupReport is what a cleanup pass did (verdict.CleanupReport).
type CleanupReport = verdict.CleanupReport

// CleanupPass is the last cleanup pass a fleet ran (not a dry run): its
// report, or why it failed, and when it ended.
type CleanupPass struct {
	Report   *CleanupReport `json:"report,omitempty"`
	Error    string         `json:"error,omitempty"`
	Finished time.Time      `json:"finished"`
}

// ErrCleanupRunning is a cleanup pass refused because one runs already,
// in this process or another.
var ErrCleanupRunning = verdict.ErrCleanupRunning

// SettingsID is the identifier of the [event:user] line a settings change
// writes, so that every open board reloads them.
const SettingsID = "settings"

// Settings are the board's Recycler tab (seed 004, "Settings &
// Configuration"), kept in config.toml's [recycler] and
// [models.summarizer].
type Settings struct {
	Recycler   RecyclerSettings   `json:"recycler"`
	Summarizer SummarizerSettings `json:"summarizer"`
}

// RecyclerSettings are the recycler's keys the board changes.
type RecyclerSettings struct {
	// EnabledFor is "off", "all" (or "both"), or a list of task types.
	EnabledFor          json.RawMessage `json:"enabled_for"`
	IntervalSeconds     int             `json:"interval_seconds"`
	CompletionThreshold int             `json:"completion_threshold"`
	FailureThreshold    int             `json:"failure_threshold"`
}

// SummarizerSettings are the summarizer's provider and model: the model
// that writes the recycler's notes ([models.summarizer]; without one the
// reasoning model does).
type SummarizerSettings struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// SettingsView is the settings as the board shows them: with their
// bounds, and what verifies a task, which only config.toml changes.
type SettingsView struct {
	Settings
	// Limits are the inclusive bounds of the numeric keys, by name.
	Limits       map[string][2]int `json:"limits"`
	Verification Verification      `json:"verification"`
}

// Verification is what the recycler verifies a task with: whether
// [validation] has a command, and whether [recycler] allow_unvalidated
// lets the model's word stand without one.
type Verification struct {
	ValidationConfigured bool `json:"validation_configured"`
	AllowUnvalidated     bool `json:"allow_unvalidated"`
}

// SettingError is a settings value SetSettings refuses: Field names its
// key ("recycler.interval_seconds"; empty when the config as a whole is
// refused) and Fix what to do. Nothing was written.
type SettingError struct {
	Field, Msg, Fix string
}

func (e *SettingError) Error() string { return e.Msg }
