//go:build !linux

package sandbox

import "os"

// ABI returns 0: Landlock is Linux's.
func ABI() int { return 0 }

// Restrict cannot confine a process here.
func Restrict(spec Spec) error { return ErrUnavailable }

// Launch cannot confine a process here.
func Launch(spec Spec, argv []string) error { return ErrUnavailable }

// netRuleset cannot keep a process off a port here.
func netRuleset(ports []int) (*os.File, error) { return nil, ErrUnavailable }

// ScopesAbstractSockets returns false: Landlock is Linux's.
func ScopesAbstractSockets() bool { return false }

// FencesPathSockets returns false: Landlock is Linux's.
func FencesPathSockets() bool { return false }
