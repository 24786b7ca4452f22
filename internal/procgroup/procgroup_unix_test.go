//go:build unix

package procgroup

import (
	"os/exec"
	"testing"
	"time"
)

// cpuOf reads a stat line's group and CPU ticks after the command's last
// ')', whatever the command's name holds.
func TestCPUOf(t *testing.T) {
	tests := []struct {
		line  string
		pgid  int
		ticks int64
		ok    bool
	}{
		{"4242 (node) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 11 0 1000 0 0", 4242, 13, true},
		{"77 (a) b (c)) R 1 70 70 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0", 70, 2, true},
		{"1 (init) S 0 1 1", 0, 0, false},
		{"no parenthesis here", 0, 0, false},
		{"5 (x) S 1 5 5 0 -1 0 0 0 0 0 a 1 0 0", 0, 0, false},
	}
	for _, tc := range tests {
		pgid, ticks, ok := cpuOf([]byte(tc.line))
		if pgid != tc.pgid || ticks != tc.ticks || ok != tc.ok {
			t.Errorf("cpuOf(%q) = %d, %d, %v; want %d, %d, %v", tc.line, pgid, ticks, ok, tc.pgid, tc.ticks, tc.ok)
		}
	}
}

// CPU counts the CPU time a busy group uses, and none for no group.
func TestCPU(t *testing.T) {
	if ticks, ok := CPU(-1); !ok || ticks != 0 {
		t.Fatalf("CPU of no group: %d, %v; want 0, true", ticks, ok)
	}
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	Own(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { Stop(cmd.Process.Pid, time.Second, time.Second); cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ticks, ok := CPU(cmd.Process.Pid); ok && ticks > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a busy loop's group used no CPU time in 30 s")
		}
	}
}
