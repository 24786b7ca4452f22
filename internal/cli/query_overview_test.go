package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
)

func TestQueryOverviewRun(t *testing.T) {
	repo := queryFixture(t)
	d, out, _ := testDeps()
	if err := queryOverviewRun(context.Background(), d, &queryOverviewOptions{queryOptions{repo: repo}}); err != nil {
		t.Fatal(err)
	}
	want := `repository       ` + repo + ` (https://example.com/shop.git)
indexed          2024-03-05T12:00:00.000Z
files            6, 129 lines (python 4, typescript 2)
symbols          13 (function 6, class 2, interface 2, method 2, type_alias 1)
dependencies     5 file-to-file edges
history          4 commits, 2024-01-01 to 2024-03-01
enrichment       3 files; domains: users 2, storage 1
warnings         1 file parsed with syntax errors (marked in 'cra query files')
ranking weights  global: the repository has no weights of its own ('cra tune' learns them from its history)

most connected files (imported by, imports)
  2  1  app/db.py
  1  1  app/models.py
  0  2  app/api.py
  1  0  app/util.py
  1  0  web/types.ts
  0  1  web/client.ts

most often changed together (commits)
  5  app/models.py  app/db.py
  3  web/client.ts  web/types.ts
  2  app/models.py  app/api.py
`
	if diff := deepDiff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}

	t.Run("json", func(t *testing.T) {
		o := queryJSON[kb.RepoOverview](t, queryOverviewRun, &queryOverviewOptions{queryOptions{repo: repo, json: true}})
		if o.Files != 6 || o.Symbols != 13 || o.Commits != 4 || o.SyntaxWarnings != 1 || o.Repo.Path != repo {
			t.Errorf("got %+v, want the fixture's counts", o)
		}
	})
	t.Run("from a subdirectory", func(t *testing.T) {
		d, out, _ := testDeps()
		if err := queryOverviewRun(context.Background(), d, &queryOverviewOptions{queryOptions{repo: filepath.Join(repo, statedir.Name)}}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "repository       "+repo+" ") {
			t.Errorf("got %q, want the enclosing repository", out)
		}
	})
}

func TestPrintOverviewSparse(t *testing.T) {
	var out bytes.Buffer
	printOverview(&out, &kb.RepoOverview{
		Repo:  kb.Repo{ID: 1, Path: "/src/tiny", IndexedAt: "2024-03-05T12:00:00.000Z", Files: 1},
		Files: 1, Lines: 3, Languages: []kb.LanguageCount{{Language: "go", Files: 1, Lines: 3}},
		Commits: 2, FirstCommitAt: "2024-03-05T09:00:00Z", LastCommitAt: "2024-03-05T11:00:00+01:00",
		TopCoChanges: []kb.CoChangePair{{PathA: "a.go", PathB: "b.go", Count: 1}},
	}, retrieve.WeightChoice{Source: retrieve.WeightsGlobal, Reason: "the repository has no weights of its own"})
	want := `repository       /src/tiny
indexed          2024-03-05T12:00:00.000Z
files            1, 3 lines (go 1)
symbols          0
dependencies     0 file-to-file edges
history          2 commits, 2024-03-05
enrichment       none (enrichment not found, Tier 4 skipped)
warnings         none
ranking weights  global: the repository has no weights of its own
`
	if diff := deepDiff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}
