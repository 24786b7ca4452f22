package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/retrieve"
)

// changesOf commits old, then new, in a fresh repository (a nil content
// is no file) and returns the change as loadCommit reads it.
func changesOf(t *testing.T, old, new map[string]*string) []change {
	t.Helper()
	ctx := context.Background()
	dir := gittest.Init(t)
	write := func(files map[string]*string) string {
		for name, content := range files {
			if content == nil {
				gittest.Run(t, dir, "rm", "-q", "--ignore-unmatch", name)
				continue
			}
			gittest.WriteFile(t, dir, name, *content)
		}
		gittest.Run(t, dir, "add", "-A")
		gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", "state")
		return gittest.Run(t, dir, "rev-parse", "HEAD")
	}
	a, b := write(old), write(new)
	c, err := loadCommit(ctx, dir, gitx.Commit{Hash: b, Parents: []string{a}, Timestamp: "2024-01-02T03:04:05Z"})
	if err != nil {
		t.Fatal(err)
	}
	return c.Changes
}

func s(v string) *string { return &v }

func TestEditBlocks(t *testing.T) {
	repeated := "def f():\n    return 1\n\n\ndef g():\n    return 1\n"
	for _, tc := range []struct {
		name     string
		old, new map[string]*string
		blocks   int    // blocks expected
		search   string // the first block's SEARCH, when given
		err      bool   // not editable
	}{
		{name: "one line", old: map[string]*string{"a.py": s("x = 1\ny = 2\nz = 3\n")}, new: map[string]*string{"a.py": s("x = 1\ny = 5\nz = 3\n")},
			blocks: 1, search: "y = 2\n"},
		{name: "a repeated line takes context", old: map[string]*string{"a.py": s(repeated)},
			new:    map[string]*string{"a.py": s(strings.Replace(repeated, "def g():\n    return 1", "def g():\n    return 2", 1))},
			blocks: 1, search: "def g():\n    return 1\n"},
		{name: "insertion at the top", old: map[string]*string{"a.py": s("x = 1\n")}, new: map[string]*string{"a.py": s("import os\nx = 1\n")}, blocks: 1, search: "x = 1\n"},
		{name: "insertion at the end", old: map[string]*string{"a.py": s("x = 1\ny = 2\n")}, new: map[string]*string{"a.py": s("x = 1\ny = 2\nz = 3\n")}, blocks: 1, search: "y = 2\n"},
		{name: "deletion", old: map[string]*string{"a.py": s("x = 1\ny = 2\nz = 3\n")}, new: map[string]*string{"a.py": s("x = 1\nz = 3\n")}, blocks: 1, search: "y = 2\n"},
		{name: "hunks a line apart are one block", old: map[string]*string{"a.py": s("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")},
			new: map[string]*string{"a.py": s("a = 1\nb = 9\nc = 3\nd = 9\ne = 5\n")}, blocks: 1, search: "b = 2\nc = 3\nd = 4\n"},
		{name: "far hunks are two blocks", old: map[string]*string{"a.py": s("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\n")},
			new: map[string]*string{"a.py": s("a = 0\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 0\n")}, blocks: 2, search: "a = 1\n"},
		{name: "a new file", old: map[string]*string{"a.py": s("x = 1\n")}, new: map[string]*string{"b.py": s("y = 2\n")}, blocks: 1, search: ""},
		{name: "no newline at the end", old: map[string]*string{"a.py": s("x = 1\ny = 2")}, new: map[string]*string{"a.py": s("x = 1\ny = 3")}, blocks: 1},
		{name: "a deleted file", old: map[string]*string{"a.py": s("x = 1\n"), "b.py": s("y = 1\n")}, new: map[string]*string{"b.py": nil}, err: true},
		{name: "a binary file", old: map[string]*string{"a.bin": s("\x00\x01")}, new: map[string]*string{"a.bin": s("\x00\x02")}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			changes := changesOf(t, tc.old, tc.new)
			blocks, err := editBlocks(changes)
			if tc.err {
				if !errors.Is(err, errNotEditable) {
					t.Fatalf("got %v, want errNotEditable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != tc.blocks {
				t.Fatalf("got %d blocks, want %d: %+v", len(blocks), tc.blocks, blocks)
			}
			if tc.search != "" || tc.name == "a new file" {
				if blocks[0].Search != tc.search {
					t.Errorf("SEARCH %q, want %q", blocks[0].Search, tc.search)
				}
			}
			// The blocks as a reply, applied by cra to the old files, give
			// the new ones, unless the format cannot carry them (a last line
			// without its newline).
			err = reproduce(edit.Format(blocks), changes)
			if tc.name == "no newline at the end" {
				if err == nil {
					t.Errorf("a change to a last line without newline reproduced; the edit format cannot carry it")
				}
				return
			}
			if err != nil {
				t.Errorf("reproduce: %v\n%s", err, edit.Format(blocks))
			}
		})
	}
}

func TestReproduceCatchesAWrongReply(t *testing.T) {
	changes := changesOf(t, map[string]*string{"a.py": s("x = 1\n")}, map[string]*string{"a.py": s("x = 2\n")})
	wrong := edit.Format([]edit.Block{{Path: "a.py", Search: "x = 1\n", Replace: "x = 3\n"}})
	if err := reproduce(wrong, changes); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("got %v, want a difference", err)
	}
	if err := reproduce("no blocks here", changes); err == nil {
		t.Error("a reply without blocks reproduced")
	}
}

