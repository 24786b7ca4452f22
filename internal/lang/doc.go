package lang

import (
	"encoding/json"
	"strings"
)

// ClassifyDocstring returns the format of a cleaned docstring (one of the
// Doc* constants) and its structured fields as a JSON object (seed 001 §4.5,
// docstrings.format and parsed_fields).
//
// Go doc comments are always godoc. Otherwise the format is, in this order
// of precedence (JSDoc first for JavaScript and TypeScript):
//   - numpy: a section title such as "Parameters" underlined with dashes;
//   - google: a line that is just "Args:", "Arguments:", "Parameters:",
//     "Returns:", "Yields:", "Raises:", "Attributes:" or "Keyword Args:"
//     followed by an indented block;
//   - sphinx: ":param x:", ":type x:", ":returns:", ":rtype:", ":raises E:";
//   - jsdoc: "@param", "@returns", ... at the start of a line (in Python
//     only the epytext tags @param, @type, @return(s), @rtype, @raise(s));
//   - plain.
//
// The JSON object has these keys, in this order, each only when found:
// "summary" (the first paragraph, on one line), "params" and "attributes"
// (lists of {"name", "type", "description"}), "returns" and "yields"
// ({"type", "description"}), "raises" (a list of {"type", "description"})
// and "deprecated" (the reason, possibly ""). An empty docstring gives "{}".
func ClassifyDocstring(text string, l Language) (format, parsedFields string) {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\t", "    "), "\n")
	format = docFormat(lines, l)
	var d docFields
	switch format {
	case DocNumpy:
		parseNumpy(lines, &d)
	case DocGoogle:
		parseGoogle(lines, &d)
	case DocSphinx:
		parseSphinx(lines, &d)
	case DocJSDoc:
		parseTags(lines, &d)
	case DocGo:
		parseGodoc(lines, &d)
	}
	d.Summary = summary(lines, format)
	if d.Summary == "" {
		d.Summary = clip(d.description, maxSummary)
	}
	b, err := json.Marshal(&d)
	if err != nil { // cannot happen: the fields are strings and slices of them
		return format, "{}"
	}
	return format, string(b)
}

// docFields is the parsed_fields object; field order is key order.
type docFields struct {
	Summary    string     `json:"summary,omitempty"`
	Params     []docParam `json:"params,omitempty"`
	Attributes []docParam `json:"attributes,omitempty"`
	Returns    *docValue  `json:"returns,omitempty"`
	Yields     *docValue  `json:"yields,omitempty"`
	Raises     []docValue `json:"raises,omitempty"`
	Deprecated *string    `json:"deprecated,omitempty"`

	// description is a JSDoc @description or @fileoverview, the summary
	// when the text before the tags is empty.
	description string
}

type docParam struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

type docValue struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// maxSummary bounds the summary field, in runes.
const maxSummary = 500

var numpySections = map[string]bool{
	"parameters": true, "params": true, "arguments": true, "args": true, "other parameters": true,
	"keyword arguments": true, "returns": true, "return": true, "yields": true, "yield": true,
	"receives": true, "raises": true, "warns": true, "warnings": true, "see also": true, "notes": true,
	"references": true, "examples": true, "example": true, "attributes": true, "methods": true,
}

var googleSections = map[string]string{
	"Args:": "params", "Arguments:": "params", "Parameters:": "params", "Params:": "params",
	"Keyword Args:": "params", "Keyword Arguments:": "params", "Kwargs:": "params",
	"Other Parameters:": "params", "Returns:": "returns", "Return:": "returns", "Yields:": "yields",
	"Yield:": "yields", "Raises:": "raises", "Attributes:": "attributes",
}

var sphinxFields = []string{
	":param", ":parameter", ":arg ", ":argument ", ":key ", ":keyword ", ":kwarg ", ":type ",
	":returns", ":return:", ":rtype:", ":raises", ":raise ", ":except", ":exception ", ":ivar ",
	":cvar ", ":var ", ":vartype ", ":yield", ":ytype:",
}

var epytextTags = []string{"@param", "@type ", "@return", "@rtype", "@raise", "@ivar", "@keyword"}

