package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Fleet is the [fleet] section: several hosts sharing one PostgreSQL
// (DESIGN.md "Scale", issue 34). With database_url_env set, the world log
// lives in PostgreSQL instead of .clean_room/world.log.
type Fleet struct {
	// DatabaseURLEnv names the environment variable that holds the
	// PostgreSQL URL. The URL itself, with its password, is never
	// written to the config, a file or a command line.
	DatabaseURLEnv string `toml:"database_url_env,omitempty"`
	// Host is this host's name in the fleet; unset, the host name.
	Host string `toml:"host,omitempty"`
	// Remote is the git remote the hosts share branches through; unset,
	// "origin".
	Remote string `toml:"remote,omitempty"`
	// Lease is how long a host's claim on a run lasts without renewal,
	// a Go duration ("2m"); unset, DefaultLease.
	Lease string `toml:"lease,omitempty"`
	// Push says whether task branches travel through Remote: a run
	// fetches its task's branch cra/ID before it starts and pushes it
	// when it ends, and the knowledge store syncs through the branch
	// cra/knowledge (issue 34 items 4 and 6). Off unless set: one
	// machine needs no remote and no network, and a fleet says so
	// explicitly, each host then needing Remote configured.
	Push *bool `toml:"push,omitempty"`
}

// The defaults and bounds of [fleet].
const (
	DefaultRemote = "origin"
	DefaultLease  = 2 * time.Minute
	MinLease      = 10 * time.Second
	MaxLease      = 24 * time.Hour
)

var (
	hostPattern   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
	remotePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$`) })
)

// Validate returns the problems of the values present, each naming its
// key and the fix.
func (f *Fleet) Validate() []string {
	if f == nil {
		return nil
	}
	var problems []string
	if v := f.DatabaseURLEnv; v != "" && !envNamePattern().MatchString(v) {
		if strings.Contains(v, "://") || strings.Contains(v, "=") || strings.Contains(v, " ") {
			problems = append(problems, "fleet.database_url_env holds what looks like a URL or a setting: it names the environment variable that holds the URL (database_url_env = \"CRA_DATABASE_URL\", then export CRA_DATABASE_URL=postgres://…); a URL in the config would put its password in a file")
		} else {
			problems = append(problems, fmt.Sprintf("fleet.database_url_env is %q: name an environment variable (letters, digits, '_'), like CRA_DATABASE_URL", v))
		}
	}
	if v := f.Host; v != "" && !hostPattern().MatchString(v) {
		problems = append(problems, fmt.Sprintf("fleet.host is %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", v))
	}
	if v := f.Remote; v != "" && (!remotePattern().MatchString(v) || strings.Contains(v, "..")) {
		problems = append(problems, fmt.Sprintf("fleet.remote is %q: name a git remote, like origin", v))
	}
	if v := f.Lease; v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("fleet.lease is %q: write a duration like \"2m\" or \"90s\"", v))
		case d < MinLease || d > MaxLease:
			problems = append(problems, fmt.Sprintf("fleet.lease is %v: use %v to %v (a host renews its leases well within it)", d, MinLease, MaxLease))
		}
	}
	return problems
}

// Warnings returns what in the configuration is valid but most likely a
// mistake, each with its fix, for the commands that start or inspect a
// fleet to print (cra serve, cra fleet status).
func (c *Config) Warnings() []string {
	if c == nil {
		return nil
	}
	return c.Fleet.Warnings()
}

// Warnings returns what in [fleet] is valid but most likely a mistake:
// a database without push, where the hosts share the board but not the
// task branches nor the knowledge store.
func (f *Fleet) Warnings() []string {
	if f == nil || f.DatabaseURLEnv == "" || f.Push != nil && *f.Push {
		return nil
	}
	state := "unset"
	if f.Push != nil {
		state = "false"
	}
	return []string{fmt.Sprintf("[fleet] database_url_env is set but push is %s: the hosts share the board, "+
		"but not the task branches (a run another host restarts or recycles starts without the last run's work) "+
		"nor the knowledge store; set push = true under [fleet] in .clean_room/config.toml on every host, "+
		"each with [fleet] remote (default origin) naming the repository they share", state)}
}

// FleetSettings are [fleet] with the defaults filled in.
type FleetSettings struct {
	// DatabaseURLEnv is empty when no database is configured: the world
	// log is the file.
	DatabaseURLEnv string
	Host           string
	Remote         string
	Lease          time.Duration
	// Push is [fleet] push resolved: branches travel through Remote.
	Push bool
}

// FleetSettings resolves [fleet]: each key that is set replaces its
// default; the host defaults to the host name. A nil Config gives the
// defaults. Validate has checked the values.
func (c *Config) FleetSettings() (FleetSettings, error) {
	s := FleetSettings{Remote: DefaultRemote, Lease: DefaultLease}
	var f Fleet
	if c != nil && c.Fleet != nil {
		f = *c.Fleet
	}
	s.DatabaseURLEnv = f.DatabaseURLEnv
	if f.Push != nil {
		s.Push = *f.Push
	}
	if f.Remote != "" {
		s.Remote = f.Remote
	}
	if f.Lease != "" {
		d, err := time.ParseDuration(f.Lease)
		if err != nil {
			return s, fmt.Errorf("fleet.lease is %q: write a duration like \"2m\"", f.Lease)
		}
		s.Lease = d
	}
	s.Host = f.Host
	if s.Host == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return s, fmt.Errorf("no [fleet] host in config, and the host name cannot be read (%v): set fleet.host", err)
		}
		s.Host = h
	}
	return s, nil
}

// ErrNoDatabase says no [fleet] database_url_env is configured.
var ErrNoDatabase = errors.New("no PostgreSQL configured: set [fleet] database_url_env = \"CRA_DATABASE_URL\" in .clean_room/config.toml and export CRA_DATABASE_URL=postgres://…")

// DatabaseURL returns the PostgreSQL URL from the environment variable
// DatabaseURLEnv names, read through getenv (os.Getenv).
func (s FleetSettings) DatabaseURL(getenv func(string) string) (string, error) {
	if s.DatabaseURLEnv == "" {
		return "", ErrNoDatabase
	}
	url := strings.TrimSpace(getenv(s.DatabaseURLEnv))
	if url == "" {
		return "", fmt.Errorf("[fleet] database_url_env names %s, which is not set in the environment: export %s=postgres://…", s.DatabaseURLEnv, s.DatabaseURLEnv)
	}
	return url, nil
}
