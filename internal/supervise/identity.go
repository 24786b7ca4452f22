package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// The environment variables that tag an agent process with its task and
// run (issue 13, agent profiles). Every process the processor starts
// carries both, and its children inherit them.
const (
	EnvTaskID = "CRA_TASK_ID"
	EnvRunID  = "CRA_RUN_ID"
	// EnvStateDir names the .clean_room/ of the repository whose board
	// started the run, so that a pass over one repository never takes
	// another repository's agents for its orphans.
	EnvStateDir = "CRA_STATE_DIR"
)

// RunFileName is the name of a run's identity file in its run directory,
// .clean_room/runs/<task_id>/run.json (DESIGN.md, "Where state lives").
const RunFileName = statedir.RunFile

// Identity names one run of a task's agent: the process, when it started
// and which run it is. A pid alone is not an identity: once the process
// exits the kernel hands the number to the next process that asks. The
// start time tells the run from a process that merely reused its pid, and
// the run number tells it from an older run of the same task (seed 002
// Phase 3, issue 13 item 6).
type Identity struct {
	PID int `json:"pid"`
	// StartTime is the process's start time as the OS reports it: on
	// Linux /proc/<pid>/stat field 22, clock ticks since boot (1/100 s
	// on common kernels); elsewhere gopsutil's CreateTime in
	// milliseconds since the epoch. It is compared, never converted to a
	// wall-clock time.
	StartTime int64  `json:"start_time"`
	Run       int    `json:"run"` // the run number, as in the log's "run N"
	TaskID    string `json:"task_id"`
	// StarterPID and StarterStart name the process that started the run
	// and waits for it (a daemon, or 'cra task run'); 0 when unknown. A
	// run whose starter is alive is never taken over.
	StarterPID   int   `json:"starter_pid,omitempty"`
	StarterStart int64 `json:"starter_start,omitempty"`
}

// StarterAlive reports whether the process that started the run is still
// alive (and so still waiting for it).
func (id Identity) StarterAlive(ctx context.Context) bool {
	if id.StarterPID <= 0 {
		return false
	}
	ok, err := Identity{PID: id.StarterPID, StartTime: id.StarterStart}.Alive(ctx)
	return ok && err == nil
}

// errNoProcess is a pid that names no process.
var errNoProcess = errors.New("no such process")

// procStat is what Level 1 reads of a process.
type procStat struct {
	PGID      int
	StartTime int64
	Exited    bool // a zombie: it has exited, its parent has not reaped it
}

// Self returns the identity of the calling process, with the task id and
// run number from its own CRA_TASK_ID and CRA_RUN_ID (zero values when
// unset): a wrapper that runs an agent can record itself.
func Self(ctx context.Context) (Identity, error) {
	id, err := Of(ctx, os.Getpid())
	if err != nil {
		return Identity{}, err
	}
	id.TaskID = os.Getenv(EnvTaskID)
	id.Run, _ = strconv.Atoi(os.Getenv(EnvRunID))
	return id, nil
}

// Of returns the pid and start time of the live process pid. The caller
// fills in Run and TaskID: the processor knows them when it starts the
// run, and a process's environment is not always readable.
func Of(ctx context.Context, pid int) (Identity, error) {
	return identify(ctx, pid, false)
}

// OfChild returns the identity of pid, a child the caller started and has
// not reaped yet: a child that already exited is a zombie, whose pid no
// other process can take until it is reaped, so its identity is still its
// own (and Alive reports it gone). A quick agent exits before the
// processor reads it; Of would refuse it and leave no run file.
func OfChild(ctx context.Context, pid int) (Identity, error) {
	return identify(ctx, pid, true)
}

// identify is Of, and OfChild when exited is allowed.
func identify(ctx context.Context, pid int, exited bool) (Identity, error) {
	if pid <= 0 {
		return Identity{}, fmt.Errorf("process %d: not a process id", pid)
	}
	st, err := stat(ctx, pid)
	if err == nil && st.Exited && !exited {
		err = errNoProcess
	}
	if err != nil {
		return Identity{}, fmt.Errorf("identify process %d: %w", pid, err)
	}
	return Identity{PID: pid, StartTime: st.StartTime}, nil
}

