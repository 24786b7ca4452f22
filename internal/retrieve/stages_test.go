package retrieve

import (
	"context"
	"testing"
)

// TestStagePromptsShared pins that the exported prompt builders, which
// the bootstrapped training pairs use (internal/bootstrap), give exactly
// the prompts the pipeline sends, and that the exported parsers read the
// replies the pipeline reads.
func TestStagePromptsShared(t *testing.T) {
	f := newFixture(t, shop...)
	j := &scripted{replies: map[string]string{
		"task_analysis":      `{"intent": "Compute the pager command once.", "type": "refactor", "symbols": [], "files": []}`,
		"scope_judgment":     `{"files": [{"path": "shop/pager.py", "relevant": true, "reason": "defines it"}]}`,
		"precision_judgment": `{"symbols": [{"path": "shop/pager.py", "symbol": "_pager_contextmanager", "tier": "primary"}]}`,
	}}
	var systems []string
	judge := func(ctx context.Context, callType, stage, system, prompt string) (string, error) {
		systems = append(systems, system)
		return j.judge(ctx, callType, stage, system, prompt)
	}
	p, _ := newPipeline(t, f, judge)
	stages, _ := ParseStages("scope,precision")
	task := "Resolve the pager command once, in `_pager_contextmanager`"
	res, err := p.Run(context.Background(), "task-1", task, stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.prompts) != 3 {
		t.Fatalf("%d calls, want 3", len(j.prompts))
	}
	if sys, user := TaskAnalysisPrompt(task); sys != systems[0] || user != j.prompts[0] {
		t.Errorf("TaskAnalysisPrompt: got %q / %q, want what the pipeline sent: %q / %q", sys, user, systems[0], j.prompts[0])
	}
	// Scope judged the ranking that precision then narrowed: rank again.
	q := res.Context.Task
	cands, err := NewRanker(f.kb, f.repoID).Rank(context.Background(), q, defaultCandidates)
	if err != nil {
		t.Fatal(err)
	}
	sys, batches := ScopePrompts(q, cands, p.PromptTokens)
	if sys != systems[1] || len(batches) != 1 || batches[0].Prompt != j.prompts[1] || len(batches[0].Candidates) != len(cands) {
		t.Errorf("ScopePrompts: %d batch(es); first:\n%s\nwant what the pipeline sent:\n%s", len(batches), batches[0].Prompt, j.prompts[1])
	}
	sys, prompt, offered := PrecisionPrompt(q, res.Context.Symbols, p.PromptTokens)
	if sys != systems[2] || prompt != j.prompts[2] || len(offered) == 0 {
		t.Errorf("PrecisionPrompt: got\n%s\nwant what the pipeline sent:\n%s", prompt, j.prompts[2])
	}
	if v, err := ParseTaskAnalysis(j.replies["task_analysis"]); err != nil || v.Intent != q.Intent {
		t.Errorf("ParseTaskAnalysis: %+v, %v", v, err)
	}
	if _, err := ParseTaskAnalysis(`{"intent": "  "}`); err == nil {
		t.Error("ParseTaskAnalysis took a reply without intent")
	}
	if _, err := ParsePrecisionReply(`{"symbols": [{"path": "a", "symbol": "b", "tier": "vital"}]}`); err == nil {
		t.Error("ParsePrecisionReply took an unknown tier")
	}
}
