// Package shell reads an sh command line as far as cra needs to: the
// simple commands it holds, each one's words with their quotes taken off,
// and where each word sits in the line, so that a caller can name the
// files a [validation] command runs and insert the flags that make a
// test runner write its results where cra can read them.
//
// It is a reader, not a shell: it expands nothing. A word holding a
// command substitution ($( … ) or backquotes), a parameter ($X) or a
// glob is marked Literal false, and callers leave it alone. A line it
// cannot follow (an unterminated quote, a here-document, a parenthesis
// that does not close) is an error, and callers treat the command as one
// they cannot read.
package shell

import (
	"errors"
	"fmt"
	"strings"
)

// Word is one word of a simple command.
type Word struct {
	// Text is the word with its quotes and backslashes taken off.
	Text string
	// Start and End are the word's bytes in the line, quotes included.
	Start, End int
	// Literal says the word is exactly Text: it holds no expansion
	// ($, backquotes) and no unquoted glob character.
	Literal bool
}

// Redirect is one redirection of a simple command: its operator (">",
// ">>", "2>", "&>", "<", "2>&1", …) and its target word ("" for a
// duplication such as 2>&1).
type Redirect struct {
	Op     string
	Target Word
}

// Command is one simple command: its words (leading NAME=value
// assignments in Assigns, not in Words) and its redirections, and the
// operator that ends it ("", ";", "&", "&&", "||", "|", "\n", ")").
type Command struct {
	Assigns   []Word
	Words     []Word
	Redirects []Redirect
	// Next is the operator after the command; "" at the end of the line.
	Next string
	// Piped says the command's standard output goes into a pipe (Next
	// is "|" or "|&").
	Piped bool
	// Depth is how many subshell or group parentheses enclose it.
	Depth int
}

// Args returns the words' texts.
func (c Command) Args() []string {
	out := make([]string, len(c.Words))
	for i, w := range c.Words {
		out[i] = w.Text
	}
	return out
}

// StdoutRedirected says the command's standard output goes to a file
// (> FILE, >> FILE, &> FILE, 1> FILE) rather than to the line's output.
func (c Command) StdoutRedirected() bool {
	for _, r := range c.Redirects {
		switch r.Op {
		case ">", ">>", ">|", "1>", "1>>", "&>", "&>>", ">&", "1>&":
			if r.Op == ">&" || r.Op == "1>&" {
				// >&2 sends it to standard error: still the line's output.
				continue
			}
			return true
		}
	}
	return false
}

// ErrUnreadable is a line Parse cannot follow.
var ErrUnreadable = errors.New("the command line cannot be read")

// maxLine bounds the line Parse reads.
const maxLine = 64 << 10

// Parse splits line into its simple commands, in order.
func Parse(line string) ([]Command, error) {
	if len(line) > maxLine {
		return nil, fmt.Errorf("%w: it is longer than %d bytes", ErrUnreadable, maxLine)
	}
	p := &parser{s: line}
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.out, nil
}

type parser struct {
	s     string
	i     int
	depth int
	cur   Command
	out   []Command
	// pending is a redirection operator waiting for its target word.
	pending string
}

// operators, longest first so that a prefix does not win.
var operators = []string{"&&", "||", "|&", ";;", ";", "&", "|", "\n", "(", ")"}

// redirects, longest first.
var redirects = []string{"&>>", "2>>", "1>>", "2>&", "1>&", ">>", ">|", "&>", "2>", "1>", "<<", "<>", "<&", ">&", ">", "<"}

