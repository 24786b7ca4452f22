package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/world"
)

// taskJSON is a task with its folder, as 'cra task list --json' prints it.
type taskJSON struct {
	*board.Task
	Folder board.Folder `json:"folder"`
	// WaitsForPerson is as in cardJSON.
	WaitsForPerson bool `json:"waits_for_person"`
}

// cardJSON is what a card on the board shows: a task without its long
// texts (?view=card), so that a snapshot of 1,000 tasks stays small.
type cardJSON struct {
	ID                          string         `json:"id"`
	Title                       string         `json:"title"`
	Type                        string         `json:"type,omitempty"`
	Kind                        board.Kind     `json:"kind"`
	Priority                    board.Priority `json:"priority"`
	Folder                      board.Folder   `json:"folder"`
	CreatedAt                   time.Time      `json:"created_at,omitzero"`
	UpdatedAt                   time.Time      `json:"updated_at,omitzero"`
	Runs                        int            `json:"runs"`
	ConsecutiveCompletionClaims int            `json:"consecutive_completion_claims"`
	ConsecutiveFailures         int            `json:"consecutive_failures"`
	Classification              string         `json:"classification,omitempty"`
	// Tokens is the token usage the last run's agent reported (a preset's
	// run, issue 29), as board.Usage.String gives it.
	Tokens string `json:"tokens,omitempty"`
	// WaitsForPerson says the task's latest lifecycle entry is failed
	// and its ending is one a person must answer (waitsForPerson): the
	// board shows "needs you" and the answer box from it alone, never
	// from the folder, which also holds collapsed duplicates and dropped
	// directives.
	WaitsForPerson bool `json:"waits_for_person"`
}

// waits says whether task id waits for a person, from its latest
// lifecycle entry.
func (s *Server) waits(ctx context.Context, id string) (bool, error) { return s.Fleet.Waits(ctx, id) }

// waitingIDs returns the tasks that wait for a person, read from the
// failed agents of the log alone.
func (s *Server) waitingIDs(ctx context.Context) (map[string]bool, error) {
	failed, err := s.Fleet.Tasks().Log.CurrentIn(ctx, world.StatusFailed)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range failed {
		if fleetapi.WaitsForPerson(a.Status, a.Output) {
			out[a.ID] = true
		}
	}
	return out, nil
}

func card(t *board.Task, f board.Folder, waits bool) cardJSON {
	c := cardJSON{ID: t.ID, Title: t.Title, Type: t.Type, Kind: t.Kind, Priority: t.Priority, Folder: f, WaitsForPerson: waits,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Runs: t.Runs,
		ConsecutiveCompletionClaims: t.ConsecutiveCompletionClaims, ConsecutiveFailures: t.ConsecutiveFailures}
	if t.Results != nil {
		c.Classification = t.Results.Classification
		c.Tokens = t.Results.Usage.String()
	}
	return c
}

// locked runs fn under the board's lock: a change of the board (its log
// lines and its file writes) is then seen whole, never half made.
func (s *Server) locked(ctx context.Context, fn func() error) error {
	unlock, err := s.Fleet.Tasks().Store.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// tasks lists the board: every task with its folder, or one folder's with
// ?folder=NAME, and "offset", the end of the world log when the list was
// read, from which /api/events brings what changed since. ?view=card
// leaves out the long texts. Unreadable task files are listed under
// "problems", the world log's entries its fold skips under "skipped".
func (s *Server) tasks(w http.ResponseWriter, r *http.Request) {
	var folder board.Folder
	if f := r.URL.Query().Get("folder"); f != "" {
		parsed, err := board.ParseFolder(f)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		folder = parsed
	}
	view := r.URL.Query().Get("view")
	if view != "" && view != "card" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("view %q: use view=card, or leave it out for whole tasks", view))
		return
	}
	var listed []board.Listed
	var end int64
	var file string
	var waiting map[string]bool
	err := s.locked(r.Context(), func() error {
		src, err := sourceOf(s.Fleet.Tasks().Log)
		if err != nil {
			return err
		}
		at, id, err := src.end(r.Context())
		if err != nil {
			return err
		}
		end, file = at.Offset, id
		if waiting, err = s.waitingIDs(r.Context()); err != nil {
			return err
		}
		listed, err = s.Fleet.Tasks().Store.List(r.Context(), folder)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var problems []string
	tasks := []any{}
	for _, l := range listed {
		switch {
		case l.Err != nil:
			problems = append(problems, l.Err.Error())
		case view == "card":
			tasks = append(tasks, card(l.Task, l.Folder, waiting[l.ID]))
		default:
			tasks = append(tasks, taskJSON{Task: l.Task, Folder: l.Folder, WaitsForPerson: waiting[l.ID]})
		}
	}
	skipped, err := s.Fleet.Skipped(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Tasks    []any    `json:"tasks"`
		Offset   int64    `json:"offset"`
		File     string   `json:"file"`
		Problems []string `json:"problems,omitempty"`
		// Skipped: the world log's entries the lifecycle forbids, which
		// moved no task (fleet.Fleet.Skipped).
		Skipped []string `json:"skipped,omitempty"`
	}{tasks, end, file, problems, skipped})
}

