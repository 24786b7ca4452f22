package agentcli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/lazyre"
)

// The bounds of a Summary (DESIGN.md principle 6): an agent's output is
// hostile input, and a runaway one must not grow cra's memory.
const (
	MaxLine       = 4 << 20 // longer lines are skipped (and counted)
	MaxFiles      = 200
	MaxCommands   = 200
	MaxDenials    = 50
	MaxErrors     = 50
	MaxCalls      = 1000
	MaxFinal      = 4000  // runes of the final message
	MaxTranscript = 12000 // bytes of the transcript: a head and a tail
	maxField      = 400   // runes of one transcript field
)

// Usage is the token usage of a run or of one model call. Input counts
// the whole prompt, its cached part included, whatever the agent's own
// convention (Anthropic's input_tokens leave the cache out).
type Usage struct {
	Model  string `json:"model,omitempty"`
	Input  int64  `json:"input"`
	Output int64  `json:"output"`
	Cached int64  `json:"cached"`
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u.Input == 0 && u.Output == 0 && u.Cached == 0 }

// Shell is a command the agent ran, with its exit code (-1: unknown).
type Shell struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
}

// Denial is a tool the agent was refused, and the setting that allows it.
type Denial struct {
	Tool    string `json:"tool"`
	Message string `json:"message,omitempty"`
	// Allow names the profile setting that lets the agent use the tool.
	Allow string `json:"allow"`
}

