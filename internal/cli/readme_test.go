package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// Every command the README shows runs as written (issue 30, item 8):
// testdata/script/readme.txtar runs them, each named by its exact text
// with the script command 'readme', which refuses a text the README does
// not show; TestReadmeCommands checks that the script names every command
// the README shows. A README edit that changes a command fails one or
// the other until the script runs the new text.

// readmePath is the README the tests read: the repository's.
var readmePath = filepath.Join("..", "..", "README.md")

// readmeCommands returns the commands README.md shows, in order, each once:
// the lines of its fenced blocks that start with "$ " (a line ending in a
// backslash continues on the next), every line of a ```sh block, and in a
// plain block with no "$ " line (a synopsis, such as the knowledge
// commands') the lines that start with "cra ", without their aligned
// description.
func readmeCommands(text string) []string {
	var cmds []string
	add := func(c string) {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	type block struct {
		lang  string
		lines []string
	}
	var blocks []block
	var cur *block
	fence := ""
	open := regexp.MustCompile("^(```+|~~~+)(.*)$")
	for _, l := range strings.Split(text, "\n") {
		if m := open.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				fence = m[1]
				blocks = append(blocks, block{lang: strings.TrimSpace(m[2])})
				cur = &blocks[len(blocks)-1]
				continue
			case strings.TrimSpace(l) == fence:
				fence, cur = "", nil
				continue
			}
		}
		if cur != nil {
			cur.lines = append(cur.lines, l)
		}
	}
	describe := regexp.MustCompile(` {2,}\S.*$`)
	for _, b := range blocks {
		synopsis := b.lang == "" && !slices.ContainsFunc(b.lines, func(l string) bool { return strings.HasPrefix(l, "$ ") })
		for i := 0; i < len(b.lines); i++ {
			l := b.lines[i]
			switch {
			case strings.HasPrefix(l, "$ ") || b.lang == "sh":
				c := strings.TrimPrefix(l, "$ ")
				for strings.HasSuffix(c, `\`) && i+1 < len(b.lines) {
					i++
					c = strings.TrimRight(strings.TrimSuffix(c, `\`), " ") + " " + strings.TrimSpace(b.lines[i])
				}
				add(c)
			case synopsis && strings.HasPrefix(l, "cra "):
				add(describe.ReplaceAllString(l, ""))
			}
		}
	}
	return cmds
}

// readmeState is one script's substitutions ('readme as').
type readmeState struct {
	subst [][2]string
}

var readmeScripts = struct {
	sync.Mutex
	m map[*testscript.TestScript]*readmeState
}{m: map[*testscript.TestScript]*readmeState{}}

// readmeCmd is the script command "readme":
//
//	readme 'CMD'                  CMD is a command the README shows; $CMD is set
//	                              to it, with the substitutions made, for
//	                              'exec sh -c $CMD' to run as written
//	readme as FROM TO             from now on $CMD has TO for FROM: an id or an
//	                              address the README shows stands for the one
//	                              this run made
//	readme parse 'CMD' REASON     CMD, a cra command, parses in cra's command
//	                              tree (its subcommand, its flags and their
//	                              values, its arguments' count) without running:
//	                              REASON says why it cannot run here
//	readme external 'CMD' REASON  CMD is not cra's: its program is on PATH, and
//	                              REASON says why it does not run here
func readmeCmd(readme string) func(ts *testscript.TestScript, neg bool, args []string) {
	shown := readmeCommands(readme)
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg {
			ts.Fatalf("readme: '! readme' is not allowed: run '! exec sh -c $CMD'")
		}
		readmeScripts.Lock()
		st := readmeScripts.m[ts]
		if st == nil {
			st = &readmeState{}
			readmeScripts.m[ts] = st
			ts.Defer(func() {
				readmeScripts.Lock()
				delete(readmeScripts.m, ts)
				readmeScripts.Unlock()
			})
		}
		readmeScripts.Unlock()
		inReadme := func(c string) {
			if !slices.Contains(shown, c) {
				ts.Fatalf("readme: the README shows no command %q", c)
			}
		}
		switch {
		case len(args) == 3 && args[0] == "as":
			st.subst = append(st.subst, [2]string{args[1], args[2]})
		case len(args) == 1:
			inReadme(args[0])
			c := args[0]
			for _, s := range st.subst {
				c = strings.ReplaceAll(c, s[0], s[1])
			}
			ts.Setenv("CMD", c)
			fmt.Fprintf(ts.Stdout(), "$ %s\n", c)
		case len(args) == 3 && args[0] == "parse":
			inReadme(args[1])
			if strings.TrimSpace(args[2]) == "" {
				ts.Fatalf("readme parse %q: say why it cannot run here", args[1])
			}
			ts.Check(parseCra(args[1]))
		case len(args) == 3 && args[0] == "external":
			inReadme(args[1])
			if strings.TrimSpace(args[2]) == "" {
				ts.Fatalf("readme external %q: say why it does not run here", args[1])
			}
			words := shellWords(args[1])
			if len(words) == 0 || words[0] == "cra" {
				ts.Fatalf("readme external %q: a cra command runs or parses", args[1])
			}
			if _, err := exec.LookPath(words[0]); err != nil {
				ts.Fatalf("readme external %q: %v", args[1], err)
			}
		default:
			ts.Fatalf("usage: readme 'CMD' | readme as FROM TO | readme parse 'CMD' REASON | readme external 'CMD' REASON")
		}
	}
}

// parseCra parses a cra command line as cra's command tree would, without
// running it. A synopsis's brackets are dropped and its "…" stands for a
// value.
func parseCra(line string) error {
	line = strings.NewReplacer("[", "", "]", "", "…", "x").Replace(line)
	words := shellWords(line)
	if len(words) == 0 || words[0] != "cra" {
		return fmt.Errorf("%q is not a cra command", line)
	}
	root := newRootCmd(&deps{in: strings.NewReader(""), out: io.Discard, errOut: io.Discard, logger: newWarnLogger(io.Discard)})
	cmd, rest, err := root.Find(words[1:])
	if err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	if cmd == root || !cmd.Runnable() {
		return fmt.Errorf("%q: names no command cra runs", line)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	return nil
}

// shellWords splits a command line as sh would for the lines the README
// shows: words, quotes, and a comment from an unquoted '#' on.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestReadmeCommands: the README script names every command the README
// shows, and each command with "# exits N" is run as a failure.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	shown := readmeCommands(string(readme))
	if len(shown) < 40 {
		t.Fatalf("found %d commands in the README; the extraction lost its blocks", len(shown))
	}
	script, err := os.Open(filepath.Join("testdata", "script", "readme.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	named := map[string]bool{}
	exits := regexp.MustCompile(`# exits ([0-9]+)`)
	sc := bufio.NewScanner(script)
	var pending string // a command that must be run as a failure next
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "-- ") {
			break
		}
		if pending != "" && strings.Contains(l, "exec sh -c $CMD") {
			if !strings.HasPrefix(l, "! exec") {
				t.Errorf("readme.txtar:%d: %q says it exits non-zero: run it with '! exec sh -c $CMD'", n, pending)
			}
			pending = ""
		}
		if !strings.HasPrefix(l, "readme ") {
			continue
		}
		words := scriptWords(strings.TrimPrefix(l, "readme "))
		switch {
		case len(words) == 1:
			named[words[0]] = true
			if exits.MatchString(words[0]) {
				pending = words[0]
			}
		case len(words) == 3 && (words[0] == "parse" || words[0] == "external"):
			named[words[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range shown {
		if !named[c] {
			t.Errorf("the README shows %q, which readme.txtar neither runs nor parses", c)
		}
	}
	for c := range named {
		if !slices.Contains(shown, c) {
			t.Errorf("readme.txtar names %q, which the README no longer shows", c)
		}
	}
}

// scriptWords splits a testscript line's arguments: single quotes, two of
// them standing for one inside.
func scriptWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quoted && r == '\'' && i+1 < len(rs) && rs[i+1] == '\'':
			w.WriteRune('\'')
			i++
		case r == '\'':
			quoted, inWord = !quoted, true
		case !quoted && (r == ' ' || r == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case !quoted && r == '#' && !inWord:
			return words
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestReadmeCommandsExtract: what counts as a command the README shows.
func TestReadmeCommandsExtract(t *testing.T) {
	text := "Prose `cra inline` is not a block.\n\n" +
		"```sh\ngo run ./cmd/cra index .\n```\n\n" +
		"```\n$ cra retrieve \"x\" \\\n    --deterministic\noutput line\ncra serve: listening (output, not a synopsis)\n$ cra index .\n```\n\n" +
		"~~~\n$ cra one\n```go\n$ not a fence's end\n```\n~~~\n\n" +
		"```\ncra knowledge list        documents, status\ncra knowledge review\n```\n\n" +
		"```toml\ncra = \"not a command\"\n```\n"
	got := readmeCommands(text)
	want := []string{"go run ./cmd/cra index .", `cra retrieve "x" --deterministic`, "cra index .", "cra one", "not a fence's end",
		"cra knowledge list", "cra knowledge review"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`cra log check --marker reviewer  # what is new`, []string{"cra", "log", "check", "--marker", "reviewer"}},
		{`cra query symbols 'Resolve*'`, []string{"cra", "query", "symbols", "Resolve*"}},
		{`cra task close t-1 --why "superseded # not a comment"`, []string{"cra", "task", "close", "t-1", "--why", "superseded # not a comment"}},
	} {
		if got := shellWords(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("shellWords(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"cra task add \"x\" --priority high", true},
		{"cra knowledge promote PATH [--why …]", true},
		{"cra task add \"x\" --no-such-flag", false},
		{"cra nosuch", false},
		{"git status", false},
	} {
		if err := parseCra(tc.line); (err == nil) != tc.ok {
			t.Errorf("parseCra(%q) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
}
