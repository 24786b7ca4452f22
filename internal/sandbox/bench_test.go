//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"testing"
)

// BenchmarkLaunch is the launcher's cost per confined command: 'true'
// run directly, and through the launcher (exec of the launcher, Landlock's
// ruleset, exec of the command); then with a daemon's port guarded (the
// network ruleset, built once per process, and the seccomp filter), and
// the cost of building that ruleset. CRA_BENCH_EXE names the launcher binary
// to measure (a built cra); without it, this test binary launches.
//
//	go build -o /tmp/cra ./cmd/cra
//	CRA_BENCH_EXE=/tmp/cra go test ./internal/sandbox -run '^$' -bench Launch -benchtime 200x
func BenchmarkLaunch(b *testing.B) {
	if ABI() == 0 {
		b.Fatal("Landlock is missing on this kernel: nothing to measure")
	}
	exe := os.Getenv("CRA_BENCH_EXE")
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	b.Run("direct", func(b *testing.B) {
		for range b.N {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	launch := func(b *testing.B) {
		for range b.N {
			cmd := exec.Command("true")
			if err := Wrap(cmd, exe, Spec{Write: []string{dir, os.TempDir()}}); err != nil {
				b.Fatal(err)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	}
	b.Setenv("XDG_CACHE_HOME", b.TempDir())
	b.Run("launcher", launch)
	release, err := Guard(7777)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	b.Run("launcher-guarded", launch)
	b.Run("net-ruleset", func(b *testing.B) {
		for i := range b.N {
			f, err := netRuleset([]int{10000 + i%50000}) // a new set each time: no cache
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
