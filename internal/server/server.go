// Package server is cra's HTTP API and live web board: a thin layer over
// the board, the world log and the config, as tailscale's localapi sits
// over its backend (DESIGN.md; issue 15). 'cra serve' mounts it.
//
// # API
//
//	GET  /healthz                  {"ok": true, "pid": …, "started": …}
//	GET  /api/tasks                every task with its folder, and the log position the
//	                               snapshot is at: "offset" in "file" (?folder=NAME, ?view=card)
//	GET  /api/tasks/{id}           the task, its log lines, its runs, its reviews
//	POST /api/tasks                add a task (the fields of 'cra task add')
//	POST /api/tasks/{id}/answer    a person's answer: {"text": "…"}
//	POST /api/tasks/{id}/move      a person's move: {"to": "pending", "why": "…"}
//	POST /api/tasks/{id}/retry     back to pending: {"why": "…"}
//	GET  /api/settings             the recycler's settings (seed 004)
//	PUT  /api/settings             change them: validated, written to config.toml
//	GET  /api/cleanup              {"available": …, "running": …, "last": …}: the Clean Up
//	                               button, and the last pass's report
//	POST /api/cleanup              start a cleanup pass (202; 409 while one runs); with
//	                               ?wait=true answer its report when it ends (200), with
//	                               ?dry_run=true the pre-pass's
//	GET  /api/log                  lines of the world log (?since=OFFSET or ?tail=N)
//	GET  /api/events               a WebSocket of the world log from ?since=OFFSET&file=FILE
//	                               (see Message: a position in a compacted-away file resets)
//	POST|GET|DELETE /mcp           the MCP server over streamable HTTP (issue 31), when
//	                               the daemon has one (Server.MCP)
//	GET  /                         the web board (embedded: web/)
//
// Errors are {"error": "…"}, with "field" and "fix" for a field's value
// and "possible" for a move the lifecycle refuses.
//
// # Security
//
// It listens on loopback by default, where a request needs no token but
// must name a loopback host (so that a page whose name was rebound to
// 127.0.0.1 reads nothing). On any other address every request needs the
// token: 'Authorization: Bearer <token>', or the cookie a browser gets by
// opening /?token=<token> once (HttpOnly, SameSite=Strict; the page is
// then redirected to a URL without the token). Requests that change
// something are refused when they come from another origin (Origin and
// Sec-Fetch-Site, http.CrossOriginProtection); their bodies are capped at
// MaxBody. The page writes every piece of task text with textContent,
// and its Content-Security-Policy allows no inline script.
package server

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
)

// DefaultMaxBody caps a request's body.
const DefaultMaxBody = 64 << 10

// CookieName is the cookie that carries the token in a browser.
const CookieName = "cra_token"

// Server answers the API of one repository's daemon.
type Server struct {
	// Fleet is the repository's fleet, whose operations the API
	// answers; required.
	Fleet Fleet
	// Hub streams the world log to /api/events; nil answers 503 there.
	Hub *Hub
	// Cleaner runs the Clean Up button's pass; nil shows the button
	// disabled.
	Cleaner Cleaner
	// MCP serves the Model Context Protocol over streamable HTTP at
	// /mcp (issue 31: the tools of 'cra mcp', the board's through the fleet),
	// behind the API's host, token and origin checks; nil leaves /mcp
	// out. The front end that makes it (internal/cli) passes it in, so
	// the API does not import the MCP server.
	MCP http.Handler
	// Token, when set, is required of every request.
	Token string
	// AnyHost lets requests without a token name any host. Unset, a
	// server without a token (on loopback) answers only requests whose
	// Host is a loopback name or address.
	AnyHost bool
	// MaxBody caps request bodies; 0 is DefaultMaxBody.
	MaxBody int64
	// Logger gets a line per failed request; nil discards.
	Logger *slog.Logger
	// Started is when the daemon started, for /healthz.
	Started time.Time
	// PID is the daemon's pid, for /healthz.
	PID int
	// Out gets a line per request a cra command sent (its X-Cra-Command
	// header), so that a person sees which commands the daemon
	// answered; nil discards.
	Out io.Writer
}

