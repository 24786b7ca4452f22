package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// specs are the tools' argument lists, as addTools declares them; the
// path check is the one a server of root /repo uses.
func specs() map[string]spec {
	s := &Server{root: "/repo", files: "/repo"}
	out := map[string]spec{}
	for _, sp := range append(append(s.specs(), s.boardSpecs()...), s.runSpecs()...) {
		out[sp.tool] = sp
	}
	return out
}

// TestDecode: good arguments decode with their defaults; bad ones are an
// *argError naming the field.
func TestDecode(t *testing.T) {
	sp := specs()
	var loc localizeInput
	if err := sp["localize"].decode(json.RawMessage(`{"task": "fix it"}`), &loc); err != nil || loc.Task != "fix it" || loc.Top != defaultTop {
		t.Errorf("defaults: got %+v, %v", loc, err)
	}
	var ov overviewInput
	for _, raw := range []string{"", "null", "{}", " {} "} {
		if err := sp["overview"].decode(json.RawMessage(raw), &ov); err != nil {
			t.Errorf("overview %q: %v", raw, err)
		}
	}
	var sym symbolsInput
	if err := sp["symbols"].decode(json.RawMessage(`{"pattern": "x", "kind": null, "limit": 3.0}`), &sym); err != nil || sym.Limit != 3 || sym.Kind != "" {
		t.Errorf("null and 3.0: got %+v, %v", sym, err)
	}
	for _, tc := range []struct{ tool, raw, field string }{
		{"localize", `{"task": "x", "top": 1e400}`, "top"},
		{"localize", `{"task": "x", "top": -1}`, "top"},
		{"localize", `{"task": "x",`, "arguments"},
		{"localize", `"task"`, "arguments"},
		{"localize", `{"task": "x", "tóp": 1}`, "tóp"},
		{"file_context", `{"path": "a/../../b"}`, "path"},
		{"file_context", `{"path": "/repo/../etc"}`, "path"},
		{"file_context", `{"path": "."}`, "path"},
	} {
		err := sp[tc.tool].decode(json.RawMessage(tc.raw), &loc)
		var ae *argError
		if !errors.As(err, &ae) || ae.field != tc.field || ae.fix == "" {
			t.Errorf("%s %s: got %v, want an error naming %q with a fix", tc.tool, tc.raw, err, tc.field)
		}
	}
	var fc fileContextInput
	if err := sp["file_context"].decode(json.RawMessage(`{"path": "/repo/shop/cart.py"}`), &fc); err != nil {
		t.Errorf("absolute path inside the repository: %v", err)
	}
}

// TestSchemaMatchesSpec: the schema a client reads has exactly the fields
// decode accepts, with their bounds.
func TestSchemaMatchesSpec(t *testing.T) {
	for name, sp := range specs() {
		data, err := json.Marshal(sp.schema())
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Type                 string
			Required             []string
			AdditionalProperties *bool `json:"additionalProperties"`
			Properties           map[string]struct {
				Type             string
				Minimum, Maximum *float64
				MaxLength        *int `json:"maxLength"`
			}
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if got.Type != "object" || got.AdditionalProperties == nil || *got.AdditionalProperties || len(got.Properties) != len(sp.fields) {
			t.Errorf("%s: schema %s", name, data)
		}
		for _, f := range sp.fields {
			p := got.Properties[f.name]
			switch f.kind {
			case kindInt:
				if p.Type != "integer" || p.Minimum == nil || int(*p.Minimum) != f.min || p.Maximum == nil || int(*p.Maximum) != f.max {
					t.Errorf("%s.%s: schema %+v, want integer %d..%d", name, f.name, p, f.min, f.max)
				}
			case kindString:
				if p.Type != "string" || f.max > 0 && (p.MaxLength == nil || *p.MaxLength != f.max) {
					t.Errorf("%s.%s: schema %+v", name, f.name, p)
				}
			}
		}
	}
}

