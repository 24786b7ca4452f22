package corpus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
)

func TestTrainingPlansAndDatasets(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	planID, err := c.RecordPlan(ctx, corpus.Plan{TaskID: "boot-1", TargetStage: "scope", BaseModel: "reasoning",
		Source: corpus.SourceSynthetic, DataCriteria: `{"max_files":5}`, RawPlan: "bootstrap of click"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Plan(ctx, planID)
	if err != nil {
		t.Fatal(err)
	}
	want := corpus.Plan{ID: planID, TaskID: "boot-1", TargetStage: "scope", BaseModel: "reasoning",
		Source: corpus.SourceSynthetic, DataCriteria: `{"max_files":5}`, RawPlan: "bootstrap of click", Timestamp: stamp}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	// Optional columns are NULL, not "".
	if got := queryRows(t, db, "SELECT hyperparameters, improvement_targets FROM training_plans"); got[0]["hyperparameters"] != nil || got[0]["improvement_targets"] != nil {
		t.Errorf("optional plan columns = %v, want NULLs", got[0])
	}

	var ids []int64
	for _, stage := range []string{"scope", "execute_code"} {
		id, err := c.RecordDataset(ctx, corpus.Dataset{PlanID: planID, Stage: stage, BaseModel: "reasoning",
			Source: corpus.SourceSynthetic, Path: "/d/" + stage, Examples: 10, Positive: 6, Negative: 4})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	d, err := c.Dataset(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if d.Stage != "execute_code" || d.Format != "jsonl" || d.Examples != 10 || d.Positive != 6 || d.Negative != 4 || d.Timestamp != stamp {
		t.Errorf("dataset = %+v", d)
	}
	all, err := c.Datasets(ctx, "")
	if err != nil || len(all) != 2 || all[0].ID != ids[1] {
		t.Errorf("Datasets(\"\") = %+v, %v; want both, newest first", all, err)
	}
	scope, err := c.Datasets(ctx, "scope")
	if err != nil || len(scope) != 1 || scope[0].ID != ids[0] {
		t.Errorf("Datasets(scope) = %+v, %v", scope, err)
	}
	if _, err := c.Dataset(ctx, 999); !errors.Is(err, corpus.ErrNoRow) {
		t.Errorf("Dataset(999) error = %v, want ErrNoRow", err)
	}
	if _, err := c.Plan(ctx, 999); !errors.Is(err, corpus.ErrNoRow) {
		t.Errorf("Plan(999) error = %v, want ErrNoRow", err)
	}
	// The foreign key holds: a dataset of a plan that does not exist is refused.
	if _, err := c.RecordDataset(ctx, corpus.Dataset{PlanID: 999, Stage: "scope", BaseModel: "reasoning", Path: "/x"}); err == nil {
		t.Error("a dataset of a missing plan was recorded")
	}
}
