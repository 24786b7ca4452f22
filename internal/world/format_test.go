package world

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

func TestFormatGolden(t *testing.T) {
	tests := []struct {
		name  string
		entry Entry
		want  string
	}{
		{"event", Entry{Time: t0, Kind: KindEvent, Source: SourceBash, ID: "git-status", Output: "clean"},
			"[2025-01-02T03:04:05.678Z][event:bash][git-status] clean"},
		{"agent with need", Entry{Time: t0, Kind: KindAgent, Status: StatusStart, ID: "T-12", Output: "add a flag", Need: "tests pass"},
			"[2025-01-02T03:04:05.678Z][agent:start][T-12] add a flag | need: tests pass"},
		{"empty output", Entry{Time: t0, Kind: KindAgent, Status: StatusActive, ID: "T-12"},
			"[2025-01-02T03:04:05.678Z][agent:active][T-12]"},
		{"empty output with need", Entry{Time: t0, Kind: KindAgent, Status: StatusFailed, ID: "T-1", Need: "solve captcha"},
			"[2025-01-02T03:04:05.678Z][agent:failed][T-1] | need: solve captcha"},
		{"time in another zone, nanoseconds cut", Entry{Time: time.Date(2025, 1, 2, 5, 4, 5, 678_999_999, time.FixedZone("x", 2*3600)), Kind: KindEvent, Source: SourceUser, ID: "s"},
			"[2025-01-02T03:04:05.678Z][event:user][s]"},
		{"control characters escaped", Entry{Time: t0, Kind: KindEvent, Source: SourceBash, ID: "go-test", Output: "line 1\nline 2\r\n\tx\x00\x7f\\"},
			`[2025-01-02T03:04:05.678Z][event:bash][go-test] line 1\nline 2\r\n\tx\x00\x7f\\`},
		{"need separator in output", Entry{Time: t0, Kind: KindAgent, Status: StatusStart, ID: "T", Output: "a | need: b", Need: "c | need: d"},
			`[2025-01-02T03:04:05.678Z][agent:start][T] a \| need: b | need: c \| need: d`},
		{"plain pipes stay", Entry{Time: t0, Kind: KindEvent, Source: SourceBash, ID: "sh", Output: "ls | wc -l || true |need"},
			"[2025-01-02T03:04:05.678Z][event:bash][sh] ls | wc -l || true |need"},
		{"brackets in identifier", Entry{Time: t0, Kind: KindEvent, Source: SourceFile, ID: "a[1] b.txt", Output: "[x]"},
			`[2025-01-02T03:04:05.678Z][event:file][a\x5b1\x5d b.txt] [x]`},
		{"unicode kept, separators escaped", Entry{Time: t0, Kind: KindEvent, Source: SourceChrome, ID: "airbnb.com/s/Paris", Output: "café\u2028\u0085件件有着落"},
			`[2025-01-02T03:04:05.678Z][event:chrome][airbnb.com/s/Paris] café\u2028\u0085件件有着落`},
		{"invalid utf-8", Entry{Time: t0, Kind: KindEvent, Source: SourceAPI, ID: "x", Output: "a\xffb\xc3"},
			`[2025-01-02T03:04:05.678Z][event:api][x] a\xffb\xc3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Format(tc.entry)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRoundTrip writes every entry type and reads it back.
func TestRoundTrip(t *testing.T) {
	var entries []Entry
	for _, s := range Sources() {
		entries = append(entries, Entry{Time: t0, Kind: KindEvent, Source: s, ID: "id-" + string(s), Output: "out " + string(s)})
	}
	for _, s := range Statuses() {
		entries = append(entries, Entry{Time: t0, Kind: KindAgent, Status: s, ID: "T-1", Output: "step " + string(s), Need: "criteria"})
	}
	tricky := []string{
		"", " ", "  leading", "trailing ", "|", "| need: x", " | need: x", "a |", "a | need:", "a | need: ", "a | need",
		"x\\ny", "\\", "\\|", "tab\there", "nul\x00", "\u2029", "\xff\xfe", "\\x41", "]", "[", "][", "] x",
	}
	for i, s := range tricky {
		entries = append(entries,
			Entry{Time: t0, Kind: KindAgent, Status: StatusFailed, ID: "T" + s + "x", Output: s, Need: s},
			Entry{Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: KindEvent, Source: SourceUser, ID: s + "id", Output: s + "|"},
		)
	}
	for _, e := range entries {
		line, err := Format(e)
		if err != nil {
			t.Fatalf("Format(%+v): %v", e, err)
		}
		if strings.ContainsAny(line, "\n\r") {
			t.Errorf("line %q holds a line break", line)
		}
		got, err := ParseLine([]byte(line))
		if err != nil {
			t.Errorf("ParseLine(%q): %v", line, err)
			continue
		}
		if diff := cmp.Diff(e, got); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", line, diff)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"empty", "", "does not start with '['"},
		{"prose", "hello world", "does not start with '['"},
		{"no closing bracket", "[2025-01-02T03:04:05.678Z", "unterminated timestamp"},
		{"bad time", "[yesterday][event:bash][x] y", "bad timestamp"},
		{"missing kind", "[2025-01-02T03:04:05.678Z] y", "missing [kind]"},
		{"bad kind", "[2025-01-02T03:04:05.678Z][task:bash][x] y", "bad kind"},
		{"unknown status", "[2025-01-02T03:04:05.678Z][agent:sleeping][x] y", `bad agent status "sleeping"`},
		{"bad source", "[2025-01-02T03:04:05.678Z][event:Bash!][x] y", "bad event source"},
		{"missing id", "[2025-01-02T03:04:05.678Z][event:bash] y", "missing [identifier]"},
		{"empty id", "[2025-01-02T03:04:05.678Z][event:bash][] y", "empty identifier"},
		{"no space", "[2025-01-02T03:04:05.678Z][event:bash][x]y", "no space after the identifier"},
		{"bad escape", `[2025-01-02T03:04:05.678Z][event:bash][x] C:\Users`, `unknown escape "\\U"`},
		{"trailing backslash", `[2025-01-02T03:04:05.678Z][event:bash][x] a\`, "trailing backslash"},
		{"short hex", `[2025-01-02T03:04:05.678Z][event:bash][x] a\x4`, "short escape"},
		{"surrogate", `[2025-01-02T03:04:05.678Z][event:bash][x] \ud800`, "bad escape"},
		{"old format without status tag", "[2025-01-02 03:04:05] [claude]", "missing [task-id:status]"},
		{"old format with empty id", "[2025-01-02 03:04:05] [claude] [:done] x", "empty task id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLine([]byte(tc.line))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseLegacy(t *testing.T) {
	tests := []struct {
		name, line string
		want       Entry
	}{
		{"lifecycle status", "[2025-01-02T03:04:05Z] [claude] [abc123:active] working on it",
			Entry{Time: t0.Truncate(time.Second), Kind: KindAgent, Status: StatusActive, ID: "abc123", Output: "working on it", Legacy: true}},
		{"synonym, space-separated time", "[2025-01-02 03:04:05] [claude] [abc123:done] all green",
			Entry{Time: t0.Truncate(time.Second), Kind: KindAgent, Status: StatusFinish, ID: "abc123", Output: "all green", Legacy: true}},
		{"other status becomes an event", "[2025-01-02 03:04:05.678] [chrome] [airbnb.com/s/Paris:visited] 12 listings",
			Entry{Time: t0, Kind: KindEvent, Source: "chrome", ID: "airbnb.com/s/Paris", Output: "visited: 12 listings", Legacy: true}},
		{"no status, odd source", "[2025-01-02T03:04:05.678Z] [Some Tool] [T-1] note \\ kept verbatim",
			Entry{Time: t0, Kind: KindEvent, Source: SourceSystem, ID: "T-1", Output: "note \\ kept verbatim", Legacy: true}},
		{"crlf", "[2025-01-02T03:04:05.678Z] [user] [T-1:failed] stuck\r",
			Entry{Time: t0, Kind: KindAgent, Status: StatusFailed, ID: "T-1", Output: "stuck", Legacy: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Writing is only in the new format.
			line, err := Format(got)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(line, "][") {
				t.Errorf("got %q, want the new format", line)
			}
		})
	}
}

func TestUnescapeRefuses(t *testing.T) {
	for _, s := range []string{`\`, `\q`, `\x`, `\xg0`, `\u12`, `\udfff`} {
		if _, err := Unescape(s); err == nil {
			t.Errorf("Unescape(%q): got nil, want an error", s)
		}
	}
}

func TestFormatRefuses(t *testing.T) {
	tests := []struct {
		name  string
		entry Entry
		want  string
	}{
		{"no id", Entry{Time: t0, Kind: KindEvent, Source: SourceBash}, "no identifier"},
		{"no kind", Entry{Time: t0, ID: "x"}, "entry kind"},
		{"bad status", Entry{Time: t0, Kind: KindAgent, Status: "done", ID: "x"}, `agent status "done"`},
		{"event with status", Entry{Time: t0, Kind: KindEvent, Source: SourceBash, Status: StatusStart, ID: "x"}, "no status"},
		{"year 10000", Entry{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Kind: KindEvent, Source: SourceBash, ID: "x"}, "outside years"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Format(tc.entry)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
