package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string // "" for ErrNoJSON
	}{
		{"bare object", `{"purpose": "x"}`, `{"purpose": "x"}`},
		{"surrounding blanks", "\n  {\"a\": 1}\n", `{"a": 1}`},
		{"json fence", "```json\n{\"a\": [1, 2]}\n```", `{"a": [1, 2]}`},
		{"bare fence", "Here:\n```\n{\"a\": 1}\n```\nDone.", `{"a": 1}`},
		{"prose before and after", "Sure! Here is the JSON you asked for: {\"a\": \"b\"} Let me know if you need more.", `{"a": "b"}`},
		{"trailing commas", "{\"a\": [1, 2,], \"b\": {\"c\": 3,},}", `{"a": [1, 2], "b": {"c": 3}}`},
		{"trailing comma in a fence", "```json\n{\n  \"concepts\": [\"db\",\n  ],\n}\n```", "{\n  \"concepts\": [\"db\"\n  ]\n}"},
		{"comma inside a string is kept", `{"a": "x,}", "b": 1,}`, `{"a": "x,}", "b": 1}`},
		{"braces in strings", `note {"a": "}{", "b": "\"}"} end`, `{"a": "}{", "b": "\"}"}`},
		{"think block first", "<think>maybe {\"a\": 0}?</think>\n{\"a\": 1}", `{"a": 1}`},
		{"first valid object wins", `first {"a": 1} then {"b": 2}`, `{"a": 1}`},
		{"broken brace before a good one", `{"a": oops} {"b": 2}`, `{"b": 2}`},
		{"nested object in prose", `The answer: {"a": {"b": [{"c": 1}]}}.`, `{"a": {"b": [{"c": 1}]}}`},
		{"unclosed fence (cut reply)", "```json\n{\"a\": 1}", `{"a": 1}`},
		{"array is not an object", `[1, 2, 3]`, ""},
		{"no JSON", "I cannot help with that.", ""},
		{"truncated object", `{"purpose": "x", "module": `, ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExtractJSON(tc.reply)
			if tc.want == "" {
				if !errors.Is(err, ErrNoJSON) {
					t.Fatalf("got %s, %v, want ErrNoJSON", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestExtractJSONErrorQuotesReply(t *testing.T) {
	_, err := ExtractJSON(strings.Repeat("no json here ", 100))
	if err == nil || !strings.Contains(err.Error(), `"no json here no json`) || !strings.HasSuffix(err.Error(), "…") {
		t.Errorf("got %v, want the start of the reply, shortened", err)
	}
}

// FuzzExtractJSON: the extractor never panics, returns only valid JSON
// objects, and returns a reply that already is one unchanged.
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		`{"purpose": "x", "concepts": ["a", "b"]}`,
		"```json\n{\"a\": 1,}\n```",
		"Here you go: {\"a\": {\"b\": \"}\"}} hope it helps",
		"<think>{</think>{\"a\": [1,2,],}",
		`{"a": "\"", "b": [{}, []],}`,
		"{{{{{{",
		"```\n```\n```json",
		`[{"a": 1}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		got, err := ExtractJSON(reply)
		if err != nil {
			if !errors.Is(err, ErrNoJSON) {
				t.Fatalf("error %v is not ErrNoJSON", err)
			}
			return
		}
		if !json.Valid(got) || !strings.HasPrefix(string(got), "{") {
			t.Fatalf("ExtractJSON(%q) = %q: not a JSON object", reply, got)
		}
		var v map[string]any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("ExtractJSON(%q) = %q does not decode to an object: %v", reply, got, err)
		}
		trimmed := strings.TrimSpace(reply)
		if json.Valid([]byte(trimmed)) && strings.HasPrefix(trimmed, "{") && string(got) != trimmed {
			t.Fatalf("ExtractJSON(%q) = %q, want the reply itself", reply, got)
		}
	})
}

// FuzzExtractJSONWrapped wraps a JSON object the way small models do —
// prose before and after, a ``` fence, trailing commas — and checks that
// the object comes back.
func FuzzExtractJSONWrapped(f *testing.F) {
	f.Add("Sure, here it is:", `{"purpose": "db access", "concepts": ["sql", "pool"]}`, "Anything else?", true, true)
	f.Add("", `{"a": {"b": [1, 2, {"c": null}]}}`, "", false, true)
	f.Add("note:", `{"s": "a,]}"}`, ".", true, false)
	f.Fuzz(func(t *testing.T, before, object, after string, fence, commas bool) {
		var want map[string]any
		if err := json.Unmarshal([]byte(object), &want); err != nil || !strings.HasPrefix(strings.TrimSpace(object), "{") {
			return
		}
		// Prose with braces, backquotes or think tags could hold an object
		// of its own, which may rightly win.
		for _, s := range []string{before, after} {
			if strings.ContainsAny(s, "{}`<") {
				return
			}
		}
		body := strings.TrimSpace(object)
		if commas {
			body = addTrailingCommas(body)
		}
		reply := before + " " + body + " " + after
		if fence {
			reply = before + "\n```json\n" + body + "\n```\n" + after
		}
		got, err := ExtractJSON(reply)
		if err != nil {
			t.Fatalf("ExtractJSON(%q): %v", reply, err)
		}
		var v map[string]any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("ExtractJSON(%q) = %q: %v", reply, got, err)
		}
		if diff := cmp.Diff(want, v); diff != "" {
			t.Fatalf("ExtractJSON(%q) (-want +got):\n%s", reply, diff)
		}
	})
}

// addTrailingCommas puts a comma before each '}' and ']' that closes a
// non-empty object or array, outside strings.
func addTrailingCommas(s string) string {
	var b strings.Builder
	var js jsonStrings
	var last byte // last non-blank byte outside strings; '"' for a string
	for i := 0; i < len(s); i++ {
		c := s[i]
		if js.next(c) {
			b.WriteByte(c)
			last = '"'
			continue
		}
		if (c == '}' || c == ']') && last != 0 && last != '{' && last != '[' && last != ',' {
			b.WriteByte(',')
		}
		b.WriteByte(c)
		if !strings.ContainsRune(" \t\r\n", rune(c)) {
			last = c
		}
	}
	return b.String()
}

func TestStripThink(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<think>a\nb</think>\nanswer", "\n\nanswer"},
		{"\n <think>a</think><think>b\n</think>answer", "\n \nanswer"},
		{"<think>cut off", "<think>cut off"},
		{"answer: s[strings.Index(s, \"<think>\"):strings.Index(s, \"</think>\")]", "answer: s[strings.Index(s, \"<think>\"):strings.Index(s, \"</think>\")]"},
		{"<think>x</think>code with <think>\n</think> in it", "code with <think>\n</think> in it"},
	} {
		if got := StripThink(tc.in); got != tc.want {
			t.Errorf("StripThink(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
