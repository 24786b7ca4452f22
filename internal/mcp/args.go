package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// kind is a field's JSON type.
type kind int

const (
	kindString kind = iota
	kindInt
)

// field is one argument of a tool. The list of a tool's fields is the one
// source of its input schema and of the checks its calls pass: what the
// schema promises is what decode enforces, and an error names the field.
type field struct {
	name     string
	kind     kind
	required bool
	desc     string
	// min and max bound an integer; max bounds a string's length in
	// characters.
	min, max int
	// def is an integer's value when the call leaves it out.
	def int
	// enum lists a string's allowed values; "" among them is the default.
	enum []string
	// example is a value to show in a fix.
	example string
	// check, when set, refuses a string value for a reason of its own (a
	// path outside the repository); what says what to pass instead.
	check func(string) error
	what  string
}

// spec is a tool's arguments.
type spec struct {
	tool   string
	fields []field
}

// argError is a malformed call: the field, what is wrong, and the fix.
type argError struct {
	tool, field, problem, fix string
}

func (e *argError) Error() string {
	return fmt.Sprintf("%s: %s", e.tool, e.detail())
}

// detail is the error without the tool's name.
func (e *argError) detail() string {
	return fmt.Sprintf("%s: %s: %s", e.field, e.problem, e.fix)
}

// rpc is the JSON-RPC invalid-params error a client receives, its data
// naming the field and the fix for a client that reads them apart.
func (e *argError) rpc() *jsonrpc.Error {
	data, _ := json.Marshal(map[string]string{"tool": e.tool, "field": e.field, "problem": e.problem, "fix": e.fix})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Error(), Data: data}
}

// schema is the tool's input schema: an object with exactly these fields.
func (sp spec) schema() *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
	for _, f := range sp.fields {
		p := &jsonschema.Schema{Description: f.desc}
		switch f.kind {
		case kindString:
			p.Type = "string"
			if f.max > 0 {
				p.MaxLength = &f.max
			}
			for _, v := range f.enum {
				if v != "" {
					p.Enum = append(p.Enum, v)
				}
			}
		case kindInt:
			p.Type = "integer"
			lo, hi := float64(f.min), float64(f.max)
			p.Minimum, p.Maximum = &lo, &hi
			p.Default = json.RawMessage(strconv.Itoa(f.def))
		}
		if f.required {
			s.Required = append(s.Required, f.name)
			if f.kind == kindString {
				one := 1
				p.MinLength = &one
			}
		}
		s.Properties[f.name] = p
	}
	return s
}

func (sp spec) names() string {
	var n []string
	for _, f := range sp.fields {
		n = append(n, f.name)
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

func (sp spec) fail(f, problem, fix string) *argError {
	return &argError{tool: sp.tool, field: f, problem: problem, fix: fix}
}

// decode checks raw, a call's arguments, against the fields and stores
// them in v (a pointer to the tool's input struct, whose json tags are
// the field names), with defaults for the integers left out. A failure is
// an *argError.
func (sp spec) decode(raw json.RawMessage, v any) error {
	args := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &args); err != nil || args == nil {
			return sp.fail("arguments", "not a JSON object", "pass the arguments as an object: "+sp.example())
		}
	}
	for name := range args {
		if !slices.ContainsFunc(sp.fields, func(f field) bool { return f.name == name }) {
			if name == "" {
				name = `""`
			}
			return sp.fail(clipName(name), "unknown field", "the fields are "+sp.names())
		}
	}
	out := map[string]any{}
	for _, f := range sp.fields {
		val, ok := args[f.name]
		if ok && bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
			ok = false
		}
		if !ok {
			if f.required {
				return sp.fail(f.name, "missing", fmt.Sprintf("it is required: pass it, e.g. %s", sp.example()))
			}
			if f.kind == kindInt {
				out[f.name] = f.def
			}
			continue
		}
		switch f.kind {
		case kindString:
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return sp.fail(f.name, "not a string", fmt.Sprintf("pass text, e.g. %q", f.example))
			}
			if n := utf8.RuneCountInString(s); f.max > 0 && n > f.max {
				return sp.fail(f.name, fmt.Sprintf("%d characters, more than %d", n, f.max), "shorten it to its essentials")
			}
			if f.required && strings.TrimSpace(s) == "" {
				return sp.fail(f.name, "empty", fmt.Sprintf("pass text, e.g. %q", f.example))
			}
			if f.check != nil {
				if err := f.check(s); err != nil {
					return sp.fail(f.name, err.Error(), fmt.Sprintf("pass %s, e.g. %q", f.what, f.example))
				}
			}
			if len(f.enum) > 0 && !slices.Contains(f.enum, s) {
				return sp.fail(f.name, fmt.Sprintf("%q is not one of its values", clipName(s)), "use one of "+strings.Join(nonEmpty(f.enum), ", ")+" or leave it out")
			}
			out[f.name] = s
		case kindInt:
			var num json.Number
			d := json.NewDecoder(bytes.NewReader(val))
			d.UseNumber()
			if err := d.Decode(&num); err != nil {
				return sp.fail(f.name, "not a number", fmt.Sprintf("pass an integer from %d to %d", f.min, f.max))
			}
			x, err := num.Float64()
			if err != nil || x != math.Trunc(x) {
				return sp.fail(f.name, fmt.Sprintf("%s is not an integer", clipName(num.String())), fmt.Sprintf("pass an integer from %d to %d", f.min, f.max))
			}
			if x < float64(f.min) || x > float64(f.max) {
				return sp.fail(f.name, fmt.Sprintf("%s is out of range", clipName(num.String())), fmt.Sprintf("pass an integer from %d to %d", f.min, f.max))
			}
			out[f.name] = int(x)
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return sp.fail("arguments", err.Error(), "report this as a bug in cra")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return sp.fail("arguments", err.Error(), "report this as a bug in cra")
	}
	return nil
}

// example is a call with the required fields.
func (sp spec) example() string {
	parts := []string{}
	for _, f := range sp.fields {
		if f.required {
			parts = append(parts, fmt.Sprintf("%q: %q", f.name, f.example))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// clipName keeps a caller's text short in an error.
func clipName(s string) string {
	if len(s) <= 40 {
		return s
	}
	n := 40
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
