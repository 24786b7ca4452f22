package evidence

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// repeat returns n copies of block, each line ended.
func repeat(n int, block ...string) string {
	var b strings.Builder
	for range n {
		for _, l := range block {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// goTestV is a passing go test -v run of table tests, numbered subtests
// included: output that must not read as a loop.
func goTestV() string {
	var b strings.Builder
	b.WriteString("=== RUN   TestParse\n")
	for i := range 12 {
		fmt.Fprintf(&b, "=== RUN   TestParse/#%02d\n", i)
		fmt.Fprintf(&b, "    parse_test.go:%d: input %d parsed\n", 40+i%3, i)
	}
	b.WriteString("--- PASS: TestParse (0.01s)\n")
	for i := range 12 {
		fmt.Fprintf(&b, "    --- PASS: TestParse/#%02d (0.00s)\n", i)
	}
	for _, name := range []string{"TestAdd", "TestSub", "TestMul", "TestDiv", "TestErrorWrapping", "TestErrorsIs"} {
		fmt.Fprintf(&b, "=== RUN   %s\n=== PAUSE %s\n", name, name)
	}
	for _, name := range []string{"TestAdd", "TestSub", "TestMul", "TestDiv", "TestErrorWrapping", "TestErrorsIs"} {
		fmt.Fprintf(&b, "=== CONT  %s\n--- PASS: %s (0.00s)\n", name, name)
	}
	b.WriteString("PASS\nok  \tgithub.com/x/calc\t0.123s\n")
	b.WriteString("?   \tgithub.com/x/calc/cmd\t[no test files]\n")
	return b.String()
}

func TestDetectLoops(t *testing.T) {
	var progressNL, progressCR strings.Builder
	for p := 0; p <= 100; p += 5 {
		fmt.Fprintf(&progressNL, "Downloading model.bin: %3d%% |%-20s| 1.2MB/s eta 0:00:%02d\n", p, strings.Repeat("█", p/5), 100-p)
		fmt.Fprintf(&progressCR, "\rDownloading model.bin: %3d%% |%-20s|", p, strings.Repeat("#", p/5))
	}
	progressCR.WriteString("\n")

	for _, tc := range []struct {
		name   string
		output string
		want   []Loop
	}{
		{"empty", "", []Loop{}},
		{"normal output", "building\ncompiling x.go\nrunning tests\nok\n", []Loop{}},
		{"go test -v", goTestV(), []Loop{}},
		{"progress bar, one line a step", progressNL.String(), []Loop{}},
		{"progress bar redrawn", progressCR.String(), []Loop{}},
		{"pytest -v", repeat(1, "tests/test_a.py::test_x[1] PASSED [ 20%]", "tests/test_a.py::test_x[2] PASSED [ 40%]",
			"tests/test_a.py::test_x[3] PASSED [ 60%]", "tests/test_a.py::test_x[4] PASSED [ 80%]", "tests/test_a.py::test_x[5] PASSED [100%]"), []Loop{}},
		{"closing braces", repeat(1, "{", "  \"a\": {", "    \"b\": {", "      \"c\": 1", "    }", "  }", "}", "}"), []Loop{}},
		{"a line three times is not a loop", repeat(3, "Thinking..."), []Loop{}},
		{"an error line four times is not a loop", "x\nError: boom\ny\nError: boom\nz\nError: boom\nw\nError: boom\n", []Loop{}},

		{"one line repeated", "start\n" + repeat(6, "Thinking...") + "done\n",
			[]Loop{{Kind: LoopBlock, Line: "Thinking...", Lines: 1, Count: 6}}},
		{"a block with timestamps, durations, ids and line numbers",
			"2024-05-01T10:00:00Z run pytest\n2024-05-01T10:00:01Z tests/test_a.py:12: AssertionError in 0.31s\n2024-05-01T10:00:02Z edit src/a.py (commit 1a2b3c4d)\n" +
				"2024-05-01T10:01:00Z run pytest\n2024-05-01T10:01:01Z tests/test_a.py:14: AssertionError in 0.29s\n2024-05-01T10:01:02Z edit src/a.py (commit 5e6f7a8b)\n" +
				"2024-05-01T10:02:00Z run pytest\n2024-05-01T10:02:01Z tests/test_a.py:12: AssertionError in 0.30s\n2024-05-01T10:02:02Z edit src/a.py (commit 9c0d1e2f)\n" +
				"2024-05-01T10:03:00Z run pytest\n2024-05-01T10:03:01Z tests/test_a.py:13: AssertionError in 1.2s\n2024-05-01T10:03:02Z edit src/a.py (commit 3a4b5c6d)\n",
			[]Loop{{Kind: LoopBlock, Line: "2024-05-01T10:00:00Z run pytest", Lines: 3, Count: 4}}},
		{"blank lines between repeats", repeat(5, "> running make", "", "make: *** [all] Error 2", ""),
			[]Loop{{Kind: LoopBlock, Line: "> running make", Lines: 2, Count: 5}}},
		{"colour and carriage returns do not hide a repeat", repeat(4, "\x1b[31mretrying\x1b[0m", "spinner |\rspinner /\rwaiting for lock"),
			[]Loop{{Kind: LoopBlock, Line: "retrying", Lines: 2, Count: 4}}},
		{"a block of period two is not reported at four", repeat(8, "a", "b"),
			[]Loop{{Kind: LoopBlock, Line: "a", Lines: 2, Count: 8}}},
		{"an error line spread out", "Traceback (most recent call last):\nstep 1\nTraceback (most recent call last):\nstep 2\n" +
			"Traceback (most recent call last):\nstep 3\nTraceback (most recent call last):\nstep 4\nTraceback (most recent call last):\nend\n",
			[]Loop{{Kind: LoopError, Line: "Traceback (most recent call last):", Lines: 1, Count: 5}}},
		{"error lines differing in noise only", repeat(1,
			"ERROR 12:00:01 request 550e8400-e29b-41d4-a716-446655440000 failed after 1.5s", "a",
			"ERROR 12:00:03 request 6ba7b810-9dad-11d1-80b4-00c04fd430c8 failed after 2s", "b",
			"ERROR 12:00:05 request 6ba7b811-9dad-11d1-80b4-00c04fd430c8 failed after 250ms", "c",
			"ERROR 12:00:09 request 6ba7b812-9dad-11d1-80b4-00c04fd430c8 failed after 3s", "d",
			"ERROR 12:00:17 request 6ba7b813-9dad-11d1-80b4-00c04fd430c8 failed after 4s", "e",
			"ERROR 12:00:33 request 6ba7b814-9dad-11d1-80b4-00c04fd430c8 failed after 5s"),
			[]Loop{{Kind: LoopError, Line: "ERROR 12:00:01 request 550e8400-e29b-41d4-a716-446655440000 failed after 1.5s", Lines: 1, Count: 6}}},
		{"an error inside a repeated block is reported once", repeat(5, "run tests", "FAILED test_x"),
			[]Loop{{Kind: LoopBlock, Line: "run tests", Lines: 2, Count: 5}}},
		{"only the last 400 lines count", repeat(10, "old loop line") + repeat(400, "") + strings.Repeat("x\ny\nz\n", 134),
			// 402 lines: the window starts at the third, a "z".
			[]Loop{{Kind: LoopBlock, Line: "z", Lines: 3, Count: 133}}},
		{"a long line is clipped", repeat(4, strings.Repeat("é", 300)),
			[]Loop{{Kind: LoopBlock, Line: strings.Repeat("é", 199) + "…", Lines: 1, Count: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DetectLoops(tc.output)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("DetectLoops (-want +got):\n%s", d)
			}
		})
	}
}

func TestNormalizeLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  a   b\t c  ", "a b c"},
		{"2024-05-01 10:00:00,123 INFO start", "<time> INFO start"},
		{"took 1.5s, then 250ms, then 1m30s", "took <dur>, then <dur>, then <dur>"},
		{"--- PASS: TestX (0.00s)", "--- PASS: TestX (<dur>)"},
		{"at 0xc000123abc", "at <hex>"},
		{"commit 1a2b3c4d5e6f", "commit <hex>"},
		{"decaffed coffee", "decaffed coffee"},
		{"x.go:12:5: undefined: y", "x.go:<n>: undefined: y"},
		{`File "a.py", line 42, in f`, `File "a.py", line <n>, in f`},
		{"pid 123456 port 8080", "pid <n> port 8080"},
		{"/tmp/go-build1234567890/b001/exe", "/tmp/go-build<n>/b001/exe"},
		{"TestX/#07 50% 3 failed", "TestX/#07 50% 3 failed"},
		{"\x1b[1;32mok\x1b[0m", "ok"},
		{"10%\r20%\r30%\r", "30%"},
	} {
		if got := normalizeLine(tc.in); got != tc.want {
			t.Errorf("normalizeLine(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTail(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	got := tail(b.String(), 60, 4096)
	if !strings.HasPrefix(got, "line 40\n") || !strings.HasSuffix(got, "line 99") || strings.Count(got, "\n") != 59 {
		t.Errorf("tail of 100 lines: got %q, want lines 40 to 99", got)
	}
	long := strings.Repeat("x", 3000) + "\n" + strings.Repeat("y", 3000) + "\nlast\n"
	if got := tail(long, 60, 4096); got != strings.Repeat("y", 3000)+"\nlast" {
		t.Errorf("tail over 4096 bytes: got %d bytes starting %.20q, want the whole lines that fit", len(got), got)
	}
	if got := tail(strings.Repeat("é", 3000), 60, 4096); len(got) > 4096 || !utf8.ValidString(got) || got == "" {
		t.Errorf("tail of one long line: got %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := tail("\x1b[31mred\x1b[0m\n10%\r100%\nbad \xff byte\n", 60, 4096); got != "red\n100%\nbad \uFFFD byte" {
		t.Errorf("tail cleaning: got %q", got)
	}
	if got := tail("", 60, 4096); got != "" {
		t.Errorf("tail of nothing: got %q", got)
	}
}

func FuzzDetectLoops(f *testing.F) {
	f.Add(repeat(5, "a", "b"))
	f.Add(goTestV())
	f.Add(repeat(6, "Error: x"))
	f.Add("\r\r\n\x1b[\n\xff\xfe\n" + repeat(4, "\x1b]0;title\x07x"))
	f.Fuzz(func(t *testing.T, out string) {
		loops := DetectLoops(out)
		if !reflect.DeepEqual(loops, DetectLoops(out)) {
			t.Fatal("DetectLoops is not deterministic")
		}
		if len(loops) > maxLoops {
			t.Errorf("%d loops, want at most %d", len(loops), maxLoops)
		}
		lines := strings.Count(out, "\n") + 1
		for _, l := range loops {
			if !utf8.ValidString(l.Line) || utf8.RuneCountInString(l.Line) > maxLoopLine {
				t.Errorf("loop line %q is not clipped valid text", l.Line)
			}
			switch l.Kind {
			case LoopBlock:
				if l.Lines < 1 || l.Lines > maxBlock || l.Count < minBlockRepeats || l.Lines*l.Count > lines {
					t.Errorf("impossible block %+v in %d lines", l, lines)
				}
			case LoopError:
				if l.Lines != 1 || l.Count < minErrorRepeats || l.Count > lines {
					t.Errorf("impossible error loop %+v in %d lines", l, lines)
				}
			default:
				t.Errorf("unknown kind %q", l.Kind)
			}
		}
		if got := tail(out, 60, 4096); len(got) > 4096 || !utf8.ValidString(got) {
			t.Errorf("tail: %d bytes, valid %v", len(got), utf8.ValidString(got))
		}
	})
}