// Alive reports whether the run is still running: its pid names a live
// process (not a zombie) whose start time is the recorded one. A process
// that reused the pid is not this run, so it is not alive as this run.
// The error is for a process that exists but cannot be read.
func (id Identity) Alive(ctx context.Context) (bool, error) {
	if id.PID <= 0 {
		return false, nil
	}
	st, err := stat(ctx, id.PID)
	if errors.Is(err, errNoProcess) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !st.Exited && st.StartTime == id.StartTime, nil
}

// String names the run as the log and dry-run output do.
func (id Identity) String() string {
	return fmt.Sprintf("task %s run %d (pid %d, start time %d)", id.TaskID, id.Run, id.PID, id.StartTime)
}

// RunFile returns the path of task taskID's identity file under runsDir
// (.clean_room/runs). The task id must be one path element, so that no id
// reaches outside runsDir.
func RunFile(runsDir, taskID string) (string, error) {
	if taskID == "" || taskID == "." || taskID == ".." || strings.ContainsAny(taskID, `/\`+"\x00") {
		return "", fmt.Errorf("task id %q cannot name a run directory", taskID)
	}
	return statedir.RunAt(filepath.Join(runsDir, taskID)).Identity(), nil
}

// ClaimFileName is the name of a run's claim in its run directory,
// .clean_room/runs/<task_id>/starting.json: the process that starts run N
// writes it before it logs the run active, since the run's own identity
// (run.json) exists only once its process does, after the worktree, the
// knowledge and the prompt. Until then the claim tells another process's
// pass (a daemon's Level 1 beside a 'cra task run') that the run has a
// live starter, however long the start takes.
const ClaimFileName = statedir.ClaimFile

// ClaimFile returns the path of task taskID's claim under runsDir.
func ClaimFile(runsDir, taskID string) (string, error) {
	path, err := RunFile(runsDir, taskID)
	if err != nil {
		return "", err
	}
	return statedir.RunAt(filepath.Dir(path)).Claim(), nil
}

// Claim is a run's starter before the run has a process: an Identity
// whose PID and StartTime are 0.
func Claim(ctx context.Context, taskID string, run int) (Identity, error) {
	self, err := Self(ctx)
	if err != nil {
		return Identity{}, err
	}
	return Identity{TaskID: taskID, Run: run, StarterPID: self.PID, StarterStart: self.StartTime}, nil
}

// LoadClaim reads a claim saved by Save. A missing file is an error for
// which errors.Is(err, fs.ErrNotExist) holds; a malformed one is an error
// that names the file.
func LoadClaim(path string) (Identity, error) {
	id, err := decodeIdentity(path)
	if err != nil {
		return Identity{}, err
	}
	if id.PID != 0 || id.StarterPID <= 0 || id.TaskID == "" || id.Run < 0 {
		return Identity{}, fmt.Errorf("load run claim %s: malformed: needs a starter's pid, a task id and no pid, got pid %d starter %d task %q run %d",
			path, id.PID, id.StarterPID, id.TaskID, id.Run)
	}
	return id, nil
}

// Save writes the identity to path, whole or not at all (DESIGN.md
// principle 5), creating its directory when missing.
func (id Identity) Save(path string) error {
	data, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return fmt.Errorf("save run identity: %w", err)
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// LoadIdentity reads an identity saved by Save. A missing file is an error
// for which errors.Is(err, fs.ErrNotExist) holds; a malformed one (torn,
// edited by hand, from another program) is an error that names the file.
func LoadIdentity(path string) (Identity, error) {
	id, err := decodeIdentity(path)
	if err != nil {
		return Identity{}, err
	}
	if id.PID <= 0 || id.TaskID == "" || id.Run < 0 {
		return Identity{}, fmt.Errorf("load run identity %s: malformed: needs a positive pid and a task id, got pid %d task %q run %d", path, id.PID, id.TaskID, id.Run)
	}
	return id, nil
}

// decodeIdentity reads the one JSON object of an identity or claim file.
func decodeIdentity(path string) (Identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Identity{}, fmt.Errorf("load run identity: %w", err)
	}
	var id Identity
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&id); err != nil {
		return Identity{}, fmt.Errorf("load run identity %s: malformed: %w", path, err)
	}
	if dec.More() {
		return Identity{}, fmt.Errorf("load run identity %s: malformed: data after the object", path)
	}
	return id, nil
}