func docFormat(lines []string, l Language) string {
	if l == Go {
		return DocGo
	}
	ecma := l == JavaScript || l == TypeScript || l == TSX
	if ecma && hasTag(lines, nil) {
		return DocJSDoc
	}
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if i+1 < len(lines) && numpySections[strings.ToLower(t)] && isUnderline(lines[i+1]) {
			return DocNumpy
		}
	}
	for i, line := range lines {
		if googleHeader(line) != "" && nextIndented(lines, i) {
			return DocGoogle
		}
	}
	for _, line := range lines {
		if isSphinxField(line) {
			return DocSphinx
		}
	}
	if !ecma && hasTag(lines, epytextTags) {
		return DocJSDoc
	}
	return DocPlain
}

// hasTag reports a line starting with "@word", or with one of tags.
func hasTag(lines []string, tags []string) bool {
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if len(t) < 2 || t[0] != '@' || !isASCIILetter(t[1]) {
			continue
		}
		if tags == nil {
			return true
		}
		for _, tag := range tags {
			if strings.HasPrefix(t, tag) {
				return true
			}
		}
	}
	return false
}

func isSphinxField(line string) bool {
	t := strings.TrimSpace(line)
	for _, f := range sphinxFields {
		if strings.HasPrefix(t, f) {
			return true
		}
	}
	return false
}

func isUnderline(s string) bool {
	t := strings.TrimSpace(s)
	return len(t) >= 3 && strings.Trim(t, "-") == ""
}

func googleHeader(line string) string {
	return googleSections[strings.TrimSpace(line)]
}

// nextIndented reports whether the first non-blank line after i is indented
// deeper than line i.
func nextIndented(lines []string, i int) bool {
	base := indent(lines[i])
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		return indent(l) > base
	}
	return false
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// summary is the first paragraph: the lines up to a blank line or to where
// the structured part starts.
func summary(lines []string, format string) string {
	var parts []string
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" {
			if len(parts) > 0 {
				break
			}
			continue
		}
		if sectionStart(lines, i, format) {
			break
		}
		parts = append(parts, t)
	}
	return clip(strings.Join(parts, " "), maxSummary)
}

func sectionStart(lines []string, i int, format string) bool {
	t := strings.TrimSpace(lines[i])
	switch format {
	case DocNumpy:
		return i+1 < len(lines) && isUnderline(lines[i+1]) || isUnderline(t)
	case DocGoogle:
		return googleHeader(t) != ""
	case DocSphinx:
		return isSphinxField(t)
	case DocJSDoc:
		return strings.HasPrefix(t, "@")
	case DocGo:
		return strings.HasPrefix(t, "Deprecated:")
	}
	return false
}

// entries splits a section body into entries: an entry starts on a line at
// the body's first indentation and owns the deeper lines that follow.
type entry struct {
	head string   // the first line, trimmed
	more []string // the continuation lines, trimmed
}

func (e entry) desc() string { return strings.Join(e.more, " ") }

func entries(body []string) []entry {
	base := -1
	var out []entry
	for _, l := range body {
		if strings.TrimSpace(l) == "" {
			continue
		}
		in := indent(l)
		if base < 0 {
			base = in
		}
		if in <= base || len(out) == 0 {
			out = append(out, entry{head: strings.TrimSpace(l)})
			continue
		}
		out[len(out)-1].more = append(out[len(out)-1].more, strings.TrimSpace(l))
	}
	return out
}

// joinDesc joins a first-line description with its continuation.
func joinDesc(first string, more []string) string {
	parts := make([]string, 0, 1+len(more))
	if first = strings.TrimSpace(first); first != "" {
		parts = append(parts, first)
	}
	parts = append(parts, more...)
	return strings.Join(parts, " ")
}