func (p *parser) run() error {
	for {
		p.skipBlanks()
		if p.i >= len(p.s) {
			break
		}
		c := p.s[p.i]
		if c == '#' {
			// A comment runs to the end of the line.
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
			continue
		}
		if op, ok := p.redirect(); ok {
			if p.pending != "" {
				return fmt.Errorf("%w: %q after %q", ErrUnreadable, op, p.pending)
			}
			if op == "<<" {
				return fmt.Errorf("%w: it holds a here-document", ErrUnreadable)
			}
			p.i += len(op)
			if strings.HasSuffix(op, "&") && p.i < len(p.s) && (isDigit(p.s[p.i]) || p.s[p.i] == '-') {
				// 2>&1, >&2, <&-: a duplication, no target word.
				j := p.i
				for j < len(p.s) && (isDigit(p.s[j]) || p.s[j] == '-') {
					j++
				}
				p.cur.Redirects = append(p.cur.Redirects, Redirect{Op: op + p.s[p.i:j]})
				p.i = j
				continue
			}
			p.pending = op
			continue
		}
		if op, ok := p.operator(); ok {
			if p.pending != "" {
				return fmt.Errorf("%w: %q has no target", ErrUnreadable, p.pending)
			}
			p.i += len(op)
			switch op {
			case "(":
				if len(p.cur.Words) > 0 {
					return fmt.Errorf("%w: a parenthesis inside a command (a function definition?)", ErrUnreadable)
				}
				p.depth++
				continue
			case ")":
				if p.depth == 0 {
					return fmt.Errorf("%w: a parenthesis closes that never opened", ErrUnreadable)
				}
				p.end(op)
				p.depth--
				continue
			}
			p.end(op)
			continue
		}
		w, err := p.word()
		if err != nil {
			return err
		}
		switch {
		case p.pending != "":
			p.cur.Redirects = append(p.cur.Redirects, Redirect{Op: p.pending, Target: w})
			p.pending = ""
		case len(p.cur.Words) == 0 && isAssignment(p.s[w.Start:w.End]):
			p.cur.Assigns = append(p.cur.Assigns, w)
		default:
			p.cur.Words = append(p.cur.Words, w)
		}
	}
	if p.pending != "" {
		return fmt.Errorf("%w: %q has no target", ErrUnreadable, p.pending)
	}
	if p.depth != 0 {
		return fmt.Errorf("%w: a parenthesis does not close", ErrUnreadable)
	}
	p.end("")
	return nil
}

// end closes the current command with operator op.
func (p *parser) end(op string) {
	c := p.cur
	p.cur = Command{}
	c.Depth = p.depth
	if op != ")" {
		c.Next = op
	}
	c.Piped = op == "|" || op == "|&"
	if len(c.Words)+len(c.Assigns)+len(c.Redirects) > 0 {
		p.out = append(p.out, c)
		return
	}
	if c.Piped {
		// "( a; b ) | c": every command of the group just closed writes
		// into the pipe.
		for k := len(p.out) - 1; k >= 0 && p.out[k].Depth > p.depth; k-- {
			p.out[k].Piped = true
		}
	}
}

func (p *parser) skipBlanks() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r':
			p.i++
		case '\\':
			if p.i+1 < len(p.s) && p.s[p.i+1] == '\n' {
				p.i += 2 // a continued line
				continue
			}
			return
		default:
			return
		}
	}
}

func (p *parser) operator() (string, bool) {
	for _, op := range operators {
		if strings.HasPrefix(p.s[p.i:], op) {
			return op, true
		}
	}
	return "", false
}

func (p *parser) redirect() (string, bool) {
	rest := p.s[p.i:]
	for _, op := range redirects {
		if strings.HasPrefix(rest, op) {
			// "2>" is a redirection only at a word's start, which is where
			// the parser is.
			return op, true
		}
	}
	return "", false
}

