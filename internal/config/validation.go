package config

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MaxProtected bounds validation.protected.
const MaxProtected = 200

// ValidationCommands returns [validation]'s test, lint and typecheck
// commands and its timeout (0 when unset or not a positive duration);
// ok is false when c is nil or has no [validation]. validation.FromConfig
// builds the validator from it.
func (c *Config) ValidationCommands() (test, lint, typecheck string, timeout time.Duration, ok bool) {
	if c == nil || c.Validation == nil {
		return "", "", "", 0, false
	}
	v := c.Validation
	if d, err := time.ParseDuration(v.Timeout); err == nil && d > 0 {
		timeout = d
	}
	return v.Test, v.Lint, v.Typecheck, timeout, true
}

// Empty says the section sets nothing.
func (v *Validation) Empty() bool {
	return v.Test == "" && v.Lint == "" && v.Typecheck == "" && v.Timeout == "" && len(v.Protected) == 0 && len(v.Caches) == 0
}

// validate returns the problems of [validation]'s values.
func (v *Validation) validate() []string {
	var problems []string
	if v.Timeout != "" {
		if d, err := time.ParseDuration(v.Timeout); err != nil || d <= 0 {
			problems = append(problems, fmt.Sprintf("validation.timeout is %q: use a duration like \"90s\" or \"10m\"", v.Timeout))
		}
	}
	if len(v.Protected) > MaxProtected {
		problems = append(problems, fmt.Sprintf("validation.protected has %d patterns: at most %d (a pattern like \"ci/**\" covers a directory)", len(v.Protected), MaxProtected))
	}
	for _, p := range v.Protected {
		if err := checkPattern(p); err != nil {
			problems = append(problems, fmt.Sprintf("validation.protected: %v", err))
		}
	}
	for _, dir := range v.Caches {
		if !filepath.IsAbs(dir) && !strings.HasPrefix(dir, "~/") && !strings.HasPrefix(dir, "$") {
			problems = append(problems, fmt.Sprintf("validation.caches has %q: give an absolute path, one under ~/, or one starting with an environment variable ($GOCACHE)", dir))
		}
	}
	return problems
}

// ExpandCache returns a cache directory as a command may write it: its
// environment variables expanded ($GOCACHE), a leading ~/ made the home
// directory, cleaned. What is not absolute then is an error: a cache is
// named absolutely.
func ExpandCache(dir string) (string, error) {
	var unset []string
	d := os.Expand(dir, func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			unset = append(unset, "$"+name)
		}
		return v
	})
	if len(unset) > 0 {
		// An empty variable would make "$X/cache" the root's "/cache".
		return "", fmt.Errorf("%s: %s is not set", dir, strings.Join(unset, ", "))
	}
	if rest, ok := strings.CutPrefix(d, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %s: %w", dir, err)
		}
		d = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(d) {
		return "", errors.New(dir + " is not absolute once expanded (" + d + ")")
	}
	return filepath.Clean(d), nil
}

// ServeTokenEnv is the variable 'cra serve' takes its API token from.
const ServeTokenEnv = "CRA_SERVE_TOKEN"

// SecretEnv names the environment variables this config reads secrets
// from (the models' API keys, the webhook's token, the daemon's API
// token, the fleet database's URL and, with one, libpq's variables set
// in this process, PGPASSWORD and the like): the code a validation
// command runs, which the agent wrote, has no need of them, so it does
// not get them. With the daemon's token or the database's credentials
// it could write its own verdict past the sandbox, which fences the
// daemon's port but not a database or a daemon on another host.
func (c *Config) SecretEnv() []string {
	out := []string{ServeTokenEnv}
	if c == nil {
		return out
	}
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if f := c.Fleet; f != nil && f.DatabaseURLEnv != "" {
		add(f.DatabaseURLEnv)
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "PG") && len(name) > 2 && strings.ToUpper(name) == name {
				add(name)
			}
		}
	}
	if m := c.Models; m != nil {
		add(m.APIKeyEnv)
		for _, e := range []*Endpoint{m.Supervisor, m.Summarizer} {
			if e != nil {
				add(e.APIKeyEnv)
			}
		}
	}
	if n := c.Notify; n != nil {
		add(n.WebhookTokenEnv)
	}
	return out
}

// errBadPattern is a pattern checkPattern refuses.
var errBadPattern = errors.New("bad pattern")

// checkPattern says why pattern is not one glob.Match reads, or nil: it
// is glob.Check, kept here so that config imports no package of cra's
// (TestCheckPatternIsGlobCheck holds the two together).
func checkPattern(pattern string) error {
	switch {
	case pattern == "":
		return fmt.Errorf("%w: it is empty", errBadPattern)
	case strings.HasPrefix(pattern, "/"):
		return fmt.Errorf("%w: %q is absolute; write it relative to the repository, like \"scripts/check.sh\"", errBadPattern, pattern)
	case strings.Contains(pattern, `\`):
		return fmt.Errorf("%w: %q holds a backslash; separate directories with /", errBadPattern, pattern)
	}
	for _, seg := range strings.Split(pattern, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("%w: %q has a segment %q; write a plain path inside the repository", errBadPattern, pattern, seg)
		case seg == "**":
		case strings.Contains(seg, "**"):
			return fmt.Errorf("%w: %q uses ** inside a segment; ** stands alone between slashes, like \"tests/**\"", errBadPattern, pattern)
		default:
			if _, err := path.Match(seg, ""); err != nil {
				return fmt.Errorf("%w: %q: %v", errBadPattern, pattern, err)
			}
		}
	}
	return nil
}
