package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

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
			if within(cwd, work) || mentions(string(cmdline), work) {
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

// mentions reports whether the command line cmdline names dir or a path
// below it: not another script's directory that starts with the same
// name (script-serve is not script-serve_board).
func mentions(cmdline, dir string) bool {
	for i := 0; ; {
		j := strings.Index(cmdline[i:], dir)
		if j < 0 {
			return false
		}
		end := i + j + len(dir)
		if end == len(cmdline) || strings.IndexByte("/\x00 \"':;", cmdline[end]) >= 0 {
			return true
		}
		i = i + j + 1
	}
}

func TestMentions(t *testing.T) {
	const dir = "/tmp/x/script-serve"
	for _, c := range []struct {
		cmdline string
		want    bool
	}{
		{"cra\x00serve\x00--repo\x00/tmp/x/script-serve/h1", true},
		{"sh\x00-c\x00cd /tmp/x/script-serve && sleep 1", true},
		{"cra\x00--repo=/tmp/x/script-serve", true},
		{"cra\x00sandbox-exec\x00--write\x00/tmp/x/script-serve_board/.clean_room/worktrees/t-1", false},
		{"cra\x00/tmp/x/script-serve_board\x00/tmp/x/script-serve/", true},
		{"cra serve", false},
	} {
		if got := mentions(c.cmdline, dir); got != c.want {
			t.Errorf("mentions(%q) = %v, want %v", c.cmdline, got, c.want)
		}
	}
}
