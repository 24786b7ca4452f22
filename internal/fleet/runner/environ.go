package runner

import (
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/config"
)

// envServeToken is the daemon's token ('cra serve'), which opens every
// mutating endpoint of its API wherever it listens.
const envServeToken = "CRA_SERVE_TOKEN"

// agentEnviron is cra's environment less the secrets that decide or
// write verdicts, which an agent must not hold: the daemon's token and
// the variable [fleet] database_url_env names (the URL of the database
// that keeps the world log, with its password). An agent holding either
// could write its own verdict past the sandbox, which fences the
// daemon's port but not a database on another host.
func agentEnviron(environ []string, cfg *config.Config) []string {
	drop := []string{envServeToken}
	if cfg != nil && cfg.Fleet != nil && cfg.Fleet.DatabaseURLEnv != "" {
		drop = append(drop, cfg.Fleet.DatabaseURLEnv)
	}
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, name)
	})
}
