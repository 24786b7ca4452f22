package supervise

import (
	"context"
	"testing"

	"github.com/shirou/gopsutil/v4/process"
)

func TestTags(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		task string
		run  int
		ok   bool
	}{
		{"both", []string{"PATH=/bin", "CRA_TASK_ID=T-1", "CRA_RUN_ID=4", ""}, "T-1", 4, true},
		{"no run", []string{"CRA_TASK_ID=T-1"}, "T-1", 0, true},
		{"bad run", []string{"CRA_TASK_ID=T-1", "CRA_RUN_ID=four"}, "T-1", 0, true},
		{"negative run", []string{"CRA_TASK_ID=T-1", "CRA_RUN_ID=-2"}, "T-1", 0, true},
		{"empty task", []string{"CRA_TASK_ID=", "CRA_RUN_ID=1"}, "", 1, false},
		{"untagged", []string{"HOME=/root", "CRA_RUN_ID=1"}, "", 1, false},
		{"value with =", []string{"CRA_TASK_ID=a=b"}, "a=b", 0, true},
		{"the last wins", []string{"CRA_TASK_ID=x", "CRA_TASK_ID=y"}, "y", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, run, ok := tags(tc.env)
			if task != tc.task || run != tc.run || ok != tc.ok {
				t.Errorf("got %q %d %v, want %q %d %v", task, run, ok, tc.task, tc.run, tc.ok)
			}
		})
	}
}

// BenchmarkScan is one look at every process of the machine, what each
// Level 1 pass pays whatever the board holds (b.ReportMetric: processes).
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Scan(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pids)), "procs")
}
