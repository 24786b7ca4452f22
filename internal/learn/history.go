package learn

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cra-dev/cra/internal/retrieve"
)

// History is the part of a repository's examples that lies strictly
// before a cutoff commit. Only Before makes one, and FitRepo takes
// nothing else, so a repository's own weights can never be learned from
// the cutoff commit or anything after it: a task whose base is the
// cutoff is not among, nor later than, what its weights saw.
type History struct {
	cutoff   string
	examples []Example // oldest first
}

// Before keeps the examples whose commits are proper ancestors of cutoff
// and were made before it: ancestors is the set of commits reachable from
// cutoff (gitx.Ancestors), and cutoffDate its author date. The cutoff
// itself, its descendants, commits of other branches and any commit dated
// at or after the cutoff are left out.
func Before(all []Example, cutoff string, cutoffDate time.Time, ancestors map[string]bool) History {
	h := History{cutoff: cutoff}
	for _, e := range all {
		if e.Commit == cutoff || !ancestors[e.Commit] || !e.Date.Before(cutoffDate) {
			continue
		}
		h.examples = append(h.examples, e)
	}
	sortByTime(h.examples)
	return h
}

// Through keeps the examples whose commits are ancestors of head, head
// included: the whole past of a repository at HEAD, for a tune, whose
// tasks all come after it. ancestors is gitx.Ancestors of head.
func Through(all []Example, head string, ancestors map[string]bool) History {
	h := History{cutoff: head}
	for _, e := range all {
		if ancestors[e.Commit] {
			h.examples = append(h.examples, e)
		}
	}
	sortByTime(h.examples)
	return h
}

// Cutoff is the commit the history ends before (Before) or at (Through).
func (h History) Cutoff() string { return h.cutoff }

// Len is how many examples the history holds.
func (h History) Len() int { return len(h.examples) }

// Commits are the history's commits, oldest first.
func (h History) Commits() []string {
	out := make([]string, len(h.examples))
	for i, e := range h.examples {
		out[i] = e.Commit
	}
	return out
}

// RepoConfig says how FitRepo learns a repository's own weights.
type RepoConfig struct {
	// MaxCommits is how many of the newest commits of the history are
	// used (0: 300): recent history says most about the next task.
	MaxCommits int `json:"max_commits"`
	// ValidShare is the newest share of them the weights are judged on
	// (0: 0.3); the older rest trains them.
	ValidShare float64 `json:"valid_share"`
	// MinTrain and MinValid are the fewest commits of each part a fit
	// needs (0: 40 and 15): fewer say too little to keep weights by.
	MinTrain int `json:"min_train"`
	MinValid int `json:"min_valid"`
	// Loss and L2 are the fit's (see FitConfig), the L2 pulling towards
	// the global weights (0: softmax, 0.03).
	Loss string  `json:"loss"`
	L2   float64 `json:"l2"`
}

func (c RepoConfig) withDefaults() RepoConfig {
	if c.MaxCommits <= 0 {
		c.MaxCommits = 300
	}
	if c.ValidShare <= 0 || c.ValidShare >= 1 {
		c.ValidShare = 0.3
	}
	if c.MinTrain <= 0 {
		c.MinTrain = 40
	}
	if c.MinValid <= 0 {
		c.MinValid = 15
	}
	if c.Loss == "" {
		c.Loss = LossSoftmax
	}
	if c.L2 <= 0 {
		c.L2 = 0.03
	}
	return c
}

// RepoFit is a repository's own weights and the verdict on them.
type RepoFit struct {
	// Weights are fitted on the older commits; Global are the weights
	// they were judged against (and pulled towards).
	Weights retrieve.Weights `json:"weights"`
	Global  retrieve.Weights `json:"global"`
	// Use: the repository's weights beat the global ones on the newer
	// commits (a higher Acc@5, or the same and a higher MRR). Reason says
	// so in words.
	Use    bool   `json:"use"`
	Reason string `json:"reason"`
	// Cutoff is the commit the history ended before; Train and Valid
	// the commits of each part, oldest first.
	Cutoff string   `json:"cutoff"`
	Train  []string `json:"train"`
	Valid  []string `json:"valid"`
	// Figures on the validation commits.
	ValidRepo   Metrics `json:"valid_repo"`
	ValidGlobal Metrics `json:"valid_global"`
}

// ErrTooFewCommits is a history too short to learn a repository's own
// weights from.
var ErrTooFewCommits = errors.New("too few commits to learn from")

// FitRepo learns a repository's own weights from its history, pulled
// towards global: it trains on the older commits, then compares them with
// global on the newer ones and says whether to use them.
func FitRepo(h History, global retrieve.Weights, cfg RepoConfig) (RepoFit, error) {
	cfg = cfg.withDefaults()
	ex := h.examples[max(0, len(h.examples)-cfg.MaxCommits):]
	nValid := int(float64(len(ex)) * cfg.ValidShare)
	train, valid := ex[:len(ex)-nValid], ex[len(ex)-nValid:]
	fit := RepoFit{Global: global, Cutoff: h.cutoff}
	if len(train) < cfg.MinTrain || len(valid) < cfg.MinValid {
		return fit, fmt.Errorf("%w: %d commit(s) before %.12s, need %d to train and %d to validate", ErrTooFewCommits, len(ex), h.cutoff, cfg.MinTrain, cfg.MinValid)
	}
	for _, e := range train {
		fit.Train = append(fit.Train, e.Commit)
	}
	for _, e := range valid {
		fit.Valid = append(fit.Valid, e.Commit)
	}
	w, err := Fit(slices.Clone(train), FitConfig{Loss: cfg.Loss, L2: cfg.L2, Prior: global, Fixed: []string{"implied", "metadata"}})
	if err != nil {
		return fit, err
	}
	fit.Weights = w
	fit.ValidRepo, fit.ValidGlobal = Evaluate(valid, w), Evaluate(valid, global)
	fit.Use = fit.ValidRepo.Better(fit.ValidGlobal)
	verdict := "kept"
	if !fit.Use {
		verdict = "not kept"
	}
	fit.Reason = fmt.Sprintf("%s: on the %d newest commits Acc@5 %.2f and MRR %.3f against the global weights' %.2f and %.3f (trained on %d older ones)",
		verdict, len(valid), fit.ValidRepo.Acc5, fit.ValidRepo.MRR, fit.ValidGlobal.Acc5, fit.ValidGlobal.MRR, len(train))
	return fit, nil
}
