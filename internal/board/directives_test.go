package board

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestActiveDirectivesPrompt(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(id, typ string, p Priority, min int) *Task {
		t := NewTask("directive " + id)
		t.ID, t.Kind, t.Type, t.Priority, t.Source = id, KindDirective, typ, p, "code_style"
		t.CreatedAt = at.Add(time.Duration(min) * time.Minute)
		return t
	}
	self := mk("d-self", DirectiveFunctional, Normal, 0)
	planned := NewTask("planned")
	planned.ID, planned.Milestone = "t-plan", "storage"
	cleanOld := mk("d-clean-old", DirectiveCleanup, Low, 1)
	cleanOld.Rationale = "inconsistent errors"
	cleanOld.Files = []string{"a.go", "b.go"}
	pending := []*Task{
		mk("d-clean-new", DirectiveCleanup, Low, 5),
		planned,
		cleanOld,
		mk("d-func", DirectiveFunctional, Normal, 9),
		mk("d-crit", DirectiveCleanup, Critical, 9),
		self,
	}
	got := ActiveDirectives(pending, self.ID)
	var ids []string
	for _, d := range got {
		ids = append(ids, d.ID)
	}
	if diff := cmp.Diff([]string{"d-crit", "d-func", "d-clean-old", "d-clean-new"}, ids); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	p := &Prompt{Task: planned, Run: 1, Knowledge: "### conventions/errors.md\nWrap once.", Directives: got}
	md := p.Markdown()
	k, d := strings.Index(md, "## PROJECT KNOWLEDGE"), strings.Index(md, "## ACTIVE DIRECTIVES")
	if k < 0 || d < k {
		t.Fatalf("sections out of order:\n%s", md)
	}
	for _, want := range []string{
		"## ACTIVE DIRECTIVES\n\nCheck ACTIVE DIRECTIVES. Each directive MUST be addressed",
		"1. [cleanup, critical, from code_style] directive d-crit (d-crit)\n\n2. [functional, normal",
		"3. [cleanup, low, from code_style] directive d-clean-old (d-clean-old)\n   Rationale: inconsistent errors\n   Files: a.go, b.go\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("prompt lacks %q:\n%s", want, md)
		}
	}
	if !strings.Contains(md, "Task t-plan, run 1.\nMilestone: storage.\n") {
		t.Errorf("no milestone:\n%s", md)
	}
	tt := p.TaskText()
	if !strings.Contains(tt, "## ACTIVE DIRECTIVES") || strings.Contains(tt, "PROJECT KNOWLEDGE") {
		t.Errorf("task text:\n%s", tt)
	}
	if s := (&Prompt{Task: planned, Run: 1}).Markdown(); strings.Contains(s, "DIRECTIVES") {
		t.Errorf("no directives, yet:\n%s", s)
	}
}
