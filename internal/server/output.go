package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/world"
)

// Live run output (issue 30, item 6): the drawer of a running task shows
// its run log as it grows, over a WebSocket of its own.

// outputTail is how much of a run log a new watcher gets first.
const outputTail = 64 << 10

// outputPoll is how often the log file is looked at for more.
const outputPoll = 250 * time.Millisecond

// maxOutputFrame bounds one message.
const maxOutputFrame = 32 << 10

// output is GET /api/tasks/{id}/output?run=N: a WebSocket that sends the
// tail of run N's log, then what is appended to it, until the run is no
// longer the task's active one (then the socket closes normally) or the
// page goes away.
func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := board.CheckID(id); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: "id", Fix: "use a task id like t-1a2b3c4d"})
		return
	}
	run, err := strconv.Atoi(r.URL.Query().Get("run"))
	if err != nil || run < 1 {
		writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("run=%q is not a run number", r.URL.Query().Get("run")), Field: "run", Fix: "pass the run's number, 1 or more"})
		return
	}
	if _, _, err := s.Fleet.Tasks().Store.Get(r.Context(), id); err != nil {
		s.taskError(w, r, err)
		return
	}
	c, err := websocket.Accept(w, r, nil) // refuses another origin, as the events socket does
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	path := statedir.At(s.Fleet.StateDir()).Run(id).Log(run)
	err = s.tailOutput(ctx, c, id, run, path)
	switch {
	case err == nil:
		c.Close(websocket.StatusNormalClosure, "the run ended")
	case ctx.Err() != nil:
		c.Close(websocket.StatusGoingAway, "")
	default:
		c.Close(websocket.StatusInternalError, err.Error())
	}
}

// tailOutput sends path's tail and then its growth to c until run ends.
func (s *Server) tailOutput(ctx context.Context, c *websocket.Conn, id string, run int, path string) error {
	var off int64 = -1
	t := time.NewTicker(outputPoll)
	defer t.Stop()
	for {
		// Whether the run still goes is read before the file: the last
		// bytes it wrote are sent before the socket closes.
		live := s.runLive(ctx, id, run)
		if fi, err := os.Stat(path); err == nil {
			if off < 0 {
				off = max(fi.Size()-outputTail, 0)
			}
			if fi.Size() < off {
				off = 0 // rotated or rewritten: start again
			}
			for off < fi.Size() {
				n, err := s.sendOutput(ctx, c, path, off, min(fi.Size()-off, maxOutputFrame))
				if err != nil {
					return err
				}
				off += n
			}
		} else if !os.IsNotExist(err) {
			return err
		}
		if !live {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// sendOutput sends up to n bytes of path from off, cut at a whole UTF-8
// character, and returns how many it sent.
func (s *Server) sendOutput(ctx context.Context, c *websocket.Conn, path string, off, n int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return 0, err
	}
	buf = buf[:m]
	if int64(m) == n {
		for k := 0; k < utf8.UTFMax && len(buf) > 0 && !utf8.Valid(buf); k++ {
			buf = buf[:len(buf)-1] // the rest comes with the next frame
		}
	}
	if len(buf) == 0 {
		return int64(m), nil
	}
	// A text frame must be UTF-8: bytes that are not (binary output)
	// are shown as U+FFFD.
	if err := c.Write(ctx, websocket.MessageText, []byte(strings.ToValidUTF8(string(buf), "\uFFFD"))); err != nil {
		return 0, err
	}
	return int64(len(buf)), nil
}

// runLive reports whether run is task id's active run in the log.
func (s *Server) runLive(ctx context.Context, id string, run int) bool {
	a, ok, err := s.Fleet.Tasks().Log.Lookup(ctx, id)
	if err != nil || !ok || a.Status != world.StatusActive {
		return false
	}
	n, named := world.ParseRun(a.Output)
	return !named || n == run
}
