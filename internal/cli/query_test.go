package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
)

// queryFixture is a repository directory whose index is the kbtest fixture.
func queryFixture(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	kbtest.Write(t, filepath.Join(repo, config.Dir), repo)
	return repo
}

// testDeps returns deps writing to buffers.
func testDeps() (*deps, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return &deps{
		in:     strings.NewReader(""),
		out:    &out,
		errOut: &errOut,
		logger: slog.New(slog.DiscardHandler),
		now:    time.Now,
	}, &out, &errOut
}

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
		if diff := cmp.Diff(want, syms); diff != "" {
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
		t.Chdir(filepath.Join(repo, config.Dir)) // any directory inside the repository
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
		if diff := cmp.Diff(want, cs); diff != "" {
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

func TestQueryContextRun(t *testing.T) {
	repo := queryFixture(t)
	d, out, _ := testDeps()
	if err := queryContextRun(context.Background(), d, &queryContextOptions{queryOptions: queryOptions{repo: repo}, path: "app/models.py"}); err != nil {
		t.Fatal(err)
	}
	want := `app/models.py  python  30 lines  900 bytes
purpose   User model
domain    users
module    app.models
concepts  user, persistence
api       User, load_user
symbols (3)
  User       class     3-20
  User.save  method    8-14
  load_user  function  22-30
docstrings (3)
  (module)   User model and persistence.
  User       A shop customer.
  load_user  Load a user by id.
rationale comments (2)
  10  # flush before commit because the driver buffers writes
  25  # cache misses are rare, so no lock here
imports (1)
  app/db.py  import
imported by (1)
  app/api.py  import
changed together with (2)
  5  app/db.py
  2  app/api.py
recent commits (3)
  c3c3c3c  2024-03-01  Ann  Fix session leak
  c2c2c2c  2024-02-01  Bob  Add the API
  c1c1c1c  2024-01-01  Ann  Add models and db
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}

	t.Run("sparse file", func(t *testing.T) {
		d, out, _ := testDeps()
		if err := queryContextRun(context.Background(), d, &queryContextOptions{queryOptions: queryOptions{repo: repo}, path: "app/util.py"}); err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{"app/util.py  python  8 lines  200 bytes\n", "docstrings (none)\n", "rationale comments (none)\n", "imports (none)\n"} {
			if !strings.Contains(out.String(), line) {
				t.Errorf("got\n%s\nwant a line %q", out, line)
			}
		}
		if strings.Contains(out.String(), "purpose") {
			t.Errorf("got\n%s\nwant no enrichment lines", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		c := queryJSON[kb.FileContext](t, queryContextRun, &queryContextOptions{queryOptions: queryOptions{repo: repo, json: true}, path: "app/db.py"})
		if c.File.Path != "app/db.py" || len(c.Symbols) != 3 || len(c.ImportedBy) != 2 || c.Metadata == nil || c.Metadata.Domain != "storage" {
			t.Errorf("got %+v, want app/db.py's context", c)
		}
	})
}

func TestQueryOverviewRun(t *testing.T) {
	repo := queryFixture(t)
	d, out, _ := testDeps()
	if err := queryOverviewRun(context.Background(), d, &queryOverviewOptions{queryOptions{repo: repo}}); err != nil {
		t.Fatal(err)
	}
	want := `repository    ` + repo + ` (https://example.com/shop.git)
indexed       2024-03-05T12:00:00.000Z
files         6, 129 lines (python 4, typescript 2)
symbols       13 (function 6, class 2, interface 2, method 2, type_alias 1)
dependencies  5 file-to-file edges
history       4 commits, 2024-01-01 to 2024-03-01
enrichment    3 files; domains: users 2, storage 1
warnings      1 file parsed with syntax errors (marked in 'cra query files')

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
	if diff := cmp.Diff(want, out.String()); diff != "" {
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
		if err := queryOverviewRun(context.Background(), d, &queryOverviewOptions{queryOptions{repo: filepath.Join(repo, config.Dir)}}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "repository    "+repo+" ") {
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
	})
	want := `repository    /src/tiny
indexed       2024-03-05T12:00:00.000Z
files         1, 3 lines (go 1)
symbols       0
dependencies  0 file-to-file edges
history       2 commits, 2024-03-05
enrichment    none (enrichment not found, Tier 4 skipped)
warnings      none
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

func TestQueryNotIndexed(t *testing.T) {
	repo := t.TempDir()
	runs := map[string]func(d *deps) error{
		"files": func(d *deps) error {
			return queryFilesRun(context.Background(), d, &queryFilesOptions{queryOptions: queryOptions{repo: repo}})
		},
		"overview": func(d *deps) error {
			return queryOverviewRun(context.Background(), d, &queryOverviewOptions{queryOptions{repo: repo}})
		},
		"context": func(d *deps) error {
			return queryContextRun(context.Background(), d, &queryContextOptions{queryOptions: queryOptions{repo: repo}, path: "a.py"})
		},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			d, _, _ := testDeps()
			err := run(d)
			if !errors.Is(err, kb.ErrNotIndexed) {
				t.Fatalf("got %v, want ErrNotIndexed", err)
			}
			if want := repo + ": repository is not indexed: run 'cra index <repo>' first"; err.Error() != want {
				t.Errorf("got %q, want %q", err, want)
			}
		})
	}
}

// TestQueryFlags checks the flag parsing of each subcommand apart from
// what it does.
func TestQueryFlags(t *testing.T) {
	d, _, _ := testDeps()
	var got any
	capture := func(v any) error { got = v; return nil }
	tests := []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		want any
	}{
		{"files", func() *cobra.Command {
			return newQueryFilesCmd(d, func(_ context.Context, _ *deps, o *queryFilesOptions) error { return capture(*o) })
		}, []string{"--language", "go", "--json"}, queryFilesOptions{queryOptions{".", true}, "go"}},
		{"symbols", func() *cobra.Command {
			return newQuerySymbolsCmd(d, func(_ context.Context, _ *deps, o *querySymbolsOptions) error { return capture(*o) })
		}, []string{"Store*", "--kind", "class", "--repo", "x"}, querySymbolsOptions{queryOptions{"x", false}, "Store*", "class", kb.DefaultSymbolLimit}},
		{"deps defaults", func() *cobra.Command {
			return newQueryDepsCmd(d, func(_ context.Context, _ *deps, o *queryDepsOptions) error { return capture(*o) })
		}, []string{"a.py"}, queryDepsOptions{queryOptions{".", false}, "a.py", kb.Both, 1}},
		{"deps", func() *cobra.Command {
			return newQueryDepsCmd(d, func(_ context.Context, _ *deps, o *queryDepsOptions) error { return capture(*o) })
		}, []string{"a.py", "--direction", "imported_by", "--depth", "3"}, queryDepsOptions{queryOptions{".", false}, "a.py", kb.ImportedBy, 3}},
		{"cochange", func() *cobra.Command {
			return newQueryCoChangeCmd(d, func(_ context.Context, _ *deps, o *queryCoChangeOptions) error { return capture(*o) })
		}, []string{"a.py", "--min-count", "4"}, queryCoChangeOptions{queryOptions{".", false}, "a.py", 4}},
		{"context", func() *cobra.Command {
			return newQueryContextCmd(d, func(_ context.Context, _ *deps, o *queryContextOptions) error { return capture(*o) })
		}, []string{"a.py", "--json"}, queryContextOptions{queryOptions{".", true}, "a.py"}},
		{"overview", func() *cobra.Command {
			return newQueryOverviewCmd(d, func(_ context.Context, _ *deps, o *queryOverviewOptions) error { return capture(*o) })
		}, []string{"--repo", "r"}, queryOverviewOptions{queryOptions{"r", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			cmd := tc.cmd()
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			opts := cmp.AllowUnexported(queryOptions{}, queryFilesOptions{}, querySymbolsOptions{}, queryDepsOptions{},
				queryCoChangeOptions{}, queryContextOptions{}, queryOverviewOptions{})
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// checkQuery runs a query command and compares what it printed.
func checkQuery[O any](t *testing.T, run func(context.Context, *deps, *O) error, opts *O, wantOut, wantErrOut string) {
	t.Helper()
	d, out, errOut := testDeps()
	if err := run(context.Background(), d, opts); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantOut, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantErrOut, errOut.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// queryJSON runs a query command with --json and decodes what it printed.
func queryJSON[T, O any](t *testing.T, run func(context.Context, *deps, *O) error, opts *O) T {
	t.Helper()
	d, out, _ := testDeps()
	if err := run(context.Background(), d, opts); err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return v
}
