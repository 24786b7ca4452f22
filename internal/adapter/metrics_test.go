package adapter

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/cra-dev/cra/internal/dataset"
)

func TestScorers(t *testing.T) {
	rec := func(stage, user, ref string, gold ...string) dataset.Record {
		return dataset.Record{Example: dataset.Chat("sys", user, ref), Meta: dataset.Meta{Stage: stage, Gold: gold}}
	}
	plan := `{"summary": "s", "steps": [{"file": "a.py", "change": "c", "why": "w"}, {"file": "b.py", "change": "c", "why": "w"}]}`
	for _, tc := range []struct {
		name     string
		stage    string
		r        dataset.Record
		reply    string
		want     float64
		skip     bool
		unusable bool
	}{
		{"scope half", dataset.Scope, rec(dataset.Scope, "t", "{}", "a.py", "b.py"),
			`{"files": [{"path": " a.py ", "relevant": true}, {"path": "b.py", "relevant": false}, {"path": "c.py", "relevant": true}]}`, 0.5, false, false},
		{"scope no gold", dataset.Scope, rec(dataset.Scope, "t", "{}"), `{"files": []}`, 0, true, false},
		{"scope prose", dataset.Scope, rec(dataset.Scope, "t", "{}", "a.py"), "a.py, I think", 0, false, true},
		{"plan gold", dataset.ExecutePlan, rec(dataset.ExecutePlan, "task", plan, "a.py", "c.py"), plan, 0.5, false, false},
		{"plan reference files", dataset.ExecutePlan, rec(dataset.ExecutePlan, "task", plan), plan, 1, false, false},
		{"plan invalid", dataset.ExecutePlan, rec(dataset.ExecutePlan, "task", plan), `{"summary": "s", "steps": []}`, 0, false, true},
		{"plan nothing to compare", dataset.ExecutePlan, rec(dataset.ExecutePlan, "task", "prose"), plan, 0, true, false},
		{"analysis f1", dataset.TaskAnalysis,
			rec(dataset.TaskAnalysis, "t", `{"intent": "i", "type": "bug", "symbols": ["Add"], "files": ["calc.py"]}`),
			`{"intent": "j", "type": "bug", "symbols": ["Add", "Sub"], "files": []}`, 2 * 0.5 * 0.5 / 1.0, false, false},
		{"analysis type only", dataset.TaskAnalysis, rec(dataset.TaskAnalysis, "t", `{"intent": "i", "type": "bug"}`),
			`{"intent": "j", "type": "bug"}`, 1, false, false},
		{"analysis wrong type", dataset.TaskAnalysis, rec(dataset.TaskAnalysis, "t", `{"intent": "i", "type": "bug"}`),
			`{"intent": "j", "type": "feature"}`, 0, false, false},
		{"analysis no intent", dataset.TaskAnalysis, rec(dataset.TaskAnalysis, "t", `{"intent": "i", "type": "bug"}`),
			`{"type": "bug"}`, 0, false, true},
		{"precision", dataset.Precision,
			rec(dataset.Precision, "t", `{"symbols": [{"path": "a.py", "symbol": "f", "tier": "primary"}, {"path": "a.py", "symbol": "g", "tier": "excluded"}]}`),
			`{"symbols": [{"path": "a.py", "symbol": "f", "tier": "primary"}]}`, 0.5, false, false},
		{"precision unknown tier", dataset.Precision,
			rec(dataset.Precision, "t", `{"symbols": [{"path": "a.py", "symbol": "f", "tier": "primary"}]}`),
			`{"symbols": [{"path": "a.py", "symbol": "f", "tier": "main"}]}`, 0, false, true},
		{"code without commit", dataset.ExecuteCode, rec(dataset.ExecuteCode, "t", "x"), "x", 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scorerFor(tc.stage)
			defer s.close()
			got, ok, err := s.score(context.Background(), tc.r, tc.reply)
			if ok == tc.skip {
				t.Fatalf("scorable: got %v, want %v", ok, !tc.skip)
			}
			if errors.Is(err, errUnusable) != tc.unusable || (err != nil && !errors.Is(err, errUnusable)) {
				t.Errorf("error: got %v, want unusable=%v", err, tc.unusable)
			}
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("score: got %v, want %v", got, tc.want)
			}
		})
	}
}
