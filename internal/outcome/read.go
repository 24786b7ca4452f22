package outcome

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxReport bounds the bytes read of one report (a file or the output).
const MaxReport = 512 << 20

// maxLine bounds one line of a line-based report; a longer one is
// skipped (a test that prints a huge line is still read).
const maxLine = 1 << 20

// Read reads the reports of one run: each source's file, or output (the
// command's whole output) for a source without one. A report that is
// missing, too large or malformed is named in Missing; its tests are not
// guessed.
func Read(sources []Source, output func() (io.ReadCloser, error)) *Results {
	res := &Results{Tests: map[string]Status{}}
	for _, src := range sources {
		var rc io.ReadCloser
		var err error
		if src.File == "" {
			rc, err = output()
		} else {
			rc, err = os.Open(src.File)
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				res.Missing = append(res.Missing, fmt.Sprintf("%s: no report was written (the run ended before its runner wrote one?)", src.Kind))
			} else {
				res.Missing = append(res.Missing, fmt.Sprintf("%s: %v", src.Kind, err))
			}
			continue
		}
		lr := &io.LimitedReader{R: rc, N: MaxReport + 1}
		var found bool
		switch src.Kind {
		case GoJSON:
			found, err = readGoJSON(lr, res)
		case JUnit:
			found, err = readJUnit(lr, res)
		case TAP:
			found, err = readTAP(lr, res)
		default:
			err = fmt.Errorf("unknown report kind %q", src.Kind)
		}
		rc.Close()
		switch {
		case lr.N <= 0:
			res.Missing = append(res.Missing, fmt.Sprintf("%s: the report is larger than %d MiB", src.Kind, MaxReport>>20))
		case err != nil:
			res.Missing = append(res.Missing, fmt.Sprintf("%s: %v", src.Kind, err))
		case !found:
			res.Missing = append(res.Missing, fmt.Sprintf("%s: the output holds no such report", src.Kind))
		default:
			res.Read = append(res.Read, src.Kind)
		}
	}
	if len(res.Tests) >= MaxTests {
		res.Missing = append(res.Missing, fmt.Sprintf("more than %d tests: the rest were not read", MaxTests))
	}
	return res
}

// eachLine calls fn with each line of r without its newline; a line
// longer than maxLine is skipped.
func eachLine(r io.Reader, fn func(line []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long bool
	var buf []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if long {
			long = isPrefix
			continue
		}
		if len(buf)+len(chunk) > maxLine {
			buf, long = buf[:0], isPrefix
			continue
		}
		buf = append(buf, chunk...)
		if isPrefix {
			continue
		}
		fn(buf)
		buf = buf[:0]
	}
}

// event is one line of go test -json (test2json).
type event struct {
	Action  string `json:"Action"`
	Package string `json:"Package"`
	Test    string `json:"Test"`
	Output  string `json:"Output"`
}

// readGoJSON reads go test -json events; it reports whether there was
// any (a package whose TestMain never runs its tests has events, and no
// test). A test that started and never ended (its binary crashed or
// exited under it) failed.
func readGoJSON(r io.Reader, res *Results) (bool, error) {
	found := false
	open := map[string]bool{}
	err := eachLine(r, func(line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			return
		}
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			return
		}
		found = true
		if e.Test == "" {
			return
		}
		id := e.Package + "::" + e.Test
		switch e.Action {
		case "run":
			open[id] = true
		case "pass":
			delete(open, id)
			res.add(id, Pass)
		case "fail":
			delete(open, id)
			res.add(id, Fail)
		case "skip":
			delete(open, id)
			res.add(id, Skip)
		}
	})
	for id := range open {
		res.add(id, Fail)
	}
	return found, err
}

