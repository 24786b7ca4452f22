// Package parsetest checks the rows of a parser's table test: each row
// wants an error containing some text, or no error and a value. The
// parsers of model replies (edit blocks, plans) live in different
// packages and share this one check rather than each spelling it out.
package parsetest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check fails t unless err contains wantErr or, when wantErr is "",
// there is no error and got is want.
func Check[T any](t *testing.T, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %v, want an error containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
