package agentcli

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/lazyre"
)

// The tools of each agent that write a file (their path argument) or run
// a command, as the agents name them.
var (
	fileTools = map[string]bool{
		"edit": true, "write_file": true, "replace": true, "notebook_edit": true, "multi_edit": true, // qwen-code, Gemini CLI
		"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true, // Claude Code
		"write": true, "multiedit": true, "patch": true, // opencode
	}
	shellTools = map[string]bool{"run_shell_command": true, "Bash": true, "bash": true, "shell": true}
)

// pathOf is the file a tool's arguments name.
func pathOf(args map[string]any) string {
	for _, k := range []string{"file_path", "filePath", "path", "absolute_path", "notebook_path"} {
		if s, ok := args[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func num(v any) int64 {
	switch v := v.(type) {
	case float64:
		if v < 0 || v > 1e15 {
			return 0
		}
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return max(n, 0)
	}
	return 0
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// decode reads a JSON object line; ok is false for anything else.
func decode(line []byte) (map[string]any, bool) {
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		return nil, false
	}
	return m, true
}

// pendingTool is a tool call whose result has not come yet.
type pendingTool struct {
	name string
	args map[string]any
}

// streamJSON reads Claude Code's and qwen-code's stream-json: system
// (init), assistant and user messages with content blocks (text,
// tool_use, tool_result), and the closing result with the totals and
// the permission denials.
type streamJSON struct {
	anthropic bool // input_tokens leave the cache out (Claude Code)
	pending   map[string]pendingTool
	lastText  string
}

func newStreamJSON() parser { return &streamJSON{pending: map[string]pendingTool{}} }

func (p *streamJSON) usage(u map[string]any) Usage {
	in, cached := num(u["input_tokens"]), num(u["cache_read_input_tokens"])
	if p.anthropic {
		in += cached + num(u["cache_creation_input_tokens"])
	}
	return Usage{Input: in, Output: num(u["output_tokens"]), Cached: cached}
}

func (p *streamJSON) parse(st *state, line []byte) {
	m, ok := decode(line)
	if !ok {
		st.stray(string(line))
		return
	}
	st.event()
	switch str(m["type"]) {
	case "system":
		if model := str(m["model"]); model != "" && str(m["subtype"]) == "init" {
			st.sum.Usage.Model = clip(model, 200)
		}
	case "assistant":
		msg := obj(m["message"])
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			b := obj(b)
			switch str(b["type"]) {
			case "text":
				if t := str(b["text"]); strings.TrimSpace(t) != "" {
					p.lastText = t
					st.tr.add("assistant: %s", clip(t, maxField))
					if m := endpointMarker(t); m != "" && strings.HasPrefix(strings.TrimSpace(t), "[API Error") {
						st.sum.Endpoint = m
					}
				}
			case "tool_use":
				args := obj(b["input"])
				name := str(b["name"])
				if len(p.pending) < 10000 {
					p.pending[str(b["id"])] = pendingTool{name: name, args: args}
				}
				st.tr.add("%s", toolLine(name, args))
			}
		}
		if u := obj(msg["usage"]); u != nil {
			c := p.usage(u)
			c.Model = clip(str(msg["model"]), 200)
			if !c.IsZero() {
				st.call(c)
			}
		}
	case "user":
		blocks, _ := obj(m["message"])["content"].([]any)
		for _, b := range blocks {
			b := obj(b)
			if str(b["type"]) != "tool_result" {
				continue
			}
			id := str(b["tool_use_id"])
			t, known := p.pending[id]
			delete(p.pending, id)
			content := resultText(b["content"])
			isErr, _ := b["is_error"].(bool)
			p.result(st, t, known, content, isErr)
		}
	case "result":
		if u := obj(m["usage"]); u != nil {
			st.sum.Usage = Usage{Model: st.sum.Usage.Model}
			u := p.usage(u)
			st.sum.Usage.Input, st.sum.Usage.Output, st.sum.Usage.Cached = u.Input, u.Output, u.Cached
		}
		if n := num(m["num_turns"]); n > 0 && n < 1e6 {
			st.sum.Turns = int(n)
		}
		if r := str(m["result"]); strings.TrimSpace(r) != "" {
			st.final(r)
		} else {
			st.final(p.lastText)
		}
		denials, _ := m["permission_denials"].([]any)
		for _, d := range denials {
			d := obj(d)
			st.deny(str(d["tool_name"]), "refused in a headless run: "+clip(oneLine(str(d["tool_input"])), 200))
		}
		isErr, _ := m["is_error"].(bool)
		sub := str(m["subtype"])
		if isErr || strings.HasPrefix(sub, "error") {
			msg := str(obj(m["error"])["message"])
			if msg == "" {
				msg = str(m["result"])
			}
			if msg == "" {
				msg = "the agent ended with " + sub
			}
			st.fail(msg, true)
		}
		st.tr.add("result: %s", clip(st.sum.Final, maxField))
	}
}

// result notes a tool's result.
func (p *streamJSON) result(st *state, t pendingTool, known bool, content string, isErr bool) {
	if tool, ok := refusedTool(content); ok {
		if tool == "" {
			tool = t.name
		}
		st.deny(tool, content)
		return
	}
	switch {
	case known && shellTools[t.name]:
		exit := exitIn(content)
		if exit < 0 && !isErr {
			exit = 0
		}
		st.command(str(t.args["command"]), exit)
		st.tr.add("  exit %d", exit)
	case known && fileTools[t.name] && !isErr:
		st.file(pathOf(t.args))
	}
	if isErr {
		st.tr.add("  failed: %s", clip(content, maxField))
	}
}

func (p *streamJSON) end(st *state) {
	if st.sum.Final == "" {
		st.final(p.lastText)
	}
}

// resultText is the text of a tool result's content: a string or blocks.
func resultText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	blocks, _ := v.([]any)
	var parts []string
	for _, b := range blocks {
		if t := str(obj(b)["text"]); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// toolLine is a tool call in the transcript.
func toolLine(name string, args map[string]any) string {
	switch {
	case shellTools[name] || name == "exec_command":
		cmd := str(args["command"])
		if cmd == "" {
			cmd = str(args["cmd"])
		}
		return "$ " + clip(oneLine(cmd), maxField)
	case fileTools[name]:
		return name + " " + clip(pathOf(args), maxField)
	}
	return "tool " + clip(name, 80) + " " + clip(oneLine(str(args)), 200)
}

// codex reads `codex exec --json`: thread and turn events, and items
// (agent_message, command_execution, file_change, error …) as they start
// and complete (codex-rs exec/src/exec_events.rs).
type codex struct{}

func newCodex() parser { return codex{} }

func (codex) parse(st *state, line []byte) {
	m, ok := decode(line)
	if !ok {
		st.stray(string(line))
		return
	}
	st.event()
	switch str(m["type"]) {
	case "item.completed":
		it := obj(m["item"])
		switch str(it["type"]) {
		case "agent_message":
			st.final(str(it["text"]))
			st.tr.add("assistant: %s", clip(str(it["text"]), maxField))
		case "command_execution":
			cmd := str(it["command"])
			exit := -1
			if v, ok := it["exit_code"].(float64); ok && v > -1e6 && v < 1e6 {
				exit = int(v)
			}
			st.tr.add("$ %s", clip(oneLine(cmd), maxField))
			if str(it["status"]) == "declined" {
				st.deny("exec_command", "declined: "+cmd)
				return
			}
			st.command(cmd, exit)
			st.tr.add("  exit %d", exit)
		case "file_change":
			changes, _ := it["changes"].([]any)
			if str(it["status"]) == "failed" {
				st.tr.add("patch failed")
				return
			}
			for _, c := range changes {
				c := obj(c)
				st.file(str(c["path"]))
				st.tr.add("%s %s", str(c["kind"]), clip(str(c["path"]), maxField))
			}
		case "mcp_tool_call":
			st.tr.add("tool %s.%s", clip(str(it["server"]), 80), clip(str(it["tool"]), 80))
		case "error":
			// Warnings (unknown model metadata, ignored settings): noted,
			// not failures.
			st.tr.add("warning: %s", clip(str(it["message"]), maxField))
		}
	case "turn.completed":
		st.sum.Turns++
		u := obj(m["usage"])
		c := Usage{Input: num(u["input_tokens"]), Output: num(u["output_tokens"]), Cached: num(u["cached_input_tokens"])}
		st.call(c)
		st.sum.Usage.Input += c.Input
		st.sum.Usage.Output += c.Output
		st.sum.Usage.Cached += c.Cached
	case "turn.failed":
		st.fail(str(obj(m["error"])["message"]), true)
	case "error":
		msg := str(m["message"])
		if m := endpointMarker(msg); m != "" {
			st.sum.Endpoint = m
		}
		st.tr.add("error: %s", clip(msg, maxField))
	}
}

func (codex) end(*state) {}

// gemini reads Gemini CLI's stream-json: init, message (assistant text,
// in deltas), tool_use, tool_result, error and result
// (packages/core/src/output/types.ts).
type gemini struct {
	pending map[string]pendingTool
	text    strings.Builder // the assistant's text since its last tool call
}

func newGemini() parser { return &gemini{pending: map[string]pendingTool{}} }

func (p *gemini) parse(st *state, line []byte) {
	m, ok := decode(line)
	if !ok {
		st.stray(string(line))
		return
	}
	st.event()
	switch str(m["type"]) {
	case "init":
		if model := str(m["model"]); model != "" {
			st.sum.Usage.Model = clip(model, 200)
		}
	case "message":
		if str(m["role"]) != "assistant" {
			return
		}
		if p.text.Len() < MaxFinal*4 {
			p.text.WriteString(str(m["content"]))
		}
	case "tool_use":
		p.flush(st)
		args := obj(m["parameters"])
		if len(p.pending) < 10000 {
			p.pending[str(m["tool_id"])] = pendingTool{name: str(m["tool_name"]), args: args}
		}
		st.tr.add("%s", toolLine(str(m["tool_name"]), args))
	case "tool_result":
		id := str(m["tool_id"])
		t, known := p.pending[id]
		delete(p.pending, id)
		e := obj(m["error"])
		msg := str(m["output"]) + " " + str(e["message"])
		if tool, ok := refusedTool(msg); ok {
			if tool == "" {
				tool = t.name
			}
			st.deny(tool, strings.TrimSpace(msg))
			return
		}
		failed := str(m["status"]) == "error"
		switch {
		case known && shellTools[t.name]:
			exit := exitIn(msg)
			if exit < 0 && !failed {
				exit = 0
			}
			st.command(str(t.args["command"]), exit)
			st.tr.add("  exit %d", exit)
		case known && fileTools[t.name] && !failed:
			st.file(pathOf(t.args))
		}
		if failed {
			st.tr.add("  failed: %s", clip(strings.TrimSpace(msg), maxField))
		}
	case "error":
		msg := str(m["message"])
		st.fail(msg, str(m["severity"]) == "error")
	case "result":
		p.flush(st)
		stats := obj(m["stats"])
		st.sum.Usage.Input, st.sum.Usage.Output, st.sum.Usage.Cached = num(stats["input_tokens"]), num(stats["output_tokens"]), num(stats["cached"])
		for name, v := range obj(stats["models"]) {
			v := obj(v)
			st.call(Usage{Model: clip(name, 200), Input: num(v["input_tokens"]), Output: num(v["output_tokens"]), Cached: num(v["cached"])})
		}
		if str(m["status"]) == "error" {
			msg := str(obj(m["error"])["message"])
			if msg == "" {
				msg = "the agent ended with an error"
			}
			st.fail(msg, true)
		}
		st.tr.add("result: %s", clip(st.sum.Final, maxField))
	}
}

// flush ends a run of assistant text: it is the final message until a
// later one.
func (p *gemini) flush(st *state) {
	if t := strings.TrimSpace(p.text.String()); t != "" {
		st.sum.Turns++
		st.final(t)
		st.tr.add("assistant: %s", clip(t, maxField))
	}
	p.text.Reset()
}

func (p *gemini) end(st *state) { p.flush(st) }

// openCode reads `opencode run --format json`: step_start, text,
// tool_use (after the tool ran, with its state), step_finish (with the
// step's tokens) and error.
type openCode struct{ text string }

func newOpenCode() parser { return &openCode{} }

func (p *openCode) parse(st *state, line []byte) {
	m, ok := decode(line)
	if !ok {
		st.stray(string(line))
		return
	}
	st.event()
	part := obj(m["part"])
	switch str(m["type"]) {
	case "text":
		if t := str(part["text"]); strings.TrimSpace(t) != "" {
			p.text = t
			st.tr.add("assistant: %s", clip(t, maxField))
		}
	case "tool_use":
		name := str(part["tool"])
		state := obj(part["state"])
		args := obj(state["input"])
		st.tr.add("%s", toolLine(name, args))
		status := str(state["status"])
		out := str(state["output"]) + " " + str(state["error"])
		if tool, ok := refusedTool(out); ok || strings.Contains(out, "permission") && strings.Contains(out, "rejected") {
			if tool == "" {
				tool = name
			}
			st.deny(tool, strings.TrimSpace(out))
			return
		}
		switch {
		case shellTools[name]:
			exit := -1
			if v, ok := obj(state["metadata"])["exit"].(float64); ok && v > -1e6 && v < 1e6 {
				exit = int(v)
			}
			st.command(str(args["command"]), exit)
			st.tr.add("  exit %d", exit)
		case fileTools[name] && status == "completed":
			st.file(pathOf(args))
		}
		if status == "error" {
			st.tr.add("  failed: %s", clip(strings.TrimSpace(out), maxField))
		}
	case "step_finish":
		st.sum.Turns++
		t := obj(part["tokens"])
		cache := obj(t["cache"])
		c := Usage{Input: num(t["input"]) + num(cache["read"]) + num(cache["write"]), Output: num(t["output"]) + num(t["reasoning"]), Cached: num(cache["read"])}
		st.call(c)
		st.sum.Usage.Input += c.Input
		st.sum.Usage.Output += c.Output
		st.sum.Usage.Cached += c.Cached
		if str(part["reason"]) != "tool-calls" {
			st.final(p.text)
		}
	case "error":
		e := obj(m["error"])
		msg := str(obj(e["data"])["message"])
		if msg == "" {
			msg = str(e["message"])
		}
		if msg == "" {
			msg = str(m["message"])
		}
		if name := str(e["name"]); name != "" {
			msg = name + ": " + msg
		}
		st.fail(msg, true)
	}
}

func (p *openCode) end(st *state) {
	if st.sum.Final == "" {
		st.final(p.text)
	}
}

// aider reads Aider's plain output (--no-pretty): "Applied edit to F",
// "Running CMD", "Tokens: 1.2k sent, 3 received.", litellm's errors, and
// the questions --yes-always answers (a shell command's is answered no).
type aider struct {
	reply    []string // the model's reply lines since the last status line
	lastCmd  int      // index of the last command run, -1 for none
	shellAsk bool
}

func newAider() parser { return &aider{lastCmd: -1} }

var (
	aiderTokens = lazyre.New(`^Tokens: ([\d.]+[kKmM]?) sent(?:, ([\d.]+[kKmM]?) cache write)?(?:, ([\d.]+[kKmM]?) cache hit)?, ([\d.]+[kKmM]?) received`)
	aiderModel  = lazyre.New(`^(?:Main )?[Mm]odel: (\S+)`)
	aiderStatus = []string{"Aider v", "Model:", "Main model:", "Weak model:", "Git repo:", "Repo-map:", "Added ", "Cost:", "Tokens:",
		"Applied edit to", "Commit ", "Running ", "Use /help", "Warning:", "Retrying in", "https://aider.chat", "Dropping ", "Editor model:",
		"Run shell command", "Add command output", "Create new file?", "Allow edits to file", "Can't", "Unable to", "Output from",
		"The API provider"}
)

// aiderNum reads "1.2k" as 1200.
func aiderNum(s string) int64 {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1e6, s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1e12 {
		return 0
	}
	return int64(f * mult)
}

func (p *aider) parse(st *state, raw []byte) {
	line := strings.TrimSpace(strings.ToValidUTF8(string(bytes.TrimRight(raw, "\r")), "\uFFFD"))
	status := false
	for _, s := range aiderStatus {
		if strings.HasPrefix(line, s) {
			status = true
			break
		}
	}
	switch {
	case strings.HasPrefix(line, "Applied edit to "):
		st.event()
		path := strings.TrimPrefix(line, "Applied edit to ")
		st.file(path)
		st.tr.add("edit %s", clip(path, maxField))
	case strings.HasPrefix(line, "Running "):
		st.event()
		cmd := strings.TrimPrefix(line, "Running ")
		st.command(cmd, -1)
		p.lastCmd = len(st.sum.Commands) - 1
		st.tr.add("$ %s", clip(cmd, maxField))
	case strings.HasPrefix(line, "Run shell command"):
		st.event()
		p.shellAsk = true
		if strings.HasSuffix(line, ": n") || strings.HasSuffix(line, ": no") {
			st.deny("shell", line)
			p.shellAsk = false
		}
	case aiderTokens().MatchString(line):
		st.event()
		m := aiderTokens().FindStringSubmatch(line)
		c := Usage{Input: aiderNum(m[1]), Output: aiderNum(m[4]), Cached: aiderNum(m[3])}
		st.call(c)
		st.sum.Turns++
		st.sum.Usage.Input += c.Input
		st.sum.Usage.Output += c.Output
		st.sum.Usage.Cached += c.Cached
		if len(p.reply) > 0 {
			st.final(strings.Join(p.reply, "\n"))
			st.tr.add("assistant: %s", clip(strings.Join(p.reply, " "), maxField))
			p.reply = p.reply[:0]
		}
	case aiderModel().MatchString(line):
		st.event()
		if model := aiderModel().FindStringSubmatch(line)[1]; st.sum.Usage.Model == "" || strings.HasSuffix(model, st.sum.Usage.Model) {
			st.sum.Usage.Model = clip(model, 200)
		}
	case endpointMarker(line) != "" || strings.HasPrefix(line, "litellm.") || strings.HasPrefix(line, "Error:"):
		st.event()
		st.fail(line, strings.HasPrefix(line, "litellm.") || strings.HasPrefix(line, "Error:"))
	case status:
	default:
		if p.shellAsk && line == "" {
			return
		}
		if len(p.reply) < 200 {
			p.reply = append(p.reply, clip(line, 1000))
		}
	}
}

func (p *aider) end(st *state) {
	if len(p.reply) > 0 {
		st.final(strings.Join(p.reply, "\n"))
		st.tr.add("assistant: %s", clip(strings.Join(p.reply, " "), maxField))
	}
	if p.shellAsk && len(st.sum.Denials) == 0 {
		// --yes-always answers a shell command's question no without
		// printing the answer on some versions: the question alone is it.
		st.deny("shell", "Run shell command? answered no by --yes-always")
	}
}

// text reads a command profile's output, which has no format: its last
// line is the final message, and its lines may carry the markers of a
// failing endpoint or a refusal.
type text struct{ last string }

func (p *text) parse(st *state, line []byte) {
	s := strings.TrimSpace(strings.ToValidUTF8(string(line), "\uFFFD"))
	if s == "" {
		return
	}
	p.last = s
	st.event()
	if m := endpointMarker(s); m != "" {
		st.sum.Endpoint = m
	}
	if tool, ok := refusedTool(s); ok {
		st.deny(tool, s)
	}
}

func (p *text) end(st *state) { st.final(clip(p.last, 300)) }
