package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// StateDir returns the state directory of a repository root.
func StateDir(repo string) string { return statedir.Of(repo).Path() }

// EnsureStateDir creates repo/.clean_room if needed and returns its path.
// The directory carries its own .gitignore ("*"), so that nothing of cra
// ever shows up in 'git status' and the repository's own .gitignore, a
// tracked file, is never edited.
func EnsureStateDir(repo string) (string, error) {
	sd := statedir.Of(repo)
	dir := sd.Path()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	ignore := sd.GitIgnore()
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := atomicfile.Write(ignore, []byte("# cra state: never committed\n*\n"), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
