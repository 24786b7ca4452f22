//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's TCP rules see connect(2) on a TCP socket, and nothing else
// that opens a connection. Tried on Linux 6.18, a confined process still
// reached a denied port with a Multipath TCP socket (which a plain TCP
// listener accepts), with TCP Fast Open (sendto with MSG_FASTOPEN, which
// connects without connect(2)), and could through io_uring, which opens
// sockets and connects outside the system calls. So the launcher adds a
// seccomp filter that refuses those ways, with an errno a program falls
// back from:
//   - socket(2): only AF_UNIX, AF_NETLINK, AF_INET and AF_INET6, and for
//     the last two only TCP, UDP and ICMP (EAFNOSUPPORT, EPROTONOSUPPORT:
//     Go's MPTCP listener falls back to TCP);
//   - sendto, sendmsg and sendmmsg with MSG_FASTOPEN (EOPNOTSUPP);
//   - io_uring_setup (ENOSYS: libuv and others fall back to threads);
//   - any system call of another ABI than the launcher's (a 32-bit
//     binary, x32): ENOSYS.

// seccomp_data's offsets: nr, arch, then the arguments, 8 bytes each;
// a 32-bit load of an argument reads its low half (little-endian).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

func offArg(i int) uint32 { return offArg0 + uint32(i)*8 }

// insn is a classic BPF instruction whose jump, when taken, names a
// label; otherwise the next instruction runs.
type insn struct {
	label string // this instruction's, when jumped to
	code  uint16
	k     uint32
	jt    string // "" is the next instruction
}

func load(off uint32) insn { return insn{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off} }
func jeq(k uint32, to string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: to}
}
func jset(k uint32, to string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: k, jt: to}
}
func jge(k uint32, to string) insn {
	return insn{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: k, jt: to}
}
func ret(k uint32) insn { return insn{code: unix.BPF_RET | unix.BPF_K, k: k} }
func errno(e unix.Errno) uint32 {
	return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA
}
func at(label string, i insn) insn { i.label = label; return i }

// filter is the launcher's seccomp program for the native ABI. Classic
// BPF jumps only forward, so the shared answers come last.
func filter() []insn {
	prog := []insn{
		load(offArch),
		jeq(auditArch, "native"),
		ret(errno(unix.ENOSYS)),
		at("native", load(offNr)),
	}
	if x32Bit != 0 {
		prog = append(prog, jge(x32Bit, "nosys"))
	}
	return append(prog,
		jeq(unix.SYS_SOCKET, "socket"),
		jeq(unix.SYS_SENDTO, "flags3"),
		jeq(unix.SYS_SENDMMSG, "flags3"),
		jeq(unix.SYS_SENDMSG, "flags2"),
		jeq(unix.SYS_IO_URING_SETUP, "nosys"),
		ret(unix.SECCOMP_RET_ALLOW),
		at("flags3", load(offArg(3))),
		jset(unix.MSG_FASTOPEN, "fastopen"),
		ret(unix.SECCOMP_RET_ALLOW),
		at("flags2", load(offArg(2))),
		jset(unix.MSG_FASTOPEN, "fastopen"),
		ret(unix.SECCOMP_RET_ALLOW),
		at("socket", load(offArg(0))),
		jeq(unix.AF_UNIX, "allow"),
		jeq(unix.AF_NETLINK, "allow"),
		jeq(unix.AF_INET, "inet"),
		jeq(unix.AF_INET6, "inet"),
		ret(errno(unix.EAFNOSUPPORT)),
		at("inet", load(offArg(2))),
		jeq(0, "allow"),
		jeq(unix.IPPROTO_TCP, "allow"),
		jeq(unix.IPPROTO_UDP, "allow"),
		jeq(unix.IPPROTO_ICMP, "allow"),
		jeq(unix.IPPROTO_ICMPV6, "allow"),
		ret(errno(unix.EPROTONOSUPPORT)),
		at("allow", ret(unix.SECCOMP_RET_ALLOW)),
		at("fastopen", ret(errno(unix.EOPNOTSUPP))),
		at("nosys", ret(errno(unix.ENOSYS))),
	)
}

// assemble resolves prog's labels into relative jumps.
func assemble(prog []insn) ([]unix.SockFilter, error) {
	where := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			if _, dup := where[in.label]; dup {
				return nil, fmt.Errorf("seccomp filter: label %q twice", in.label)
			}
			where[in.label] = i
		}
	}
	rel := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := where[label]
		if !ok {
			return 0, fmt.Errorf("seccomp filter: no label %q", label)
		}
		d := to - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp filter: jump to %q from %d goes back or too far", label, from)
		}
		return uint8(d), nil
	}
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		jt, err := rel(i, in.jt)
		if err != nil {
			return nil, err
		}
		out[i] = unix.SockFilter{Code: in.code, K: in.k, Jt: jt}
	}
	return out, nil
}

// installSeccomp installs the filter on the calling thread (locked: the
// thread that execs); no_new_privs is already set.
func installSeccomp() error {
	if err := seccompSupported(); err != nil {
		return err
	}
	code, err := assemble(filter())
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(code)), Filter: &code[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("confine the process's sockets (seccomp): %w", err)
	}
	return nil
}
