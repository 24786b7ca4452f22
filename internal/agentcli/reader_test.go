package agentcli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// The testdata outputs: qwen-code-* and codex-* were captured from the
// real CLIs (the versions of Versions) run against llmtest; the others
// follow each agent's documented format (claude-code: its stream-json
// messages; gemini-cli: packages/core/src/output/types.ts; opencode: its
// run --format json events; aider: base_coder.py's output lines).

// readFile runs a reader over a testdata output, written in pieces of n
// bytes (0: at once), and returns its summary.
func readFile(t testing.TB, preset, model, root, file string, n int) Summary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return readBytes(preset, model, root, data, n)
}

func readBytes(preset, model, root string, data []byte, n int) Summary {
	r := NewReader(preset, model, root)
	if n <= 0 {
		n = len(data) + 1
	}
	for len(data) > 0 {
		k := min(n, len(data))
		r.Write(data[:k])
		data = data[k:]
	}
	r.Close()
	return r.Summary()
}

// brief is what the tests compare of a Summary.
type brief struct {
	Final    string
	Files    []string
	Commands []Shell
	Denied   []string
	Usage    Usage
	Turns    int
	Class    Class
}

func briefOf(s Summary, exit int) brief {
	b := brief{Final: s.Final, Files: s.Files, Commands: s.Commands, Usage: s.Usage, Turns: s.Turns, Class: s.Classify(exit)}
	for _, d := range s.Denials {
		b.Denied = append(b.Denied, d.Tool)
	}
	return b
}

