package world

import (
	"errors"
	"strconv"
	"strings"
)

// ErrMovedOn is a task whose run ended, or that moved on, between a
// reader's look at the log and its action on that run (a Level 1 restart
// or failure): the decision is stale and is dropped.
var ErrMovedOn = errors.New("the run ended or the task moved on since the pass looked")

// ParseRun returns N from an [agent:active] entry's output "run N:
// profile" (or "run N" alone); ok is false when the output does not start
// that way.
func ParseRun(output string) (n int, ok bool) {
	rest, found := strings.CutPrefix(output, "run ")
	if !found {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	if end == 0 || end < len(rest) && rest[end] != ':' && rest[end] != ' ' {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}
