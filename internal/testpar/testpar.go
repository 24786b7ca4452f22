// Package testpar sets how many of a test package's parallel tests run
// at once. Tests that wait on child processes, git or PostgreSQL most of
// their time leave a small machine's cores idle at go test's default
// (GOMAXPROCS), so their packages' TestMain raise it.
package testpar

import (
	"flag"
	"runtime"
	"strconv"
)

// Default parses the test flags and, unless the command line gives
// -test.parallel, sets it to n or GOMAXPROCS, whichever is more. Call it
// first in TestMain, before m.Run.
func Default(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
