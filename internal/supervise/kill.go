//go:build unix

package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// DefaultGrace is how long Stop waits after SIGTERM before SIGKILL: long
// enough for an agent to flush its output, short enough for one pass.
const DefaultGrace = 5 * time.Second

// ErrRefused is a kill Level 1 never performs: pid 0 or 1, the caller
// itself or the caller's own process group.
var ErrRefused = errors.New("refused to signal")

// pollEvery is how often Stop looks whether the processes have exited.
const pollEvery = 50 * time.Millisecond

// Stop ends the process k names: its process group when k.PGID is set,
// else the process alone. Right before signalling it checks that k.PID
// still names the process that started at k.StartTime; when it does not,
// the process is gone and its pid may be another's, so nothing is
// signalled and Stop returns false. It sends SIGTERM, waits up to grace
// (DefaultGrace when 0) for the processes to exit, and sends SIGKILL to
// those that did not, checking again first. It returns whether it sent
// any signal, and an error when a process outlives SIGKILL. It never
// signals pid 0 or 1, the caller or the caller's process group
// (ErrRefused).
func Stop(ctx context.Context, k Kill, grace time.Duration) (bool, error) {
	if grace <= 0 {
		grace = DefaultGrace
	}
	if err := refuse(k); err != nil {
		return false, err
	}
	// The group's members, for SIGKILL later; listed before the check so
	// that nothing slow sits between the check and the signal.
	var members []member
	if k.PGID != 0 {
		var err error
		if members, err = groupMembers(ctx, k.PGID); err != nil {
			return false, fmt.Errorf("kill process group %d: %w", k.PGID, err)
		}
	}
	st, err := stat(ctx, k.PID)
	if errors.Is(err, errNoProcess) || err == nil && (st.Exited || st.StartTime != k.StartTime) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kill process %d: %w", k.PID, err)
	}
	pgid := k.PGID
	if pgid != 0 && st.PGID != pgid {
		pgid, members = 0, nil // it left the group it was found in: signal it alone
	}
	leader := member{k.PID, k.StartTime}
	if err := signal(k.PID, pgid, syscall.SIGTERM); err != nil {
		return false, err
	}
	left, err := waitExit(ctx, leader, pgid, members, grace)
	if err != nil || !left {
		return true, err
	}
	if err := kill9(ctx, leader, pgid, members); err != nil {
		return true, err
	}
	left, err = waitExit(ctx, leader, pgid, members, killWait)
	if err == nil && left {
		err = fmt.Errorf("kill process %d: still running %v after SIGKILL (stuck in the kernel?)", k.PID, killWait)
	}
	return true, err
}

// killWait is how long Stop waits for the processes to go after SIGKILL,
// which the kernel delivers at once unless a process is stuck in an
// uninterruptible wait.
const killWait = 2 * time.Second

// waitExit waits up to d for the signalled processes to exit and reports
// whether any is left.
func waitExit(ctx context.Context, leader member, pgid int, members []member, d time.Duration) (bool, error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		left, err := remaining(ctx, leader, pgid, members)
		if err != nil || !left {
			return left, err
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-deadline.C:
			return true, nil
		case <-tick.C:
		}
	}
}

// refuse returns ErrRefused for a target Level 1 must never signal.
func refuse(k Kill) error {
	self := os.Getpid()
	switch {
	case k.PID <= 1 || k.PID == self:
		return fmt.Errorf("%w process %d", ErrRefused, k.PID)
	case k.PGID != 0 && (k.PGID <= 1 || k.PGID == self || k.PGID == syscall.Getpgrp()):
		return fmt.Errorf("%w process group %d (own group or init)", ErrRefused, k.PGID)
	}
	return nil
}

// member is one process of a group, by pid and start time.
type member struct {
	PID       int
	StartTime int64
}

// alive reports whether m still runs. unsure is the answer when its
// status cannot be read: true to keep waiting for it, false before a
// signal, which needs proof.
func (m member) alive(ctx context.Context, unsure bool) bool {
	ok, err := Identity{PID: m.PID, StartTime: m.StartTime}.Alive(ctx)
	if err != nil {
		return unsure
	}
	return ok
}

// groupMembers lists the live processes of group pgid.
func groupMembers(ctx context.Context, pgid int) ([]member, error) {
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []member
	for _, p := range pids {
		st, err := stat(ctx, int(p))
		if err == nil && !st.Exited && st.PGID == pgid {
			out = append(out, member{int(p), st.StartTime})
		}
	}
	return out, nil
}

// remaining reports whether any process Stop signalled still runs: the
// leader, or for a group any live member (processes started after the
// snapshot included).
func remaining(ctx context.Context, leader member, pgid int, members []member) (bool, error) {
	if leader.alive(ctx, true) {
		return true, nil
	}
	if pgid == 0 {
		return false, nil
	}
	now, err := groupMembers(ctx, pgid)
	return len(now) > 0, err
}

// kill9 sends SIGKILL to what is left. The group is signalled only while
// one of the processes seen before SIGTERM still lives, which proves the
// group number still names the same group; otherwise each survivor of
// the snapshot is signalled alone, after its start time is checked.
func kill9(ctx context.Context, leader member, pgid int, members []member) error {
	if pgid != 0 {
		for _, m := range append([]member{leader}, members...) {
			if m.alive(ctx, false) {
				return signal(leader.PID, pgid, syscall.SIGKILL)
			}
		}
		return nil
	}
	if leader.alive(ctx, false) {
		return signal(leader.PID, 0, syscall.SIGKILL)
	}
	return nil
}

// signal sends sig to group pgid, or to pid when pgid is 0. A target that
// is already gone is not an error.
func signal(pid, pgid int, sig syscall.Signal) error {
	target, what := pid, "process"
	if pgid != 0 {
		target, what = -pgid, "process group"
		pid = pgid
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s %d with %v: %w", what, pid, sig, err)
	}
	return nil
}
