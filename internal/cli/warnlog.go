package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// warnHandler writes a diagnostic as a short line a person reads —
// "warning: LLM call failed, retrying (model=qwen3:4b attempt=2)" — rather
// than slog's key=value record with its time= and level= prefixes.
type warnHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	attrs []slog.Attr
}

var _ slog.Handler = (*warnHandler)(nil)

func newWarnLogger(w io.Writer) *slog.Logger {
	return slog.New(&warnHandler{mu: &sync.Mutex{}, w: w})
}

func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	var parts []string
	add := func(a slog.Attr) bool {
		if a.Key != "" {
			parts = append(parts, a.Key+"="+a.Value.String())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	line := "warning: " + r.Message
	if r.Level >= slog.LevelError {
		line = "error: " + r.Message
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, " ") + ")"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, line)
	return err
}

func (h *warnHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &warnHandler{mu: h.mu, w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is not used by cra's diagnostics; the group's attributes are
// written without its name.
func (h *warnHandler) WithGroup(string) slog.Handler { return h }
