package learn

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/retrieve"
)

// TestBeforeNeverSeesTheBaseOrLater: a repository's weights for a task
// are learned from History alone, which holds only proper ancestors of
// the task's base made before it. Among 100 commits (a0000…a0099, one a
// day), the base is the 80th; the 81st on are its descendants, one
// ancestor is dated on the base's day, and another branch's commits are
// older but no ancestors.
func TestBeforeNeverSeesTheBaseOrLater(t *testing.T) {
	all := synthetic("a", 100)
	base := all[79]
	ancestors := map[string]bool{}
	for _, e := range all[:80] {
		ancestors[e.Commit] = true
	}
	all[70].Date = base.Date // same day as the base: not before it
	branch := synthetic("b", 30)
	for i := range branch {
		branch[i].Repo = "a"
	}
	all = append(all, branch...)

	h := Before(all, base.Commit, base.Date, ancestors)
	got := h.Commits()
	if h.Cutoff() != base.Commit || h.Len() != 78 {
		t.Fatalf("got %d commits before %s, want 78 (80 ancestors less the base and the one of its day)", h.Len(), h.Cutoff())
	}
	for _, c := range got {
		i := slices.IndexFunc(all, func(e Example) bool { return e.Commit == c })
		e := all[i]
		if !ancestors[c] || c == base.Commit || !e.Date.Before(base.Date) {
			t.Errorf("history holds %s (%s), which is not before the base", c, e.Date)
		}
	}

	fit, err := FitRepo(h, retrieve.HandSetWeights, RepoConfig{MaxCommits: 50, ValidShare: 0.3, MinTrain: 10, MinValid: 5})
	if err != nil {
		t.Fatal(err)
	}
	seen := append(slices.Clone(fit.Train), fit.Valid...)
	if len(fit.Train) != 35 || len(fit.Valid) != 15 || !slices.Equal(seen, got[len(got)-50:]) {
		t.Errorf("fit saw %d + %d commits %v, want the 50 newest of the history, older ones to train", len(fit.Train), len(fit.Valid), seen)
	}
	if fit.Cutoff != base.Commit || !strings.Contains(fit.Reason, "15 newest commits") {
		t.Errorf("got cutoff %s, reason %q", fit.Cutoff, fit.Reason)
	}
	// The synthetic history favours the symbol signal, which the
	// hand-set weights under-rate here: the repository's weights win.
	if !fit.Use || !fit.ValidRepo.Better(fit.ValidGlobal) {
		t.Errorf("got use %v with %+v against %+v, want the repository's weights kept", fit.Use, fit.ValidRepo, fit.ValidGlobal)
	}

	if _, err := FitRepo(Before(all, all[5].Commit, all[5].Date, ancestors), retrieve.HandSetWeights, RepoConfig{}); !errors.Is(err, ErrTooFewCommits) {
		t.Errorf("5 commits of history: got %v, want ErrTooFewCommits", err)
	}
}
