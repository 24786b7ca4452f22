package cli

import (
	"encoding/json"
	"io"
)

// The output helpers of every command: the two JSON styles. Commands
// print data through these so that one style is written one way.

// encodeJSON writes v as one indented JSON document: the --json output of
// commands that print one result (query, index, plan, retrieve, solve,
// doctor, enrich). HTML characters are escaped, as encoding/json does by
// default.
func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// encodeJSONLines writes each of vs as compact JSON on a line of its own
// (JSON lines): the --json output of 'cra log', whose entries stream and
// are read line by line like the log itself. HTML characters are not
// escaped, so a log line's text reads as written.
func encodeJSONLines[T any](w io.Writer, vs ...T) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
