package supervise

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shirou/gopsutil/v4/process"
)

// Process is a live process tagged with a task: its environment carries
// CRA_TASK_ID. An agent's children inherit the tags, so one run is often
// several processes in one process group.
type Process struct {
	PID       int
	PGID      int   // process group
	StartTime int64 // as in Identity.StartTime
	TaskID    string
	// Run is the number in CRA_RUN_ID; 0 when it is missing or not a
	// positive number, which no active run has.
	Run int
	// StateDir is CRA_STATE_DIR: the repository state directory whose
	// board started it; "" when the environment names none.
	StateDir string
}

// Identity returns p as a run identity.
func (p Process) Identity() Identity {
	return Identity{PID: p.PID, StartTime: p.StartTime, Run: p.Run, TaskID: p.TaskID}
}

// Scan returns every live process, other than the caller, whose
// environment carries CRA_TASK_ID, ordered by pid. A process whose
// environment or status cannot be read (another user's, one that exited
// meanwhile) is skipped: Level 1 only concerns the processes cra started,
// which run as its own user. Only failing to list the processes is an
// error.
func Scan(ctx context.Context) ([]Process, error) {
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var out []Process
	for i, pid32 := range pids {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		pid := int(pid32)
		if pid == self || pid <= 1 {
			continue
		}
		if p, ok := tagged(ctx, pid); ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	return out, nil
}

// tagged reads process pid and reports whether it is live and tagged. The
// status is read before and after the environment, so that the
// environment of a process that exited meanwhile is never credited to
// one that reused its pid. Most processes of a machine carry no tag: the
// environment alone turns them away, read once, with no status (a pass
// read two statuses of every process, every few seconds).
func tagged(ctx context.Context, pid int) (Process, bool) {
	if env, err := environ(ctx, pid); err != nil {
		return Process{}, false
	} else if _, _, ok := tags(env); !ok {
		return Process{}, false
	}
	before, err := stat(ctx, pid)
	if err != nil || before.Exited {
		return Process{}, false
	}
	env, err := environ(ctx, pid)
	if err != nil {
		return Process{}, false
	}
	task, run, ok := tags(env)
	if !ok {
		return Process{}, false
	}
	state := ""
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, EnvStateDir+"="); found {
			state = v
		}
	}
	after, err := stat(ctx, pid)
	if err != nil || after.Exited || after.StartTime != before.StartTime {
		return Process{}, false
	}
	return Process{PID: pid, PGID: after.PGID, StartTime: after.StartTime, TaskID: task, Run: run, StateDir: state}, true
}

// tags returns the task id and run number an environment carries; ok is
// false when it has no non-empty CRA_TASK_ID.
func tags(env []string) (task string, run int, ok bool) {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case EnvTaskID:
			task = v
		case EnvRunID:
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				run = n
			} else {
				run = 0
			}
		}
	}
	return task, run, task != ""
}

// environ returns the environment process pid started with.
func environ(ctx context.Context, pid int) ([]string, error) {
	return (&process.Process{Pid: int32(pid)}).EnvironWithContext(ctx)
}
