package supervise

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIdentitySaveLoad(t *testing.T) {
	path, err := RunFile(filepath.Join(t.TempDir(), "runs"), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{PID: 4242, StartTime: 123456, Run: 3, TaskID: "T-1"}
	if err := want.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if filepath.Base(filepath.Dir(path)) != "T-1" || filepath.Base(path) != RunFileName {
		t.Errorf("got path %s, want runs/T-1/%s", path, RunFileName)
	}
}

func TestLoadIdentityErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadIdentity(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v, want fs.ErrNotExist", err)
	}
	for _, tc := range []struct{ name, data string }{
		{"empty", ""},
		{"torn", `{"pid": 12, "start_ti`},
		{"not json", "pid=12\n"},
		{"wrong type", `{"pid": "12", "start_time": 1, "run": 1, "task_id": "T"}`},
		{"no pid", `{"start_time": 1, "run": 1, "task_id": "T"}`},
		{"no task", `{"pid": 12, "start_time": 1, "run": 1}`},
		{"two objects", `{"pid": 12, "start_time": 1, "run": 1, "task_id": "T"} {}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadIdentity(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "malformed") {
				t.Errorf("got %v, want a malformed error naming %s", err, path)
			}
		})
	}
}

func TestRunFileRejectsPaths(t *testing.T) {
	for _, id := range []string{"", ".", "..", "a/b", `a\b`, "../x", "a\x00b"} {
		if p, err := RunFile("runs", id); err == nil {
			t.Errorf("RunFile(%q): got %s, want an error", id, p)
		}
	}
}

func TestSelfIsAlive(t *testing.T) {
	ctx := context.Background()
	t.Setenv(EnvTaskID, "T-self")
	t.Setenv(EnvRunID, "7")
	id, err := Self(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.PID != os.Getpid() || id.TaskID != "T-self" || id.Run != 7 {
		t.Errorf("got %+v, want pid %d task T-self run 7", id, os.Getpid())
	}
	if ok, err := id.Alive(ctx); !ok || err != nil {
		t.Errorf("Alive of self: got %v %v, want true", ok, err)
	}
	// The same pid with another start time is another process.
	other := id
	other.StartTime++
	if ok, err := other.Alive(ctx); ok || err != nil {
		t.Errorf("Alive with another start time: got %v %v, want false", ok, err)
	}
	if ok, _ := (Identity{PID: 0}).Alive(ctx); ok {
		t.Error("Alive of pid 0: got true")
	}
}

func FuzzLoadIdentity(f *testing.F) {
	f.Add([]byte(`{"pid": 12, "start_time": 99, "run": 1, "task_id": "T-1"}`))
	f.Add([]byte(`{"pid": 12, "start_ti`))
	f.Add([]byte("null"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "run.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		id, err := LoadIdentity(path)
		if err != nil {
			return
		}
		if err := id.Save(path); err != nil {
			t.Fatal(err)
		}
		again, err := LoadIdentity(path)
		if err != nil || again != id {
			t.Fatalf("reload of %+v: got %+v, %v", id, again, err)
		}
	})
}