// logEnd returns the end of the log's complete lines and the identity of
// the file it read them in (fileID), both of one open file.
func logEnd(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", fmt.Errorf("open world log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, "", fmt.Errorf("stat world log: %w", err)
	}
	id := fileID(fi)
	buf := make([]byte, 64<<10)
	for end := fi.Size(); end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, "", fmt.Errorf("read world log: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, id, nil
		}
		end -= n
	}
	return 0, id, nil
}

// Run is one run of a task, from its [agent:active] entry to the entry
// that ended it.
type Run = fleetapi.Run

// taskDetail is GET /api/tasks/{id}.
type taskDetail struct {
	Task   *board.Task  `json:"task"`
	Folder board.Folder `json:"folder"`
	// Log is the task's lines of the world log, the last MaxTaskLines.
	Log []Message `json:"log"`
	// Runs are its runs, oldest first.
	Runs []Run `json:"runs"`
	// Reviews are the recycler's reviews, oldest first: each with its
	// verdict, five-section note, evidence and blockers.
	Reviews []fleetapi.Review `json:"reviews"`
	// EvidenceText is the latest review's evidence as the recycler's
	// prompt shows it.
	EvidenceText string `json:"evidence_text,omitempty"`
	// BadReviews counts the lines of the review history that could not
	// be read.
	BadReviews int `json:"bad_reviews,omitempty"`
	// ReviewFile is the review history's path in the repository, set
	// with BadReviews.
	ReviewFile string `json:"review_file,omitempty"`
	// WaitsForPerson is as in cardJSON: the task is failed in the log
	// with an ending a person must answer, and an answer resumes it.
	WaitsForPerson bool `json:"waits_for_person"`
}

// MaxTaskLines bounds the log lines GET /api/tasks/{id} returns, unless
// ?log=all asks for every one ('cra task show' through the daemon).
const MaxTaskLines = 500

// task answers GET /api/tasks/{id}; ?view=card answers the card only.
func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var t *board.Task
	var folder board.Folder
	var waits bool
	err := s.locked(r.Context(), func() error {
		var err error
		if t, folder, err = s.Fleet.Tasks().Store.Get(r.Context(), id); err != nil {
			return err
		}
		waits, err = s.waits(r.Context(), id)
		return err
	})
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	if r.URL.Query().Get("view") == "card" {
		writeJSON(w, http.StatusOK, card(t, folder, waits))
		return
	}
	d := taskDetail{Task: t, Folder: folder, Log: []Message{}, Runs: []Run{}, Reviews: []fleetapi.Review{}, WaitsForPerson: waits}
	all := r.URL.Query().Get("log") == "all"
	var entries []world.Entry
	err = s.Fleet.Tasks().Log.Select(r.Context(), world.Filter{IDs: []string{id}}, func(rec *world.Record) error {
		m := message(rec)
		if m.Entry != nil {
			entries = append(entries, *m.Entry)
		}
		d.Log = append(d.Log, m)
		if !all && len(d.Log) > 2*MaxTaskLines {
			d.Log = slices.Delete(d.Log, 0, MaxTaskLines)
		}
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n := len(d.Log); !all && n > MaxTaskLines {
		d.Log = d.Log[n-MaxTaskLines:]
	}
	d.Runs = s.Fleet.Runs(id, entries)
	if d.Reviews, d.BadReviews, d.ReviewFile, d.EvidenceText, err = s.Fleet.Reviews(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// taskError answers a board error with its status: 404 for a task that
// is not there, 400 for a bad field, 409 for what the lifecycle refuses.
func (s *Server) taskError(w http.ResponseWriter, r *http.Request, err error) {
	var fe *board.FieldError
	var me *board.MoveError
	var ae *board.AnswerError
	var te *world.TransitionError
	var se *board.SteerError
	switch {
	case errors.As(err, &se):
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error(), Fix: se.Fix})
	case errors.As(err, &fe):
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: fe.Field, Fix: fe.Fix})
	case errors.Is(err, board.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &me):
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error(), Possible: me.Possible})
	case errors.As(err, &ae), errors.As(err, &te), errors.Is(err, board.ErrExists), errors.Is(err, board.ErrChanged):
		writeError(w, http.StatusConflict, err.Error())
	default:
		s.fail(w, r, err)
	}
}

