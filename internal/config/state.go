package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
)

// StateDir returns the state directory of a repository root.
func StateDir(repo string) string { return filepath.Join(repo, Dir) }

// EnsureStateDir creates repo/.clean_room if needed and returns its path.
// The directory carries its own .gitignore ("*") so that commands run
// before 'cra init' (which also lists it in the repository's .gitignore)
// never show up in 'git status'.
func EnsureStateDir(repo string) (string, error) {
	dir := filepath.Join(repo, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	ignore := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := atomicfile.Write(ignore, []byte("# cra state: never committed\n*\n"), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// EnsureGitignored adds ".clean_room/" to repo/.gitignore unless a line
// already ignores it. It reports whether the file changed.
func EnsureGitignored(repo string) (bool, error) {
	path := filepath.Join(repo, ".gitignore")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read .gitignore: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		switch strings.TrimSpace(line) {
		case Dir, Dir + "/", "/" + Dir, "/" + Dir + "/":
			return false, nil
		}
	}
	var buf bytes.Buffer
	buf.Write(data)
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		buf.WriteByte('\n')
	}
	buf.WriteString(Dir + "/\n")
	if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
		return false, err
	}
	return true, nil
}
