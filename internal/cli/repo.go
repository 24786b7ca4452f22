package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/workspace"
)

// openWorkspace opens the repository at dir (the nearest one holding
// .clean_room/, or dir itself when exact) and warns about the config's
// unknown keys instead of ignoring them silently.
func openWorkspace(ctx context.Context, d *deps, dir string, exact bool) (*workspace.Workspace, error) {
	ws, err := workspace.Open(ctx, dir, workspace.Options{Exact: exact, Logger: d.logger})
	if err != nil {
		return nil, err
	}
	warnUnknownKeys(d, ws.Root, ws.Config)
	return ws, nil
}

// loadConfig loads the repository's config and warns about unknown keys,
// for commands that need no more of the workspace.
func loadConfig(d *deps, repo string) (*config.Config, error) {
	cfg, err := workspace.LoadConfig(repo)
	if err != nil {
		return nil, err
	}
	warnUnknownKeys(d, repo, cfg)
	return cfg, nil
}

// warnUnknownKeys says which keys of the repository's config cra ignores.
func warnUnknownKeys(d *deps, repo string, cfg *config.Config) {
	if cfg != nil && len(cfg.Unknown) > 0 {
		fmt.Fprintf(d.errOut, "warning: %s has unknown keys, ignored: %s\n", workspace.ConfigPath(repo), strings.Join(cfg.Unknown, ", "))
	}
}

// warnConfig says what in the repository's config is valid but most
// likely a mistake (config.Config.Warnings), with its fix: for the
// commands that start or inspect a fleet, where it matters.
func warnConfig(d *deps, cfg *config.Config) {
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(d.errOut, "warning: %s\n", w)
	}
}

// runError makes a run refused for its inputs a usage error.
func runError(err error) error {
	var ie *run.InputError
	if errors.As(err, &ie) {
		return usageError{err: err}
	}
	return err
}

// relPath shows path relative to base when it is inside it.
func relPath(base, path string) string { return run.RelPath(base, path) }
