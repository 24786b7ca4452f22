package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/statedir"
)

func TestQueryDepsRun(t *testing.T) {
	repo := queryFixture(t)
	tests := []struct {
		name       string
		opts       queryDepsOptions
		wantOut    string
		wantErrOut string
	}{
		{"edges both ways", queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "app/db.py", direction: kb.Both, depth: 1}, `imports      app/util.py    import
imported by  app/api.py     import
imported by  app/models.py  import
`, ""},
		{"edge kinds", queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "web/client.ts", direction: kb.Imports, depth: 1}, `imports  web/types.ts  import
imports  web/types.ts  type_ref
`, ""},
		{"walk", queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "app/util.py", direction: kb.Both, depth: 2}, `1  imported by  app/db.py
2  imported by  app/api.py     via app/db.py
2  imported by  app/models.py  via app/db.py
`, ""},
		{"walk one way", queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "app/api.py", direction: kb.Imports, depth: 3}, `1  imports  app/db.py
1  imports  app/models.py
2  imports  app/util.py    via app/db.py
`, ""},
		{"none", queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "app/util.py", direction: kb.Imports, depth: 1}, "",
			"no dependency edges (imports) for app/util.py\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkQuery(t, queryDepsRun, &tc.opts, tc.wantOut, tc.wantErrOut) })
	}
	t.Run("json", func(t *testing.T) {
		g := queryJSON[kb.DependencyGraph](t, queryDepsRun, &queryDepsOptions{queryOptions: queryOptions{repo: repo, json: true}, path: "app/util.py", direction: kb.Both, depth: 2})
		if len(g.Nodes) != 4 || len(g.Edges) != 4 || g.Nodes[0].Path != "app/util.py" {
			t.Errorf("got %+v, want 4 nodes from app/util.py and 4 edges", g)
		}
	})
	t.Run("path relative to the working directory", func(t *testing.T) {
		t.Chdir(filepath.Join(repo, statedir.Name)) // any directory inside the repository
		d, out, _ := testDeps()
		opts := &queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "../web/types.ts", direction: kb.Both, depth: 1}
		if err := queryDepsRun(context.Background(), d, opts); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "imported by  web/client.ts") {
			t.Errorf("got %q, want web/types.ts's importer", out)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		d, _, _ := testDeps()
		err := queryDepsRun(context.Background(), d, &queryDepsOptions{queryOptions: queryOptions{repo: repo}, path: "app/nope.py", direction: kb.Both, depth: 1})
		want := `no indexed file "app/nope.py": run 'cra query files' to list them`
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
	for name, opts := range map[string]queryDepsOptions{
		"bad direction": {queryOptions: queryOptions{repo: repo}, path: "app/db.py", direction: "callers", depth: 1},
		"zero depth":    {queryOptions: queryOptions{repo: repo}, path: "app/db.py", direction: kb.Both, depth: 0},
	} {
		t.Run(name, func(t *testing.T) {
			d, _, _ := testDeps()
			var ue usageError
			if err := queryDepsRun(context.Background(), d, &opts); !errors.As(err, &ue) {
				t.Errorf("got %v, want a usage error", err)
			}
		})
	}
}
