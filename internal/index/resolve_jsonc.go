package index

import "bytes"

// stripJSONC turns JSONC (JSON with comments, as tsconfig.json, jsconfig.json
// and many package.json files are written) into JSON that encoding/json
// accepts: it drops "//" and "/* */" comments and commas that directly
// precede "}" or "]", leaving string contents untouched, and drops a leading
// UTF-8 byte order mark. Comments become one space so that the tokens on
// either side stay apart. Malformed input (an unterminated string or
// comment) is not an error here: the result is simply invalid JSON.
func stripJSONC(src []byte) []byte {
	src = bytes.TrimPrefix(src, []byte("\uFEFF"))
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src)) // past the closing quote, if any
			out = append(out, src[i:j]...)
			i = j
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			j := bytes.IndexAny(src[i:], "\r\n")
			if j < 0 {
				j = len(src) - i
			}
			out = append(out, ' ')
			i += j // the line break itself is kept
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			j := bytes.Index(src[i+2:], []byte("*/"))
			if j < 0 {
				i = len(src)
			} else {
				i += 2 + j + 2
			}
			out = append(out, ' ')
		case c == '}' || c == ']':
			k := len(out) - 1
			for k >= 0 && jsoncSpace(out[k]) {
				k--
			}
			if k >= 0 && out[k] == ',' {
				out[k] = ' '
			}
			out = append(out, c)
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// jsoncSpace reports whether c is whitespace in JSON.
func jsoncSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
