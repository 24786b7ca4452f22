package board

import (
	"cmp"
	"slices"
)

// class is a task's place in the processor's order (seed 003's
// TaskPlanner): critical directives, other functional directives, planned
// tasks, cleanup directives. A directive without a type is a cleanup one
// when its priority is low, as before directives had types.
func (t *Task) class() int {
	if t.Kind != KindDirective {
		return 2
	}
	switch {
	case t.Priority == Critical:
		return 0
	case t.Type == DirectiveCleanup, t.Type == "" && t.Priority == Low:
		return 3
	}
	return 1
}

// Waiting returns the ids in t's after list that are not verified, in
// their order: while there is one, the processor skips t.
func Waiting(t *Task, verified map[string]bool) []string {
	var out []string
	for _, id := range t.After {
		if !verified[id] {
			out = append(out, id)
		}
	}
	return out
}

// Order returns the pending tasks the processor may pick, the first pick
// first (seed 003, DESIGN.md's translation of its TaskPlanner):
//
//  1. critical directives (kind directive, priority critical);
//  2. other functional directives (kind directive, type functional);
//  3. planned tasks (kind task) by priority: critical, high, normal, low;
//  4. cleanup directives (kind directive, type cleanup, or no type and
//     priority low).
//
// Within a class, higher priority first, then older (created_at), then by
// id. A task whose after list names a task not in verified (the ids in
// completed-finalized) is left out until it is, and so is a task with
// processor_auto_requeue false (seed 004). pending is not changed.
func Order(pending []*Task, verified map[string]bool) []*Task {
	out := make([]*Task, 0, len(pending))
	for _, t := range pending {
		if t.ProcessorAutoRequeue && len(Waiting(t, verified)) == 0 {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b *Task) int {
		return cmp.Or(
			cmp.Compare(a.class(), b.class()),
			cmp.Compare(a.Priority.rank(), b.Priority.rank()),
			a.CreatedAt.Compare(b.CreatedAt),
			cmp.Compare(a.ID, b.ID),
		)
	})
	return out
}
