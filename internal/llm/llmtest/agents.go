package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// This file is what real agent CLIs need of the server: tool calls in
// OpenAI's chat completions (streamed as the deltas openai-node and the
// Python client assemble), and OpenAI's Responses API (POST /v1/responses,
// streamed as its typed SSE events), which codex speaks (codex-rs
// core/src/client.rs reads response.output_item.done and
// response.completed). A test scripts a reply that calls a tool the
// agent offers (write_file, apply_patch, shell); the agent runs the tool
// itself, in its working copy, and sends the result in its next request.

// ToolCall is one call of a tool a scripted reply asks for.
type ToolCall struct {
	// ID is the call's id; empty gives call_<n>, unique per server.
	ID string
	// Name is the tool's name as the request offers it.
	Name string
	// Arguments is the JSON object of a function tool's arguments, or the
	// free-form input of a custom tool (codex's apply_patch grammar).
	Arguments string
}

// Call is a reply that calls the tool name with args, marshalled to JSON
// unless it is a string already (a custom tool's input, or JSON text).
func Call(name string, args any) Reply {
	return Reply{ToolCalls: []ToolCall{{Name: name, Arguments: argumentsOf(args)}}}
}

func argumentsOf(args any) string {
	if s, ok := args.(string); ok {
		return s
	}
	b, err := json.Marshal(args)
	if err != nil {
		panic("llmtest: tool arguments do not marshal: " + err.Error())
	}
	return string(b)
}

// Usage is a reply with the given text and token counts: input (the
// prompt, cached included), output, and the prompt's cached part.
func Usage(text string, input, output, cached int) Reply {
	return Reply{Text: text, PromptTokens: input, CompletionTokens: output, CachedTokens: cached}
}

// Tool is a tool a request offers the model.
type Tool struct {
	Name string
	// Type is "function", or what else the Responses API names: "custom"
	// (free-form input), "local_shell", "web_search".
	Type string
}

// HasTools matches requests that offer tools: an agent's main loop, not
// its side calls (a title, a summary, a next-speaker check).
func HasTools() Matcher { return func(r Request) bool { return len(r.Tools) > 0 } }

// AfterTool matches requests whose last message is a tool's result
// containing s: the agent's turn after it ran a tool.
func AfterTool(s string) Matcher {
	return func(r Request) bool {
		if len(r.Messages) == 0 {
			return false
		}
		m := r.Messages[len(r.Messages)-1]
		return m.Role == "tool" && strings.Contains(m.Content, s)
	}
}

// Offers reports whether the request offers the tool name.
func (r Request) Offers(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ToolNames are the names of the tools the request offers.
func (r Request) ToolNames() []string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Name
	}
	return out
}

// toolType is the type the request declares for the tool name, "function"
// when it does not offer it.
func (r Request) toolType(name string) string {
	for _, t := range r.Tools {
		if t.Name == name && t.Type != "" {
			return t.Type
		}
	}
	return "function"
}

// callIDs numbers the calls of replies that give no id.
func (s *Server) callIDs(reply Reply) []ToolCall {
	if len(reply.ToolCalls) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ToolCall, len(reply.ToolCalls))
	for i, c := range reply.ToolCalls {
		if c.ID == "" {
			s.calls++
			c.ID = fmt.Sprintf("call_%d", s.calls)
		}
		out[i] = c
	}
	return out
}

// message is one message of a chat request as the wire has it: content
// is a string, an array of parts, or null.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
			// Arguments is a JSON string (OpenAI) or object (Ollama).
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// contentText is the text of a content field: a string, or the text
// of its parts ({"type":"text","text":…}, input_text, output_text).
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// chatMessages normalizes the messages of a chat completions request.
func chatMessages(raw []message) []Message {
	out := make([]Message, 0, len(raw))
	for _, m := range raw {
		msg := Message{Role: m.Role, Content: contentText(m.Content), ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			args := string(c.Function.Arguments)
			var str string
			if json.Unmarshal(c.Function.Arguments, &str) == nil {
				args = str
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
		}
		out = append(out, msg)
	}
	return out
}

// chatTools reads a chat request's tools: [{"type":"function","function":{"name":…}}].
func chatTools(raw json.RawMessage) []Tool {
	var tools []struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &tools) != nil {
		return nil
	}
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		name := t.Function.Name
		if name == "" {
			name = t.Name
		}
		out = append(out, Tool{Name: name, Type: t.Type})
	}
	return out
}

