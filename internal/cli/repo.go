package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/config"
)

// repoDir checks that path is an existing directory and returns it absolute.
func repoDir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("repository path %q: %w", path, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("repository path %q does not exist: pass the directory of a repository", path)
	}
	if err != nil {
		return "", fmt.Errorf("repository path %q: %w", path, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("repository path %q is not a directory: pass the directory of a repository", path)
	}
	return abs, nil
}

// findRepo resolves --repo for commands that work on an existing state
// directory: the nearest ancestor of path (itself included) holding
// .clean_room/, or path itself when there is none.
func findRepo(path string) (string, error) {
	abs, err := repoDir(path)
	if err != nil {
		return "", err
	}
	for dir := abs; ; {
		if hasStateDir(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs, nil
		}
		dir = parent
	}
}

// hasStateDir reports whether dir holds a .clean_room/ directory.
func hasStateDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, config.Dir))
	return err == nil && st.IsDir()
}

// loadConfig loads the repository's config and warns about unknown keys
// instead of ignoring them silently.
func loadConfig(d *deps, repo string) (*config.Config, error) {
	cfg, err := config.Load(repo)
	if err != nil {
		return nil, err
	}
	warnUnknownKeys(d, repo, cfg)
	return cfg, nil
}

// warnUnknownKeys says which keys of the repository's config cra ignores.
func warnUnknownKeys(d *deps, repo string, cfg *config.Config) {
	if cfg != nil && len(cfg.Unknown) > 0 {
		fmt.Fprintf(d.errOut, "warning: %s has unknown keys, ignored: %s\n", config.Path(repo), strings.Join(cfg.Unknown, ", "))
	}
}

// relPath shows path relative to base when it is inside it.
func relPath(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