// parseGoogle reads "Args:", "Returns:", "Raises:" ... sections.
func parseGoogle(lines []string, d *docFields) {
	for i := 0; i < len(lines); i++ {
		sec := googleHeader(lines[i])
		if sec == "" {
			continue
		}
		base := indent(lines[i])
		j := i + 1
		for j < len(lines) && (strings.TrimSpace(lines[j]) == "" || indent(lines[j]) > base) {
			j++
		}
		body := lines[i+1 : j]
		i = j - 1
		switch sec {
		case "params", "attributes":
			for _, e := range entries(body) {
				p := googleParam(e)
				if sec == "params" {
					d.Params = append(d.Params, p)
				} else {
					d.Attributes = append(d.Attributes, p)
				}
			}
		case "returns", "yields":
			var v docValue
			es := entries(body)
			if len(es) > 0 {
				typ, desc := splitTypeDesc(es[0].head)
				v.Type = typ
				all := []string{desc}
				all = append(all, es[0].more...)
				for _, e := range es[1:] {
					all = append(all, e.head)
					all = append(all, e.more...)
				}
				v.Description = joinDesc("", nonEmpty(all))
			}
			if sec == "returns" {
				d.Returns = &v
			} else {
				d.Yields = &v
			}
		case "raises":
			for _, e := range entries(body) {
				typ, desc, ok := strings.Cut(e.head, ":")
				if !ok {
					typ, desc = e.head, ""
				}
				d.Raises = append(d.Raises, docValue{Type: strings.TrimSpace(typ), Description: joinDesc(desc, e.more)})
			}
		}
	}
}

func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// googleParam reads "name (type): description".
func googleParam(e entry) docParam {
	head, desc, ok := strings.Cut(e.head, ":")
	if !ok {
		head, desc = e.head, ""
	}
	head = strings.TrimSpace(head)
	var typ string
	if i := strings.IndexByte(head, '('); i > 0 && strings.HasSuffix(head, ")") {
		typ = strings.TrimSpace(head[i+1 : len(head)-1])
		head = strings.TrimSpace(head[:i])
	}
	return docParam{Name: head, Type: typ, Description: joinDesc(desc, e.more)}
}

// splitTypeDesc reads a Google "Returns:" line, "int: the count" or just
// "The count.": the part before the first colon is a type only if it looks
// like one (no spaces outside brackets, or words joined by "of" and "or").
func splitTypeDesc(s string) (typ, desc string) {
	before, after, ok := strings.Cut(s, ":")
	if !ok || !looksLikeType(before) {
		return "", strings.TrimSpace(s)
	}
	return strings.TrimSpace(before), strings.TrimSpace(after)
}

func looksLikeType(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 80 {
		return false
	}
	depth := 0
	fields := strings.FieldsFunc(s, func(r rune) bool {
		switch r {
		case '[', '(', '{', '<':
			depth++
		case ']', ')', '}', '>':
			depth--
		}
		return r == ' ' && depth == 0
	})
	if len(fields)%2 == 0 {
		return false
	}
	for i := 1; i < len(fields); i += 2 {
		switch fields[i] {
		case "of", "or", "|", "and":
		default:
			return false
		}
	}
	return true
}

// parseNumpy reads underlined sections.
func parseNumpy(lines []string, d *docFields) {
	for i := 0; i+1 < len(lines); i++ {
		title := strings.ToLower(strings.TrimSpace(lines[i]))
		if !numpySections[title] || !isUnderline(lines[i+1]) {
			continue
		}
		j := i + 2
		for j < len(lines) && !(j+1 < len(lines) && numpySections[strings.ToLower(strings.TrimSpace(lines[j]))] && isUnderline(lines[j+1])) {
			j++
		}
		body := lines[i+2 : j]
		i = j - 1
		es := entries(body)
		switch title {
		case "parameters", "params", "arguments", "args", "other parameters", "keyword arguments", "attributes":
			for _, e := range es {
				name, typ, _ := strings.Cut(e.head, ":")
				for _, n := range strings.Split(name, ",") {
					p := docParam{Name: strings.TrimSpace(n), Type: strings.TrimSpace(typ), Description: e.desc()}
					if p.Name == "" {
						continue
					}
					if title == "attributes" {
						d.Attributes = append(d.Attributes, p)
					} else {
						d.Params = append(d.Params, p)
					}
				}
			}
		case "returns", "return", "yields", "yield":
			var types, descs []string
			for _, e := range es {
				name, typ, ok := strings.Cut(e.head, ":")
				if !ok {
					typ = name
				}
				types = append(types, strings.TrimSpace(typ))
				descs = append(descs, e.more...)
			}
			v := &docValue{Type: strings.Join(nonEmpty(types), ", "), Description: strings.Join(descs, " ")}
			if strings.HasPrefix(title, "return") {
				d.Returns = v
			} else {
				d.Yields = v
			}
		case "raises":
			for _, e := range es {
				d.Raises = append(d.Raises, docValue{Type: e.head, Description: e.desc()})
			}
		}
	}
}

