package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
)

func TestQueryFilesRun(t *testing.T) {
	repo := queryFixture(t)
	tests := []struct {
		name       string
		opts       queryFilesOptions
		wantOut    string
		wantErrOut string
	}{
		{"all", queryFilesOptions{queryOptions: queryOptions{repo: repo}}, `app/api.py     python      20 lines
app/db.py      python      40 lines  2 syntax errors
app/models.py  python      30 lines
app/util.py    python       8 lines
web/client.ts  typescript  25 lines
web/types.ts   typescript   6 lines
`, ""},
		{"language", queryFilesOptions{queryOptions: queryOptions{repo: repo}, language: "TypeScript"}, `web/client.ts  typescript  25 lines
web/types.ts   typescript   6 lines
`, ""},
		{"none of a language", queryFilesOptions{queryOptions: queryOptions{repo: repo}, language: "go"}, "", "no indexed go files (indexed languages: python, typescript)\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkQuery(t, queryFilesRun, &tc.opts, tc.wantOut, tc.wantErrOut) })
	}
	t.Run("json", func(t *testing.T) {
		files := queryJSON[[]kb.File](t, queryFilesRun, &queryFilesOptions{queryOptions: queryOptions{repo: repo, json: true}})
		if len(files) != 6 || files[1].Path != "app/db.py" || files[1].SyntaxErrors != 2 {
			t.Errorf("got %+v, want 6 files, app/db.py second with 2 syntax errors", files)
		}
	})
	t.Run("json empty is a list", func(t *testing.T) {
		d, out, _ := testDeps()
		if err := queryFilesRun(context.Background(), d, &queryFilesOptions{queryOptions: queryOptions{repo: repo, json: true}, language: "go"}); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != "[]" {
			t.Errorf("got %s, want []", got)
		}
	})
}