// FuzzDecode: whatever a client sends, decode neither panics nor lets
// through a value outside the bounds its schema states; a refusal names a
// field and a fix.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"task": "fix the pager", "top": 5}`, `{"task": "x", "budget_tokens": 500}`, `{"pattern": "Sess*", "kind": "class", "limit": 1}`,
		`{"path": "shop/cart.py"}`, `{}`, `null`, `[]`, `{"task": null}`, `{"top": 1e308}`, `{"path": "../x"}`, `{"task": "\u0000"}`,
		`{"max_tokens": 8000, "task": "é"}`, `{"task": "a", "task": 1}`, `{"kind": ""}`,
		`{"id": "t-1", "title": "x", "status": "verified"}`, `{"status": "failed", "need": "a key"}`, `{"question": "?"}`,
	} {
		for i := range 11 {
			f.Add(byte(i), seed)
		}
	}
	sp := specs()
	names := []string{"localize", "context", "symbols", "file_context", "overview", "knowledge", "task_list", "task_show", "task_add", "report", "ask_person"}
	f.Fuzz(func(t *testing.T, which byte, raw string) {
		s := sp[names[int(which)%len(names)]]
		var v map[string]any
		err := s.decode(json.RawMessage(raw), &v)
		if err != nil {
			var ae *argError
			if !errors.As(err, &ae) || ae.field == "" || ae.fix == "" || !utf8.ValidString(ae.Error()) {
				t.Fatalf("%s %q: got %v, want an argError with a field and a fix", s.tool, raw, err)
			}
			return
		}
		for _, fl := range s.fields {
			val, present := v[fl.name]
			switch fl.kind {
			case kindInt:
				n, ok := val.(float64)
				if !ok || int(n) < fl.min || int(n) > fl.max {
					t.Fatalf("%s %q: %s = %v, outside %d..%d", s.tool, raw, fl.name, val, fl.min, fl.max)
				}
			case kindString:
				str, _ := val.(string)
				if fl.required && (!present || strings.TrimSpace(str) == "") {
					t.Fatalf("%s %q: required %s let through as %q", s.tool, raw, fl.name, str)
				}
				if fl.max > 0 && utf8.RuneCountInString(str) > fl.max {
					t.Fatalf("%s %q: %s has %d characters", s.tool, raw, fl.name, utf8.RuneCountInString(str))
				}
				if fl.check != nil && present {
					if err := fl.check(str); err != nil {
						t.Fatalf("%s %q: %s let through: %v", s.tool, raw, fl.name, err)
					}
				}
			}
		}
		for k := range v {
			found := false
			for _, fl := range s.fields {
				found = found || fl.name == k
			}
			if !found {
				t.Fatalf("%s %q: unknown field %q let through", s.tool, raw, k)
			}
		}
	})
}

// TestSafely: a panicking tool is an error, not a dead server.
func TestSafely(t *testing.T) {
	_, err := safely(func() (int, error) {
		var m map[string]int
		m["x"] = 1
		return 0, nil
	})
	if err == nil || !strings.Contains(err.Error(), "internal error (a bug in cra, please report it): assignment to entry in nil map") {
		t.Errorf("got %v", err)
	}
	if v, err := safely(func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("got %v, %v", v, err)
	}
}

// TestBound: text is cut at a character boundary, within the bound, and
// says so.
func TestBound(t *testing.T) {
	text := strings.Repeat("é", 1000)
	got := bound(text, 500)
	if len(got) > 500 || !utf8.ValidString(got) || !strings.Contains(got, "(cut at 500 of 2000 bytes: ask for less)") {
		t.Errorf("got %d bytes: %q", len(got), got[len(got)-60:])
	}
	if bound("short", 500) != "short" {
		t.Error("short text changed")
	}
}

// TestRel: a server of a working copy takes absolute paths in the copy
// and in the repository, and nothing outside both.
func TestRel(t *testing.T) {
	s := &Server{root: "/repo", files: "/work/copy"}
	for _, tc := range []struct{ in, want string }{
		{"a/b.py", "a/b.py"}, {"/work/copy/a/b.py", "a/b.py"}, {"/repo/a/b.py", "a/b.py"},
		{"/work/a.py", ""}, {"/repo/../work/copy/a.py", "a.py"}, {"/etc/passwd", ""}, {"../copy/a.py", ""},
	} {
		got, err := s.rel(tc.in)
		if tc.want == "" && err == nil || tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("rel(%q): got %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestRelInside(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a/b.py", "a/b.py"}, {"./a//b.py", "a/b.py"}, {"a/../b.py", "b.py"}, {"/repo/a.py", "a/a.py"[2:]},
		{"../a", ""}, {"/etc/passwd", ""}, {"/repo", ""}, {"..", ""}, {"a/../../b", ""}, {"", ""},
	} {
		got, err := relInside("/repo", tc.in)
		if tc.want == "" && err == nil || tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("relInside(%q): got %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}
