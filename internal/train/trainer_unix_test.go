//go:build unix

package train

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/corpus"
)

// TestRunCancel: cancelling 'cra train' ends the [train] command and what
// it started, and reports it; no adapter is taken.
func TestRunCancel(t *testing.T) {
	dir := t.TempDir()
	j := &Job{Dataset: corpus.Dataset{ID: 1, Stage: "scope", BaseModel: "reasoning", Path: dir}, Weights: Weights{ID: "m"}, Dir: dir}
	if err := os.MkdirAll(j.Out(), 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "child.pid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := j.Run(ctx, dir, "sleep 300 & echo $! > "+pidFile+"; wait", "m.yaml", "a.yaml", &strings.Builder{})
		done <- err
	}()
	var pid int
	for pid == 0 {
		data, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	err := <-done
	var re *RunError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a RunError", err)
	}
	// The grandchild went with the group (a zombie until reaped counts as gone).
	for i := 0; ; i++ {
		if syscall.Kill(pid, 0) != nil || isZombie(pid) {
			break
		}
		if i > 500 {
			t.Fatalf("sleep %d outlived the cancelled command", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func isZombie(pid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), "Z")
}

// TestRunEnvironment: the command sees the configurations, the dataset and
// the output directory, and its adapter is collected.
func TestRunEnvironment(t *testing.T) {
	dir := t.TempDir()
	j := &Job{Dataset: corpus.Dataset{ID: 4, Stage: "execute_code", BaseModel: "coding", Path: filepath.Join(dir, "data")},
		Weights: Weights{ID: "org/coder"}, Dir: filepath.Join(dir, "train")}
	if err := os.MkdirAll(j.Out(), 0o755); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	adapter, err := j.Run(context.Background(), dir,
		`echo "$CRA_TRAIN_MLX_CONFIG $CRA_TRAIN_AXOLOTL_CONFIG $CRA_TRAIN_DATASET_DIR $CRA_TRAIN_STAGE $CRA_TRAIN_BASE_MODEL $CRA_TRAIN_MODEL"; `+
			`touch "$CRA_TRAIN_OUTPUT_DIR/adapters.safetensors"; pwd`, "m.yaml", "a.yaml", &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "m.yaml a.yaml " + j.Dataset.Path + " execute_code coding org/coder\n" + dir + "\n"
	if out.String() != want {
		t.Errorf("output: got %q, want %q", out.String(), want)
	}
	if adapter != filepath.Join(j.Out(), "adapters.safetensors") {
		t.Errorf("adapter: got %q", adapter)
	}
	if got := j.RegisterCommand("/a b/x.gguf"); got != "cra adapters register --stage execute_code --base-model coding --adapter '/a b/x.gguf' --dataset 4" {
		t.Errorf("register command: %s", got)
	}
	_, err = j.Run(context.Background(), dir, "exit 0", "m.yaml", "a.yaml", &out)
	if err == nil || !strings.Contains(err.Error(), "exited 0 but left no new adapter") {
		t.Errorf("no new adapter: got %v", err)
	}
}
