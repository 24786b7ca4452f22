// Package outcome reads what each test did in a validation run, from the
// test runner's own report, and compares two runs test by test: the
// branch's against its base's (DESIGN.md, "Trust": pass→pass, and the
// tests a task names fail→pass).
//
// cra reads three kinds of report, and asks for them by adding flags to
// the [validation] test command (Instrument):
//
//   - go test: -json after "go test", events on the command's output;
//   - pytest (pytest, py.test, python -m pytest): --junitxml=FILE, a
//     JUnit XML file;
//   - node's test runner (node --test): a TAP reporter writing to a file
//     beside the usual spec reporter on the output.
//
// A command it cannot read (a script, make, npm test) is run as it is,
// and only its exit status counts: Instrument returns no sources, and the
// evidence says it is weaker. Every reader takes hostile input: a report
// is bounded in size and in tests, and a malformed one is an error, never
// a result.
package outcome

import (
	"fmt"
	"sort"
	"strings"
)

// Status is what one test did.
type Status string

// The statuses. A test that did not run has no status.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Kind is a kind of report.
type Kind string

// The reports cra reads.
const (
	GoJSON Kind = "go test -json"
	JUnit  Kind = "pytest --junitxml"
	TAP    Kind = "node --test (TAP)"
)

// Source is where one report comes from: a file, or the command's output
// (File "").
type Source struct {
	Kind Kind   `json:"kind"`
	File string `json:"file,omitempty"`
}

// Results are the per-test outcomes of one run.
type Results struct {
	// Tests maps a test's id to its status. Ids: "pkg::TestX/sub" (go),
	// "classname::name" (JUnit), "parent > name" (TAP).
	Tests map[string]Status `json:"tests"`
	// Read are the kinds of report read.
	Read []Kind `json:"read"`
	// Missing says which reports were expected and not there, or could
	// not be read (a run that ended before its runner wrote one).
	Missing []string `json:"missing,omitempty"`
}

// MaxTests bounds the tests one run reports; a report with more is cut
// there and says so in Missing.
const MaxTests = 200_000

// add records id's status; a test reported twice (a retry, a second
// package of the same name) keeps its worst: fail over pass over skip.
func (r *Results) add(id string, s Status) bool {
	if r.Tests == nil {
		r.Tests = map[string]Status{}
	}
	old, ok := r.Tests[id]
	if !ok && len(r.Tests) >= MaxTests {
		return false
	}
	if !ok || rank(s) > rank(old) {
		r.Tests[id] = s
	}
	return true
}

func rank(s Status) int {
	switch s {
	case Fail:
		return 2
	case Pass:
		return 1
	}
	return 0
}

// Readable says the run gave per-test results: at least one report was
// read and none that was expected is missing.
func (r *Results) Readable() bool {
	return r != nil && len(r.Read) > 0 && len(r.Missing) == 0
}

// Counts are a run's tests by status.
type Counts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// Count counts r's tests by status.
func (r *Results) Count() Counts {
	var c Counts
	if r == nil {
		return c
	}
	for _, s := range r.Tests {
		switch s {
		case Pass:
			c.Passed++
		case Fail:
			c.Failed++
		case Skip:
			c.Skipped++
		}
	}
	return c
}

func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

// Relative rewrites every id that holds root (a checkout's directory, as
// node names test files by their absolute path) without it, so that two
// checkouts of one repository name their tests alike.
func (r *Results) Relative(root string) {
	if r == nil || root == "" {
		return
	}
	prefix := strings.TrimSuffix(root, "/") + "/"
	out := make(map[string]Status, len(r.Tests))
	for id, s := range r.Tests {
		id = strings.ReplaceAll(id, prefix, "")
		if old, ok := out[id]; !ok || rank(s) > rank(old) {
			out[id] = s
		}
	}
	r.Tests = out
}

// sorted returns ids in order.
func sorted(ids map[string]bool) []string {
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
