package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/glob"
)

// MaxProtected bounds validation.protected.
const MaxProtected = 200

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
		if err := glob.Check(p); err != nil {
			problems = append(problems, fmt.Sprintf("validation.protected: %v", err))
		}
	}
	for _, dir := range v.Caches {
		if !filepath.IsAbs(dir) && !strings.HasPrefix(dir, "~/") {
			problems = append(problems, fmt.Sprintf("validation.caches has %q: give an absolute path, or one under ~/ (for Go's build cache, the output of 'go env GOCACHE')", dir))
		}
	}
	return problems
}

// ExpandHome returns dir with a leading ~/ replaced by the home
// directory, cleaned; an absolute dir comes back cleaned. Anything else
// is an error: a cache is named absolutely.
func ExpandHome(dir string) (string, error) {
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %s: %w", dir, err)
		}
		return filepath.Join(home, rest), nil
	}
	if !filepath.IsAbs(dir) {
		return "", errors.New(dir + " is neither absolute nor under ~/")
	}
	return filepath.Clean(dir), nil
}
