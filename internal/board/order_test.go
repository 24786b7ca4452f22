package board

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

func TestFolderOf(t *testing.T) {
	tests := []struct {
		status world.Status
		output string
		want   Folder
	}{
		{world.StatusStart, "add a flag", Pending},
		{world.StatusActive, "run 1: cra", InProgress},
		{world.StatusFinish, "exit 0: ok", Completed},
		{world.StatusFinish, "run failed: exit 3: boom", Failed},
		{world.StatusFinish, "run failed: killed", Failed},
		{world.StatusFinish, "run failed: timed out after 10m", Failed},
		{world.StatusFinish, "exit 0: the run failed: never mind", Completed},
		{world.StatusRetry, "guidance", Pending},
		{world.StatusVerified, "criteria met", CompletedFinalized},
		{world.StatusFailed, "streak", FailedBlocked},
	}
	for _, tc := range tests {
		got, ok := FolderOf(tc.status, tc.output)
		if !ok || got != tc.want {
			t.Errorf("FolderOf(%s, %q) = %s, %v; want %s", tc.status, tc.output, got, ok, tc.want)
		}
	}
	if f, ok := FolderOf("sleeping", ""); ok {
		t.Errorf("unknown status mapped to %s", f)
	}
	// Every status a person's move writes maps back to its folder.
	for _, f := range Folders() {
		s, out, ok := moveStatus(f, "why")
		if !ok {
			if f != InProgress {
				t.Errorf("no person's move to %s", f)
			}
			continue
		}
		if got, _ := FolderOf(s, out); got != f {
			t.Errorf("a move to %s writes %s %q, which maps to %s", f, s, out, got)
		}
	}
}

func TestOrder(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id string, k Kind, p Priority, age int) *Task {
		return &Task{ID: id, Title: id, Kind: k, Priority: p, ProcessorAutoRequeue: true, CreatedAt: day.Add(time.Duration(age) * time.Hour)}
	}
	pending := []*Task{
		mk("cleanup", KindDirective, Low, 0),
		mk("task-low", KindTask, Low, 0),
		mk("task-normal-new", KindTask, Normal, 5),
		mk("task-normal-old", KindTask, Normal, 1),
		mk("task-normal-old-b", KindTask, Normal, 1),
		mk("functional-normal", KindDirective, Normal, 0),
		mk("task-critical", KindTask, Critical, 9),
		mk("functional-high", KindDirective, High, 9),
		mk("critical-directive", KindDirective, Critical, 9),
		mk("task-high", KindTask, High, 0),
	}
	want := []string{
		"critical-directive",
		"functional-high", "functional-normal",
		"task-critical", "task-high", "task-normal-old", "task-normal-old-b", "task-normal-new", "task-low",
		"cleanup",
	}
	got := ids(Order(pending, nil))
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if pending[0].ID != "cleanup" {
		t.Errorf("Order reordered its input")
	}
}

func TestOrderAfterAndAutoRequeue(t *testing.T) {
	a := &Task{ID: "a", Kind: KindTask, Priority: Normal, ProcessorAutoRequeue: true}
	b := &Task{ID: "b", Kind: KindTask, Priority: Critical, ProcessorAutoRequeue: true, After: []string{"a", "x"}}
	off := &Task{ID: "off", Kind: KindDirective, Priority: Critical, ProcessorAutoRequeue: false}
	tests := []struct {
		name     string
		verified map[string]bool
		want     []string
		waiting  []string
	}{
		{"nothing verified", nil, []string{"a"}, []string{"a", "x"}},
		{"one of two verified", map[string]bool{"a": true}, []string{"a"}, []string{"x"}},
		{"both verified", map[string]bool{"a": true, "x": true}, []string{"b", "a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(Order([]*Task{a, b, off}, tc.verified))
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("Order = %v, want %v", got, tc.want)
			}
			if w := Waiting(b, tc.verified); len(w) != len(tc.waiting) {
				t.Errorf("Waiting = %v, want %v", w, tc.waiting)
			}
		})
	}
}

func ids(ts []*Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// A directive's type decides its class: functional before planned work
// whatever its priority, cleanup after it.
func TestOrderDirectiveTypes(t *testing.T) {
	mk := func(id string, k Kind, typ string, p Priority) *Task {
		return &Task{ID: id, Title: id, Kind: k, Type: typ, Priority: p, ProcessorAutoRequeue: true}
	}
	pending := []*Task{
		mk("cleanup-normal", KindDirective, DirectiveCleanup, Normal),
		mk("planned", KindTask, "bug", High),
		mk("functional-low", KindDirective, DirectiveFunctional, Low),
		mk("critical-cleanup", KindDirective, DirectiveCleanup, Critical),
	}
	var got []string
	for _, t := range Order(pending, nil) {
		got = append(got, t.ID)
	}
	want := []string{"critical-cleanup", "functional-low", "planned", "cleanup-normal"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
	bad := NewTask("x")
	bad.Kind, bad.Type = KindDirective, "urgent"
	var fe *FieldError
	if err := bad.CheckFields(); !errors.As(err, &fe) || fe.Field != "type" {
		t.Errorf("a directive of type urgent: got %v", err)
	}
}
