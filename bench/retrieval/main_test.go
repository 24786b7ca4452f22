package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	click := write("commits_click.jsonl", strings.Repeat(`{"repo": "pallets/click", "commit": "c", "parent": "p", "message": "m", "gold_files": ["a.py"]}`+"\n", 3))
	swe := write("swe.jsonl", `{"repo": "a/one", "instance_id": "i1", "base_commit": "b", "problem_statement": "x"}
{"repo": "b/two", "instance_id": "i2", "base_commit": "b", "problem_statement": "y"}
`)

	t.Run("bare repo after its set, mappings, limit", func(t *testing.T) {
		o, err := parseArgs([]string{"-set", click, "-repo", "/src/click", "-set", swe, "-repo", "a/one=/src/one", "-limit", "2", "-strip-scope=false"}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"pallets/click": "/src/click", "a/one": "/src/one"}, o.repos); diff != "" {
			t.Errorf("repos (-want +got):\n%s", diff)
		}
		if len(o.sets) != 2 || o.sets[0].Name != "commits_click" || len(o.sets[0].Tasks) != 2 || len(o.sets[1].Tasks) != 2 {
			t.Errorf("sets: got %+v", o.sets)
		}
		if o.stripScope || o.rankLimit != 100 {
			t.Errorf("got stripScope %v rank %d, want false 100", o.stripScope, o.rankLimit)
		}
	})

	errs := []struct {
		name string
		args []string
		want string
	}{
		{"no set", nil, "no -set"},
		{"bare repo before any set", []string{"-repo", "/src/click", "-set", click}, "follows the -set"},
		{"bare repo for a multi-repo set", []string{"-set", swe, "-repo", "/src/x"}, "spans 2 repositories"},
		{"repo mapped twice", []string{"-set", click, "-repo", "/a", "-repo", "pallets/click=/b"}, "mapped twice"},
		{"missing set file", []string{"-set", filepath.Join(dir, "nope.jsonl")}, "nope.jsonl"},
		{"positional argument", []string{"-set", click, "extra"}, "unexpected argument"},
		{"same set twice", []string{"-set", click, "-set", click}, "already given"},
		{"rank below ten", []string{"-set", click, "-rank", "5"}, "-rank"},
		{"repo weights without a cache", []string{"-set", click, "-weights", "hand-set,repo"}, "-learn DIR"},
		{"unknown weights", []string{"-set", click, "-weights", "tuned"}, "unknown weights"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseArgs(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
