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

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
	"github.com/cra-dev/cra/internal/statedir"
)

// queryFixture is a repository directory whose index is the kbtest fixture.
func queryFixture(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	kbtest.Write(t, filepath.Join(repo, statedir.Name), repo)
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
		}, []string{"--language", "go", "--json", "--vendored"}, queryFilesOptions{queryOptions{".", true}, "go", true}},
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
			if diff := deepDiff(tc.want, got); diff != "" {
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
	if diff := deepDiff(wantOut, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if diff := deepDiff(wantErrOut, errOut.String()); diff != "" {
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
