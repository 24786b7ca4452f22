//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the launcher's ABI; x32Bit marks x32 system calls, which
// share it.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)

func seccompSupported() error { return nil }
