package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

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
	if err := world.LogEvent(context.Background(), filepath.Join(repo, statedir.Name), world.SourceUser, "c", "three"); err != nil {
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