// Summary is what a run's output says happened.
type Summary struct {
	Preset string `json:"preset,omitempty"`
	// Final is the agent's final message: the run's finish line.
	Final    string   `json:"final"`
	Files    []string `json:"files,omitempty"`
	Commands []Shell  `json:"commands,omitempty"`
	Denials  []Denial `json:"denials,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	Turns    int      `json:"turns"`
	// Usage is the run's total; Calls are the per-call (or per-turn)
	// counts when the stream gives them.
	Usage Usage   `json:"usage"`
	Calls []Usage `json:"calls,omitempty"`
	// Endpoint is the marker of a failing model endpoint the output
	// showed ("[API Error: 500 …", "Reconnecting... 5/5 …"); Failed says
	// that the agent reported the run as failed.
	Endpoint string `json:"endpoint,omitempty"`
	Failed   bool   `json:"failed,omitempty"`
	// Events are the structured events parsed; Bytes the output read.
	Events int64 `json:"events"`
	Bytes  int64 `json:"bytes"`
	// Skipped counts lines longer than MaxLine, and Dropped the files,
	// commands, denials, errors and calls past their bounds.
	Skipped int `json:"skipped,omitempty"`
	Dropped int `json:"dropped,omitempty"`
	// Transcript is the run told compactly for a reviewer: messages, tool
	// calls, results in a line each, without the JSON framing.
	Transcript string `json:"transcript"`
}

// Class is what a finished run's outcome is, as the board counts it.
type Class int

// The classes of Summary.Classify.
const (
	// Succeeded: the agent exited 0 and reported no failure.
	Succeeded Class = iota
	// AgentFailed: the agent failed, for a reason of its own.
	AgentFailed
	// EndpointFailed: the agent's model endpoint failed (5xx, timeouts,
	// reconnects, rate limits): not the agent's fault, retry later.
	EndpointFailed
	// Refused: a tool the agent needed was refused by its approval mode:
	// a person must change a setting (Summary.Denials names it).
	Refused
)

func (c Class) String() string {
	return [...]string{"succeeded", "agent failed", "endpoint failed", "refused"}[c]
}

// Classify says what a run that exited with exit means: a refusal first
// (a person must act), then a failure with the endpoint's marker, then the
// agent's own failure.
func (s Summary) Classify(exit int) Class {
	switch {
	case len(s.Denials) > 0:
		return Refused
	case exit == 0 && !s.Failed:
		return Succeeded
	case s.Endpoint != "":
		return EndpointFailed
	default:
		return AgentFailed
	}
}

// Need is what a person must do about a refused run: the tools and the
// settings of profile name that allow them.
func (s Summary) Need(name string) string {
	if len(s.Denials) == 0 {
		return ""
	}
	seen := map[string]bool{}
	var parts []string
	for _, d := range s.Denials {
		if seen[d.Tool] {
			continue
		}
		seen[d.Tool] = true
		parts = append(parts, fmt.Sprintf("the agent was refused %s: to allow it, set in [agents.%s] %s", d.Tool, name, d.Allow))
	}
	return strings.Join(parts, "; ")
}

// parser reads one format. Each line is a complete line of output,
// without its newline; st is the summary being built.
type parser interface {
	parse(st *state, line []byte)
	// end is called once the output ended.
	end(st *state)
}

// Reader reads an agent's output as it arrives (it is an io.Writer, put
// beside the run's log) and keeps its Summary. It is safe for concurrent
// use: Level 2 reads Events while the run writes.
type Reader struct {
	mu      sync.Mutex
	p       parser
	st      state
	partial []byte
	skip    bool // the current line passed MaxLine
	closed  bool
}

// NewReader returns a reader of preset's output (a command profile's for
// ""); model is the model the run was told to use, reported when the
// output names none; root is the working copy, to which file paths are
// made relative.
func NewReader(presetName, model, root string) *Reader {
	r := &Reader{st: state{root: root, allow: func(tool string) string {
		return "the flags of its command that let the agent use " + tool + " without asking"
	}}}
	r.st.sum.Preset = presetName
	r.st.sum.Usage.Model = model
	if pr, ok := presetOf(presetName); ok {
		r.p = pr.reader()
		r.st.allow = pr.allow
		if presetName == ClaudeCode {
			r.p.(*streamJSON).anthropic = true
		}
	} else {
		r.p = &text{}
	}
	return r
}

// Write parses the complete lines of p; it never fails.
func (r *Reader) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	r.st.sum.Bytes += int64(n)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !r.skip {
			if len(r.partial)+len(chunk) > MaxLine {
				r.skip, r.partial = true, r.partial[:0]
				r.st.sum.Skipped++
			} else {
				r.partial = append(r.partial, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !r.skip {
			r.line(r.partial)
		}
		r.partial, r.skip = r.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// line parses one line.
func (r *Reader) line(l []byte) {
	l = bytes.TrimRight(l, "\r")
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	r.p.parse(&r.st, l)
}

// Close parses a last line without a newline and ends the output.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if len(r.partial) > 0 && !r.skip {
		r.line(r.partial)
	}
	r.partial = nil
	r.p.end(&r.st)
	return nil
}

// Events is the number of structured events parsed so far: liveness that
// a run's silence in its log does not show.
func (r *Reader) Events() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.sum.Events
}

// Summary returns what the output said so far (all of it after Close).
func (r *Reader) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.st.sum
	s.Files = append([]string(nil), s.Files...)
	s.Commands = append([]Shell(nil), s.Commands...)
	s.Denials = append([]Denial(nil), s.Denials...)
	s.Errors = append([]string(nil), s.Errors...)
	s.Calls = append([]Usage(nil), s.Calls...)
	s.Transcript = r.st.tr.String()
	if s.Usage.IsZero() {
		// A stream cut before its total (a killed run) still counts the
		// calls it reported.
		for _, c := range s.Calls {
			s.Usage.Input += c.Input
			s.Usage.Output += c.Output
			s.Usage.Cached += c.Cached
		}
	}
	if s.Usage.Model == "" {
		for _, c := range s.Calls {
			if c.Model != "" {
				s.Usage.Model = c.Model
			}
		}
	}
	return s
}

// state is the summary being built, with the helpers the parsers share.
type state struct {
	root  string
	allow func(tool string) string
	sum   Summary
	tr    transcript
	files map[string]bool
}

func (st *state) event() { st.sum.Events++ }

// file notes a file the agent wrote.
func (st *state) file(path string) {
	path = strings.TrimSpace(path)
	if path == "" {
		return
	}
	if st.root != "" && filepath.IsAbs(path) {
		if rel, err := filepath.Rel(st.root, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = rel
		}
	}
	path = clip(path, maxField)
	if st.files == nil {
		st.files = map[string]bool{}
	}
	if st.files[path] {
		return
	}
	if len(st.sum.Files) >= MaxFiles {
		st.sum.Dropped++
		return
	}
	st.files[path] = true
	st.sum.Files = append(st.sum.Files, path)
}

// command notes a command the agent ran.
func (st *state) command(cmd string, exit int) {
	if len(st.sum.Commands) >= MaxCommands {
		st.sum.Dropped++
		return
	}
	st.sum.Commands = append(st.sum.Commands, Shell{Command: clip(cmd, maxField), Exit: exit})
}

// deny notes a refused tool.
func (st *state) deny(tool, msg string) {
	tool = clip(strings.TrimSpace(tool), 80)
	if tool == "" {
		tool = "a tool"
	}
	for _, d := range st.sum.Denials {
		if d.Tool == tool {
			return
		}
	}
	if len(st.sum.Denials) >= MaxDenials {
		st.sum.Dropped++
		return
	}
	st.sum.Denials = append(st.sum.Denials, Denial{Tool: tool, Message: clip(msg, maxField), Allow: st.allow(tool)})
	st.tr.add("denied %s: %s", tool, clip(msg, maxField))
}

// fail notes an error the agent reported; failed says it ended the run.
func (st *state) fail(msg string, failed bool) {
	msg = strings.TrimSpace(msg)
	if failed {
		st.sum.Failed = true
	}
	if m := endpointMarker(msg); m != "" {
		st.sum.Endpoint = m
	}
	if msg == "" {
		return
	}
	st.tr.add("error: %s", clip(msg, maxField))
	if len(st.sum.Errors) >= MaxErrors {
		st.sum.Dropped++
		return
	}
	st.sum.Errors = append(st.sum.Errors, clip(msg, maxField))
}

// call notes one model call's (or turn's) usage.
func (st *state) call(u Usage) {
	if len(st.sum.Calls) >= MaxCalls {
		st.sum.Dropped++
		return
	}
	if u.Model == "" {
		u.Model = st.sum.Usage.Model
	}
	st.sum.Calls = append(st.sum.Calls, u)
}

// final sets the final message.
func (st *state) final(text string) {
	if t := strings.TrimSpace(text); t != "" {
		st.sum.Final = clip(t, MaxFinal)
	}
}

// stray handles a line that is not the format's structured output: the
// agent's stderr mixed in, or another tool's noise. It may carry the
// markers of a failing endpoint or a refusal.
func (st *state) stray(line string) {
	line = strings.TrimSpace(strings.ToValidUTF8(line, "\uFFFD"))
	if m := endpointMarker(line); m != "" {
		st.sum.Endpoint = m
	}
	if tool, ok := refusedTool(line); ok {
		st.deny(tool, line)
		return
	}
	st.tr.add("| %s", clip(line, maxField))
}

// endpointPatterns are the marks of a failing model endpoint in an
// error: qwen-code and Gemini CLI's "[API Error: 5xx", their timeouts,
// codex's reconnects and its 5xx message, rate limits, refused
// connections, litellm's error classes (aider). This and the patterns
// below compile on first use: their counted repetitions make large
// programs, which every cra process would compile at start.
var endpointPatterns = lazyre.New(`(?i)\[?API Error: (?:5\d\d|429|408|Connection error|Request timed out|terminated)[^\]\n]*\]?|Request timeout after [^.;]*|Reconnecting\.\.\. \d+/\d+|stream disconnected before completion[^;]*|experiencing high demand|exceeded retry limit[^;]*|rate[ _-]?limit(?:ed| exceeded|error)?|too many requests|\b(?:429|500|502|503|504|529)\b[^a-z0-9]*(?:internal server error|bad gateway|service unavailable|gateway timeout|overloaded|too many requests)|overloaded_error|ECONNREFUSED|ECONNRESET|ETIMEDOUT|connection refused|error sending request for url|litellm\.(?:APIError|APIConnectionError|RateLimitError|ServiceUnavailableError|InternalServerError|Timeout)`)

// endpointMarker returns the endpoint-failure marker in s, "" for none.
func endpointMarker(s string) string {
	if len(s) > 64<<10 {
		s = s[:64<<10]
	}
	if loc := endpointPatterns().FindStringIndex(s); loc != nil {
		// The marker with what follows it on its line, for the need.
		end := loc[1]
		if nl := strings.IndexByte(s[end:], '\n'); nl >= 0 {
			end += nl
		} else {
			end = len(s)
		}
		return clip(strings.TrimSpace(s[loc[0]:end]), 200)
	}
	return ""
}

// refusalPatterns are the words of agents refusing a tool headless:
// qwen-code's "requires user approval but cannot execute in
// non-interactive mode" and "requires permission to use", Claude Code's
// "requested permissions to use", Gemini CLI's confirmation refusal,
// codex's escalation refused under approval policy never.
var refusalPatterns = []func() *regexp.Regexp{
	lazyre.New(`Tool "([^"]{1,80})" requires (?:user )?approval but cannot execute in non-interactive mode`),
	lazyre.New(`requires permission to use "([^"]{1,80})", but that permission was declined`),
	lazyre.New(`requested permissions to use ([A-Za-z0-9_.:-]{1,80}), but you haven't granted it`),
	lazyre.New(`Tool execution for "([^"]{1,80})" requires user confirmation, which is not supported in non-interactive mode`),
	lazyre.New(`(exec_command|shell|apply_patch)?[^;]{0,200}approval policy is Never; reject command`),
	lazyre.New(`permission to use ([A-Za-z0-9_.:-]{1,80}) (?:was|has been) (?:denied|rejected)`),
}

