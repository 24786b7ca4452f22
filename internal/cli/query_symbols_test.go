package cli

import (
	"context"
	"errors"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
)

func TestQuerySymbolsRun(t *testing.T) {
	repo := queryFixture(t)
	tests := []struct {
		name       string
		opts       querySymbolsOptions
		wantOut    string
		wantErrOut string
	}{
		{"ranked", querySymbolsOptions{queryOptions: queryOptions{repo: repo}, pattern: "user", limit: 50}, `User         class       app/models.py:3-20
User         interface   web/types.ts:1-4
UserId       type_alias  web/types.ts:6
create_user  function    app/api.py:12-20
fetchUser    function    web/client.ts:3-12
get_user     function    app/api.py:1-10
load_user    function    app/models.py:22-30
`, ""},
		{"qualified names", querySymbolsOptions{queryOptions: queryOptions{repo: repo}, pattern: "*", kind: "method", limit: 50}, `Session.query  method  app/db.py:15-25
User.save      method  app/models.py:8-14
`, ""},
		{"limit", querySymbolsOptions{queryOptions: queryOptions{repo: repo}, pattern: "user", limit: 2}, `User  class      app/models.py:3-20
User  interface  web/types.ts:1-4
`, "showing the first 2 matches: narrow the pattern, add --kind, or raise --limit\n"},
		{"no match", querySymbolsOptions{queryOptions: queryOptions{repo: repo}, pattern: "zzz", limit: 50}, "", "no symbols match \"zzz\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkQuery(t, querySymbolsRun, &tc.opts, tc.wantOut, tc.wantErrOut) })
	}
	t.Run("json", func(t *testing.T) {
		syms := queryJSON[[]kb.Symbol](t, querySymbolsRun, &querySymbolsOptions{queryOptions: queryOptions{repo: repo, json: true}, pattern: "save", limit: 50})
		want := []kb.Symbol{{ID: kbtest.SymUserSave, FileID: kbtest.ModelsPy, Path: "app/models.py", Name: "save", Kind: "method",
			StartLine: 8, EndLine: 14, Signature: "def save(self):", ParentID: kbtest.SymUser, Parent: "User"}}
		if diff := deepDiff(want, syms); diff != "" {
			t.Errorf("symbols (-want +got):\n%s", diff)
		}
	})
	for name, opts := range map[string]querySymbolsOptions{
		"unknown kind": {queryOptions: queryOptions{repo: repo}, pattern: "x", kind: "func", limit: 50},
		"zero limit":   {queryOptions: queryOptions{repo: repo}, pattern: "x"},
	} {
		t.Run(name, func(t *testing.T) {
			d, _, _ := testDeps()
			var ue usageError
			if err := querySymbolsRun(context.Background(), d, &opts); !errors.As(err, &ue) {
				t.Errorf("got %v, want a usage error", err)
			}
		})
	}
}
