package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadTasks(t *testing.T) {
	in := strings.Join([]string{
		// commit set, as commits_click.jsonl: gold_existing_at_parent wins
		`{"repo": "pallets/click", "commit": "c1", "parent": "p1", "message": "Fix it\n\nbody", "subject": "Fix it", "changed_files": ["CHANGES.md", "src/a.py", "src/new.py"], "gold_files": ["src/a.py", "src/new.py"], "gold_nontest": ["src/a.py", "src/new.py"], "gold_existing_at_parent": ["src/a.py"], "lines_changed": 3}`,
		``,
		// commit set without gold_existing_at_parent: gold_files
		`{"repo": "gin-gonic/gin", "commit": "c2", "parent": "p2", "message": "feat(context): add X", "gold_files": ["context.go"]}`,
		// commit whose files all were new: an empty list is kept, not replaced by gold_files
		`{"repo": "gin-gonic/gin", "commit": "c3", "parent": "p3", "message": "m", "gold_files": ["new.go"], "gold_existing_at_parent": []}`,
		// SWE-bench: hints_text never reaches the task
		`{"repo": "sqlfluff/sqlfluff", "instance_id": "sqlfluff__sqlfluff-1", "base_commit": "b4", "problem_statement": "L031 fails", "hints_text": "look at L031.py", "gold_files": ["src/L031.py"], "patch": "diff --git a/src/L031.py b/src/L031.py\n"}`,
	}, "\n")
	got, err := readTasks(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{
		{Kind: kindCommit, ID: "c1", Repo: "pallets/click", Checkout: "p1", Commit: "c1", Text: "Fix it\n\nbody", Gold: []string{"src/a.py"}},
		{Kind: kindCommit, ID: "c2", Repo: "gin-gonic/gin", Checkout: "p2", Commit: "c2", Text: "feat(context): add X", Gold: []string{"context.go"}},
		{Kind: kindCommit, ID: "c3", Repo: "gin-gonic/gin", Checkout: "p3", Commit: "c3", Text: "m", Gold: []string{}},
		{Kind: kindSWEBench, ID: "sqlfluff__sqlfluff-1", Repo: "sqlfluff/sqlfluff", Checkout: "b4", Text: "L031 fails",
			Gold: []string{"src/L031.py"}, Patch: "diff --git a/src/L031.py b/src/L031.py\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readTasks (-want +got):\n%s", diff)
	}
	for _, task := range got {
		if strings.Contains(task.Text, "look at") {
			t.Errorf("task %s carries hints_text: %q", task.ID, task.Text)
		}
	}
}

func TestReadTasksErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not json", `{"repo":`, "line 1"},
		{"no repo", `{"commit": "c", "parent": "p", "message": "m"}`, "no repo field"},
		{"unknown shape", `{"repo": "a/b", "text": "x"}`, "unknown shape"},
		{"commit without message", `{"repo": "a/b", "commit": "c", "parent": "p"}`, "message are required"},
		{"swebench without statement", `{"repo": "a/b", "instance_id": "i", "base_commit": "b"}`, "problem_statement are required"},
		{"second line", "\n{\"repo\": \"a/b\", \"commit\": \"c\", \"parent\": \"p\", \"message\": \"m\"}\n{", "line 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readTasks(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestStripScope(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"fix(context): skip chmod on pre-existing dirs", "skip chmod on pre-existing dirs"},
		{"feat!: drop Go 1.20", "drop Go 1.20"},
		{"refactor(context)!: rename", "rename"},
		{"context: make Value adhere to Go standards", "make Value adhere to Go standards"},
		{"fix: the trusted proxies should support ipv6", "the trusted proxies should support ipv6"},
		{"`types`: fix variance issues", "fix variance issues"},
		{"Fix: Ensure fish completion handles multiline help", "Ensure fish completion handles multiline help"},
		{"net/http: close bodies", "close bodies"},
		// no scope: unchanged
		{"Resolve the pager command once, in `_pager_contextmanager`", "Resolve the pager command once, in `_pager_contextmanager`"},
		{"Fix #3500 Add escape logic for header", "Fix #3500 Add escape logic for header"},
		{"see http://example.com: docs", "see http://example.com: docs"},
		// a prefix with nothing after it is the whole subject
		{"fix(context): ", "fix(context): "},
		// body: squash-merge bullets lose their scope, trailers stay
		{"fix(context): skip chmod (#4702)\n\n* fix(context): skip chmod\n* test: make it portable\n- refactor(recovery): extract\nRefs: #12\nCo-authored-by: A <a@b>",
			"skip chmod (#4702)\n\n* skip chmod\n* test: make it portable\n- extract\nRefs: #12\nCo-authored-by: A <a@b>"},
	}
	for _, tc := range tests {
		if got := stripScope(tc.in); got != tc.want {
			t.Errorf("stripScope(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