func TestShowChanges(t *testing.T) {
	old := "class A:\n    x = 1\n\n    def f(self):\n        return 1\n\n\ny = 2\n"
	changes := []change{{FileHunks: gitx.FileHunks{OldPath: "a.py", NewPath: "a.py"}, Old: []byte(old)}}
	blocks := []edit.Block{
		{Path: "a.py", Search: "class A:\n    x = 1\n", Replace: "class A:\n    x = 2\n"},
		{Path: "a.py", Search: "        return 1\n", Replace: "        return 2\n"}, // shown already
		{Path: "a.py", Search: "y = 2\n", Replace: "y = 3\n"},                       // a file line no item holds
	}
	pkg := &retrieve.Package{Files: []retrieve.PackageFile{{Path: "a.py", Items: []retrieve.Item{
		{Kind: "signature", Name: "A", StartLine: 1, EndLine: 1, Text: "class A:\n"},
		{Kind: "symbol", Name: "f", StartLine: 4, EndLine: 5, Text: "    def f(self):\n        return 1\n"},
	}}}}
	showChanges(pkg, changes, blocks)
	var got []string
	for _, it := range pkg.Files[0].Items {
		got = append(got, fmt.Sprintf("%s %d-%d", it.Kind, it.StartLine, it.EndLine))
	}
	want := []string{"snippet 1-2", "symbol 4-5", "snippet 8-8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if !searchVisible(blocks, pkg.Render()) {
		t.Errorf("a SEARCH line is not in the rendered package:\n%s", pkg.Render())
	}
}

func TestMergeHunks(t *testing.T) {
	h := func(os, ol, ns, nl int) gitx.Hunk {
		return gitx.Hunk{OldStart: os, OldLines: ol, NewStart: ns, NewLines: nl}
	}
	for _, tc := range []struct {
		name     string
		in, want []gitx.Hunk
	}{
		{"two lines apart", []gitx.Hunk{h(3, 1, 3, 1), h(6, 1, 6, 1)}, []gitx.Hunk{h(3, 4, 3, 4)}},
		{"three lines apart", []gitx.Hunk{h(3, 1, 3, 1), h(7, 1, 7, 1)}, []gitx.Hunk{h(3, 1, 3, 1), h(7, 1, 7, 1)}},
		{"a change, then a deletion", []gitx.Hunk{h(3, 1, 3, 1), h(5, 1, 4, 0)}, []gitx.Hunk{h(3, 3, 3, 2)}},
		{"an insertion stays apart", []gitx.Hunk{h(3, 0, 4, 1), h(4, 1, 6, 1)}, []gitx.Hunk{h(3, 0, 4, 1), h(4, 1, 6, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mergeHunks(tc.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestIntentOf: a commit message read as an intent ends in one full stop,
// or in the end mark it had, "…" included.
func TestIntentOf(t *testing.T) {
	for msg, want := range map[string]string{
		"Make compute add two":               "Make compute add two.",
		"Make compute add two.\n\nBecause.":  "Make compute add two.",
		"Does compute add two?":              "Does compute add two?",
		"Make compute add two, then three…":  "Make compute add two, then three…",
		"Make compute add two, then three …": "Make compute add two, then three …",
	} {
		if got := intentOf(msg); got != want {
			t.Errorf("intentOf(%q) = %q, want %q", msg, got, want)
		}
	}
}