// decode reads a JSON body into v, strictly: an unknown field is a
// mistake worth naming. It answers the error itself and returns false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			err = errors.New("more than one JSON value")
		}
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the limit of %d bytes", tooBig.Limit))
		return false
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("empty body")
	}
	writeError(w, http.StatusBadRequest, "the body is not the JSON this endpoint takes: "+err.Error())
	return false
}

// newTask is the body of POST /api/tasks: the fields of 'cra task add'.
type newTask struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Need        string   `json:"need"`
	Type        string   `json:"type"`
	Kind        string   `json:"kind"`
	Priority    string   `json:"priority"`
	Milestone   string   `json:"milestone"`
	After       []string `json:"after"`
	Agent       string   `json:"agent"`
	NoChange    bool     `json:"no_change"`
	// TestsMayChange is --tests-may-change.
	TestsMayChange bool `json:"tests_may_change"`
}

// addTask answers POST /api/tasks as 'cra task add' does: the start entry
// first, then the file in pending/; 201 with the task.
func (s *Server) addTask(w http.ResponseWriter, r *http.Request) {
	var in newTask
	if !decode(w, r, &in) {
		return
	}
	t := board.NewTask(strings.TrimSpace(in.Title))
	t.ID, t.Description, t.Need, t.Type = in.ID, in.Description, in.Need, in.Type
	t.Milestone, t.Agent, t.NoChange, t.TestsMayChange = in.Milestone, in.Agent, in.NoChange, in.TestsMayChange
	if in.Kind != "" {
		t.Kind = board.Kind(in.Kind)
	}
	if in.Priority != "" {
		t.Priority = board.Priority(in.Priority)
	}
	for _, id := range in.After {
		if id = strings.TrimSpace(id); id != "" {
			t.After = append(t.After, id)
		}
	}
	if err := t.CheckFields(); err != nil {
		s.taskError(w, r, err)
		return
	}
	added, err := s.Fleet.Add(r.Context(), t)
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, taskJSON{Task: added, Folder: board.Pending})
}

// answer answers POST /api/tasks/{id}/answer: [event:user][id] text, and
// a task that waits for a person goes back to pending (board.Answer).
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Text string `json:"text"`
	}
	if !decode(w, r, &in) {
		return
	}
	t, folder, resumed, err := s.Fleet.Tasks().Answer(r.Context(), r.PathValue("id"), in.Text)
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	waits, err := s.waits(r.Context(), t.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Task    taskJSON `json:"task"`
		Resumed bool     `json:"resumed"`
	}{taskJSON{t, folder, waits}, resumed})
}

// move answers POST /api/tasks/{id}/move (board.Move): 409 with the
// folders it can go to when the lifecycle refuses.
func (s *Server) move(w http.ResponseWriter, r *http.Request) {
	var in struct {
		To  string `json:"to"`
		Why string `json:"why"`
	}
	if !decode(w, r, &in) {
		return
	}
	to, err := board.ParseFolder(in.To)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: "to", Fix: "name one of the six folders"})
		return
	}
	s.moveTo(w, r, to, in.Why)
}

