package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"time"
)

// encodeTaskList writes tasks as encodeJSONArray does, the same bytes,
// each task appended by hand (appendTaskJSON) instead of through
// encoding/json's reflection and re-indenting, which took a sixth of
// 'cra task list --json' on 10,000 tasks. A task the hand-written
// encoder cannot write (a time outside RFC 3339's years) goes through
// encoding/json, which says why.
func encodeTaskList(w io.Writer, tasks []taskJSON) error {
	if len(tasks) == 0 {
		return encodeJSON(w, tasks)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	buf := make([]byte, 0, 4096)
	bw.WriteString("[\n")
	for i, v := range tasks {
		b, ok := appendTaskJSON(buf[:0], v)
		if !ok {
			var err error
			if b, err = indentedElement(buf[:0], v); err != nil {
				return err
			}
		}
		bw.WriteString("  ")
		bw.Write(b)
		if i < len(tasks)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
		buf = b
	}
	bw.WriteString("]\n")
	return bw.Flush()
}

// indentedElement appends v as encodeJSONArray writes an element.
func indentedElement(b []byte, v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

// Indents of the fields of a task (an element of the array), of its
// results and merge, and of its results' usage.
const (
	taskIndent   = "\n    "
	nestedIndent = "\n      "
	usageIndent  = "\n        "
)

// appendTaskJSON appends v as encoding/json writes it as an element of
// encodeJSONArray's array (indented by two spaces, HTML escaped), without
// the leading indent; false when it cannot (appendTaskJSON's result is
// then unused). Its fields follow board.Task's json tags:
// TestTaskJSONEveryField fails when a field is added to Task, Results,
// Usage or Merge and not here.
func appendTaskJSON(b []byte, v taskJSON) ([]byte, bool) {
	t := v.Task
	if t == nil {
		return b, false
	}
	o := jsonObject{b: append(b, '{'), indent: taskIndent, ok: true}
	o.str("id", t.ID)
	o.str("title", t.Title)
	o.strOmit("description", t.Description)
	o.strOmit("need", t.Need)
	o.strOmit("type", t.Type)
	o.str("kind", string(t.Kind))
	o.str("priority", string(t.Priority))
	o.strOmit("milestone", t.Milestone)
	o.strOmit("source", t.Source)
	o.strOmit("rationale", t.Rationale)
	o.strs("files", t.Files)
	o.strs("after", t.After)
	o.strOmit("agent", t.Agent)
	o.boolOmit("no_change", t.NoChange)
	o.boolOmit("tests_may_change", t.TestsMayChange)
	o.time("created_at", t.CreatedAt)
	o.time("updated_at", t.UpdatedAt)
	o.int("runs", int64(t.Runs))
	o.int("consecutive_completion_claims", int64(t.ConsecutiveCompletionClaims))
	o.int("consecutive_failures", int64(t.ConsecutiveFailures))
	if t.EndpointFailures != 0 {
		o.int("endpoint_failures", int64(t.EndpointFailures))
	}
	o.time("retry_after", t.RetryAfter)
	o.bool("processor_auto_requeue", t.ProcessorAutoRequeue)
	o.strOmit("notes", t.Notes)
	if r := t.Results; r != nil {
		o.key("results")
		n := jsonObject{b: append(o.b, '{'), indent: nestedIndent, ok: true}
		n.strOmit("output", r.Output)
		if r.ExitCode != nil {
			n.int("exit_code", int64(*r.ExitCode))
		}
		n.time("started_at", r.StartedAt)
		n.time("finished_at", r.FinishedAt)
		if r.DurationMS != 0 {
			n.int("duration_ms", r.DurationMS)
		}
		n.strOmit("branch", r.Branch)
		n.strOmit("host", r.Host)
		n.strOmit("commit", r.Commit)
		n.strOmit("diff_stat", r.DiffStat)
		n.strOmit("validation", r.Validation)
		n.boolOmit("timed_out", r.TimedOut)
		n.strOmit("classification", r.Classification)
		if u := r.Usage; u != nil {
			n.key("usage")
			u2 := jsonObject{b: append(n.b, '{'), indent: usageIndent, ok: true}
			u2.strOmit("model", u.Model)
			u2.int("input", u.Input)
			u2.int("output", u.Output)
			u2.int("cached", u.Cached)
			n.b, n.ok = u2.end(nestedIndent), n.ok && u2.ok
		}
		o.b, o.ok = n.end(taskIndent), o.ok && n.ok
	}
	if m := t.Merged; m != nil {
		o.key("merged")
		n := jsonObject{b: append(o.b, '{'), indent: nestedIndent, ok: true}
		n.str("into", m.Into)
		n.str("commit", m.Commit)
		n.boolOmit("squash", m.Squash)
		n.key("at")
		n.timeValue(m.At)
		o.b, o.ok = n.end(taskIndent), o.ok && n.ok
	}
	o.str("folder", string(v.Folder))
	return o.end("\n  "), o.ok
}

// jsonObject appends an indented JSON object's fields.
type jsonObject struct {
	b      []byte
	indent string // a newline and the fields' indent
	n      int
	ok     bool // false once a value could not be written
}

func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, o.indent...)
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, `": `...)
}

// end closes the object, whose closing brace goes at outer's indent.
func (o *jsonObject) end(outer string) []byte {
	if o.n > 0 {
		o.b = append(o.b, outer...)
	}
	return append(o.b, '}')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonObject) strOmit(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *jsonObject) strs(k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	o.key(k)
	o.b = append(o.b, '[')
	for i, v := range vs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = append(o.b, o.indent...)
		o.b = append(o.b, "  "...)
		o.b = appendJSONString(o.b, v)
	}
	o.b = append(o.b, o.indent...)
	o.b = append(o.b, ']')
}

func (o *jsonObject) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObject) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *jsonObject) boolOmit(k string, v bool) {
	if v {
		o.bool(k, v)
	}
}

// time writes v unless it is zero (omitzero).
func (o *jsonObject) time(k string, v time.Time) {
	if !v.IsZero() {
		o.key(k)
		o.timeValue(v)
	}
}

func (o *jsonObject) timeValue(v time.Time) {
	o.b = append(o.b, '"')
	b, err := v.AppendText(o.b) // what Time.MarshalJSON writes
	if err != nil {
		o.ok = false
		return
	}
	o.b = append(b, '"')
}

// appendJSONString appends s quoted as encoding/json writes it: strings
// of plain printable ASCII as they are, any other through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
