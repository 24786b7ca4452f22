package main

import (
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/learn"
)

// TestMarkDecl: a candidate is marked as it stood at the example's
// parent, never at a later commit: types.ts only declares types at the
// first commit and gains a function at the second, merge.ts is the
// reverse; a test file and a file the parent lacks are never marked.
func TestMarkDecl(t *testing.T) {
	dir := gittest.Init(t)
	first := gittest.Commit(t, dir, "first", map[string]string{
		"types.ts":      "export interface Options { retry?: number }\nexport type Hook = () => void;\n",
		"merge.ts":      "export function merge(a: number, b: number): number { return b }\n",
		"types.test.ts": "export interface Case { retry: number }\n",
	})
	second := gittest.Commit(t, dir, "second", map[string]string{
		"types.ts": "export interface Options { retry?: number }\nexport function limit(o: Options): number { return o.retry ?? 2 }\n",
		"merge.ts": "export type Merged = {retry: number};\n",
		"new.ts":   "export type New = number;\n",
	})
	third := gittest.Commit(t, dir, "third", nil)
	rows := func() []learn.Row {
		return []learn.Row{{Path: "types.ts", Code: true}, {Path: "merge.ts", Code: true}, {Path: "types.test.ts", Code: true, Test: true}, {Path: "new.ts", Code: true}, {Path: "README.md", Decl: true}}
	}
	ex := []learn.Example{
		{Repo: "r", Commit: second, Parent: first, Candidates: rows()},
		{Repo: "r", Commit: third, Parent: second, Candidates: rows()},
	}
	n, err := markDecl(t.Context(), dir, ex)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]bool{{true, false, false, false, false}, {false, true, false, true, false}}
	for i, e := range ex {
		for j, c := range e.Candidates {
			if c.Decl != want[i][j] {
				t.Errorf("example %d (parent %.7s): %s marked %v, want %v", i, e.Parent, c.Path, c.Decl, want[i][j])
			}
		}
	}
	if n != 3 {
		t.Errorf("got %d marked rows, want 3", n)
	}
}
