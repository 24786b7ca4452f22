package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder records what an Executor asks of its functions, in order.
type recorder struct{ calls []string }

func (r *recorder) executor() *Executor {
	return &Executor{
		Restart: func(_ context.Context, a Restart, event string) error {
			if a.ID == "moved" {
				return fmt.Errorf("task moved: %w", ErrMovedOn)
			}
			r.calls = append(r.calls, "log ["+a.ID+"] "+event, "restart "+a.ID)
			return nil
		},
		Fail: func(_ context.Context, a Fail) error {
			r.calls = append(r.calls, "fail "+a.ID+" | need: "+a.Need)
			return nil
		},
		Log: func(_ context.Context, id, output string) error {
			r.calls = append(r.calls, "log ["+id+"] "+output)
			return nil
		},
		Stop: func(_ context.Context, k Kill, _ time.Duration) (bool, error) {
			r.calls = append(r.calls, "stop "+k.TaskID)
			return k.TaskID != "gone", nil
		},
	}
}

func TestApply(t *testing.T) {
	var r recorder
	e := r.executor()
	var out bytes.Buffer
	e.Out = &out
	err := e.Apply(context.Background(), []Action{
		Kill{PID: 11, PGID: 11, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"},
		Kill{PID: 12, TaskID: "gone", Reason: "orphan", Detail: "d"},
		Restart{ID: "T-1", Reason: "not running", Detail: "run 2, pid 7, has exited"},
		Wait{ID: "T-2", Until: time.Unix(0, 0)},
		Fail{ID: "T-3", Reason: "r", Need: "n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"stop T-x",
		"log [11] killed | reason: orphan (task T-x is not active in the log)",
		"stop gone",
		"log [T-1] restarted | reason: not running (run 2, pid 7, has exited)",
		"restart T-1",
		"fail T-3 | need: n",
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), "kill process 12 of task gone run 0: orphan (d): already gone") {
		t.Errorf("output %q does not say the gone process was left alone", out.String())
	}
}

func TestApplyErrors(t *testing.T) {
	ctx := context.Background()
	var r recorder
	e := r.executor()
	e.Restart = nil
	if err := e.Apply(ctx, []Action{Restart{ID: "T-1"}}); err == nil || !strings.Contains(err.Error(), "Executor.Restart") {
		t.Errorf("no Restart function: got %v, want an error naming it", err)
	}
	if len(r.calls) != 0 {
		t.Errorf("calls %v, want none before the check", r.calls)
	}

	// A restart that fails (its log line could not be written) is an
	// error, and the next actions still run; one whose task moved on is
	// dropped, said, and no error.
	e = r.executor()
	var out bytes.Buffer
	e.Out = &out
	boom := errors.New("disk full")
	restart := e.Restart
	e.Restart = func(ctx context.Context, a Restart, event string) error {
		if a.ID == "T-1" {
			return boom
		}
		return restart(ctx, a, event)
	}
	err := e.Apply(ctx, []Action{Restart{ID: "T-1"}, Restart{ID: "moved", Run: 3}, Restart{ID: "T-2", Reason: "r", Detail: "d"}})
	if !errors.Is(err, boom) || errors.Is(err, ErrMovedOn) {
		t.Errorf("got %v, want %v alone", err, boom)
	}
	if diff := cmp.Diff([]string{"log [T-2] restarted | reason: r (d)", "restart T-2"}, r.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), "moved: not restarted: task moved: the run ended") {
		t.Errorf("output %q does not say the moved task was left alone", out.String())
	}
}

func TestApplyDryRunTakesNothing(t *testing.T) {
	var r recorder
	e := r.executor()
	var out bytes.Buffer
	e.DryRun, e.Out = true, &out
	e.Restart, e.Fail = nil, nil // not needed in a dry run
	err := e.Apply(context.Background(), []Action{
		Kill{PID: 4321, PGID: 4321, TaskID: "T-x", Run: 1, Reason: "orphan", Detail: "task T-x is not active in the log"},
		Restart{ID: "T-1", Reason: "not running", Detail: "run 1 has no recorded process"},
		Fail{ID: "T-3", Reason: "r", Need: "n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 0 {
		t.Errorf("a dry run called %v", r.calls)
	}
	want := "would kill process group 4321 (pid 4321) of task T-x run 1: orphan (task T-x is not active in the log)\n" +
		"would restart T-1: not running (run 1 has no recorded process)\n" +
		"would fail T-3: r | need: n\n"
	if got := out.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