func TestReaders(t *testing.T) {
	tests := []struct {
		file, preset, model, root string
		exit                      int
		want                      brief
		endpoint                  string // a substring of Summary.Endpoint
		allow                     string // a substring of the first denial's Allow
	}{
		{file: "qwen-code-refusal.out", preset: QwenCode, root: "/tmp/TestScratch3087398964/001",
			want: brief{Final: "all done", Files: []string{"new.txt"}, Denied: []string{"run_shell_command"},
				Usage: Usage{Model: "test-model", Input: 9070, Output: 17, Cached: 25}, Turns: 4, Class: Refused},
			allow: `extra_args = ["--allowed-tools", "run_shell_command"]`},
		{file: "qwen-code-endpoint.out", preset: QwenCode, exit: 1,
			want:     brief{Final: "[API Error: 500 upstream exploded]", Usage: Usage{Model: "test-model"}, Turns: 1, Class: EndpointFailed},
			endpoint: "[API Error: 500 upstream exploded]"},
		{file: "qwen-code-ratelimit.out", preset: QwenCode, exit: 1,
			want: brief{Final: "[API Error: 429 rate limited]\nPossible quota limitations in place or slow response times detected. Please wait and try again later.",
				Usage: Usage{Model: "test-model"}, Turns: 1, Class: EndpointFailed},
			endpoint: "[API Error: 429 rate limited]"},
		{file: "codex-refusal.out", preset: Codex, model: "test-model", root: "/tmp/TestScratch701195557/001",
			want: brief{Final: "all done", Files: []string{"new.txt"},
				Commands: []Shell{{Command: `/bin/bash -lc "printf \"hello world\\n\" > hello.txt"`, Exit: 0}, {Command: "/bin/bash -lc false", Exit: 1}},
				Denied:   []string{"exec_command"}, Usage: Usage{Model: "test-model", Input: 9693, Output: 17, Cached: 25}, Turns: 1, Class: Refused},
			allow: "--dangerously-bypass-approvals-and-sandbox"},
		{file: "codex-endpoint.out", preset: Codex, model: "test-model", exit: 1,
			want:     brief{Usage: Usage{Model: "test-model"}, Class: EndpointFailed},
			endpoint: "experiencing high demand"},
		{file: "claude-code-refusal.out", preset: ClaudeCode, root: "/w",
			want: brief{Final: "Fixed the off-by-one in parse.go; I could not run the tests.", Files: []string{"parse.go"}, Denied: []string{"Bash"},
				Usage: Usage{Model: "claude-sonnet-4-5", Input: 40 + 300 + 12700, Output: 150, Cached: 12700}, Turns: 3, Class: Refused},
			allow: `extra_args = ["--allowedTools", "Bash"]`},
		{file: "claude-code-endpoint.out", preset: ClaudeCode, exit: 1,
			want: brief{Final: `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
				Usage: Usage{Model: "claude-sonnet-4-5"}, Turns: 1, Class: EndpointFailed},
			endpoint: "API Error: 529"},
		{file: "gemini-cli-refusal.out", preset: GeminiCLI, root: "/w",
			want: brief{Final: "Fixed parse.go; the tests could not run.", Files: []string{"parse.go"}, Denied: []string{"Shell"},
				Usage: Usage{Model: "gemini-2.5-pro", Input: 5000, Output: 200, Cached: 3000}, Turns: 2, Class: Refused},
			allow: "--approval-mode yolo"},
		{file: "gemini-cli-endpoint.out", preset: GeminiCLI, exit: 1,
			want:     brief{Usage: Usage{Model: "gemini-2.5-pro"}, Class: EndpointFailed},
			endpoint: "[API Error: 503"},
		{file: "opencode-refusal.out", preset: OpenCode, model: "cra/qwen3-coder", root: "/w",
			want: brief{Final: "Updated parse.go; running the tests was not permitted.", Files: []string{"parse.go"}, Denied: []string{"bash"},
				Usage: Usage{Model: "cra/qwen3-coder", Input: 1200 + 800 + 300 + 1900, Output: 80, Cached: 2700}, Turns: 2, Class: Refused},
			allow: `OPENCODE_PERMISSION`},
		{file: "opencode-endpoint.out", preset: OpenCode, exit: 1,
			want:     brief{Class: EndpointFailed},
			endpoint: "rate limit exceeded"},
		{file: "aider-refusal.out", preset: Aider, model: "qwen3-coder",
			want: brief{Final: "The constant is now 2, as the tests expect.", Files: []string{"parse.go"}, Denied: []string{"shell"},
				Usage: Usage{Model: "openai/qwen3-coder", Input: 4400, Output: 125, Cached: 1500}, Turns: 2, Class: Refused},
			allow: "[validation]"},
		{file: "aider-endpoint.out", preset: Aider, exit: 1,
			want:     brief{Usage: Usage{Model: "openai/qwen3-coder"}, Class: EndpointFailed},
			endpoint: "litellm.InternalServerError"},
		{file: "command-endpoint.out", preset: "", exit: 1,
			want:     brief{Final: "Error: 503 Service Unavailable from http://127.0.0.1:8080/v1/chat/completions", Class: EndpointFailed},
			endpoint: "503 Service Unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			s := readFile(t, tc.preset, tc.model, tc.root, tc.file, 0)
			if diff := cmp.Diff(tc.want, briefOf(s, tc.exit)); diff != "" {
				t.Errorf("summary (-want +got):\n%s\ntranscript:\n%s", diff, s.Transcript)
			}
			if !strings.Contains(s.Endpoint, tc.endpoint) || (tc.endpoint == "") != (s.Endpoint == "") {
				t.Errorf("endpoint marker: got %q, want one containing %q", s.Endpoint, tc.endpoint)
			}
			if tc.allow != "" && (len(s.Denials) == 0 || !strings.Contains(s.Denials[0].Allow, tc.allow)) {
				t.Errorf("denials: got %+v, want the first to allow with %q", s.Denials, tc.allow)
			}
			if s.Events == 0 {
				t.Errorf("no events counted")
			}
			for _, piece := range []int{1, 7, 64} {
				if got := readFile(t, tc.preset, tc.model, tc.root, tc.file, piece); !cmp.Equal(s, got) {
					t.Errorf("written %d bytes at a time, the summary differs (-whole +pieces):\n%s", piece, cmp.Diff(s, got))
				}
			}
		})
	}
}

// TestTranscript: a reviewer reads the run, not its JSON framing.
func TestTranscript(t *testing.T) {
	s := readFile(t, Codex, "test-model", "/tmp/TestScratch701195557/001", "codex-refusal.out", 0)
	want := []string{"$ /bin/bash -lc false", "  exit 1", "add /tmp/TestScratch701195557/001/new.txt", "denied exec_command:", "assistant: all done"}
	for _, w := range want {
		if !strings.Contains(s.Transcript, w) {
			t.Errorf("transcript lacks %q:\n%s", w, s.Transcript)
		}
	}
	if strings.Contains(s.Transcript, `"type"`) {
		t.Errorf("transcript carries JSON framing:\n%s", s.Transcript)
	}
	if got, want := s.Need("codex"), "the agent was refused exec_command: to allow it, set in [agents.codex] approval = \"full\""; !strings.HasPrefix(got, want) {
		t.Errorf("need: got %q, want it to start with %q", got, want)
	}
}

// TestReaderBounds: a runaway output keeps the summary within its bounds,
// and a line past MaxLine is skipped, not buffered.
func TestReaderBounds(t *testing.T) {
	var b bytes.Buffer
	for i := 0; i < MaxFiles+50; i++ {
		b.WriteString(`{"type":"item.completed","item":{"id":"i","type":"file_change","status":"completed","changes":[{"path":"f` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `/` + strings.Repeat("y", i) + `","kind":"add"}]}}` + "\n")
		b.WriteString(`{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"echo hi","exit_code":0,"status":"completed"}}` + "\n")
	}
	b.WriteString(`{"type":"item.completed","item":{"type":"agent_message","text":"` + strings.Repeat("z", MaxLine) + `"}}` + "\n")
	b.WriteString(`{"type":"item.completed","item":{"type":"agent_message","text":"short and last"}}` + "\n")
	s := readBytes(Codex, "m", "", b.Bytes(), 1<<16)
	if len(s.Files) != MaxFiles || len(s.Commands) != MaxCommands || s.Dropped == 0 {
		t.Errorf("got %d files, %d commands, %d dropped; want %d, %d and some dropped", len(s.Files), len(s.Commands), s.Dropped, MaxFiles, MaxCommands)
	}
	if s.Skipped != 1 || s.Final != "short and last" {
		t.Errorf("got %d skipped lines and final %q, want 1 and the short message", s.Skipped, s.Final)
	}
	if len(s.Transcript) > MaxTranscript+200 || !strings.Contains(s.Transcript, "lines cut") {
		t.Errorf("transcript of %d bytes, want at most %d with a cut noted", len(s.Transcript), MaxTranscript)
	}
}

// fuzzReader is one reader's fuzz target: whatever the bytes, the reader
// does not panic, keeps its bounds and valid UTF-8, and reads the same
// whether the output comes at once or in two pieces.
func fuzzReader(f *testing.F, preset string, seeds ...string) {
	for _, s := range seeds {
		data, err := os.ReadFile(filepath.Join("testdata", s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(len(data)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole := readBytes(preset, "m", "/w", data, 0)
		if len(whole.Files) > MaxFiles || len(whole.Commands) > MaxCommands || len(whole.Denials) > MaxDenials ||
			len(whole.Errors) > MaxErrors || len(whole.Calls) > MaxCalls {
			t.Fatalf("bounds exceeded: %d files, %d commands, %d denials, %d errors, %d calls",
				len(whole.Files), len(whole.Commands), len(whole.Denials), len(whole.Errors), len(whole.Calls))
		}
		if utf8.RuneCountInString(whole.Final) > MaxFinal+1 || len(whole.Transcript) > MaxTranscript+2*maxField+100 {
			t.Fatalf("final of %d runes, transcript of %d bytes", utf8.RuneCountInString(whole.Final), len(whole.Transcript))
		}
		for _, s := range []string{whole.Final, whole.Transcript, whole.Endpoint} {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8: %q", s)
			}
		}
		if whole.Usage.Input < 0 || whole.Usage.Output < 0 || whole.Usage.Cached < 0 {
			t.Fatalf("negative usage %+v", whole.Usage)
		}
		k := int(cut) % (len(data) + 1)
		r := NewReader(preset, "m", "/w")
		r.Write(data[:k])
		r.Write(data[k:])
		r.Close()
		if split := r.Summary(); !cmp.Equal(whole, split) {
			t.Fatalf("split at %d reads differently (-whole +split):\n%s", k, cmp.Diff(whole, split))
		}
	})
}

func FuzzStreamJSON(f *testing.F) {
	fuzzReader(f, QwenCode, "qwen-code-refusal.out", "qwen-code-endpoint.out", "qwen-code-ratelimit.out", "claude-code-refusal.out", "claude-code-endpoint.out")
}

func FuzzCodex(f *testing.F) {
	fuzzReader(f, Codex, "codex-refusal.out", "codex-endpoint.out")
}

func FuzzGemini(f *testing.F) {
	fuzzReader(f, GeminiCLI, "gemini-cli-refusal.out", "gemini-cli-endpoint.out")
}

func FuzzOpenCode(f *testing.F) {
	fuzzReader(f, OpenCode, "opencode-refusal.out", "opencode-endpoint.out")
}

func FuzzAider(f *testing.F) {
	fuzzReader(f, Aider, "aider-refusal.out", "aider-endpoint.out")
}

func FuzzText(f *testing.F) {
	fuzzReader(f, "", "command-endpoint.out", "aider-endpoint.out")
}
