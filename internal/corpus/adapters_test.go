package corpus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
)

func TestAdapterRegistry(t *testing.T) {
	ctx := context.Background()
	c, db := openRaw(t)
	loss := 0.42
	a1, err := c.RecordAdapter(ctx, corpus.AdapterRecord{Stage: "scope", BaseModel: "reasoning", ModelTag: "q:4b-scope-v1", TrainingLoss: &loss})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecordAdapter(ctx, corpus.AdapterRecord{Stage: "execute_code", BaseModel: "coding", ModelTag: "c:3b-execute_code-v1"}); err != nil {
		t.Fatal(err)
	}
	a2, err := c.RecordAdapter(ctx, corpus.AdapterRecord{Stage: "scope", BaseModel: "reasoning", ModelTag: "q:4b-scope-v2"})
	if err != nil {
		t.Fatal(err)
	}
	// An adapter trained outside cra has no dataset: NULL, not 0.
	if got := queryRows(t, db, "SELECT dataset_id FROM adapter_registry ORDER BY id"); got[0]["dataset_id"] != nil {
		t.Errorf("dataset_id = %v, want NULL", got[0]["dataset_id"])
	}
	got, err := c.AdapterByTag(ctx, "q:4b-scope-v2")
	if err != nil {
		t.Fatal(err)
	}
	want := corpus.AdapterRecord{ID: a2, Stage: "scope", BaseModel: "reasoning", ModelTag: "q:4b-scope-v2", TrainedAt: stamp, Version: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("adapter (-want +got):\n%s", diff)
	}
	if _, err := c.AdapterByTag(ctx, "nope"); !errors.Is(err, corpus.ErrNoRow) {
		t.Errorf("unknown tag: got %v, want ErrNoRow", err)
	}

	if err := c.SetAdapterEval(ctx, a1, `{"score":1}`); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAdapterDeployed(ctx, a1, true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetAdapterDeployed(ctx, a2, true); err != nil {
		t.Fatal(err)
	}
	scope, err := c.Adapters(ctx, "scope")
	if err != nil {
		t.Fatal(err)
	}
	if len(scope) != 2 || scope[0].Deployed || !scope[1].Deployed || scope[0].EvalMetrics != `{"score":1}` || *scope[0].TrainingLoss != 0.42 || scope[0].Version != 1 {
		t.Errorf("scope adapters after deploying v2: got %+v", scope)
	}
	if err := c.SetAdapterDeployed(ctx, a2, false); err != nil {
		t.Fatal(err)
	}
	all, err := c.Adapters(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		if a.Deployed {
			t.Errorf("after undeploying v2, %s is still deployed", a.ModelTag)
		}
	}
	if len(all) != 3 {
		t.Errorf("all adapters: got %d, want 3", len(all))
	}
}
