package retrieve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLayoutBlocks(t *testing.T) {
	src := `'use strict'
var send = require('send')
var http = require('http')

var res = Object.create(http.ServerResponse.prototype)

/**
 * Send a response.
 */

res.send = function send(body) {
  var chunk = body
  // populate Content-Length
  var len = chunk.length
  return this.end(chunk)
};

function covered() {
  return 1
}

module.exports = {
  a: 1,
  b: 2,
}
`
	lines := splitLines(src)
	syms := []symbolRow{{name: "covered", kind: "function", start: 18, end: 20}}
	got := layoutBlocks(lines, syms, 1)
	want := []symbolRow{
		{name: "send", kind: "block", start: 11, end: 16, signature: "res.send = function send(body) {"},
		{name: "", kind: "block", start: 22, end: 25, signature: "module.exports = {"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(symbolRow{})); d != "" {
		t.Errorf("blocks (-want +got):\n%s", d)
	}
}

func TestBlockName(t *testing.T) {
	for l, want := range map[string]string{
		"res.send = function send(body) {":          "send",
		"exports.parse = (s) => {":                  "parse",
		"export const handlers: Handlers = {":       "handlers",
		"const x = 1":                               "x",
		"if (a == b) {":                             "",
		"module.exports = function createApp() {":   "",
		"app.get('/', function (req, res) {":        "",
		"settings['x'] = 1":                         "",
		"DEFAULTS = {'color': True}  # the default": "DEFAULTS",
	} {
		if got := blockName(l); got != want {
			t.Errorf("blockName(%q): got %q, want %q", l, got, want)
		}
	}
}

func TestFragments(t *testing.T) {
	q := Analyze("Crash when reading:\n\n```\nTraceback (most recent call last):\n" +
		"  File \"/usr/lib/python3/site-packages/pydicom/dataset.py\", line 812, in __getattr__\n" +
		"    return object.__getattribute__(self, name)\n" +
		"ValueError: Unknown tag name 'PixelData' in sequence item 3\n```\n")
	got := fragments(q)
	want := []fragment{{"Unknown tag name", true}, {"in sequence item", true}, {"return object.__getattribute__(self, name)", false}}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(fragment{})); d != "" {
		t.Errorf("fragments (-want +got):\n%s", d)
	}
	if len(q.FileLines) != 1 || q.FileLines[0].Line != 812 {
		t.Fatalf("file lines: got %+v", q.FileLines)
	}
	lines := make([]string, 900)
	for i := range lines {
		lines[i] = fmt.Sprintf("    x%d = 1\n", i)
	}
	lines[99] = "        raise ValueError(f\"Unknown tag name '{tag}' in sequence item {i}\")\n"
	lines[849] = "        return object.__getattribute__(self, name)\n"
	lines[500] = "    # Unknown tag name in a comment is not where the message is raised\n"
	pts := pointedLines("pydicom/dataset.py", lines, q.FileLines, got)
	if d := cmp.Diff([]int{100, 812, 850}, pts); d != "" {
		t.Errorf("pointed lines (-want +got):\n%s", d)
	}
	// Another file of the same name elsewhere is not the one the frame
	// names; a line past the end is not pointed at.
	if pts := pointedLines("other/dataset2.py", lines[:10], q.FileLines, nil); len(pts) != 0 {
		t.Errorf("unrelated file: got %v, want none", pts)
	}
}

func TestPointedSnippets(t *testing.T) {
	defs := [][2]int{{10, 400}, {500, 520}}
	got := pointedSnippets([]int{100, 102, 300, 505}, defs, 600)
	want := []snippet{
		{start: 97, end: 105, rel: 2, lo: 10, hi: 400},
		{start: 297, end: 303, rel: 2, lo: 10, hi: 400},
		{start: 502, end: 508, rel: 2, lo: 500, hi: 520},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(snippet{})); d != "" {
		t.Errorf("snippets (-want +got):\n%s", d)
	}
}

func TestAssembleTracebackLinesInLongFile(t *testing.T) {
	// A module whose one function is far bigger than the budget, and an
	// issue whose traceback names a line deep inside it and quotes a
	// message raised elsewhere in it: both lines are in the package.
	var b strings.Builder
	b.WriteString("\"\"\"Datasets.\"\"\"\n\n\nclass Dataset:\n    def __getattr__(self, name):\n")
	for i := 0; i < 600; i++ {
		switch i {
		case 200:
			b.WriteString("        raise KeyError(f\"Invalid tag '{name}' in sequence item {i}\")\n")
		default:
			fmt.Fprintf(&b, "        self.step(%d)\n", i)
		}
	}
	src := b.String()
	f := newFixture(t, map[string]string{"pydicom/dataset.py": src, "pydicom/util.py": "def util():\n    return 1\n"})
	task := "Reading a file fails\n\nTraceback (most recent call last):\n" +
		"  File \"/site-packages/pydicom/dataset.py\", line 455, in __getattr__\n" +
		"    self.step(449)\nKeyError: Invalid tag 'PixelData' in sequence item 3\n"
	pkg := f.assemble(t, task, Budget{ContextWindow: 1000, ReservedTokens: 100})
	var items []Item
	for _, pf := range pkg.Files {
		if pf.Path == "pydicom/dataset.py" {
			items = pf.Items
		}
	}
	for _, n := range []int{206, 455} {
		found := false
		for _, it := range items {
			found = found || it.StartLine <= n && n <= it.EndLine
		}
		if !found {
			t.Errorf("line %d not in the package: %+v", n, items)
		}
	}
}
