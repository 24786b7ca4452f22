package llm

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/llm/llmtest"
)

// TestReplyTooLarge: one bound on a reply for both providers: a reply past
// it is cut unread, not retried, and the error says so (issue 19, 6).
func TestReplyTooLarge(t *testing.T) {
	for _, p := range []Provider{ProviderOllama, ProviderOpenAI} {
		t.Run(string(p), func(t *testing.T) {
			s := llmtest.NewServer(t)
			s.SetDefault(llmtest.Text(strings.Repeat("all work and no play ", 200_000))) // 4 MB
			m := testModel(p, s)
			m.MaxReplyBytes = 64 << 10
			c := newTestClient(t, m)
			resp, err := c.Complete(context.Background(), UserPrompt("", "hi"))
			if !errors.Is(err, ErrReplyTooLarge) || !strings.Contains(err.Error(), "passed 65536 bytes (models.max_reply_bytes)") {
				t.Fatalf("got %v, want ErrReplyTooLarge naming the bound", err)
			}
			if resp.Text != "" {
				t.Errorf("a cut reply came back: %d bytes", len(resp.Text))
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("%d requests, want 1: a runaway reply is not retried", n)
			}
			// Under the bound, the same reply is whole.
			m.MaxReplyBytes = 8 << 20
			resp, err = newTestClient(t, m).Complete(context.Background(), UserPrompt("", "hi"))
			if err != nil || len(resp.Text) != 4_200_000 {
				t.Errorf("under the bound: %d bytes, %v", len(resp.Text), err)
			}
		})
	}
}
