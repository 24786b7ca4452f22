package server

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleetapi"
)

// The endpoints below answer the fleet's operations that only cra's
// commands use (Client): an edit, a run now, a recycler tick, the tasks
// that wait for a person.

// editTask answers PATCH /api/tasks/{id}: the fields the body sets
// change (fleetapi.Patch); the answer names those that did.
func (s *Server) editTask(w http.ResponseWriter, r *http.Request) {
	var p fleetapi.Patch
	if !decode(w, r, &p) {
		return
	}
	if p.Title != nil {
		title := strings.TrimSpace(*p.Title)
		p.Title = &title
	}
	t, changed, err := s.Fleet.Edit(r.Context(), r.PathValue("id"), p)
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	if changed == nil {
		changed = []string{}
	}
	writeJSON(w, http.StatusOK, struct {
		Task    *board.Task `json:"task"`
		Changed []string    `json:"changed"`
	}{t, changed})
}

// runTask answers POST /api/tasks/{id}/run: one run now, in the
// daemon's processor, answered when it ends (fleet.RunOne). A client
// that goes away stops the run.
func (s *Server) runTask(w http.ResponseWriter, r *http.Request) {
	o, err := s.Fleet.RunOne(r.Context(), r.PathValue("id"))
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// needsYou answers GET /api/needs-you: the tasks that wait for a person,
// each with its need.
func (s *Server) needsYou(w http.ResponseWriter, r *http.Request) {
	out, err := s.Fleet.NeedsYou(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// recycle answers POST /api/recycle: one recycler tick, with the lines
// it wrote.
func (s *Server) recycle(w http.ResponseWriter, r *http.Request) {
	var out bytes.Buffer
	rep, err := s.Fleet.RecycleOnce(r.Context(), &out)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, recycled{Report: rep, Output: out.String()})
}

// recycled is the answer of POST /api/recycle.
type recycled struct {
	Report *fleetapi.RecycleReport `json:"report"`
	Output string                  `json:"output"`
}