// word reads one word at p.i.
func (p *parser) word() (Word, error) {
	w := Word{Start: p.i, Literal: true}
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')':
			w.End = p.i
			w.Text = b.String()
			return w, nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return w, fmt.Errorf("%w: it ends in a backslash", ErrUnreadable)
			}
			if p.s[p.i+1] != '\n' {
				b.WriteByte(p.s[p.i+1])
			}
			p.i += 2
			continue
		case c == '\'':
			j := strings.IndexByte(p.s[p.i+1:], '\'')
			if j < 0 {
				return w, fmt.Errorf("%w: a single quote does not close", ErrUnreadable)
			}
			b.WriteString(p.s[p.i+1 : p.i+1+j])
			p.i += j + 2
			continue
		case c == '"':
			end, text, literal, err := doubleQuoted(p.s, p.i)
			if err != nil {
				return w, err
			}
			b.WriteString(text)
			w.Literal = w.Literal && literal
			p.i = end
			continue
		case c == '`':
			end, err := skipBackquote(p.s, p.i)
			if err != nil {
				return w, err
			}
			b.WriteString(p.s[p.i:end])
			w.Literal = false
			p.i = end
			continue
		case c == '$':
			end, err := skipDollar(p.s, p.i)
			if err != nil {
				return w, err
			}
			b.WriteString(p.s[p.i:end])
			if end > p.i+1 {
				w.Literal = false
			}
			p.i = end
			continue
		case c == '*' || c == '?' || c == '[' || c == '~' && p.i == w.Start:
			w.Literal = false
		}
		b.WriteByte(c)
		p.i++
	}
	w.End = p.i
	w.Text = b.String()
	return w, nil
}

// doubleQuoted reads the double-quoted string that starts at s[i]: where
// it ends, its text, and whether it expands nothing.
func doubleQuoted(s string, i int) (int, string, bool, error) {
	var b strings.Builder
	literal := true
	j := i + 1
	for j < len(s) {
		switch c := s[j]; c {
		case '"':
			return j + 1, b.String(), literal, nil
		case '\\':
			if j+1 < len(s) {
				switch n := s[j+1]; n {
				case '"', '\\', '$', '`':
					b.WriteByte(n)
					j += 2
					continue
				case '\n':
					j += 2
					continue
				}
			}
			b.WriteByte(c)
			j++
		case '$':
			end, err := skipDollar(s, j)
			if err != nil {
				return 0, "", false, err
			}
			if end > j+1 {
				literal = false
			}
			b.WriteString(s[j:end])
			j = end
		case '`':
			end, err := skipBackquote(s, j)
			if err != nil {
				return 0, "", false, err
			}
			literal = false
			b.WriteString(s[j:end])
			j = end
		default:
			b.WriteByte(c)
			j++
		}
	}
	return 0, "", false, fmt.Errorf("%w: a double quote does not close", ErrUnreadable)
}

// skipBackquote returns the end of the backquoted command at s[i].
func skipBackquote(s string, i int) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '`':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: a backquote does not close", ErrUnreadable)
}

// skipDollar returns the end of the expansion at s[i] ('$'): $NAME,
// ${…}, $(…), $((…)), a special parameter, or a lone '$'.
func skipDollar(s string, i int) (int, error) {
	j := i + 1
	if j >= len(s) {
		return j, nil
	}
	switch c := s[j]; {
	case c == '(' || c == '{':
		closeC := byte(')')
		if c == '{' {
			closeC = '}'
		}
		depth := 0
		for k := j; k < len(s); k++ {
			switch s[k] {
			case '\\':
				k++
			case '\'':
				if c == '(' {
					e := strings.IndexByte(s[k+1:], '\'')
					if e < 0 {
						return 0, fmt.Errorf("%w: a single quote does not close", ErrUnreadable)
					}
					k += e + 1
				}
			case '"':
				end, _, _, err := doubleQuoted(s, k)
				if err != nil {
					return 0, err
				}
				k = end - 1
			case c:
				depth++
			case closeC:
				depth--
				if depth == 0 {
					return k + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%w: an expansion does not close", ErrUnreadable)
	case c == '_' || isAlpha(c):
		for j < len(s) && (s[j] == '_' || isAlpha(s[j]) || isDigit(s[j])) {
			j++
		}
		return j, nil
	case isDigit(c) || strings.IndexByte("@*#?-$!", c) >= 0:
		return j + 1, nil
	}
	return j, nil // a lone $
}

// isAssignment reports whether a raw word is NAME=value.
func isAssignment(raw string) bool {
	eq := strings.IndexByte(raw, '=')
	if eq <= 0 {
		return false
	}
	for k := 0; k < eq; k++ {
		c := raw[k]
		if !(c == '_' || isAlpha(c) || k > 0 && isDigit(c)) {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