// GoText turns go test -json output back into what go test prints: each
// event's output, and every line that is not an event as it is. A
// person and a model read this, not the events.
func GoText(output string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(output, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "{") {
			var e event
			if json.Unmarshal([]byte(t), &e) == nil && e.Action != "" {
				b.WriteString(e.Output)
				continue
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// readJUnit reads a JUnit XML report: every <testcase>, failed when it
// holds <failure> or <error>, skipped when it holds <skipped>. It reports
// whether the document is one (a run that collected nothing has a
// <testsuite> without cases).
func readJUnit(r io.Reader, res *Results) (bool, error) {
	d := xml.NewDecoder(r)
	d.Strict = true
	found := false
	var id string
	var status Status
	depth, caseDepth := 0, -1
	for {
		tok, err := d.Token()
		if err == io.EOF {
			if depth != 0 {
				return found, errors.New("the XML ends inside an element")
			}
			return found, nil
		}
		if err != nil {
			return found, fmt.Errorf("malformed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if n := t.Name.Local; n == "testsuites" || n == "testsuite" {
				found = true
			}
			switch {
			case t.Name.Local == "testcase" && caseDepth < 0:
				var class, name string
				for _, a := range t.Attr {
					switch a.Name.Local {
					case "classname":
						class = a.Value
					case "name":
						name = a.Value
					}
				}
				id = name
				if class != "" {
					id = class + "::" + name
				}
				status, caseDepth = Pass, depth
			case caseDepth > 0 && depth == caseDepth+1:
				switch t.Name.Local {
				case "failure", "error":
					status = Fail
				case "skipped":
					if status != Fail {
						status = Skip
					}
				}
			}
		case xml.EndElement:
			if depth == caseDepth {
				if id != "" {
					res.add(id, status)
				}
				found = true
				caseDepth = -1
			}
			depth--
		}
	}
}

// readTAP reads a TAP stream as node's test runner writes it: "ok N -
// name", "not ok N - name", a "# SKIP" or "# TODO" directive, and
// subtests indented under "# Subtest: name" headers, which name their
// parents. A result's YAML diagnostics are skipped, and what a test
// prints comes as "# " comments: neither can pass for a result.
func readTAP(r io.Reader, res *Results) (bool, error) {
	type header struct {
		indent int
		name   string
	}
	var stack []header
	found := false
	yaml := -1 // the indentation of the YAML block being skipped
	err := eachLine(r, func(raw []byte) {
		line := string(raw)
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if yaml >= 0 {
			// A result's diagnostics ("---" … "..."): an error message in
			// them may read like a result line.
			if indent == yaml && strings.TrimSpace(trimmed) == "..." {
				yaml = -1
			}
			return
		}
		if strings.TrimSpace(trimmed) == "---" {
			yaml = indent
			return
		}
		if name, ok := strings.CutPrefix(trimmed, "# Subtest: "); ok {
			for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, header{indent, strings.TrimSpace(name)})
			return
		}
		if strings.HasPrefix(trimmed, "TAP version ") || strings.HasPrefix(trimmed, "1..") {
			found = true
			return
		}
		var status Status
		rest, ok := strings.CutPrefix(trimmed, "ok ")
		if ok {
			status = Pass
		} else if rest, ok = strings.CutPrefix(trimmed, "not ok "); ok {
			status = Fail
		} else {
			return
		}
		// "N - name # directive"
		num, after, _ := strings.Cut(rest, " ")
		if num == "" || strings.Trim(num, "0123456789") != "" {
			return
		}
		name := strings.TrimPrefix(after, "- ")
		if i := strings.Index(name, " # "); i >= 0 {
			dir := strings.ToUpper(strings.TrimSpace(name[i+3:]))
			if strings.HasPrefix(dir, "SKIP") || strings.HasPrefix(dir, "TODO") {
				status = Skip
			}
			name = name[:i]
		}
		name = strings.TrimSpace(name)
		for len(stack) > 0 && stack[len(stack)-1].indent > indent {
			stack = stack[:len(stack)-1]
		}
		var parents []string
		for _, h := range stack {
			if h.indent < indent {
				parents = append(parents, h.name)
			}
		}
		if n := len(stack); n > 0 && stack[n-1].indent == indent && stack[n-1].name == name {
			stack = stack[:n-1]
		}
		if name == "" {
			return
		}
		res.add(strings.Join(append(parents, name), " > "), status)
		found = true
	})
	return found, err
}
