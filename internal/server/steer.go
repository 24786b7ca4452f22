package server

import (
	"net/http"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
)

// whyBody is the body of a stop or a close: the person's reason.
type whyBody struct {
	Why string `json:"why"`
}

// stop is POST /api/tasks/{id}/stop: a person stops the task's run.
func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	var in whyBody
	if !decode(w, r, &in) {
		return
	}
	out, err := s.Fleet.Stop(r.Context(), r.PathValue("id"), in.Why)
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// closeTask is POST /api/tasks/{id}/close: a person closes it as won't-do.
func (s *Server) closeTask(w http.ResponseWriter, r *http.Request) {
	var in whyBody
	if !decode(w, r, &in) {
		return
	}
	t, err := s.Fleet.CloseTask(r.Context(), r.PathValue("id"), in.Why)
	s.steered(w, r, t, board.FailedBlocked, err)
}

// reopen is POST /api/tasks/{id}/reopen.
func (s *Server) reopen(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if !decode(w, r, &in) {
		return
	}
	t, err := s.Fleet.Reopen(r.Context(), r.PathValue("id"))
	s.steered(w, r, t, board.Pending, err)
}

// merge is POST /api/tasks/{id}/merge.
func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	var in fleetapi.MergeOptions
	if !decode(w, r, &in) {
		return
	}
	t, err := s.Fleet.Merge(r.Context(), r.PathValue("id"), in)
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	_, folder, err := s.Fleet.Tasks().Store.Get(r.Context(), t.ID)
	s.steered(w, r, t, folder, err)
}

// pr is POST /api/tasks/{id}/pr.
func (s *Server) pr(w http.ResponseWriter, r *http.Request) {
	var in fleetapi.PROptions
	if !decode(w, r, &in) {
		return
	}
	out, err := s.Fleet.PR(r.Context(), r.PathValue("id"), in)
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// steered answers a stop, close, reopen or merge with the task as it is.
func (s *Server) steered(w http.ResponseWriter, r *http.Request, t *board.Task, folder board.Folder, err error) {
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	waits, err := s.waits(r.Context(), t.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, taskJSON{Task: t, Folder: folder, WaitsForPerson: waits})
}

// diff is GET /api/tasks/{id}/diff: the task's branch diff, which the
// drawer shows inline.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	d, err := s.Fleet.Diff(r.Context(), r.PathValue("id"))
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
