package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
)

func TestQueryCoChangeRun(t *testing.T) {
	repo := queryFixture(t)
	tests := []struct {
		name       string
		opts       queryCoChangeOptions
		wantOut    string
		wantErrOut string
	}{
		{"all", queryCoChangeOptions{queryOptions: queryOptions{repo: repo}, path: "app/db.py", minCount: 1}, `5  app/models.py
1  app/util.py
`, ""},
		{"min count", queryCoChangeOptions{queryOptions: queryOptions{repo: repo}, path: "app/db.py", minCount: 2}, "5  app/models.py\n", ""},
		{"none", queryCoChangeOptions{queryOptions: queryOptions{repo: repo}, path: "app/db.py", minCount: 9}, "",
			"no files changed together with app/db.py in 9 commits or more\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkQuery(t, queryCoChangeRun, &tc.opts, tc.wantOut, tc.wantErrOut) })
	}
	t.Run("json", func(t *testing.T) {
		cs := queryJSON[[]kb.CoChange](t, queryCoChangeRun, &queryCoChangeOptions{queryOptions: queryOptions{repo: repo, json: true}, path: "web/types.ts", minCount: 1})
		want := []kb.CoChange{{FileID: kbtest.ClientTS, Path: "web/client.ts", Count: 3, LastCommitHash: "c2c2c2c2c2c2"}}
		if diff := deepDiff(want, cs); diff != "" {
			t.Errorf("co-changes (-want +got):\n%s", diff)
		}
	})
	t.Run("zero min count", func(t *testing.T) {
		d, _, _ := testDeps()
		var ue usageError
		if err := queryCoChangeRun(context.Background(), d, &queryCoChangeOptions{queryOptions: queryOptions{repo: repo}, path: "app/db.py"}); !errors.As(err, &ue) {
			t.Errorf("got %v, want a usage error", err)
		}
	})
}
