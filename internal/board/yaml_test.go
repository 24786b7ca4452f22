package board

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cmpTask compares tasks field by field, without the parsed document.
var cmpTask = cmp.Options{cmpopts.IgnoreUnexported(Task{}), cmpopts.EquateEmpty()}

func TestParseDefaults(t *testing.T) {
	got, err := Parse([]byte("id: t-00000001\ntitle: add a flag\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Task{ID: "t-00000001", Title: "add a flag", Kind: KindTask, Priority: Normal, ProcessorAutoRequeue: true}
	if d := cmp.Diff(want, got, cmpTask); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	got, err = Parse([]byte("id: a\ntitle: x\nprocessor_auto_requeue: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ProcessorAutoRequeue {
		t.Errorf("processor_auto_requeue: false read as true")
	}
}

func TestRoundTripKeepsUnknownFields(t *testing.T) {
	in := `# written by hand
id: t-0000abcd
title: add a --json flag
owner: alice # unknown, kept
priority: high
labels: [cli, json]
description: |
  first line
  second line
results:
  output: ok
  exit_code: 0
  reviewer: bob
runs: 2
x-extra:
  nested: true
`
	task, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if task.Results == nil || task.Results.ExitCode == nil || *task.Results.ExitCode != 0 || task.Runs != 2 {
		t.Fatalf("parsed %+v", task)
	}
	task.Priority = Critical
	task.Milestone = "m1"
	task.Results.Classification = "full_complete"
	out, err := Encode(task)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{"# written by hand", "owner: alice # unknown, kept", "labels: [cli, json]", "reviewer: bob", "x-extra:\n  nested: true", "priority: critical", "milestone: m1", "classification: full_complete", "description: |\n  first line\n  second line\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("rewrite lost %q:\n%s", want, text)
		}
	}
	// Unknown keys keep their order among the known ones.
	if i, j, k := strings.Index(text, "title:"), strings.Index(text, "owner:"), strings.Index(text, "priority:"); !(i < j && j < k) {
		t.Errorf("owner moved: title at %d, owner at %d, priority at %d:\n%s", i, j, k, text)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatalf("rewrite does not parse: %v\n%s", err, text)
	}
	if d := cmp.Diff(task, again, cmpTask); d != "" {
		t.Errorf("round trip (-before +after):\n%s", d)
	}
	// An emptied known field goes; unknown ones stay.
	again.Milestone = ""
	out, _ = Encode(again)
	if strings.Contains(string(out), "milestone") || !strings.Contains(string(out), "owner: alice") {
		t.Errorf("emptied milestone:\n%s", out)
	}
}

func TestEncodeNewTask(t *testing.T) {
	task := NewTask("add a flag")
	task.ID = "t-00000002"
	task.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task.UpdatedAt = task.CreatedAt
	out, err := Encode(task)
	if err != nil {
		t.Fatal(err)
	}
	want := `id: t-00000002
title: add a flag
kind: task
priority: normal
created_at: 2026-01-02T03:04:05Z
updated_at: 2026-01-02T03:04:05Z
runs: 0
consecutive_completion_claims: 0
consecutive_failures: 0
processor_auto_requeue: true
`
	if d := cmp.Diff(want, string(out)); d != "" {
		t.Errorf("new task file (-want +got):\n%s", d)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, field, want string
	}{
		{"empty", "", "", "not a mapping of fields"},
		{"list", "- a\n- b\n", "", "not a mapping of fields"},
		{"syntax", "id: [\n", "", "not valid YAML"},
		{"no id", "title: x\n", "id", `"" is not a task id`},
		{"bad id", "id: '[x]'\ntitle: x\n", "id", "is not a task id"},
		{"no title", "id: a\n", "title", "is empty"},
		{"two-line title", "id: a\ntitle: \"x\\ny\"\n", "title", "line break"},
		{"priority", "id: a\ntitle: x\npriority: urgent\n", "priority", "use one of critical, high, normal, low"},
		{"kind", "id: a\ntitle: x\nkind: chore\n", "kind", "use task or directive"},
		{"runs type", "id: a\ntitle: x\nruns: many\n", "runs", "cannot unmarshal"},
		{"nested type", "id: a\ntitle: x\nresults:\n  output: ok\n  exit_code: bad\n", "results.exit_code", "cannot unmarshal"},
		{"negative", "id: a\ntitle: x\nconsecutive_failures: -1\n", "consecutive_failures", "negative"},
		{"after self", "id: a\ntitle: x\nafter: [a]\n", "after", "waits for itself"},
		{"alias", "id: &x a\ntitle: *x\n", "", "anchors or aliases"},
		{"duplicate key", "id: a\ntitle: x\ntitle: y\n", "", "already defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatalf("parsed, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want it to contain %q", err, tc.want)
			}
			var fe *FieldError
			if tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
				t.Errorf("got %#v, want a *FieldError for %s", err, tc.field)
			}
		})
	}
}

func TestSetOutputKeepsTail(t *testing.T) {
	task := NewTask("x")
	task.SetOutput(strings.Repeat("a", MaxOutput) + "end")
	if got := task.Results.Output; len(got) != MaxOutput || !strings.HasSuffix(got, "end") {
		t.Errorf("got %d bytes ending %q, want %d ending \"end\"", len(got), got[len(got)-3:], MaxOutput)
	}
}

// FuzzParseTask: the parser never panics, and what parses re-encodes to a
// file that parses to the same task and encodes the same again.
func FuzzParseTask(f *testing.F) {
	f.Add([]byte("id: t-00000001\ntitle: add a flag\n"))
	f.Add([]byte("id: a\ntitle: x\nowner: bob\nresults: {output: ok, exit_code: 3, extra: 1}\nafter: [b, c]\n"))
	f.Add([]byte("id: a\ntitle: x\ncreated_at: 2025-01-02\nruns: 0x10\n# c\n"))
	f.Add([]byte("id: a\ntitle: '123'\ndescription: \"a\\nb\"\n<<: {notes: n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := Parse(data)
		if err != nil {
			return
		}
		out, err := Encode(task)
		if err != nil {
			t.Fatalf("parsed but does not encode: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("re-encoded file does not parse: %v\n%s", err, out)
		}
		if d := cmp.Diff(task, again, cmpTask); d != "" {
			t.Fatalf("round trip (-first +second):\n%s\n%s", d, out)
		}
		out2, err := Encode(again)
		if err != nil {
			t.Fatal(err)
		}
		if string(out2) != string(out) {
			t.Fatalf("encoding is not stable:\n%s\n---\n%s", out, out2)
		}
	})
}

// FuzzValidID holds the hand-written id check to the pattern it stands
// for.
func FuzzValidID(f *testing.F) {
	for _, id := range []string{"t-1a2b3c4d", "", "-a", ".hidden", "a.b_c-d", "A" + strings.Repeat("b", 63), "A" + strings.Repeat("b", 64), "ünï", "a b", "a\n", "a/b"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := validID(id), idPattern().MatchString(id); got != want {
			t.Fatalf("validID(%q) = %v, the pattern says %v", id, got, want)
		}
	})
}