// decodeResponses fills the fields of a Responses API request: the
// instructions become a system message, the input items messages, tool
// calls and tool results (role "tool").
func decodeResponses(req *Request) error {
	var body struct {
		Model           string          `json:"model"`
		Instructions    string          `json:"instructions"`
		Input           json.RawMessage `json:"input"`
		Tools           json.RawMessage `json:"tools"`
		Stream          bool            `json:"stream"`
		Temperature     *float64        `json:"temperature"`
		MaxOutputTokens int             `json:"max_output_tokens"`
		Text            *struct {
			Format *struct {
				Type string `json:"type"`
			} `json:"format"`
		} `json:"text"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return err
	}
	req.Model, req.Stream, req.Temperature, req.MaxTokens = body.Model, body.Stream, body.Temperature, body.MaxOutputTokens
	req.JSON = body.Text != nil && body.Text.Format != nil && strings.HasPrefix(body.Text.Format.Type, "json")
	req.Tools = chatTools(body.Tools)
	req.Messages = nil
	if body.Instructions != "" {
		req.Messages = append(req.Messages, Message{Role: "system", Content: body.Instructions})
	}
	var s string
	if json.Unmarshal(body.Input, &s) == nil {
		req.Messages = append(req.Messages, Message{Role: "user", Content: s})
		return nil
	}
	var items []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		Output    json.RawMessage `json:"output"`
	}
	if len(body.Input) > 0 && string(body.Input) != "null" {
		if err := json.Unmarshal(body.Input, &items); err != nil {
			return fmt.Errorf("input is neither a string nor a list of items: %w", err)
		}
	}
	for _, it := range items {
		switch it.Type {
		case "message", "":
			req.Messages = append(req.Messages, Message{Role: it.Role, Content: contentText(it.Content)})
		case "function_call", "custom_tool_call":
			args := it.Arguments
			if it.Type == "custom_tool_call" {
				args = it.Input
			}
			req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{{ID: it.CallID, Name: it.Name, Arguments: args}}})
		case "function_call_output", "custom_tool_call_output":
			out := contentText(it.Output)
			var o struct {
				Content string `json:"content"`
			}
			if out == "" && json.Unmarshal(it.Output, &o) == nil {
				out = o.Content
			}
			req.Messages = append(req.Messages, Message{Role: "tool", Content: out, ToolCallID: it.CallID})
		}
	}
	return nil
}

// writeChatToolCalls answers a chat completion whose reply calls tools.
func writeChatToolCalls(w http.ResponseWriter, req Request, reply Reply, calls []ToolCall) {
	usage := openAIUsage(req, reply)
	if !req.Stream {
		tcs := make([]map[string]any, len(calls))
		for i, c := range calls {
			tcs[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Arguments}}
		}
		var content any
		if reply.Text != "" {
			content = reply.Text
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion", "created": 1704067200, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": content, "tool_calls": tcs},
				"finish_reason": "tool_calls"}},
			"usage": usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(delta map[string]any, finish any) {
		data, _ := json.Marshal(map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1704067200, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", data)
		flush(w)
	}
	event(map[string]any{"role": "assistant", "content": ""}, nil)
	if reply.Text != "" {
		for _, c := range chunks(reply.Text) {
			event(map[string]any{"content": c}, nil)
		}
	}
	for i, c := range calls {
		event(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": c.ID, "type": "function",
			"function": map[string]string{"name": c.Name, "arguments": ""}}}}, nil)
		for _, part := range chunks(c.Arguments) {
			event(map[string]any{"tool_calls": []map[string]any{{"index": i, "function": map[string]string{"arguments": part}}}}, nil)
		}
	}
	event(map[string]any{}, "tool_calls")
	data, _ := json.Marshal(map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1704067200,
		"model": req.Model, "choices": []any{}, "usage": usage})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", data)
}

// openAIUsage is a chat completion's usage object, with the cached part
// of the prompt when the reply reports one.
func openAIUsage(req Request, reply Reply) map[string]any {
	prompt, completion := counts(req, reply)
	u := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	if reply.CachedTokens > 0 {
		u["prompt_tokens_details"] = map[string]int{"cached_tokens": reply.CachedTokens}
	}
	return u
}

// writeResponses answers a Responses API request: the response object,
// or its stream of events (response.created … response.completed).
func writeResponses(w http.ResponseWriter, req Request, reply Reply, calls []ToolCall) {
	prompt, completion := counts(req, reply)
	usage := map[string]any{
		"input_tokens": prompt, "input_tokens_details": map[string]int{"cached_tokens": reply.CachedTokens},
		"output_tokens": completion, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": prompt + completion,
	}
	var items []map[string]any
	if reply.Text != "" || len(calls) == 0 {
		items = append(items, map[string]any{"id": "msg_llmtest", "type": "message", "status": "completed", "role": "assistant",
			"content": []map[string]any{{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	for _, c := range calls {
		if req.toolType(c.Name) == "custom" {
			items = append(items, map[string]any{"id": "ctc_" + c.ID, "type": "custom_tool_call", "status": "completed",
				"call_id": c.ID, "name": c.Name, "input": c.Arguments})
			continue
		}
		items = append(items, map[string]any{"id": "fc_" + c.ID, "type": "function_call", "status": "completed",
			"call_id": c.ID, "name": c.Name, "arguments": c.Arguments})
	}
	response := func(status string, output []map[string]any, usage any) map[string]any {
		if output == nil {
			output = []map[string]any{}
		}
		return map[string]any{"id": "resp_llmtest", "object": "response", "created_at": 1704067200, "status": status,
			"model": req.Model, "output": output, "usage": usage}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, response("completed", items, usage))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		data, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		flush(w)
	}
	event("response.created", map[string]any{"response": response("in_progress", nil, nil)})
	event("response.in_progress", map[string]any{"response": response("in_progress", nil, nil)})
	for i, it := range items {
		id := it["id"].(string)
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch it["type"] {
		case "message":
			added["content"] = []any{}
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			event("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			for _, c := range chunks(reply.Text) {
				event("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": c})
			}
			event("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": reply.Text})
			part["text"] = reply.Text
			event("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			added["arguments"] = ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			args := it["arguments"].(string)
			for _, c := range chunks(args) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": c})
			}
			event("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		case "custom_tool_call":
			added["input"] = ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			input := it["input"].(string)
			for _, c := range chunks(input) {
				event("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": c})
			}
			event("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": input})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": response("completed", items, usage)})
}
