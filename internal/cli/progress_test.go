package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestTermProgress(t *testing.T) {
	var idle bytes.Buffer
	newTermProgress(&idle, "parsing").finish()
	if idle.Len() != 0 {
		t.Errorf("finish without a report: got %q, want nothing drawn", idle.String())
	}
	var buf bytes.Buffer
	p := newTermProgress(&buf, "parsing")
	p.report(3, 10)
	p.report(10, 10)
	p.finish()
	// The first report draws; the next, within the throttle, does not; the
	// finish clears the line so the summary starts clean.
	out := buf.String()
	if !strings.Contains(out, "parsing") || !strings.Contains(out, "(3/10") {
		t.Errorf("got %q, want the description and the count", out)
	}
	if last := out[strings.LastIndex(strings.TrimSuffix(out, "\r"), "\r")+1:]; strings.TrimSpace(last) != "" {
		t.Errorf("got %q, want the line cleared at the end", out)
	}
}
