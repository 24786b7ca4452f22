package outcome

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/shell"
)

// Instrument returns command with the flags that make its test runners
// report each test where cra can read it, and the reports to read after
// it ran; files go in dir (which the command may write). A runner is
// instrumented only where its report reaches cra: a go test whose output
// goes into a pipe or a file is left as it is, and so is a node --test
// that picks its own reporters. A command cra cannot read, or none of
// whose runners it knows, comes back unchanged with no sources: its exit
// status alone counts.
//
// The flags, in the order of the simple commands that get them:
//
//	go test …             → go test -json …
//	pytest … / python -m pytest …  → … --junitxml=DIR/pytest-N.xml (last, so it wins)
//	node --test …         → node --test-reporter=spec --test-reporter-destination=stdout
//	                              --test-reporter=tap --test-reporter-destination=DIR/node-N.tap --test …
func Instrument(command, dir string) (string, []Source) {
	cmds, err := shell.Parse(command)
	if err != nil {
		return command, nil
	}
	type insert struct {
		at   int
		text string
	}
	var inserts []insert
	var sources []Source
	goJSON := false
	for n, c := range cmds {
		args := runnerArgs(c)
		if len(args) == 0 {
			continue
		}
		switch {
		case isGoTest(args):
			if c.Piped || c.StdoutRedirected() {
				continue
			}
			if !hasFlag(args, "-json") {
				inserts = append(inserts, insert{args[1].End, " -json"})
			}
			if !goJSON {
				sources = append(sources, Source{Kind: GoJSON})
				goJSON = true
			}
		case isPytest(args):
			file := filepath.Join(dir, fmt.Sprintf("pytest-%d.xml", n+1))
			last := c.Words[len(c.Words)-1]
			inserts = append(inserts, insert{last.End, " " + Quote("--junitxml="+file)})
			sources = append(sources, Source{Kind: JUnit, File: file})
		case isNodeTest(args):
			if hasFlag(args, "--test-reporter") || hasFlag(args, "--test-reporter-destination") {
				continue
			}
			file := filepath.Join(dir, fmt.Sprintf("node-%d.tap", n+1))
			inserts = append(inserts, insert{args[0].End, " --test-reporter=spec --test-reporter-destination=stdout --test-reporter=tap " + Quote("--test-reporter-destination="+file)})
			sources = append(sources, Source{Kind: TAP, File: file})
		}
	}
	if len(sources) == 0 {
		return command, nil
	}
	sort.SliceStable(inserts, func(i, j int) bool { return inserts[i].at < inserts[j].at })
	var b strings.Builder
	prev := 0
	for _, in := range inserts {
		b.WriteString(command[prev:in.at])
		b.WriteString(in.text)
		prev = in.at
	}
	b.WriteString(command[prev:])
	return b.String(), sources
}

// runnerArgs returns the words of c from its program on, past the
// wrappers that run a program as it is (env and its assignments, time,
// command, nice); nil when a word up to the program is not literal.
func runnerArgs(c shell.Command) []shell.Word {
	w := c.Words
	for len(w) > 0 {
		if !w[0].Literal {
			return nil
		}
		switch w[0].Text {
		case "env":
			w = w[1:]
			for len(w) > 0 && w[0].Literal && strings.Contains(w[0].Text, "=") && !strings.HasPrefix(w[0].Text, "-") {
				w = w[1:]
			}
			continue
		case "time", "command", "nice":
			w = w[1:]
			continue
		}
		return w
	}
	return nil
}

func isGoTest(w []shell.Word) bool {
	return len(w) >= 2 && w[0].Literal && w[1].Literal && path.Base(w[0].Text) == "go" && w[1].Text == "test"
}

var pythonName = lazyre.New(`^python[0-9.]*$`)

func isPytest(w []shell.Word) bool {
	if !w[0].Literal {
		return false
	}
	switch base := path.Base(w[0].Text); {
	case base == "pytest" || base == "py.test" || base == "pytest-3":
		return true
	case pythonName().MatchString(base):
		// python -m pytest; options such as -B may come first.
		for i := 1; i+1 < len(w); i++ {
			if !w[i].Literal || !strings.HasPrefix(w[i].Text, "-") {
				return false
			}
			if w[i].Text == "-m" {
				return w[i+1].Literal && (w[i+1].Text == "pytest" || w[i+1].Text == "py.test")
			}
		}
	}
	return false
}

func isNodeTest(w []shell.Word) bool {
	if !w[0].Literal || path.Base(w[0].Text) != "node" {
		return false
	}
	for _, a := range w[1:] {
		if !a.Literal || !strings.HasPrefix(a.Text, "-") {
			return false // a script before --test: node runs the script, not the runner
		}
		if a.Text == "--test" {
			return true
		}
	}
	return false
}

// hasFlag reports whether a word is the flag, alone or with =value.
func hasFlag(w []shell.Word, flag string) bool {
	for _, a := range w {
		if a.Text == flag || strings.HasPrefix(a.Text, flag+"=") || strings.HasPrefix(a.Text, "-"+flag) && (a.Text == "-"+flag || strings.HasPrefix(a.Text, "-"+flag+"=")) {
			return true
		}
	}
	return false
}

// Quote quotes s for sh, unless it needs no quotes.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./,:+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
