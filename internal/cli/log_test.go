package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var logT0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func logTestDeps(now time.Time) (*deps, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	return &deps{
		in:     strings.NewReader(""),
		out:    out,
		errOut: errOut,
		logger: slog.New(slog.DiscardHandler),
		now:    func() time.Time { return now },
	}, out, errOut
}

// logRepo returns a repository whose world log holds entries written at the
// given minutes after logT0.
func logRepo(t *testing.T, entries ...func(l *world.Log) error) string {
	t.Helper()
	repo := t.TempDir()
	dir, err := workspace.EnsureStateDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	l, err := world.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := logT0
	l.Now = func() time.Time { now = now.Add(time.Minute); return now }
	for _, e := range entries {
		if err := e(l); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

func agentStep(s world.Status, id, out, need string) func(*world.Log) error {
	return func(l *world.Log) error {
		_, err := l.Agent(context.Background(), s, id, out, need)
		return err
	}
}

func eventStep(src world.Source, id, out string) func(*world.Log) error {
	return func(l *world.Log) error {
		_, err := l.Event(context.Background(), src, id, out)
		return err
	}
}

func TestLogCmdFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		make func(d *deps, capture func(any) error) *cobra.Command
		want any
	}{
		{"event", []string{"bash", "git-status", "clean", "--repo", "r", "--fsync", "always", "--json"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogEventCmd(d, func(_ context.Context, _ *deps, o *logEventOptions) error { return c(*o) })
			},
			logEventOptions{logCommon: logCommon{repo: "r", json: true}, source: "bash", id: "git-status", output: "clean", fsync: "always"}},
		{"agent", []string{"start", "T-1", "add a flag", "--need", "tests pass"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogAgentCmd(d, func(_ context.Context, _ *deps, o *logAgentOptions) error { return c(*o) })
			},
			logAgentOptions{logCommon: logCommon{repo: "."}, status: "start", id: "T-1", output: "add a flag", need: "tests pass", fsync: ""}},
		{"check", []string{"--marker", "level2", "--reset"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogCheckCmd(d, func(_ context.Context, _ *deps, o *logCheckOptions) error { return c(*o) })
			},
			logCheckOptions{logCommon: logCommon{repo: "."}, marker: "level2", reset: true}},
		{"query", []string{"--kind", "agent", "--status", "active,finish", "--status", "retry", "--id", "T-1", "--since", "2h", "--text", "x", "--count", "--no-index"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogQueryCmd(d, func(_ context.Context, _ *deps, o *logQueryOptions) error { return c(*o) })
			},
			logQueryOptions{logCommon: logCommon{repo: "."}, logFilterFlags: logFilterFlags{kind: "agent", statuses: []string{"active", "finish", "retry"},
				ids: []string{"T-1"}, since: "2h", text: "x"}, count: true, noIndex: true}},
		{"query limbo", []string{"--limbo", "90m", "--current"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogQueryCmd(d, func(_ context.Context, _ *deps, o *logQueryOptions) error { return c(*o) })
			},
			logQueryOptions{logCommon: logCommon{repo: "."}, current: true, limbo: 90 * time.Minute}},
		{"tail", []string{"-n", "3", "-f", "--source", "bash,user"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogTailCmd(d, func(_ context.Context, _ *deps, o *logTailOptions) error { return c(*o) })
			},
			logTailOptions{logCommon: logCommon{repo: "."}, logFilterFlags: logFilterFlags{sources: []string{"bash", "user"}}, lines: 3, follow: true}},
		{"compact", []string{"--events-before", "720h"},
			func(d *deps, c func(any) error) *cobra.Command {
				return newLogCompactCmd(d, func(_ context.Context, _ *deps, o *logCompactOptions) error { return c(*o) })
			},
			logCompactOptions{logCommon: logCommon{repo: "."}, eventsBefore: "720h"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, _ := logTestDeps(logT0)
			var got any
			cmd := tc.make(d, func(o any) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if diff := deepDiff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// failWriter is a stdout that cannot be written: a full disk under
// 'cra log check > new.txt', a closed pipe.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestLogCheckMarkerWaitsForOutput: lines that could not be printed are
// printed by the next check: the marker moves only once they are out.
func TestLogCheckMarkerWaitsForOutput(t *testing.T) {
	repo := logRepo(t, eventStep(world.SourceBash, "e1", "one"), eventStep(world.SourceBash, "e2", "two"))
	d, _, _ := logTestDeps(logT0)
	d.out = failWriter{}
	if err := logCheckRun(context.Background(), d, &logCheckOptions{logCommon: logCommon{repo: repo}, marker: "r"}); err == nil {
		t.Fatal("the first check reported success though nothing was printed")
	}
	d2, out, _ := logTestDeps(logT0)
	if err := logCheckRun(context.Background(), d2, &logCheckOptions{logCommon: logCommon{repo: repo}, marker: "r"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[e1]") || !strings.Contains(out.String(), "[e2]") {
		t.Fatalf("second check printed %q, want e1 and e2, which the first could not print", out.String())
	}
}
