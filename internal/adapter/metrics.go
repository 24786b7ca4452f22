package adapter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
)

// Metric names the measure an evaluation of stage reports. Each example
// scores in [0, 1]; the evaluation reports the mean.
//
//   - scope, gold_file_recall: the share of the example's gold files
//     (Meta.Gold: the files the commit changed) that the reply judges
//     relevant.
//   - execute_code, reproduced_commits: 1 when the reply's SEARCH/REPLACE
//     blocks all apply to Meta.Parent (checked out in a scratch worktree of
//     Meta.Repo) and leave exactly the tree of Meta.Commit, else 0.
//   - execute_plan, plan_file_recall: the share of the gold files (the
//     reference plan's files when Meta.Gold is empty) that a valid plan
//     (agent.ParsePlanReply) names; an invalid plan scores 0. A plan that
//     misses a file sends the solve to the wrong place.
//   - task_analysis, name_f1: the F1 of the names (files and symbols) the
//     reply implies against those of the reference answer (the dataset's
//     assistant message); when the reference names nothing, 1 when the
//     reply's task type is the reference's. The names feed retrieval's
//     seeds, so precision counts as much as recall.
//   - precision, tier_accuracy: the share of the reference's symbol
//     verdicts the reply gives the same tier (a symbol it leaves out is
//     wrong).
//
// A reply is read by its stage's own parser (retrieve.ParseScopeReply and
// the others, agent.ParsePlanReply), as inference reads it; one that
// cannot be read scores 0 and is counted as unusable.
func Metric(stage string) string {
	switch stage {
	case dataset.Scope:
		return "gold_file_recall"
	case dataset.ExecuteCode:
		return "reproduced_commits"
	case dataset.ExecutePlan:
		return "plan_file_recall"
	case dataset.TaskAnalysis:
		return "name_f1"
	case dataset.Precision:
		return "tier_accuracy"
	}
	return ""
}

// metricNeeds says what an example must hold to be scored.
func metricNeeds(stage string) string {
	switch stage {
	case dataset.Scope:
		return "gold files in its meta line"
	case dataset.ExecuteCode:
		return "repo, parent and commit in its meta line"
	case dataset.ExecutePlan:
		return "gold files, or a reference plan that names files"
	}
	return "a reference answer in the stage's format"
}

// errUnusable marks a reply that could not be read: it scores 0.
var errUnusable = errors.New("unusable reply")

func unusable(err error) error { return fmt.Errorf("%w: %v", errUnusable, err) }

// scorer scores replies for one stage.
type scorer interface {
	// score returns the reply's score for r, and false when r has nothing
	// to score against. An error wrapping errUnusable comes with score 0;
	// another error ends the evaluation.
	score(ctx context.Context, r dataset.Record, reply string) (float64, bool, error)
	close()
}

func scorerFor(stage string) scorer {
	switch stage {
	case dataset.Scope:
		return funcScorer(scoreScope)
	case dataset.ExecuteCode:
		return &codeScorer{}
	case dataset.ExecutePlan:
		return funcScorer(scorePlan)
	case dataset.TaskAnalysis:
		return funcScorer(scoreTaskAnalysis)
	}
	return funcScorer(scorePrecision)
}

type funcScorer func(r dataset.Record, reply string) (float64, bool, error)

func (f funcScorer) score(_ context.Context, r dataset.Record, reply string) (float64, bool, error) {
	return f(r, reply)
}
func (funcScorer) close() {}

// reference is the example's assistant message.
func reference(r dataset.Record) string {
	for _, m := range r.Example.Messages {
		if m.Role == "assistant" {
			return m.Content
		}
	}
	return ""
}

