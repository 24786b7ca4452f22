//go:build unix && !linux

package supervise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
)

// stat reads what Level 1 needs of process pid through gopsutil: its start
// time (CreateTime, milliseconds since the epoch), its process group and
// whether it is a zombie. A process that does not exist is errNoProcess.
func stat(ctx context.Context, pid int) (procStat, error) {
	p := &process.Process{Pid: int32(pid)}
	start, err := p.CreateTimeWithContext(ctx)
	if err != nil {
		if ok, perr := process.PidExistsWithContext(ctx, int32(pid)); perr == nil && !ok {
			return procStat{}, errNoProcess
		}
		return procStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return procStat{}, errNoProcess
		}
		return procStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	status, _ := p.StatusWithContext(ctx)
	return procStat{PGID: pgid, StartTime: start, Exited: slices.Contains(status, process.Zombie)}, nil
}