// refusedTool returns the tool a refusal in s names.
func refusedTool(s string) (string, bool) {
	if len(s) > 64<<10 {
		s = s[:64<<10]
	}
	for _, re := range refusalPatterns {
		if m := re().FindStringSubmatch(s); m != nil {
			tool := ""
			if len(m) > 1 {
				tool = m[1]
			}
			if tool == "" && strings.Contains(s, "approval policy is Never") {
				tool = "exec_command"
			}
			return tool, true
		}
	}
	return "", false
}

// exitIn finds an exit code a tool's result states ("Exit Code: 1",
// "exit code 2", "exited with code 0"), -1 for none.
var exitPattern = lazyre.New(`(?i)(?:exit(?:ed with)? code:?|exit status) (-?\d{1,4})`)

func exitIn(s string) int {
	if m := exitPattern().FindStringSubmatch(s); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	return -1
}

// clip cuts s to n runes, marking the cut, and makes it valid UTF-8.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// oneLine folds s onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// transcript keeps the first half of MaxTranscript as it comes and the
// last lines in the other half, like the run log's head and tail.
type transcript struct {
	head, tail []string
	headBytes  int
	tailBytes  int
	cut        int
}

func (t *transcript) add(format string, args ...any) {
	full := fmt.Sprintf(format, args...)
	rest := strings.TrimLeft(full, " ")
	line := full[:len(full)-len(rest)] + oneLine(rest)
	if t.headBytes+len(line)+1 <= MaxTranscript/2 && t.cut == 0 && len(t.tail) == 0 {
		t.head = append(t.head, line)
		t.headBytes += len(line) + 1
		return
	}
	t.tail = append(t.tail, line)
	t.tailBytes += len(line) + 1
	for t.tailBytes > MaxTranscript/2 && len(t.tail) > 0 {
		t.tailBytes -= len(t.tail[0]) + 1
		t.tail = t.tail[1:]
		t.cut++
	}
}

func (t *transcript) String() string {
	var b strings.Builder
	for _, l := range t.head {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if t.cut > 0 {
		fmt.Fprintf(&b, "[… %d lines cut …]\n", t.cut)
	}
	for _, l := range t.tail {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