// userText is the example's user message.
func userText(r dataset.Record) string {
	for _, m := range r.Example.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// recall is the share of want found in got.
func recall(want []string, got map[string]bool) float64 {
	n := 0
	for _, w := range want {
		if got[w] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func scoreScope(r dataset.Record, reply string) (float64, bool, error) {
	gold := r.Meta.Gold
	if len(gold) == 0 {
		return 0, false, nil
	}
	vs, err := retrieve.ParseScopeReply(reply)
	if err != nil {
		return 0, true, unusable(err)
	}
	relevant := map[string]bool{}
	for p, v := range vs {
		if v.Relevant {
			relevant[p] = true
		}
	}
	return recall(gold, relevant), true, nil
}

func scorePlan(r dataset.Record, reply string) (float64, bool, error) {
	gold := r.Meta.Gold
	if len(gold) == 0 {
		if ref, err := agent.ParsePlanReply(reference(r), "reference"); err == nil {
			gold = ref.Files()
		}
	}
	if len(gold) == 0 {
		return 0, false, nil
	}
	p, err := agent.ParsePlanReply(reply, userText(r))
	if err != nil {
		return 0, true, unusable(err)
	}
	named := map[string]bool{}
	for _, f := range p.Files() {
		named[f] = true
	}
	return recall(gold, named), true, nil
}

func scoreTaskAnalysis(r dataset.Record, reply string) (float64, bool, error) {
	ref, err := retrieve.ParseTaskAnalysis(reference(r))
	if err != nil {
		return 0, false, nil
	}
	got, err := retrieve.ParseTaskAnalysis(reply)
	if err != nil {
		return 0, true, unusable(err)
	}
	names := func(t retrieve.TaskAnalysis) map[string]bool {
		m := map[string]bool{}
		for _, n := range append(append([]string(nil), t.Files...), t.Symbols...) {
			if n = strings.TrimSpace(n); n != "" {
				m[n] = true
			}
		}
		return m
	}
	want, have := names(ref), names(got)
	if len(want) == 0 {
		if got.Type == ref.Type {
			return 1, true, nil
		}
		return 0, true, nil
	}
	hit := 0
	for n := range have {
		if want[n] {
			hit++
		}
	}
	if hit == 0 {
		return 0, true, nil
	}
	p, rc := float64(hit)/float64(len(have)), float64(hit)/float64(len(want))
	return 2 * p * rc / (p + rc), true, nil
}

func scorePrecision(r dataset.Record, reply string) (float64, bool, error) {
	ref, err := retrieve.ParsePrecisionReply(reference(r))
	if err != nil || len(ref) == 0 {
		return 0, false, nil
	}
	got, err := retrieve.ParsePrecisionReply(reply)
	if err != nil {
		return 0, true, unusable(err)
	}
	tiers := map[[2]string]string{}
	for _, v := range got {
		tiers[[2]string{strings.TrimSpace(v.Path), strings.TrimSpace(v.Symbol)}] = v.Tier
	}
	same := 0
	for _, v := range ref {
		if tiers[[2]string{strings.TrimSpace(v.Path), strings.TrimSpace(v.Symbol)}] == v.Tier {
			same++
		}
	}
	return float64(same) / float64(len(ref)), true, nil
}

// codeScorer applies execute_code replies in scratch worktrees, one per
// repository, moved from parent to parent.
type codeScorer struct {
	tmp   string
	trees map[string]string // repository → its scratch worktree
}

func (c *codeScorer) score(ctx context.Context, r dataset.Record, reply string) (float64, bool, error) {
	m := r.Meta
	if m.Repo == "" || m.Parent == "" || m.Commit == "" {
		return 0, false, nil
	}
	blocks, err := edit.Parse(llm.StripThink(reply))
	if err != nil {
		return 0, true, unusable(err)
	}
	if len(blocks) == 0 {
		return 0, true, unusable(errors.New("no edit blocks"))
	}
	ok, err := c.reproduces(ctx, m.Repo, m.Parent, m.Commit, blocks)
	if err != nil || !ok {
		return 0, true, err
	}
	return 1, true, nil
}

// reproduces reports whether blocks, applied to parent, leave exactly
// commit's tree. The repository's own work tree is never touched.
func (c *codeScorer) reproduces(ctx context.Context, repo, parent, commit string, blocks []edit.Block) (bool, error) {
	wt, err := c.checkout(ctx, repo, parent)
	if err != nil {
		return false, err
	}
	results, _, err := edit.Apply(wt, blocks)
	if err != nil {
		return false, nil
	}
	for _, res := range results {
		if !res.OK() {
			return false, nil
		}
	}
	return gitx.TreeIs(ctx, wt, commit)
}

// checkout returns repo's scratch worktree with parent checked out and
// nothing else in it.
func (c *codeScorer) checkout(ctx context.Context, repo, parent string) (string, error) {
	if wt, ok := c.trees[repo]; ok {
		return wt, gitx.CheckoutDetached(ctx, wt, parent)
	}
	if c.tmp == "" {
		tmp, err := os.MkdirTemp("", "cra-adapter-eval-")
		if err != nil {
			return "", err
		}
		c.tmp, c.trees = tmp, map[string]string{}
	}
	wt := filepath.Join(c.tmp, fmt.Sprintf("wt%d", len(c.trees)))
	if err := gitx.AddDetachedWorktree(ctx, repo, wt, parent); err != nil {
		return "", fmt.Errorf("scratch worktree of %s at %.12s: %w", repo, parent, err)
	}
	c.trees[repo] = wt
	return wt, nil
}

func (c *codeScorer) close() {
	for repo, wt := range c.trees {
		gitx.RemoveDetachedWorktree(context.Background(), repo, wt)
	}
	if c.tmp != "" {
		os.RemoveAll(c.tmp)
	}
}
