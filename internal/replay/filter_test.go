package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/gitx/gittest"
)

func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	return b.String()
}

// TestFilter crafts one commit per rule of seed 001 §16.4.2 and checks
// the reason Filter.Check gives each.
func TestFilter(t *testing.T) {
	dir := gittest.Init(t)
	gittest.Commit(t, dir, "Start the calculator package with addition", map[string]string{"calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n"})
	want := map[string]string{"Start the calculator package with addition": SkipRoot}
	add := func(message, reason string, files map[string]string) {
		gittest.Commit(t, dir, message, files)
		want[message] = reason
	}
	add("Add subtraction to the calculator package", "", map[string]string{"calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n"})
	six := map[string]string{}
	for i := range 6 {
		six["calc/f"+string(rune('a'+i))+".go"] = "package calc\n"
	}
	add("Split the calculator into six small files", SkipTooManyFiles, six)
	add("Add a long table of values to the calculator", SkipTooManyLines, map[string]string{"calc/table.py": numbered(200)})
	add("Add a short table of values to the calculator", "", map[string]string{"calc/short.py": numbered(199)})
	add("Add the calculator's logo to the package", SkipBinary, map[string]string{"calc/logo.png": "\x89PNG\x00\x01", "calc/calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n"})
	add("Vendor the left-pad library for the calculator", SkipNotIndexed, map[string]string{"vendor/pad/pad.go": "package pad\n", "calc/pad.go": "package calc\n"})
	add("Describe the calculator in the readme", SkipNoCode, map[string]string{"README.md": "# calc\n"})
	add("Fix it", SkipShortMessage, map[string]string{"calc/calc.go": "package calc\n\n// Add adds two numbers.\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n"})
	add("wip: misc fixes and minor tweaks", SkipGenericMessage, map[string]string{"calc/short.py": numbered(10)})
	add("feat(calc): divide two numbers, refusing zero", "", map[string]string{"calc/div.ts": "export function div(a: number, b: number): number { if (b === 0) throw new Error('zero'); return a / b }\n"})

	// A merge of a side branch.
	gittest.Run(t, dir, "checkout", "-q", "-b", "side")
	add("Multiply two numbers in the calculator package", "", map[string]string{"calc/mul.py": "def mul(a, b):\n    return a * b\n"})
	gittest.Run(t, dir, "checkout", "-q", "main")
	add("Add the calculator's modulo operation here", "", map[string]string{"calc/mod.py": "def mod(a, b):\n    return a % b\n"})
	gittest.Run(t, dir, "merge", "-q", "--no-ff", "-m", "Merge the multiplication branch into main", "side")
	want["Merge the multiplication branch into main"] = SkipMerge

	got := map[string]string{}
	f := DefaultFilter()
	err := gitx.Log(context.Background(), dir, gitx.LogOptions{LineStats: true, Merges: true}, func(c gitx.Commit) error {
		got[c.Message] = f.Check(c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons by message (-want +got):\n%s", diff)
	}
}

func TestMessageWords(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want int
	}{
		{"fix", 1},
		{"fix(core): handle `None` in parse()\n\nlong body here", 4},
		{"WIP", 1},
		{"Add support for Python 3.13 in the CI matrix", 9},
	} {
		if got := len(messageWords(tc.msg)); got != tc.want {
			t.Errorf("messageWords(%q): got %d words, want %d", tc.msg, got, tc.want)
		}
	}
}