// parseSphinx reads ":param type name: text" style fields.
func parseSphinx(lines []string, d *docFields) {
	params := map[string]int{}
	attrs := map[string]int{}
	param := func(list *[]docParam, idx map[string]int, name string) *docParam {
		if i, ok := idx[name]; ok {
			return &(*list)[i]
		}
		idx[name] = len(*list)
		*list = append(*list, docParam{Name: name})
		return &(*list)[len(*list)-1]
	}
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, ":") {
			continue
		}
		field, text, ok := strings.Cut(t[1:], ":")
		if !ok {
			continue
		}
		base := indent(lines[i])
		var more []string
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" && indent(lines[i+1]) > base {
			i++
			more = append(more, strings.TrimSpace(lines[i]))
		}
		desc := joinDesc(text, more)
		words := strings.Fields(field)
		if len(words) == 0 {
			continue
		}
		arg := ""
		if len(words) > 1 {
			arg = words[len(words)-1]
		}
		switch words[0] {
		case "param", "parameter", "arg", "argument", "key", "keyword", "kwarg":
			if arg == "" {
				continue
			}
			p := param(&d.Params, params, arg)
			p.Description = desc
			if len(words) > 2 {
				p.Type = strings.Join(words[1:len(words)-1], " ")
			}
		case "type":
			if arg != "" {
				param(&d.Params, params, arg).Type = desc
			}
		case "ivar", "cvar", "var":
			if arg != "" {
				p := param(&d.Attributes, attrs, arg)
				p.Description = desc
			}
		case "vartype":
			if arg != "" {
				param(&d.Attributes, attrs, arg).Type = desc
			}
		case "returns", "return":
			if d.Returns == nil {
				d.Returns = &docValue{}
			}
			d.Returns.Description = desc
		case "rtype":
			if d.Returns == nil {
				d.Returns = &docValue{}
			}
			d.Returns.Type = desc
		case "yield", "yields":
			if d.Yields == nil {
				d.Yields = &docValue{}
			}
			d.Yields.Description = desc
		case "ytype":
			if d.Yields == nil {
				d.Yields = &docValue{}
			}
			d.Yields.Type = desc
		case "raises", "raise", "except", "exception":
			d.Raises = append(d.Raises, docValue{Type: strings.Join(words[1:], " "), Description: desc})
		}
	}
}

// parseTags reads JSDoc ("@param {T} name - text") and epytext
// ("@param name: text", "@type name: T") tags.
func parseTags(lines []string, d *docFields) {
	params := map[string]int{}
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if len(t) < 2 || t[0] != '@' || !isASCIILetter(t[1]) {
			continue
		}
		var more []string
		for i+1 < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "@") {
			i++
			if s := strings.TrimSpace(lines[i]); s != "" {
				more = append(more, s)
			}
		}
		tag, rest, _ := strings.Cut(t[1:], " ")
		tag = strings.TrimSuffix(tag, ":")
		rest = strings.TrimSpace(rest)
		typ := ""
		if strings.HasPrefix(rest, "{") {
			if end := matchingBrace(rest); end > 0 {
				typ, rest = strings.TrimSpace(rest[1:end]), strings.TrimSpace(rest[end+1:])
			}
		}
		switch tag {
		case "param", "arg", "argument", "property", "prop", "keyword", "ivar", "type":
			name, desc, _ := strings.Cut(rest, " ")
			name = strings.TrimSuffix(name, ":")
			if strings.HasPrefix(name, "[") {
				name = strings.TrimPrefix(name, "[")
				name, _, _ = strings.Cut(strings.TrimSuffix(name, "]"), "=")
			}
			if name == "" {
				continue
			}
			desc = strings.TrimPrefix(strings.TrimSpace(desc), "- ")
			list := &d.Params
			if tag == "property" || tag == "prop" || tag == "ivar" {
				list = &d.Attributes
			}
			if tag == "type" { // epytext "@type name: T"; JSDoc "@type {T}" is no param
				if typ != "" {
					continue
				}
				if j, ok := params[name]; ok {
					d.Params[j].Type = joinDesc(desc, more)
				} else {
					params[name] = len(d.Params)
					d.Params = append(d.Params, docParam{Name: name, Type: joinDesc(desc, more)})
				}
				continue
			}
			if list == &d.Params {
				if j, ok := params[name]; ok {
					d.Params[j].Description = joinDesc(desc, more)
					if typ != "" {
						d.Params[j].Type = typ
					}
					continue
				}
				params[name] = len(d.Params)
			}
			*list = append(*list, docParam{Name: name, Type: typ, Description: joinDesc(desc, more)})
		case "returns", "return":
			if d.Returns == nil {
				d.Returns = &docValue{}
			}
			d.Returns.Description = joinDesc(strings.TrimPrefix(rest, "- "), more)
			if typ != "" {
				d.Returns.Type = typ
			}
		case "rtype":
			if d.Returns == nil {
				d.Returns = &docValue{}
			}
			d.Returns.Type = joinDesc(rest, more)
		case "yields", "yield":
			d.Yields = &docValue{Type: typ, Description: joinDesc(strings.TrimPrefix(rest, "- "), more)}
		case "throws", "exception", "raise", "raises":
			if typ == "" && tag != "throws" {
				typ, rest, _ = strings.Cut(rest, " ")
				typ = strings.TrimSuffix(typ, ":")
			}
			d.Raises = append(d.Raises, docValue{Type: typ, Description: joinDesc(strings.TrimPrefix(strings.TrimSpace(rest), "- "), more)})
		case "deprecated":
			s := joinDesc(rest, more)
			d.Deprecated = &s
		case "description", "desc", "fileoverview", "file", "overview", "summary":
			if d.description == "" {
				d.description = joinDesc(rest, more)
			}
		}
	}
}

