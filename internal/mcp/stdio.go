package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// drainWait bounds how long the end of input waits for answers: a call
// the client cancelled may never be answered.
const drainWait = 2 * time.Minute

// maxPending bounds the partial line drain keeps; the SDK refuses longer
// frames itself.
const maxPending = 16 << 20

// drain sits between the stdio streams and the SDK's transport and holds
// back the end of input until every call read has been answered: the SDK
// closes the session at EOF, dropping calls still running, so a client
// that sends its requests and closes its end ('cra mcp < session.jsonl',
// a script) would lose their answers.
type drain struct {
	in   io.Reader
	out  io.Writer
	done <-chan struct{}

	mu      sync.Mutex
	cond    *sync.Cond
	calls   int    // calls read and not yet answered
	partial []byte // the unfinished line read so far
	tail    []byte // the unfinished line written so far
}

func newDrain(ctx context.Context, in io.Reader, out io.Writer) *drain {
	d := &drain{in: in, out: out, done: ctx.Done()}
	d.cond = sync.NewCond(&d.mu)
	go func() {
		<-ctx.Done()
		d.mu.Lock()
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
	return d
}

// Read reads input, counting the calls in each complete line; at EOF it
// waits until they are answered (or drainWait passes without an answer).
func (d *drain) Read(p []byte) (int, error) {
	n, err := d.in.Read(p)
	d.mu.Lock()
	d.partial = scanLines(append(d.partial, p[:n]...), func(line []byte) { d.calls += countMessages(line, true) })
	if len(d.partial) > maxPending {
		d.partial = d.partial[:0]
	}
	if err == io.EOF {
		d.calls += countMessages(d.partial, true) // a last line without its newline
		d.partial = nil
		d.waitAnswered()
	}
	d.mu.Unlock()
	return n, err
}

// waitAnswered waits, holding mu, until no call is unanswered, ctx ends,
// or no answer came for drainWait.
func (d *drain) waitAnswered() {
	for d.calls > 0 {
		select {
		case <-d.done:
			return
		default:
		}
		before := d.calls
		t := time.AfterFunc(drainWait, func() {
			d.mu.Lock()
			d.cond.Broadcast()
			d.mu.Unlock()
		})
		d.cond.Wait()
		t.Stop()
		if d.calls == before {
			return // woken by the timer or ctx: give up
		}
	}
}

// Write writes output, counting the answers in each complete line.
func (d *drain) Write(p []byte) (int, error) {
	n, err := d.out.Write(p)
	d.mu.Lock()
	d.tail = scanLines(append(d.tail, p[:n]...), func(line []byte) { d.calls -= countMessages(line, false) })
	if len(d.tail) > maxPending {
		d.tail = d.tail[:0]
	}
	d.cond.Broadcast()
	d.mu.Unlock()
	return n, err
}

func (d *drain) Close() error { return nil }

// scanLines calls fn with each complete line of buf and returns the rest.
func scanLines(buf []byte, fn func([]byte)) []byte {
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		fn(buf[:i])
		buf = buf[i+1:]
	}
}

// countMessages counts the JSON-RPC calls (calls true: a method and an
// id) or the answers (an id and no method) in a line: one message or a
// batch of them.
func countMessages(line []byte, calls bool) int {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return 0
	}
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	var batch []msg
	if line[0] == '[' {
		if json.Unmarshal(line, &batch) != nil {
			return 0
		}
	} else {
		var m msg
		if json.Unmarshal(line, &m) != nil {
			return 0
		}
		batch = []msg{m}
	}
	n := 0
	for _, m := range batch {
		hasID := len(m.ID) > 0 && string(m.ID) != "null"
		if hasID && (m.Method != nil) == calls {
			n++
		}
	}
	return n
}
