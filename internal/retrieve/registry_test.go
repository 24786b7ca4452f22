package retrieve

import (
	"testing"

	"github.com/cra-dev/cra/internal/stage"
)

// TestStageRegistry: every retrieval stage package stage names has an
// implementation here and no other is registered, so ParseStages never
// accepts a name it cannot run.
func TestStageRegistry(t *testing.T) {
	names := stage.Retrieval()
	if len(names) != len(stageRegistry) {
		t.Errorf("got %d registered stages, want %d (%v)", len(stageRegistry), len(names), names)
	}
	for _, n := range names {
		mk, ok := stageRegistry[n]
		if !ok {
			t.Errorf("stage %q has no implementation", n)
			continue
		}
		if got := mk().Name(); got != n {
			t.Errorf("stage %q: its Name is %q", n, got)
		}
	}
}
