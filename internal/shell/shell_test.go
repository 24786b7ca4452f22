package shell

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// brief is a command as the tests compare it: its words, with a * after
// a word that is not literal, then its operator and marks.
func brief(cs []Command) []string {
	var out []string
	for _, c := range cs {
		var parts []string
		for _, a := range c.Assigns {
			parts = append(parts, "["+a.Text+"]")
		}
		for _, w := range c.Words {
			s := w.Text
			if !w.Literal {
				s += "*"
			}
			parts = append(parts, s)
		}
		for _, r := range c.Redirects {
			parts = append(parts, r.Op+r.Target.Text)
		}
		s := strings.Join(parts, " ")
		if c.Next != "" {
			s += " " + strings.ReplaceAll(c.Next, "\n", `\n`)
		}
		if c.Piped {
			s += " (piped)"
		}
		if c.StdoutRedirected() {
			s += " (to file)"
		}
		out = append(out, s)
	}
	return out
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		want []string
	}{
		{name: "one command", line: "go test ./...", want: []string{"go test ./..."}},
		{name: "and list", line: "sh check.sh && ./scripts/test.sh -v", want: []string{"sh check.sh &&", "./scripts/test.sh -v"}},
		{name: "quotes", line: `pytest -k 'not slow' "tests/a b.py"`, want: []string{"pytest -k not slow tests/a b.py"}},
		{name: "escapes", line: `echo a\ b "c\"d" \$x`, want: []string{`echo a b c"d $x`}},
		{name: "expansions are not literal", line: `go test $PKGS "$(go list ./...)" ` + "`ls`" + ` ${X:-y}`, want: []string{"go test $PKGS* $(go list ./...)* `ls`* ${X:-y}*"}},
		{name: "globs are not literal", line: "pytest tests/*.py ~/x", want: []string{"pytest tests/*.py* ~/x*"}},
		{name: "assignments", line: "CGO_ENABLED=0 GOFLAGS=-count=1 go test ./...", want: []string{"[CGO_ENABLED=0] [GOFLAGS=-count=1] go test ./..."}},
		{name: "a word with = after the command is an argument", line: "go test -run=TestX", want: []string{"go test -run=TestX"}},
		{name: "pipe", line: "go test ./... | tee log", want: []string{"go test ./... | (piped)", "tee log"}},
		{name: "stderr joined is still the output", line: "go test ./... 2>&1", want: []string{"go test ./... 2>&1"}},
		{name: "to a file", line: "go test ./... > out.txt; cat out.txt", want: []string{"go test ./... >out.txt ; (to file)", "cat out.txt"}},
		{name: "to stderr", line: "pytest >&2", want: []string{"pytest >&2"}},
		{name: "subshell", line: "(cd sub && go test ./...) | cat", want: []string{"cd sub && (piped)", "go test ./... (piped)", "cat"}},
		{name: "comment", line: "go test ./... # all of it\nnpm test", want: []string{"go test ./... \\n", "npm test"}},
		{name: "continued line", line: "go test \\\n  ./...", want: []string{"go test ./..."}},
		{name: "background and or", line: "a & b || c", want: []string{"a &", "b ||", "c"}},
		{name: "nested substitution with quotes", line: `echo "$(printf '%s)' "x")" done`, want: []string{`echo $(printf '%s)' "x")* done`}},
		{name: "empty", line: "   ", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Parse(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, brief(cs)); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, line := range []string{
		`echo 'open`, `echo "open`, "echo `open", `echo $(open`, `echo \`, "cat <<EOF\nx\nEOF",
		"(go test", "go test)", "f() { go test; }", "go test >",
	} {
		if cs, err := Parse(line); !errors.Is(err, ErrUnreadable) {
			t.Errorf("Parse(%q) = %v, %v; want ErrUnreadable", line, brief(cs), err)
		}
	}
}

// TestWordSpans: each word's bytes in the line are where the word is, so
// that a caller can insert text right after it.
func TestWordSpans(t *testing.T) {
	line := `FOO=1 go  test "./pkg" -run 'X Y'`
	cs, err := Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cs[0].Words {
		got = append(got, line[w.Start:w.End])
	}
	if diff := cmp.Diff([]string{"go", "test", `"./pkg"`, "-run", `'X Y'`}, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"go test ./...", `pytest -k 'a b' | tee x`, "(cd a && make) > log 2>&1", `echo "$(x "y")" \`, "a=1 b; c & d || e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cs, err := Parse(line)
		if err != nil {
			if !errors.Is(err, ErrUnreadable) {
				t.Fatalf("error %v is not ErrUnreadable", err)
			}
			return
		}
		last := 0
		for _, c := range cs {
			for _, w := range append(append([]Word{}, c.Assigns...), c.Words...) {
				if w.Start < last || w.End < w.Start || w.End > len(line) {
					t.Fatalf("word %q spans [%d,%d) in a line of %d bytes, after %d", w.Text, w.Start, w.End, len(line), last)
				}
				if w.Literal && w.Text != line[w.Start:w.End] && !strings.ContainsAny(line[w.Start:w.End], `'"\`) {
					t.Fatalf("literal word %q differs from its unquoted bytes %q", w.Text, line[w.Start:w.End])
				}
				last = w.End
			}
		}
	})
}
