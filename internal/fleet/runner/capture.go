package runner

import (
	"fmt"
	"github.com/cra-dev/cra/internal/board"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
)

// The caps of a run's log, runs/<id>/run-<N>.log (DESIGN.md principle 6):
// the first HeadBytes go to the file as they come, so a person can follow
// a run; of the rest the last TailBytes are kept and written when the run
// ends, after a line that says how much was cut. The start says what the
// agent set out to do, the end how it ended; the middle of a runaway
// output is what goes.
const (
	HeadBytes = 1 << 20
	TailBytes = 1 << 20
)

// touchEvery bounds how often a run's log file gets its time set once
// the head is full.
const touchEvery = 5 * time.Second

// capture is the writer of a run's stdout and stderr: the capped log file
// and the tail in memory (for results.output and the finish line).
type capture struct {
	mu   sync.Mutex
	f    *os.File
	path string
	// touched is when the file's time was last set after the head was
	// full: the file stops growing there, and its time still tells
	// Level 2 that the run writes.
	touched time.Time
	head    int64 // bytes written to f
	total   int64
	tail    []byte // the last TailBytes at most
	err     error  // the first write error of f
}

func newCapture(path string) (*capture, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open run log: %w", err)
	}
	return &capture{f: f, path: path}, nil
}

// Write never fails, so that a full disk does not kill the agent through
// a broken pipe; the file's error is reported by close.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if c.head < HeadBytes && c.err == nil {
		n := min(int64(len(p)), HeadBytes-c.head)
		if _, err := c.f.Write(p[:n]); err != nil {
			c.err = err
		}
		c.head += n
	} else if now := time.Now(); now.Sub(c.touched) >= touchEvery {
		c.touched = now
		os.Chtimes(c.path, now, now)
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*TailBytes {
		c.tail = append(c.tail[:0:0], c.tail[len(c.tail)-TailBytes:]...)
	}
	return len(p), nil
}

// Tail returns the last n bytes of the output at most.
func (c *capture) Tail(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tail
	if len(t) > n {
		t = t[len(t)-n:]
	}
	return strings.ToValidUTF8(string(t), "")
}

// Total is how many bytes of output came so far.
func (c *capture) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// close writes what came after the head, capped, and closes the file.
func (c *capture) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rest := c.total - c.head
	if rest > 0 && c.err == nil {
		t := c.tail
		if int64(len(t)) > rest {
			t = t[int64(len(t))-rest:]
		}
		if len(t) > TailBytes {
			t = t[len(t)-TailBytes:]
		}
		if cut := rest - int64(len(t)); cut > 0 {
			_, c.err = fmt.Fprintf(c.f, "\n[cra: %d bytes of output cut here; the first %d and the last %d are kept]\n", cut, HeadBytes, TailBytes)
		}
		if c.err == nil {
			_, c.err = c.f.Write(t)
		}
	}
	if err := c.f.Close(); c.err == nil {
		c.err = err
	}
	if c.err != nil {
		return fmt.Errorf("write run log: %w", c.err)
	}
	return nil
}

// lastLine returns the last non-blank line of out, clipped to n runes:
// what an [agent:finish] entry shows of how the run ended.
func lastLine(out string, n int) string {
	out = strings.TrimRightFunc(out, unicode.IsSpace)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	return board.Clip(strings.TrimSpace(out), n)
}
