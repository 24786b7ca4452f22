package workspace

import (
	"context"
	"errors"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/world"
)

// WorldBackend says where the world log of a configuration lives.
type WorldBackend int

// The world log's backends.
const (
	WorldFile     WorldBackend = iota // .clean_room/world.log, the default
	WorldPostgres                     // PostgreSQL, with [fleet] database_url_env set
)

// ErrWorldInPostgres refuses the file world log to a command that would
// write it while [fleet] database_url_env keeps the log in PostgreSQL.
var ErrWorldInPostgres = errors.New("the world log is in PostgreSQL ([fleet] database_url_env), " +
	"but only 'cra log' and 'cra task' run on it yet: 'cra serve' and the runs still need the file log. " +
	"To run them, remove database_url_env from [fleet] in .clean_room/config.toml, " +
	"after 'cra fleet export --dir DIR' and moving DIR's world.log and tasks/ into .clean_room if PostgreSQL holds what the files lack")

// WorldBackendOf returns where cfg keeps the world log.
func WorldBackendOf(cfg *config.Config) WorldBackend {
	if cfg != nil && cfg.Fleet != nil && cfg.Fleet.DatabaseURLEnv != "" {
		return WorldPostgres
	}
	return WorldFile
}

// databaseURL reads the URL of cfg's PostgreSQL through getenv.
func databaseURL(cfg *config.Config, getenv func(string) string) (string, error) {
	fs, err := cfg.FleetSettings()
	if err != nil {
		return "", err
	}
	return fs.DatabaseURL(getenv)
}

// OpenPostgresWorld opens the world log in cfg's PostgreSQL, whose URL
// getenv reads from the variable [fleet] database_url_env names; close
// releases its connections.
func OpenPostgresWorld(ctx context.Context, cfg *config.Config, getenv func(string) string, now func() time.Time) (_ world.Store, close func(), _ error) {
	url, err := databaseURL(cfg, getenv)
	if err != nil {
		return nil, nil, err
	}
	l, err := pgstore.Open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	if now != nil {
		l.Now = now
	}
	return l, l.Close, nil
}

// FleetInit creates or migrates the schema of cfg's PostgreSQL (embedded,
// versioned migrations; hosts migrating at once take turns) and returns
// the schema's versions before and after.
func FleetInit(ctx context.Context, cfg *config.Config, getenv func(string) string) (from, to int, err error) {
	url, err := databaseURL(cfg, getenv)
	if err != nil {
		return 0, 0, err
	}
	return pgstore.Init(ctx, url)
}
