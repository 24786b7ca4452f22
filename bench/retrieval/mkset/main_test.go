package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
)

func TestChoreRe(t *testing.T) {
	for _, s := range []string{"Bump mypy from 1.7.0 to 1.7.1 (#2209)", "[pre-commit.ci] pre-commit autoupdate", "Release 3.2.0", "v1.2.3", "Merge branch 'main'"} {
		if !choreRe.MatchString(s) {
			t.Errorf("%q: want a chore", s)
		}
	}
	for _, s := range []string{"Fix crash on a dataclass base that annotates __init__", "Bumping the recursion limit breaks inference", "Add support for Python 3.12"} {
		if choreRe.MatchString(s) {
			t.Errorf("%q: want a task", s)
		}
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		gittest.Run(t, dir, args...)
	}
	commit := func(msg string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("add", "-A")
		git("commit", "-qm", msg)
	}
	git("init", "-q")
	commit("Initial import of the package", map[string]string{"pkg/a.py": "x = 1\n", "README.md": "hi\n"})
	commit("Make a configurable through the environment", map[string]string{"pkg/a.py": "x = 2\n", "CHANGES.md": "a\n"})
	commit("Bump version to 1.0.0 for the release", map[string]string{"pkg/a.py": "x = 3\n"})
	commit("Document the package in the readme", map[string]string{"README.md": "more\n"})
	commit("Add module b next to module a", map[string]string{"pkg/b.py": "y = 1\n", "pkg/a.py": "x = 4\n"})

	var buf bytes.Buffer
	if err := run(&buf, dir, "me/pkg", 10, 0, 4, 400, nil); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	var got []task
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var tk task
		if err := json.Unmarshal(l, &tk); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, tk)
	}
	// Newest first: "Add module b" (b.py is new, only a.py existed at the
	// parent) and "Make a configurable"; not the bump, not the docs-only
	// commit, not the root commit.
	if len(got) != 2 {
		t.Fatalf("got %d tasks: %+v", len(got), got)
	}
	if !strings.HasPrefix(got[0].Message, "Add module b") || strings.Join(got[0].GoldFiles, ",") != "pkg/a.py,pkg/b.py" || strings.Join(got[0].GoldExisting, ",") != "pkg/a.py" {
		t.Errorf("first task: got %+v", got[0])
	}
	if !strings.HasPrefix(got[1].Message, "Make a configurable") || strings.Join(got[1].ChangedFiles, ",") != "CHANGES.md,pkg/a.py" || got[1].Repo != "me/pkg" || got[1].Parent == "" {
		t.Errorf("second task: got %+v", got[1])
	}
}
