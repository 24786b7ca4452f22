package cli

import (
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/index"
)

// The summary says when a run read every file again because the index
// was written by another extractor: a user sees why a no-change run took
// as long as the first.
func TestSummaryLineReextracted(t *testing.T) {
	r := &index.Result{Indexed: 3, Changed: 3, History: "up to date"}
	const note = "every file read again for a newer extractor"
	if got := summaryLine(r); strings.Contains(got, note) {
		t.Errorf("plain run: %q mentions the extractor", got)
	}
	r.Reextracted = true
	if got := summaryLine(r); !strings.Contains(got, ": 0 added, 3 changed, 0 deleted, 0 unchanged (0 parsed); "+note+";") {
		t.Errorf("re-extracted run: got %q, want the note after the counts", got)
	}
}
