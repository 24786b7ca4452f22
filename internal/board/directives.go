package board

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// MaxPromptDirectives bounds the ACTIVE DIRECTIVES section: seed 003
// caps pending cleanup directives at 10, and functional ones are rare.
const MaxPromptDirectives = 20

// DirectivesInstruction is seed 003's instruction to the agent, under
// ACTIVE DIRECTIVES ("Mitigations", "Directive-to-task pipeline" and
// "Explicit prompt structure").
const DirectivesInstruction = "Check ACTIVE DIRECTIVES. Each directive MUST be addressed: do it where it touches this task's work, " +
	"or say in your final output why it is already handled, or that it needs a person. " +
	"Functional directives before cleanup; cleanup only when no functional work remains."

// ActiveDirectives returns the directives among pending that an agent
// running task self should see: every directive but self, in the
// processor's Order (critical, functional, then cleanup), at most
// MaxPromptDirectives. Directives waiting for other tasks are included:
// they are still active.
func ActiveDirectives(pending []*Task, self string) []*Task {
	var out []*Task
	for _, t := range pending {
		if t.Kind == KindDirective && t.ID != self {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b *Task) int {
		if c := a.class() - b.class(); c != 0 {
			return c
		}
		if c := a.Priority.rank() - b.Priority.rank(); c != 0 {
			return c
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(len(out), MaxPromptDirectives)]
}

// PendingDirectives reads the directives in pending/ for the prompt of
// task self; files that cannot be read are left out (the processor's
// Tick reports them).
func (b *Board) PendingDirectives(ctx context.Context, self string) ([]*Task, error) {
	listed, err := b.Store.List(ctx, Pending)
	if err != nil {
		return nil, fmt.Errorf("read the pending directives: %w", err)
	}
	var tasks []*Task
	for _, l := range listed {
		if l.Err == nil && l.Task.Kind == KindDirective {
			tasks = append(tasks, l.Task)
		}
	}
	return ActiveDirectives(tasks, self), nil
}

// directivesText is the body of the ACTIVE DIRECTIVES section: the
// instruction, then one item per directive with its type, priority,
// source, rationale and files.
func directivesText(ds []*Task) string {
	if len(ds) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(DirectivesInstruction + "\n")
	for i, d := range ds {
		typ := d.Type
		if typ == "" {
			typ = DirectiveFunctional
			if d.class() == 3 {
				typ = DirectiveCleanup
			}
		}
		fmt.Fprintf(&b, "\n%d. [%s, %s", i+1, typ, d.Priority)
		if d.Source != "" {
			fmt.Fprintf(&b, ", from %s", d.Source)
		}
		fmt.Fprintf(&b, "] %s (%s)\n", d.Title, d.ID)
		if s := oneLineText(d.Description); s != "" && s != d.Title {
			fmt.Fprintf(&b, "   %s\n", Clip(s, 400))
		}
		if s := oneLineText(d.Rationale); s != "" {
			fmt.Fprintf(&b, "   Rationale: %s\n", Clip(s, 300))
		}
		if len(d.Files) > 0 {
			fmt.Fprintf(&b, "   Files: %s\n", Clip(strings.Join(d.Files, ", "), 300))
		}
	}
	return b.String()
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
