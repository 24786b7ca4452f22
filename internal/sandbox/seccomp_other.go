//go:build linux && !amd64 && !arm64

package sandbox

import (
	"fmt"
	"runtime"
)

func seccompSupported() error {
	return fmt.Errorf("cra cannot keep a confined process off cra serve's port on %s (its seccomp filter is for amd64 and arm64): stop cra serve while agents run", runtime.GOARCH)
}

func installSeccomp() error { return seccompSupported() }
