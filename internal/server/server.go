// Package server is cra's HTTP API: a thin layer over the board and the
// world log, as tailscale's localapi sits over its backend (DESIGN.md).
// 'cra serve' mounts it; this step serves GET /healthz and a read-only
// GET /api/tasks, and the full API and the web board build on it.
//
// It listens on loopback by default. On any other address every request
// must carry the token ('Authorization: Bearer <token>'), which comes only
// from the environment, never from a file.
package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
)

// Server answers the API of one repository's daemon.
type Server struct {
	// Board is the repository's task board; required.
	Board *board.Board
	// Token, when set, is required of every request as a bearer token.
	Token string
	// Logger gets a line per failed request; nil discards.
	Logger *slog.Logger
	// Started is when the daemon started, for /healthz.
	Started time.Time
	// PID is the daemon's pid, for /healthz.
	PID int
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /api/tasks", s.tasks)
	return s.auth(mux)
}

// auth refuses a request without the token, when one is set.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.Token == "" {
		return next
	}
	want := []byte("Bearer " + s.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, "missing or wrong token: send 'Authorization: Bearer <token>' with the token the daemon was started with")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "pid": s.PID, "started": s.Started.UTC().Format(time.RFC3339)})
}

// taskJSON is a task with its folder, as 'cra task list --json' prints it.
type taskJSON struct {
	*board.Task
	Folder board.Folder `json:"folder"`
}

// tasks lists the board: every task with its folder, or one folder's with
// ?folder=NAME. Unreadable task files are listed under "problems".
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
	listed, err := s.Board.Store.List(r.Context(), folder)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Tasks    []taskJSON `json:"tasks"`
		Problems []string   `json:"problems,omitempty"`
	}{Tasks: []taskJSON{}}
	for _, l := range listed {
		if l.Err != nil {
			out.Problems = append(out.Problems, l.Err.Error())
			continue
		}
		out.Tasks = append(out.Tasks, taskJSON{Task: l.Task, Folder: l.Folder})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if s.Logger != nil {
		s.Logger.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// ErrTokenRequired is an address off loopback without a token.
var ErrTokenRequired = errors.New("an address other than loopback needs a token: export CRA_SERVE_TOKEN=<a long random secret> (the token is read from the environment only), or listen on 127.0.0.1")

// Loopback reports whether host (of HOST:PORT) is a loopback address or
// localhost. A name is not resolved: one that merely starts with "127."
// may point anywhere.
func Loopback(host string) bool {
	h := strings.Trim(host, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
