package cli

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
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
	dir, err := config.EnsureStateDir(repo)
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
			opts := cmp.AllowUnexported(logCommon{}, logFilterFlags{}, logEventOptions{}, logAgentOptions{},
				logCheckOptions{}, logQueryOptions{}, logTailOptions{}, logCompactOptions{})
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLogQueryAgents(t *testing.T) {
	repo := logRepo(t,
		agentStep(world.StatusStart, "T-1", "add a flag", "tests pass"), // 03:05:05
		agentStep(world.StatusActive, "T-1", "running solve", ""),       // 03:06:05
		agentStep(world.StatusStart, "T-2", "fix\na bug", ""),           // 03:07:05
		agentStep(world.StatusActive, "T-2", "running", ""),             // 03:08:05
		eventStep(world.SourceBash, "T-2", "go test"),                   // 03:09:05
		agentStep(world.StatusStart, "T-3", "docs", ""),                 // 03:10:05
		agentStep(world.StatusFailed, "T-3", "no access", "grant access"),
	)
	now := logT0.Add(time.Hour)
	tests := []struct {
		name string
		opts logQueryOptions
		want string
	}{
		{"current", logQueryOptions{current: true}, `ID   STATUS  SINCE                 SILENT  OUTPUT
T-1  active  2025-01-02T03:06:05Z  58m0s   running solve
T-2  active  2025-01-02T03:08:05Z  55m0s   running
T-3  failed  2025-01-02T03:11:05Z  53m0s   no access | need: grant access
`},
		{"limbo", logQueryOptions{limbo: 56 * time.Minute}, `ID   STATUS  SINCE                 SILENT  OUTPUT
T-1  active  2025-01-02T03:06:05Z  58m0s   running solve
`},
		{"nobody in limbo", logQueryOptions{limbo: 2 * time.Hour}, "no agent in limbo: every unsettled agent moved within 2h0m0s\n"},
		{"current of a status", logQueryOptions{current: true, logFilterFlags: logFilterFlags{statuses: []string{"failed"}}, logCommon: logCommon{json: true}},
			`{"id":"T-3","status":"failed","since":"2025-01-02T03:11:05Z","output":"no access","need":"grant access","last_seen":"2025-01-02T03:11:05Z","retries":0}` + "\n"},
		{"count", logQueryOptions{current: true, count: true, logFilterFlags: logFilterFlags{ids: []string{"T-1", "T-2"}}}, "2\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, out, errOut := logTestDeps(now)
			tc.opts.repo = repo
			if err := logQueryRun(context.Background(), d, &tc.opts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if errOut.String() != "" {
				t.Errorf("got stderr %q, want none", errOut.String())
			}
		})
	}
}

// TestLogTailFollow follows the log until the context ends, which is the
// normal way to stop: no error.
func TestLogTailFollow(t *testing.T) {
	repo := logRepo(t, eventStep(world.SourceBash, "a", "one"), eventStep(world.SourceBash, "b", "two"))
	d, out, _ := logTestDeps(logT0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- logTailRun(ctx, d, &logTailOptions{logCommon: logCommon{repo: repo}, lines: 1, follow: true})
	}()
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), s) {
			if time.Now().After(deadline) {
				t.Fatalf("got %q, want %q within 10s", out.String(), s)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("two")
	if err := world.LogEvent(context.Background(), filepath.Join(repo, config.Dir), world.SourceUser, "c", "three"); err != nil {
		t.Fatal(err)
	}
	waitFor("three")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("got %v, want nil after cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("tail -f did not stop after cancel")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "[b] two") || !strings.HasSuffix(lines[1], "[c] three") {
		t.Errorf("got %q, want the last entry and the new one", lines)
	}
}
