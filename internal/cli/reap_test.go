package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// reapAtEnd kills, when env's script ends, every process still running
// in its work directory or naming it on its command line: a daemon a
// script started in the background ('cra serve … &' in a shell script)
// outlives a script that failed or timed out before it stopped it, and
// such a daemon then retries its vanished database or repository for as
// long as the machine runs.
func reapAtEnd(env *testscript.Env) {
	work := env.WorkDir
	env.Defer(func() {
		procs, _ := os.ReadDir("/proc")
		self := os.Getpid()
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil || pid == self {
				continue
			}
			cwd, _ := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
			cmdline, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
			if within(cwd, work) || strings.Contains(string(cmdline), work) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// within reports whether path is dir or below it (a deleted directory's
// link ends in " (deleted)").
func within(path, dir string) bool {
	path = strings.TrimSuffix(path, " (deleted)")
	return path == dir || strings.HasPrefix(path, dir+"/")
}
