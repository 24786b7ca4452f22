package llmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"
)

var writeTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "write_file",
	Parameters: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}}}`)}}

// TestChatToolCalls: a scripted call reaches the real OpenAI client as a
// tool call, streamed and not, and the agent's next request, carrying the
// tool's result, is decoded and matched.
func TestChatToolCalls(t *testing.T) {
	s := NewServer(t)
	s.On(AfterTool("wrote 6 bytes"), Usage("done", 50, 5, 40))
	s.On(HasTools(), Call("write_file", map[string]string{"file_path": "/w/a.txt", "content": "hello\n"}))
	c := openAIClient(s)
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "You edit files."},
		{Role: "user", MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "write a.txt"}}}}

	r, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: []openai.Tool{writeTool}})
	if err != nil {
		t.Fatal(err)
	}
	calls := r.Choices[0].Message.ToolCalls
	if r.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "write_file" ||
		calls[0].Function.Arguments != `{"content":"hello\n","file_path":"/w/a.txt"}` || calls[0].ID == "" {
		t.Fatalf("non-streamed: got %+v", r.Choices[0])
	}

	stream, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: []openai.Tool{writeTool}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	var name, args, id, finish string
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunk.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				name += tc.Function.Name
				args += tc.Function.Arguments
				id += tc.ID
			}
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
	}
	stream.Close()
	if name != "write_file" || args != calls[0].Function.Arguments || id == "" || id == calls[0].ID || finish != "tool_calls" {
		t.Errorf("streamed: got name %q args %q id %q finish %q", name, args, id, finish)
	}

	msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", ToolCalls: calls},
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: calls[0].ID, Content: "wrote 6 bytes"})
	r, err = c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: []openai.Tool{writeTool}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Choices[0].Message.Content != "done" || r.Usage.PromptTokens != 50 || r.Usage.PromptTokensDetails == nil || r.Usage.PromptTokensDetails.CachedTokens != 40 {
		t.Errorf("after the tool: got %+v usage %+v", r.Choices[0].Message, r.Usage)
	}
	last := s.ChatRequests()[2]
	want := []Message{{Role: "system", Content: "You edit files."}, {Role: "user", Content: "write a.txt"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: calls[0].ID, Name: "write_file", Arguments: calls[0].Function.Arguments}}},
		{Role: "tool", Content: "wrote 6 bytes", ToolCallID: calls[0].ID}}
	if diff := cmp.Diff(want, last.Messages); diff != "" {
		t.Errorf("decoded messages (-want +got):\n%s", diff)
	}
	if !last.Offers("write_file") || last.Offers("shell") {
		t.Errorf("tools: got %v", last.ToolNames())
	}
}

// responsesEvents posts a Responses API request and reads its SSE stream
// into (event name, data) pairs.
func responsesEvents(t *testing.T, s *Server, body string) []map[string]any {
	t.Helper()
	resp, err := http.Post(s.OpenAIURL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("got %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("data is not JSON: %s", line)
			}
			if ev["type"] != name {
				t.Errorf("event %q carries type %v", name, ev["type"])
			}
			events = append(events, ev)
		}
	}
	return events
}

// TestResponses: the Responses API as codex reads it: a function call, a
// custom tool's call (apply_patch's free-form input), text with usage;
// the input items of the next request decoded.
func TestResponses(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(Call("exec_command", map[string]string{"cmd": "ls"}), Call("apply_patch", "*** Begin Patch\n*** End Patch\n"), Usage("all done", 900, 12, 700))
	req := `{"model":"m","stream":true,"instructions":"be brief","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]}],
		"tools":[{"type":"function","name":"exec_command","parameters":{}},{"type":"custom","name":"apply_patch"}]}`
	var types []string
	var done map[string]any
	for _, ev := range responsesEvents(t, s, req) {
		types = append(types, ev["type"].(string))
		if ev["type"] == "response.output_item.done" {
			done = ev["item"].(map[string]any)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if diff := cmp.Diff(want, types); diff != "" || done["type"] != "function_call" || done["name"] != "exec_command" || done["arguments"] != `{"cmd":"ls"}` {
		t.Errorf("function call events (-want +got):\n%s\nitem %v", diff, done)
	}

	for _, ev := range responsesEvents(t, s, req) {
		if ev["type"] == "response.output_item.done" {
			done = ev["item"].(map[string]any)
		}
	}
	if done["type"] != "custom_tool_call" || done["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("custom tool: got %v", done)
	}

	next := `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},
		{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
		{"type":"function_call_output","call_id":"c1","output":"a.txt"}],"tools":[{"type":"function","name":"exec_command"}]}`
	var text string
	var usage map[string]any
	for _, ev := range responsesEvents(t, s, next) {
		switch ev["type"] {
		case "response.output_text.delta":
			text += ev["delta"].(string)
		case "response.completed":
			usage = ev["response"].(map[string]any)["usage"].(map[string]any)
		}
	}
	if text != "all done" || usage["input_tokens"] != 900.0 || usage["output_tokens"] != 12.0 ||
		usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 700.0 {
		t.Errorf("text %q usage %v", text, usage)
	}
	r := s.ChatRequests()[2]
	wantMsgs := []Message{{Role: "user", Content: "list files"}, {Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "exec_command", Arguments: `{"cmd":"ls"}`}}},
		{Role: "tool", Content: "a.txt", ToolCallID: "c1"}}
	if diff := cmp.Diff(wantMsgs, r.Messages); diff != "" || !r.Stream || r.Model != "m" || !AfterTool("a.txt")(r) {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	if first := s.ChatRequests()[0]; first.Messages[0].Role != "system" || first.Messages[0].Content != "be brief" || first.toolType("apply_patch") != "custom" {
		t.Errorf("first request: %+v", first)
	}

	resp, err := http.Post(s.OpenAIURL()+"/responses", "application/json", strings.NewReader(`{"model":"m","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(body["error"].(map[string]any)["message"].(string), "no reply scripted") {
		t.Errorf("unscripted: got %d %v", resp.StatusCode, body)
	}
}

func TestParseAgentReplies(t *testing.T) {
	read := func(name string) string { return map[string]string{"args.json": `{"command":"ls"}`}[name] }
	for _, tc := range []struct {
		spec string
		want Reply
		bad  bool
	}{
		{spec: `call=write_file:{"file_path":"a"}`, want: Call("write_file", `{"file_path":"a"}`)},
		{spec: "call=run_shell_command@args.json", want: Call("run_shell_command", `{"command":"ls"}`)},
		{spec: "usage=100/20/5/all done", want: Usage("all done", 100, 20, 5)},
		{spec: "call=nothing", bad: true},
		{spec: "usage=1/2/done", bad: true},
		{spec: "usage=a/2/3/x", bad: true},
	} {
		got, err := ParseReply(tc.spec, read)
		if (err != nil) != tc.bad {
			t.Errorf("%q: error %v, want error %v", tc.spec, err, tc.bad)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.spec, diff)
		}
	}
}
