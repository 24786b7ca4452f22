// Package lazyre compiles a regular expression on its first use instead
// of at start-up: every cra command starts the same binary, and a
// package-level regexp.MustCompile costs each of them, a 'cra log'
// append included, whether it matches anything or not.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr once, on its first call, and
// then returns it; expr must compile (as for regexp.MustCompile).
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
