// Package gittest runs git for tests: with a fixed identity and no user
// or system configuration, so a fixture repository is the same on every
// machine.
package gittest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Env is the environment git runs in: A U Thor <a@example.com> as author
// and committer, and neither ~/.gitconfig nor /etc/gitconfig read.
func Env() []string {
	return append(os.Environ(), "GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=a@example.com",
		"GIT_COMMITTER_NAME=A U Thor", "GIT_COMMITTER_EMAIL=a@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

// Run runs git -C dir args and returns its output, trimmed; a failure
// fails the test with git's output.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
