// Package world is the world log: one append-only plain-text file,
// <repo>/.clean_room/world.log, that is the truth of what happened (seed 002,
// DESIGN.md principle 1). Folders, board columns, the side index and read
// markers are views rebuilt from it.
//
// # Format
//
// Every line is an event (a fact) or an agent lifecycle step:
//
//	[2025-01-02T03:04:05.678Z][event:bash][git-status] clean
//	[2025-01-02T03:04:05.678Z][agent:start][T-12] add a flag | need: tests pass
//
// In order:
//   - The timestamp is RFC 3339 in UTC with milliseconds; readers accept any
//     RFC 3339 time.
//   - The kind field is event:SOURCE (Sources; readers accept any
//     lowercase name so newer logs read) or agent:STATUS (Statuses).
//   - The identifier is an event's subject or an agent's session (task) id.
//   - " OUTPUT" follows when the output is not empty, and " | need: NEED"
//     when the need is not empty.
//   - Output and need are escaped by Escape, so a line holds no control
//     character: \\ \n \r \t, \xNN for other C0 controls, DEL and
//     invalid UTF-8 bytes, \uNNNN for C1 controls and U+2028/U+2029, and
//     \| for a '|' that would read as the start of " | need: ". The
//     identifier is escaped the same way, with '[' and ']' as \x5b and \x5d.
//     Unescape(Escape(s)) == s for every s.
//   - Readers also accept the old format "[timestamp] [source]
//     [task-id:status] description" (see ParseLine); writers write only the
//     new one. A malformed line is reported with its number and skipped.
//
// # Appends
//
// An append is one write(2) on an O_APPEND descriptor under flock(2) on
// world.log.lock: shared for events up to 4096 bytes (PIPE_BUF), exclusive
// for longer entries, for agent entries (whose lifecycle check and write
// must not be split) and for compaction. Many writers in many processes
// never tear or interleave lines. Log.Sync sets when appends are fsynced.
//
// # Lifecycle
//
// Agent entries are checked against the agent's current status (see Next):
// start → active → finish → verified | retry | failed, retry → active,
// failed → retry only after an [event:user] for the agent, and finish →
// verified only after an [event:review] for it. The current statuses come
// from the side index world.log.idx, which records the byte offsets of each
// agent's latest and start entries and how far into the log it reaches; an
// append reads it and only the log written since. It is rebuilt from the
// log when missing, unreadable, or describing another file (device, inode
// and the bytes before its offset are checked).
//
// The file can be written by other hands than cra's (a person's editor, an
// agent that can reach it). Reading holds to the same rules as writing: the
// fold that gives each agent's current status skips an agent entry the
// lifecycle forbids where it stands, so that a line appended by hand, a
// verified with no review after the run's finish, moves no task. Such
// entries are reported (Log.Broken while replaying, Log.Skipped, and
// Record.Skipped for every reader of the lines) and compaction moves them
// to the archive. A log of the old format alone, before cra wrote to it,
// is read as written; the part of a log a compaction wrote holds of a
// verified agent only its start and verified entries, which stand there.
package world

import (
	"time"

	"github.com/cra-dev/cra/internal/lazyre"
)

// Kind says whether an entry is an event or an agent lifecycle step.
type Kind string

// The two kinds of entry (seed 002 phase 1).
const (
	KindEvent Kind = "event" // a fact, not tracked
	KindAgent Kind = "agent" // a step in a tracked lifecycle
)

// Source names where an event came from.
type Source string

// Event sources: seed 002's and cra's own stages.
const (
	SourceChrome     Source = "chrome"
	SourceBash       Source = "bash"
	SourceFile       Source = "file"
	SourceAPI        Source = "api"
	SourceSystem     Source = "system"
	SourceUser       Source = "user"
	SourceIndex      Source = "index"
	SourceEnrich     Source = "enrich"
	SourceRetrieve   Source = "retrieve"
	SourcePlan       Source = "plan"
	SourceSolve      Source = "solve"
	SourceBoard      Source = "board"
	SourceSupervisor Source = "supervisor"
	// SourceMCP is a tool call an agent made to 'cra mcp' (issue 31): the
	// tool, what it returned, and the caller's run when known.
	SourceMCP Source = "mcp"
	// SourceReview is a review of a finished run, logged by the recycler
	// (or a person's move to completed-finalized, or 'cra solve' on its
	// validation) before the verdict: a verified stands only after one
	// (see Next).
	SourceReview Source = "review"
)

// Sources returns the sources cra writes, in the order they are documented.
func Sources() []Source {
	return []Source{
		SourceChrome, SourceBash, SourceFile, SourceAPI, SourceSystem, SourceUser,
		SourceIndex, SourceEnrich, SourceRetrieve, SourcePlan, SourceSolve, SourceBoard, SourceSupervisor, SourceMCP,
		SourceReview,
	}
}

// Known reports whether s is one of Sources. Reading accepts any
// well-formed source name, so that a log written by a newer cra still
// reads; writing accepts only known ones.
func (s Source) Known() bool {
	for _, k := range Sources() {
		if s == k {
			return true
		}
	}
	return false
}

// Status is an agent's lifecycle status.
type Status string

// Agent statuses (seed 002 phase 1).
const (
	StatusStart    Status = "start"    // project created
	StatusActive   Status = "active"   // agent running
	StatusFinish   Status = "finish"   // agent thinks it is done
	StatusVerified Status = "verified" // success confirmed
	StatusRetry    Status = "retry"    // try again
	StatusFailed   Status = "failed"   // cannot proceed without a person
)

// Statuses returns every agent status in lifecycle order.
func Statuses() []Status {
	return []Status{StatusStart, StatusActive, StatusFinish, StatusVerified, StatusRetry, StatusFailed}
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, k := range Statuses() {
		if s == k {
			return true
		}
	}
	return false
}

// Settled reports whether s ends a lifecycle: "件件有着落" means every agent
// that started reaches one of these (seed 002).
func (s Status) Settled() bool { return s == StatusVerified || s == StatusFailed }

// Entry is one line of the world log.
type Entry struct {
	Time   time.Time `json:"time"`
	Kind   Kind      `json:"kind"`
	Source Source    `json:"source,omitempty"` // events only
	Status Status    `json:"status,omitempty"` // agents only
	// ID is the event's identifier or the agent's session (task) id.
	ID     string `json:"id"`
	Output string `json:"output"`
	// Need is the text after " | need: ": success criteria on a start entry,
	// what a person must do on a failed one.
	Need string `json:"need,omitempty"`
	// Legacy marks an entry read from the pre-seed-002 format
	// "[timestamp] [source] [task-id:status] description".
	Legacy bool `json:"legacy,omitempty"`
}

// sourcePattern is the shape of a source name; it keeps the kind field free
// of ']' and ':' so that a line parses one way only.
var sourcePattern = lazyre.New(`^[a-z][a-z0-9_-]{0,31}$`)
