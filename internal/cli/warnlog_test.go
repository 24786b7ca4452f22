package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestWarnLinesReadAsSentences(t *testing.T) {
	var b bytes.Buffer
	l := newWarnLogger(&b).With("model", "qwen3:4b")
	l.Info("not shown")
	l.Warn("LLM call failed, retrying", "attempt", 2)
	if got, want := b.String(), "warning: LLM call failed, retrying (model=qwen3:4b attempt=2)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestInterruptedSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	code := exitCode(context.Cause(ctx), &stderr)
	if code != 130 || strings.TrimSpace(stderr.String()) != "cra: interrupted" {
		t.Errorf("got %d %q, want 130 and 'cra: interrupted'", code, stderr.String())
	}
}
