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
	fleetDB := cfg != nil && cfg.Fleet != nil && cfg.Fleet.DatabaseURLEnv != ""
	if fleetDB {
		drop = append(drop, cfg.Fleet.DatabaseURLEnv)
	}
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		// With the fleet's state in PostgreSQL, libpq's variables may
		// reach it too; without, they are the project's own (its tests'
		// database) and stay.
		return slices.Contains(drop, name) || fleetDB && libpqVar(name)
	})
}

// libpqVar reports whether name is one of libpq's connection variables
// (PGPASSWORD, PGPASSFILE, PGSERVICEFILE, PGHOST, …), which pgx and psql
// read as much as a URL: an agent holding them holds the database's
// credentials without the URL.
func libpqVar(name string) bool {
	return strings.HasPrefix(name, "PG") && len(name) > 2 && strings.ToUpper(name) == name
}
