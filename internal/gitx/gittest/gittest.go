// Package gittest runs git for tests: with a fixed identity and no user
// or system configuration, so a fixture repository is the same on every
// machine.
package gittest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// Init makes a repository with branch main in a new temporary directory
// and returns its path.
func Init(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Run(t, dir, "init", "-q", "-b", "main")
	return dir
}

// WriteFile writes content to dir/name (a slash-separated path), making
// its directories.
func WriteFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Commit writes files into dir, commits everything with message (an
// empty commit when nothing changed) and returns the commit's hash.
func Commit(t testing.TB, dir, message string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		WriteFile(t, dir, name, content)
	}
	Run(t, dir, "add", "-A")
	Run(t, dir, "commit", "-q", "--allow-empty", "-m", message)
	return Run(t, dir, "rev-parse", "HEAD")
}

// ZeroBlob writes into the repository at dir a blob of size zero bytes,
// streamed to git hash-object (never whole in memory), and returns its
// id: a huge file that costs git little (it compresses to almost
// nothing). Add it to a tree with 'git update-index --add --cacheinfo
// 100644,ID,PATH'.
func ZeroBlob(t testing.TB, dir string, size int64) string {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "hash-object", "-w", "--stdin")
	cmd.Env = Env()
	cmd.Stdin = io.LimitReader(zeros{}, size)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git hash-object: %v", err)
	}
	return strings.TrimSpace(string(out))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