// retry answers POST /api/tasks/{id}/retry: a person's move back to
// pending, streaks reset when it comes from a terminal column.
func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Why string `json:"why"`
	}
	if r.ContentLength != 0 && !decode(w, r, &in) {
		return
	}
	if in.Why == "" {
		in.Why = "retried from the web board"
	}
	s.moveTo(w, r, board.Pending, in.Why)
}

func (s *Server) moveTo(w http.ResponseWriter, r *http.Request, to board.Folder, why string) {
	t, err := s.Fleet.Tasks().Move(r.Context(), r.PathValue("id"), to, strings.TrimSpace(why))
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	waits, err := s.waits(r.Context(), t.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, taskJSON{Task: t, Folder: to, WaitsForPerson: waits})
}

// MaxMessages bounds the lines of one GET /api/log.
const MaxMessages = 2000

// logLines answers GET /api/log: with ?since=OFFSET the lines from there
// on (at most ?limit=N, default and cap MaxMessages), else the last
// ?tail=N (default 100); "next" is where the next call goes on.
// ?kind=, ?source= and ?id= select lines as 'cra log query' does.
func (s *Server) logLines(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var f world.Filter
	if k := q.Get("kind"); k != "" {
		if k != string(world.KindAgent) && k != string(world.KindEvent) {
			writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("kind %q is not agent or event", k), Field: "kind", Fix: "use kind=agent or kind=event"})
			return
		}
		f.Kind = world.Kind(k)
	}
	for _, src := range q["source"] {
		f.Sources = append(f.Sources, world.Source(src))
	}
	f.IDs = q["id"]
	num := func(name string, def, lo, hi int64) (int64, bool) {
		v := q.Get(name)
		if v == "" {
			return def, true
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("%s=%q is not a number from %d to %d", name, v, lo, hi), Field: name, Fix: fmt.Sprintf("give %s from %d to %d", name, lo, hi)})
			return 0, false
		}
		return n, true
	}
	out := struct {
		Entries []Message `json:"entries"`
		Next    int64     `json:"next"`
	}{Entries: []Message{}}
	add := func(rec *world.Record) { out.Entries = append(out.Entries, message(rec)) }
	if !q.Has("since") {
		n, ok := num("tail", 100, 0, MaxMessages)
		if !ok {
			return
		}
		end, err := s.Fleet.Tasks().Log.Tail(r.Context(), int(n), f, func(rec *world.Record) error { add(rec); return nil })
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Next = end.Offset
		writeJSON(w, http.StatusOK, out)
		return
	}
	since, ok := num("since", 0, 0, 1<<62)
	if !ok {
		return
	}
	limit, ok := num("limit", MaxMessages, 1, MaxMessages)
	if !ok {
		return
	}
	src, err := sourceOf(s.Fleet.Tasks().Log)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from, start, err := src.at(r.Context(), since)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !start {
		writeJSON(w, http.StatusConflict, apiError{Error: fmt.Sprintf("since=%d is not where a line of the world log starts (was it compacted?)", since), Field: "since", Fix: "use an offset this API returned since the last compaction, or 0"})
		return
	}
	out.Next = since
	pos, err := s.Fleet.Tasks().Log.Scan(r.Context(), from, func(rec *world.Record) error {
		if int64(len(out.Entries)) == limit {
			return errStop
		}
		out.Next = rec.Offset + int64(len(rec.Raw)) + 1
		if rec.Err == nil && !f.Match(rec.Entry) {
			return nil
		}
		add(rec)
		return nil
	})
	switch {
	case errors.Is(err, errStop):
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		out.Next = pos.Offset
	}
	writeJSON(w, http.StatusOK, out)
}

// events answers GET /api/events?since=OFFSET with a WebSocket of the
// world log's lines from OFFSET on (see Hub.Stream).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if s.Hub == nil {
		writeError(w, http.StatusServiceUnavailable, "this server streams no events")
		return
	}
	since, err := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	if err != nil || since < 0 {
		writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("since=%q is not an offset", r.URL.Query().Get("since")), Field: "since", Fix: "pass the offset of GET /api/tasks, or the end of the last message"})
		return
	}
	s.serveEvents(w, r, Position{File: r.URL.Query().Get("file"), Offset: since})
}
