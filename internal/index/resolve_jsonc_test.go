package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveStripJSONC(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // compact JSON, "" for input that must stay invalid
	}{
		{"plain", `{"a": [1, 2]}`, `{"a":[1,2]}`},
		{"line comment", "{\"a\": 1 // one\n}", `{"a":1}`},
		{"line comment crlf", "{\"a\": 1 // one\r\n, \"b\": 2}", `{"a":1,"b":2}`},
		{"line comment at end", "{\"a\": 1}\n// end", `{"a":1}`},
		{"block comment", `{/* x */"a": /* y */ 1}`, `{"a":1}`},
		{"block comment across lines", "{\"a\": 1, /*\n \"b\": 2,\n*/ \"c\": 3}", `{"a":1,"c":3}`},
		{"comment keeps tokens apart", `[1/**/,2]`, `[1,2]`},
		{"trailing comma object", `{"a": 1,}`, `{"a":1}`},
		{"trailing comma array", `[1, 2, ]`, `[1,2]`},
		{"trailing comma before comment", "[1, // x\n /* y */ ]", `[1]`},
		{"nested trailing commas", `{"a": [1, {"b": 2,},], }`, `{"a":[1,{"b":2}]}`},
		{"slashes in strings", `{"url": "http://x/*y*/", "p": "a//b"}`, `{"p":"a//b","url":"http://x/*y*/"}`},
		{"escaped quote", `{"a": "q\"// not a comment", "b": "\\"}`, `{"a":"q\"// not a comment","b":"\\"}`},
		{"comma in string", `{"a": "x,}"}`, `{"a":"x,}"}`},
		{"byte order mark", "\uFEFF{\"a\": 1}", `{"a":1}`},
		{"unicode", `{"ключ": "значение" /* комментарий */}`, `{"ключ":"значение"}`},
		{"unterminated block comment", `{"a": 1 /* x`, ""},
		{"unterminated string", `{"a": "x`, ""},
		{"lone slash", `{"a": 1 / 2}`, ""},
		{"double comma stays invalid", `[1,,]`, ""},
		{"empty", ``, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := stripJSONC([]byte(tc.in))
			if tc.want == "" {
				if json.Valid(got) {
					t.Errorf("got valid JSON %q, want invalid", got)
				}
				return
			}
			var v any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatalf("got %q: %v", got, err)
			}
			compact, _ := json.Marshal(v)
			if string(compact) != tc.want {
				t.Errorf("got %s, want %s", compact, tc.want)
			}
		})
	}
}

// FuzzStripJSONC checks that stripJSONC never panics, leaves valid JSON
// meaning the same, and turns valid JSON decorated with comments and
// trailing commas (anywhere whitespace may go) back into the same value.
func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{
		`{"a": [1, 2, {"b": null}], "c": "//x/*y*/", "d": true}`,
		`"\"// \\"`,
		`[]`, `{}`, `0`, `-1.5e3`, `"\u00e9"`,
		`{"compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"]}}}`,
		"{\"a\": 1 // c\n}",
		`[1, /* c */ 2,]`,
		`/*`, `"`, `//`, "\uFEFF[]",
	} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, in string, seed uint64) {
		out := stripJSONC([]byte(in)) // must not panic
		if !json.Valid([]byte(in)) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("valid JSON %q became invalid %q", in, out)
		}
		want := resolveDecodeJSON(t, []byte(in))
		if got := resolveDecodeJSON(t, out); !cmp.Equal(want, got) {
			t.Fatalf("stripping changed the value of %q: %s", in, cmp.Diff(want, got))
		}
		decorated := resolveDecorateJSON(want, rand.New(rand.NewPCG(seed, seed>>1)))
		out = stripJSONC([]byte(decorated))
		if !json.Valid(out) {
			t.Fatalf("JSONC %q stripped to invalid JSON %q", decorated, out)
		}
		if got := resolveDecodeJSON(t, out); !cmp.Equal(want, got) {
			t.Fatalf("JSONC %q changed value: %s", decorated, cmp.Diff(want, got))
		}
	})
}

// resolveDecodeJSON decodes valid JSON keeping numbers exact.
func resolveDecodeJSON(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

// resolveDecorateJSON writes v as JSONC: comments (some holding quotes,
// commas, brackets and comment markers) wherever whitespace may go and
// trailing commas in non-empty containers, chosen by rng.
func resolveDecorateJSON(v any, rng *rand.Rand) string {
	var b strings.Builder
	junk := func() {
		switch rng.IntN(5) {
		case 0:
			b.WriteString(` /* ",}] // */ `)
		case 1:
			b.WriteString(" // \"/* ,] }\n")
		case 2:
			b.WriteString("\n\t")
		}
	}
	var write func(v any)
	write = func(v any) {
		junk()
		switch t := v.(type) {
		case map[string]any:
			b.WriteByte('{')
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for i, k := range keys {
				if i > 0 {
					b.WriteByte(',')
				}
				junk()
				kb, _ := json.Marshal(k)
				b.Write(kb)
				junk()
				b.WriteByte(':')
				write(t[k])
			}
			if len(keys) > 0 && rng.IntN(2) == 0 {
				b.WriteByte(',')
			}
			junk()
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range t {
				if i > 0 {
					b.WriteByte(',')
				}
				write(e)
			}
			if len(t) > 0 && rng.IntN(2) == 0 {
				b.WriteByte(',')
			}
			junk()
			b.WriteByte(']')
		default:
			vb, err := json.Marshal(t)
			if err != nil {
				panic(fmt.Sprintf("marshal %v: %v", t, err))
			}
			b.Write(vb)
		}
		junk()
	}
	write(v)
	return b.String()
}
