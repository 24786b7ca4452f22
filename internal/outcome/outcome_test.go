package outcome

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInstrument(t *testing.T) {
	const dir = "/tmp/r"
	for _, tc := range []struct {
		name, command, want string
		kinds               []Kind
	}{
		{name: "go test", command: "go test ./...", want: "go test -json ./...", kinds: []Kind{GoJSON}},
		{name: "go test with flags and a wrapper", command: "CGO_ENABLED=0 env X=1 go test -count=1 ./pkg", want: "CGO_ENABLED=0 env X=1 go test -json -count=1 ./pkg", kinds: []Kind{GoJSON}},
		{name: "go test already json", command: "go test -json ./...", want: "go test -json ./...", kinds: []Kind{GoJSON}},
		{name: "two go tests read once", command: "go test ./a && (cd b && go test ./...)", want: "go test -json ./a && (cd b && go test -json ./...)", kinds: []Kind{GoJSON}},
		{name: "go test into a pipe is left alone", command: "go test ./... | tee log", want: "go test ./... | tee log"},
		{name: "go test into a file is left alone", command: "go test ./... > log", want: "go test ./... > log"},
		{name: "go vet is no test", command: "go vet ./...", want: "go vet ./..."},
		{name: "pytest", command: "pytest -q tests", want: "pytest -q tests --junitxml=/tmp/r/pytest-1.xml", kinds: []Kind{JUnit}},
		{name: "python -m pytest", command: "cd src; python3 -B -m pytest -x", want: "cd src; python3 -B -m pytest -x --junitxml=/tmp/r/pytest-2.xml", kinds: []Kind{JUnit}},
		{name: "python script is no pytest", command: "python3 run_tests.py -m pytest", want: "python3 run_tests.py -m pytest"},
		{name: "node --test", command: "node --test", want: "node --test-reporter=spec --test-reporter-destination=stdout --test-reporter=tap --test-reporter-destination=/tmp/r/node-1.tap --test", kinds: []Kind{TAP}},
		{name: "node with its own reporter", command: "node --test --test-reporter=dot", want: "node --test --test-reporter=dot"},
		{name: "node script", command: "node test.js --test", want: "node test.js --test"},
		{name: "a script", command: "sh check.sh", want: "sh check.sh"},
		{name: "npm test", command: "npm test", want: "npm test"},
		{name: "unreadable line", command: "go test 'open", want: "go test 'open"},
		{name: "an expanded program", command: "$GO test ./...", want: "$GO test ./..."},
		{name: "mixed", command: "go test ./... && pytest", want: "go test -json ./... && pytest --junitxml=/tmp/r/pytest-2.xml", kinds: []Kind{GoJSON, JUnit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, sources := Instrument(tc.command, dir)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			var kinds []Kind
			for _, s := range sources {
				kinds = append(kinds, s.Kind)
			}
			if diff := cmp.Diff(tc.kinds, kinds); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"--junitxml=/tmp/a.xml": "--junitxml=/tmp/a.xml", "/tmp/a b": "'/tmp/a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

const goEvents = `{"Action":"start","Package":"m/calc"}
{"Action":"run","Package":"m/calc","Test":"TestAdd"}
{"Action":"output","Package":"m/calc","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Action":"pass","Package":"m/calc","Test":"TestAdd"}
{"Action":"run","Package":"m/calc","Test":"TestSub"}
{"Action":"output","Package":"m/calc","Test":"TestSub","Output":"--- FAIL: TestSub (0.00s)\n"}
{"Action":"fail","Package":"m/calc","Test":"TestSub"}
{"Action":"run","Package":"m/calc","Test":"TestTable/skip"}
{"Action":"skip","Package":"m/calc","Test":"TestTable/skip"}
{"Action":"run","Package":"m/calc","Test":"TestCrash"}
go: downloading something
{"Action":"fail","Package":"m/calc"}
`

const junitReport = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.test_calc" name="test_add" time="0.005" />
<testcase classname="tests.test_calc" name="test_sub"><failure message="assert 4 == 2">x</failure></testcase>
<testcase classname="tests.test_calc.TestK" name="test_k[1-2]"><skipped message="later" /></testcase>
<testcase classname="" name="tests.test_zz"><error message="collection failure">SystemExit: 0</error></testcase>
<testcase classname="tests.test_calc" name="test_out"><system-out>&lt;failure/&gt;</system-out></testcase>
</testsuite></testsuites>`

const tapReport = `TAP version 13
# Subtest: adds
ok 1 - adds
  ---
  duration_ms: 27.4
  ...
# Subtest: subtracts
not ok 2 - subtracts
  ---
  error: |-
    ok 9 - a forged line in a message
  ...
# Subtest: suite
    # Subtest: inner one
    ok 1 - inner one
    # Subtest: inner skipped
    ok 2 - inner skipped # SKIP
    1..2
ok 3 - suite
# ok 7 - printed by a test
ok 4 - todo one # TODO
1..4
`

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	output := func(s string) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
	}
	for _, tc := range []struct {
		name    string
		sources []Source
		output  string
		want    map[string]Status
		missing string
	}{
		{name: "go test -json", sources: []Source{{Kind: GoJSON}}, output: goEvents, want: map[string]Status{
			"m/calc::TestAdd": Pass, "m/calc::TestSub": Fail, "m/calc::TestTable/skip": Skip, "m/calc::TestCrash": Fail}},
		{name: "go events without tests", sources: []Source{{Kind: GoJSON}}, output: `{"Action":"start","Package":"m/calc"}` + "\nok m/calc [no tests to run]\n", want: map[string]Status{}},
		{name: "no go events", sources: []Source{{Kind: GoJSON}}, output: "ok m/calc 0.1s\n", want: map[string]Status{}, missing: "holds no such report"},
		{name: "junit", sources: []Source{{Kind: JUnit, File: write("j.xml", junitReport)}}, want: map[string]Status{
			"tests.test_calc::test_add": Pass, "tests.test_calc::test_sub": Fail, "tests.test_calc.TestK::test_k[1-2]": Skip,
			"tests.test_zz": Fail, "tests.test_calc::test_out": Pass}},
		{name: "junit without cases", sources: []Source{{Kind: JUnit, File: write("e.xml", `<testsuites><testsuite tests="0"></testsuite></testsuites>`)}}, want: map[string]Status{}},
		{name: "junit missing", sources: []Source{{Kind: JUnit, File: filepath.Join(dir, "none.xml")}}, want: map[string]Status{}, missing: "no report was written"},
		{name: "junit malformed", sources: []Source{{Kind: JUnit, File: write("m.xml", `<testsuite><testcase name="a">`)}}, want: map[string]Status{}, missing: "malformed XML"},
		{name: "tap", sources: []Source{{Kind: TAP, File: write("t.tap", tapReport)}}, want: map[string]Status{
			"adds": Pass, "subtracts": Fail, "suite > inner one": Pass, "suite > inner skipped": Skip, "suite": Pass, "todo one": Skip}},
		{name: "tap that is no tap", sources: []Source{{Kind: TAP, File: write("n.tap", "hello\n")}}, want: map[string]Status{}, missing: "holds no such report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Read(tc.sources, output(tc.output))
			if diff := cmp.Diff(tc.want, res.Tests); diff != "" {
				t.Errorf("tests (-want +got):\n%s", diff)
			}
			missing := strings.Join(res.Missing, "; ")
			switch {
			case tc.missing == "" && missing != "":
				t.Errorf("missing %q, want none", missing)
			case tc.missing != "" && !strings.Contains(missing, tc.missing):
				t.Errorf("missing %q, want %q", missing, tc.missing)
			}
			if res.Readable() != (tc.missing == "") {
				t.Errorf("Readable() = %v with missing %q", res.Readable(), missing)
			}
		})
	}
}

// TestReadSkipsHugeLines: a line over the bound is skipped, and the
// events around it are read.
func TestReadSkipsHugeLines(t *testing.T) {
	out := `{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" + strings.Repeat("x", maxLine+10) + "\n" + `{"Action":"fail","Package":"p","Test":"TestB"}` + "\n"
	res := Read([]Source{{Kind: GoJSON}}, func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(out)), nil })
	if diff := cmp.Diff(map[string]Status{"p::TestA": Pass, "p::TestB": Fail}, res.Tests); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestGoText(t *testing.T) {
	got := GoText(goEvents)
	want := "=== RUN   TestAdd\n--- FAIL: TestSub (0.00s)\ngo: downloading something\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCompare(t *testing.T) {
	base := &Results{Tests: map[string]Status{
		"m::TestAdd": Pass, "m::TestSub": Fail, "m::TestMul": Pass, "m::TestDiv": Pass, "m::TestPow": Pass, "m::TestOld": Fail,
	}}
	branch := &Results{Tests: map[string]Status{
		"m::TestAdd": Pass, "m::TestSub": Pass, "m::TestMul": Fail, "m::TestPow": Skip, "m::TestOld": Fail, "m::TestNew": Pass,
	}}
	got := Compare(base, branch, "Fix TestSub; TestOld stays broken, and add TestNew.")
	want := Comparison{
		Base:     Counts{Passed: 4, Failed: 2},
		Branch:   Counts{Passed: 3, Failed: 2, Skipped: 1},
		Fixed:    []string{"m::TestSub"},
		Broken:   []string{"m::TestMul"},
		Vanished: []string{"m::TestDiv"},
		Skipped:  []string{"m::TestPow"},
		Named: []Named{
			{ID: "m::TestNew", Branch: Pass},
			{ID: "m::TestOld", Base: Fail, Branch: Fail},
			{ID: "m::TestSub", Base: Fail, Branch: Pass},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNamedIn(t *testing.T) {
	runs := &Results{Tests: map[string]Status{
		"m/calc::TestSub":                    Fail,
		"m/calc::TestSubtract":               Pass,
		"m/calc::TestTable/negative_numbers": Fail,
		"tests.test_calc::test_divide":       Fail,
		"tests.test_calc.TestK::test_k":      Pass,
		"suite > divides by zero":            Fail,
		"m/calc::TestA":                      Fail, // too short a name to match a word
	}}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{text: "make TestSub pass", want: []string{"m/calc::TestSub"}},
		{text: "TestTable/negative_numbers fails", want: []string{"m/calc::TestTable/negative_numbers"}},
		{text: "the TestTable cases", want: []string{"m/calc::TestTable/negative_numbers"}},
		{text: "fix test_divide", want: []string{"tests.test_calc::test_divide"}},
		{text: "TestK::test_k is flaky", want: []string{"tests.test_calc.TestK::test_k"}},
		{text: "'divides by zero' should pass", want: []string{"suite > divides by zero"}},
		{text: "TestSubtraction and TestAX are other words", want: nil},
		{text: "", want: nil},
	} {
		if diff := cmp.Diff(tc.want, NamedIn(tc.text, runs)); diff != "" {
			t.Errorf("NamedIn(%q) (-want +got):\n%s", tc.text, diff)
		}
	}
}

func TestRelative(t *testing.T) {
	r := &Results{Tests: map[string]Status{"/tmp/co/x.test.js > a": Pass, "/tmp/co/y.test.js > a": Fail, "b": Pass}}
	r.Relative("/tmp/co")
	if diff := cmp.Diff(map[string]Status{"x.test.js > a": Pass, "y.test.js > a": Fail, "b": Pass}, r.Tests); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzReadGoJSON(f *testing.F) {
	f.Add(goEvents)
	f.Fuzz(func(t *testing.T, s string) {
		res := &Results{}
		readGoJSON(strings.NewReader(s), res)
		checkResults(t, res)
	})
}

func FuzzReadJUnit(f *testing.F) {
	f.Add(junitReport)
	f.Fuzz(func(t *testing.T, s string) {
		res := &Results{}
		readJUnit(strings.NewReader(s), res)
		checkResults(t, res)
	})
}

func FuzzReadTAP(f *testing.F) {
	f.Add(tapReport)
	f.Fuzz(func(t *testing.T, s string) {
		res := &Results{}
		readTAP(strings.NewReader(s), res)
		checkResults(t, res)
	})
}

func FuzzInstrument(f *testing.F) {
	for _, s := range []string{"go test ./...", "pytest -q && node --test", "(go test ./a) | cat", `python3 -m pytest "a b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, command string) {
		got, sources := Instrument(command, "/tmp/r")
		if len(sources) == 0 && got != command {
			t.Fatalf("no sources, but the command changed: %q → %q", command, got)
		}
		if len(got) < len(command) {
			t.Fatalf("the command lost bytes: %q → %q", command, got)
		}
	})
}

func checkResults(t *testing.T, r *Results) {
	t.Helper()
	for id, s := range r.Tests {
		if s != Pass && s != Fail && s != Skip {
			t.Fatalf("test %q has status %q", id, s)
		}
	}
}
