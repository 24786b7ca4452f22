package world

import (
	"context"
	"slices"
)

// CurrentIn is Current narrowed to the agents whose status is one of
// statuses: only their lines are read, so a caller that wants the few
// active or failed agents among many settled ones pays for those alone.
func (l *Log) CurrentIn(ctx context.Context, statuses ...Status) ([]Agent, error) {
	return l.agents(ctx, func(a *agentState) bool { return slices.Contains(statuses, a.Status) })
}
