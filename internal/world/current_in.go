package world

import (
	"context"
	"os"
	"slices"
)

// CurrentIn is Current narrowed to the agents whose status is one of
// statuses: only their lines are read, so a caller that wants the few
// active or failed agents among many settled ones pays for those alone.
func (l *Log) CurrentIn(ctx context.Context, statuses ...Status) ([]Agent, error) {
	key := make([]byte, 0, 16*len(statuses))
	for _, s := range statuses {
		key = append(append(key, s...), ',')
	}
	return l.agentsPicked(ctx, func(st *state) []*agentState {
		return st.picked("in:"+string(key), func(a *agentState) bool { return slices.Contains(statuses, a.Status) })
	})
}

// Statuses returns every agent's current status, read from the side index
// and the log written since alone: no agent's line is read, so a caller
// that checks many agents against another view (the board's folders on
// every Level 1 pass) pays for the few that disagree only.
func (l *Log) Statuses(ctx context.Context) (map[string]Status, error) {
	var out map[string]Status
	err := l.withState(ctx, func(_ *os.File, st *state) error {
		byID, err := st.all()
		if err != nil {
			return err
		}
		out = make(map[string]Status, len(byID))
		for id, a := range byID {
			out[id] = a.Status
		}
		return nil
	})
	return out, err
}

// AnsweredFailed is CurrentIn(StatusFailed) narrowed to the agents a
// person answered since they failed (Agent.UserAnswered), told from the
// side index: the recycler asks every few seconds, and a board with
// thousands of closed tasks has one answered among them at most.
func (l *Log) AnsweredFailed(ctx context.Context) ([]Agent, error) {
	return l.agentsPicked(ctx, (*state).answeredFailed)
}

// answeredFailed returns the agents failed with a person's answer after.
// The caller has read them all (state.all).
func (s *state) answeredFailed() []*agentState {
	return s.picked("answered", func(a *agentState) bool { return a.Status == StatusFailed && a.UserAfter })
}

// picked returns the agents keep keeps, looked for among all once per
// position of the fold and question (key): an idle board's loops ask
// again and again of a state that has not moved. The caller has read
// them all (state.all) and must not change the slice.
func (s *state) picked(key string, keep func(*agentState) bool) []*agentState {
	if s.picksAt != s.Pos.Offset || s.picks == nil {
		s.picks, s.picksAt = map[string][]*agentState{}, s.Pos.Offset
	}
	if out, ok := s.picks[key]; ok {
		return out
	}
	out := []*agentState{}
	for _, a := range s.byID {
		if keep(a) {
			out = append(out, a)
		}
	}
	s.picks[key] = out
	return out
}