// Handler returns the HTTP handler of the API and the page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /api/tasks", s.tasks)
	mux.HandleFunc("GET /api/tasks/{id}", s.task)
	mux.HandleFunc("POST /api/tasks", s.addTask)
	mux.HandleFunc("POST /api/tasks/{id}/answer", s.answer)
	mux.HandleFunc("POST /api/tasks/{id}/move", s.move)
	mux.HandleFunc("POST /api/tasks/{id}/retry", s.retry)
	mux.HandleFunc("PATCH /api/tasks/{id}", s.editTask)
	mux.HandleFunc("POST /api/tasks/{id}/run", s.runTask)
	mux.HandleFunc("GET /api/tasks/{id}/output", s.output)
	mux.HandleFunc("GET /api/tasks/{id}/diff", s.diff)
	mux.HandleFunc("POST /api/tasks/{id}/stop", s.stop)
	mux.HandleFunc("POST /api/tasks/{id}/close", s.closeTask)
	mux.HandleFunc("POST /api/tasks/{id}/reopen", s.reopen)
	mux.HandleFunc("POST /api/tasks/{id}/merge", s.merge)
	mux.HandleFunc("POST /api/tasks/{id}/pr", s.pr)
	mux.HandleFunc("GET /api/needs-you", s.needsYou)
	mux.HandleFunc("POST /api/recycle", s.recycle)
	mux.HandleFunc("GET /api/settings", s.getSettings)
	mux.HandleFunc("PUT /api/settings", s.putSettings)
	mux.HandleFunc("GET /api/cleanup", s.cleanupStatus)
	mux.HandleFunc("POST /api/cleanup", s.startCleanup)
	mux.HandleFunc("GET /api/log", s.logLines)
	mux.HandleFunc("GET /api/events", s.events)
	if s.MCP != nil {
		// POST carries the calls, GET a stream of the server's
		// messages, DELETE ends a session (streamable HTTP); each
		// method apart, as "GET /" serves the board's page.
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			mux.Handle(method+" /mcp", s.MCP)
		}
	}
	// GET only: another method on an API path gets the mux's 405 with
	// its Allow header, not "no such API endpoint".
	mux.Handle("GET /", s.page())
	return s.headers(s.host(s.auth(s.sameOrigin(s.limit(s.commands(mux))))))
}

// CommandHeader names the cra command that sent a request ('cra task
// add'): the daemon says which it answered.
const CommandHeader = "X-Cra-Command"

// commands writes a line to Out for each request a cra command sent.
func (s *Server) commands(next http.Handler) http.Handler {
	if s.Out == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cmd := r.Header.Get(CommandHeader)
		if cmd == "" {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		fmt.Fprintf(s.Out, "cra serve: answered %q (%s %s): %d\n", clipCommand(cmd), r.Method, r.URL.Path, sw.status)
	})
}

// clipCommand keeps a command's name short and on one line in the
// daemon's output.
func clipCommand(cmd string) string {
	cmd = strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, cmd)
	if len(cmd) > 80 {
		cmd = cmd[:80]
	}
	return cmd
}

// statusWriter remembers the status an answer was sent with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// headers sets the headers every answer carries: no sniffing, no framing,
// no referrer (which would carry the URL), and a policy that runs only
// the board's own script.
func (s *Server) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

// host refuses, on a server without a token, a Host that is not a
// loopback name: DNS rebinding.
func (s *Server) host(next http.Handler) http.Handler {
	if s.Token != "" || s.AnyHost {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			h = r.Host
		}
		if !Loopback(h) {
			writeError(w, http.StatusForbidden, "host "+r.Host+" is not loopback: open the board at http://127.0.0.1:PORT/ (a daemon on another address needs a token: set CRA_SERVE_TOKEN)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// auth refuses a request without the token, when one is set. A request
// with ?token=<token> gets the token as a cookie and is redirected to
// its URL without it.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.Token == "" {
		return next
	}
	want := []byte(s.Token)
	ok := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Has("token") && r.Method == http.MethodGet {
			if !ok(q.Get("token")) {
				writeError(w, http.StatusUnauthorized, "wrong token: use the one 'cra serve' printed (also in .clean_room/serve.token, or $CRA_SERVE_TOKEN)")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.Token, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q.Del("token")
			u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return
		}
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if c, err := r.Cookie(CookieName); err == nil && got == "" {
			got = c.Value
		}
		if !ok(got) {
			writeError(w, http.StatusUnauthorized, "missing or wrong token: send 'Authorization: Bearer <token>', or open /?token=<token> in the browser once (the token 'cra serve' printed, in .clean_room/serve.token)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a request that changes something and comes from a
// page of another origin (CSRF). Requests without Origin and
// Sec-Fetch-Site, as the CLI and curl send, are not a browser's.
func (s *Server) sameOrigin(next http.Handler) http.Handler {
	crossOrigin := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := crossOrigin.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross-origin request refused: Origin "+r.Header.Get("Origin")+" is not this board ("+r.Host+"); use the board's own page")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limit caps request bodies.
func (s *Server) limit(next http.Handler) http.Handler {
	n := s.MaxBody
	if n <= 0 {
		n = DefaultMaxBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the limit of %d bytes", n))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, n)
		next.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "pid": s.PID, "started": s.Started.UTC().Format(time.RFC3339)})
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if s.Logger != nil {
		s.Logger.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// apiError is the body of an error answer.
type apiError struct {
	Error    string         `json:"error"`
	Field    string         `json:"field,omitempty"`
	Fix      string         `json:"fix,omitempty"`
	Possible []board.Folder `json:"possible,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

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
