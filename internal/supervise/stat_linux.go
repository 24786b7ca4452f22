package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// stat reads what Level 1 needs of process pid from /proc/<pid>/stat: its
// start time (field 22, clock ticks since boot), its process group
// (field 5) and whether it is a zombie or dead (field 3). The raw ticks,
// not gopsutil's CreateTime, are the start time: CreateTime adds the boot
// time from /proc/stat, which moves when the wall clock is stepped, and a
// live run must never read as another process. A process that does not
// exist is errNoProcess.
func stat(_ context.Context, pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return procStat{}, errNoProcess
		}
		return procStat{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return parseStat(pid, data)
}

// parseStat parses the contents of /proc/<pid>/stat. The command name
// (field 2) may hold spaces and parentheses, so the fields are counted
// from its last ')'.
func parseStat(pid int, data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("process %d: malformed stat %q", pid, data)
	}
	f := bytes.Fields(data[i+1:]) // f[0] is field 3
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("process %d: malformed stat: %d fields after the name", pid, len(f))
	}
	pgid, err1 := strconv.Atoi(string(f[2]))
	start, err2 := strconv.ParseInt(string(f[19]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("process %d: malformed stat: %w", pid, err)
	}
	state := string(f[0])
	return procStat{PGID: pgid, StartTime: start, Exited: state == "Z" || state == "X" || state == "x"}, nil
}