// matchingBrace is the index of the "}" closing the "{" at s[0], or -1.
func matchingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// parseGodoc reads the "Deprecated:" paragraph of a Go doc comment.
func parseGodoc(lines []string, d *docFields) {
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "Deprecated:") || i > 0 && strings.TrimSpace(lines[i-1]) != "" {
			continue
		}
		parts := []string{strings.TrimSpace(strings.TrimPrefix(t, "Deprecated:"))}
		for _, l := range lines[i+1:] {
			if strings.TrimSpace(l) == "" {
				break
			}
			parts = append(parts, strings.TrimSpace(l))
		}
		s := strings.TrimSpace(strings.Join(parts, " "))
		d.Deprecated = &s
		return
	}
}

// cleandoc dedents a docstring the way Python's inspect.cleandoc does: the
// first line is stripped, the others lose their common indentation, and
// blank lines at both ends go.
func cleandoc(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\t", "    ")
	lines := strings.Split(s, "\n")
	lines[0] = strings.TrimSpace(lines[0])
	return strings.TrimSpace(dedentLines(lines, true))
}

// dedentLines removes the indentation common to the non-blank lines after
// the first (or to all of them when skipFirst is false) and right-trims each.
func dedentLines(lines []string, skipFirst bool) string {
	minIndent := -1
	for i, l := range lines {
		if i == 0 && skipFirst || strings.TrimSpace(l) == "" {
			continue
		}
		if in := indent(l); minIndent < 0 || in < minIndent {
			minIndent = in
		}
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		l = strings.TrimRight(l, " \r")
		if !(i == 0 && skipFirst) && minIndent > 0 && len(l) >= minIndent {
			l = l[minIndent:]
		}
		b.WriteString(l)
	}
	// Blank lines at the start and end go; TrimSpace by the caller also
	// takes the first line's leading blanks, already stripped.
	return strings.Trim(b.String(), "\n")
}

// cleanLineComments joins a run of // or # comment lines into doc text:
// the markers and one following space go, deeper indentation stays.
func cleanLineComments(raws []string) string {
	lines := make([]string, 0, len(raws))
	for _, r := range raws {
		switch {
		case strings.HasPrefix(r, "//"):
			r = strings.TrimPrefix(r, "//")
		case strings.HasPrefix(r, "#"):
			r = strings.TrimLeft(r, "#")
		case strings.HasPrefix(r, "/*"):
			lines = append(lines, cleanBlock(r))
			continue
		}
		r = strings.TrimPrefix(r, " ")
		lines = append(lines, strings.TrimRight(r, " \t\r"))
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n ")
}
