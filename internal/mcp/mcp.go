// Package mcp serves one repository's index, retrieval and knowledge store
// to any coding agent over the Model Context Protocol (issue 31), on the
// official Go SDK: 'cra mcp' over stdio, 'cra serve' over streamable HTTP.
//
// The tools read what cra's own commands read, through the same
// functions, and call no model:
//
//   - localize: the files a task needs, ranked, with each one's reasons
//     (retrieve.Pipeline.Localize: what 'cra retrieve --deterministic'
//     ranks and the retrieval harness scores);
//   - context: the context package for a task within a token budget, the
//     Markdown 'cra retrieve --deterministic' prints (Package.Markdown);
//   - symbols: definitions by name or pattern, with signature and
//     docstring ('cra query symbols');
//   - file_context: everything the index knows of a file ('cra query
//     context');
//   - overview: the repository's shape ('cra query overview');
//   - knowledge: the knowledge documents for a task, the PROJECT
//     KNOWLEDGE section of a run's prompt (knowledge.Load); the documents
//     themselves are resources, cra://knowledge/<path>.
//
// With Options.Board it serves the board too (board.go): task_list,
// task_show, and task_add for a person's agent. A server started by a
// board run's agent (Options.TaskID, from the run's environment) has
// report and ask_person (run.go): they send through the run's token to
// the endpoint of the run's starter, which takes reports on the run's own
// task only and never verified or retry (DESIGN.md, "Trust"); such a
// server adds no tasks. Options.Files makes it read the run's working
// copy against the repository's index.
//
// Every call that reads the index first compares the files with it
// (index.Watch: in full with git at least every 30 seconds and whenever
// a kept stat moved, from memory otherwise) and brings it up to date when a few files
// changed and the state directory is writable; a sandboxed run, which
// may not write .clean_room/, reads the index as it stands, and the result
// names the files changed since (IndexState).
//
// Bounds (DESIGN.md principle 6): every input is checked against its
// limits and every output is capped (top N, token budget, characters).
// A malformed call is a JSON-RPC invalid-params error naming the field and
// the fix; a tool that fails returns a tool error, and one that panics is
// recovered: no call takes the server down. Each call appends an
// [event:mcp] line to the world log with the tool, a summary and the
// caller's run when known.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/workspace"
)

// Defaults of Options' bounds.
const (
	// DefaultRefreshFiles is the most changed files a call re-indexes
	// before it answers; more, and it answers from the index as it stands
	// and says to run 'cra index'.
	DefaultRefreshFiles = 200
	// DefaultRefreshTimeout bounds that re-indexing.
	DefaultRefreshTimeout = 30 * time.Second
)

// Options are the optional settings of New.
type Options struct {
	// TaskID and Run name the board run the server serves (CRA_TASK_ID and
	// CRA_RUN_ID of the agent that started it); each call's world-log
	// line carries them. Empty when a person's agent started it. With a
	// TaskID the server has the report and ask_person tools, which send
	// through ReportURL with RunToken (CRA_REPORT_URL, CRA_RUN_TOKEN):
	// the processor's endpoint checks that a report is the run's own.
	TaskID    string
	Run       string
	ReportURL string
	RunToken  string
	// Files is the directory whose files the tools read and compare with
	// the index: a board run's working copy (a clone of the repository),
	// where the agent's edits are. "" is the repository itself. A server
	// of another directory never re-indexes: the index is the
	// repository's.
	Files string
	// Board gives the server the board's tools (task_list, task_show,
	// task_add); nil leaves them out. 'cra serve' passes its fleet, 'cra
	// mcp' the running daemon's client or a fleet in process.
	Board fleetapi.Ops
	// ReadOnly never writes the state directory: the index is read as it
	// stands. New sets it when the state directory refuses a write (an
	// agent's sandboxed run).
	ReadOnly bool
	// RefreshFiles and RefreshTimeout bound the re-indexing a call does
	// first; 0 means DefaultRefreshFiles and DefaultRefreshTimeout.
	RefreshFiles   int
	RefreshTimeout time.Duration
	// Version is cra's version, sent to clients; "" is "dev".
	Version string
	// Logger gets diagnostics: a recovered panic, a world-log line that
	// could not be written. nil discards them.
	Logger *slog.Logger
}

// Server is the MCP server of one repository. It is safe for concurrent
// use: stdio serves one client, HTTP many.
type Server struct {
	root     string // the repository whose index the tools read
	files    string // the directory whose files they read: root or Options.Files
	stateDir string
	cfg      *config.Config
	opts     Options
	sdk      *sdk.Server

	// mu serialises the index check and refresh, so concurrent calls
	// re-index once.
	mu      sync.Mutex
	ws      *workspace.Workspace
	builder *index.Builder // refreshes the index
	watch   *index.Watch   // compares the files with it

	// resMu guards resources, the knowledge documents served, by URI,
	// with their title and description.
	resMu     sync.Mutex
	resources map[string]string
}

// New opens the repository at repo (its root, or a directory inside it)
// and returns its server. The repository must be indexed: a call to an
// unindexed one fails naming 'cra index'. The config is read for the
// index bounds and the stages; a repository without one works.
func New(ctx context.Context, repo string, opts Options) (*Server, error) {
	// The index alone is what the tools need: a broken config.toml costs
	// its bounds and stages (a warning), not the server.
	ws, err := workspace.Open(ctx, repo, workspace.Options{NoConfig: true, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	if opts.RefreshFiles <= 0 {
		opts.RefreshFiles = DefaultRefreshFiles
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = DefaultRefreshTimeout
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if !opts.ReadOnly && !writable(ws.StateDir) {
		opts.ReadOnly = true
	}
	cfg, err := workspace.LoadConfig(ws.Root)
	if err != nil {
		opts.Logger.Warn("config not read: the defaults apply", "err", err)
		cfg = nil
	}
	files := ws.Root
	if opts.Files != "" {
		if files, err = workspace.Dir(opts.Files); err != nil {
			ws.Close()
			return nil, err
		}
	}
	b := index.NewBuilderIn(ws.StateDir)
	b.ApplyConfig(cfg)
	b.LockWait = refreshLockWait
	s := &Server{root: ws.Root, files: files, stateDir: ws.StateDir, cfg: cfg, opts: opts, ws: ws, builder: b, watch: b.Watch(ws.Root, files)}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "cra", Title: "cra: ranked, budgeted context from a local index", Version: opts.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: opts.Logger, Capabilities: &sdk.ServerCapabilities{}})
	s.addTools()
	s.addKnowledge()
	if opts.Board != nil {
		s.addBoard()
	}
	if opts.TaskID != "" {
		s.addRun()
	}
	return s, nil
}

// instructions tell a client's model when to use the server.
const instructions = `cra has indexed this repository (symbols, imports, git co-change, history) and ranks its files for a task without a model.
Start a task with localize (which files, and why) or context (the relevant code itself, within a token budget), then use symbols and file_context to look further.
overview describes the repository; knowledge returns the project's conventions and lessons that apply to a task.
Results say whether the index was fresh; when it is stale they name the files changed since.`

// Root is the repository's absolute path.
func (s *Server) Root() string { return s.root }

// Run serves one client over t (sdk.StdioTransport for 'cra mcp') until
// the client leaves or ctx ends.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	err := s.sdk.Run(ctx, t)
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Serve serves one client over in and out, newline-delimited JSON-RPC
// as the stdio transport has it ('cra mcp'), until in ends and every call
// read is answered, or ctx ends.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	d := newDrain(ctx, in, out)
	return s.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(d), Writer: d})
}

// SessionTimeout closes an HTTP client's session after that long without
// a request: a daemon lives for days, and a client that never ends its
// session must not hold memory for as long.
const SessionTimeout = 30 * time.Minute

// Handler serves MCP over streamable HTTP, for 'cra serve' to mount at
// /mcp behind its own access rules.
func (s *Server) Handler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk },
		&sdk.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: SessionTimeout})
}

// HTTP is a daemon's MCP server ('cra serve' at /mcp): made on its first
// request, so that a daemon nobody asks over MCP opens nothing for it,
// and made again on the next request when making it failed. It is safe
// for concurrent use.
type HTTP struct {
	ctx  context.Context
	repo string
	opts Options

	mu sync.Mutex
	s  *Server
	h  http.Handler
}

// NewHTTP returns the HTTP server of the repository at repo, made with
// New(ctx, repo, opts) on its first request.
func NewHTTP(ctx context.Context, repo string, opts Options) *HTTP {
	return &HTTP{ctx: ctx, repo: repo, opts: opts}
}

// ServeHTTP answers one request of streamable HTTP.
func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.h == nil {
		s, err := New(h.ctx, h.repo, h.opts)
		if err != nil {
			h.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": "the MCP server cannot start (the next request tries again): " + err.Error()})
			return
		}
		h.s, h.h = s, s.Handler()
	}
	handler := h.h
	h.mu.Unlock()
	handler.ServeHTTP(w, r)
}

// Close releases the server's databases, if it was made.
func (h *HTTP) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil {
		return nil
	}
	return h.s.Close()
}

// Close releases the repository's databases.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ws.Close()
}

// writable reports whether a file can be made in dir: false in a
// sandbox that grants the state directory no writes (Landlock answers
// EACCES), and for a state directory that does not exist yet.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".mcp-probe-*")
	if err != nil {
		return false
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return true
}

// rel is relInside for the files the server reads: an absolute path may
// name a file of the working copy or of the repository itself, both
// being the same relative path.
func (s *Server) rel(p string) (string, error) {
	rel, err := relInside(s.files, p)
	if err != nil && s.files != s.root && filepath.IsAbs(filepath.FromSlash(p)) {
		if r, err2 := relInside(s.root, p); err2 == nil {
			return r, nil
		}
	}
	return rel, err
}

// relInside resolves a path a caller gave to a slash-separated path
// relative to the repository root, refusing one that leads outside it:
// absolute paths must lie under the root, and ".." may not climb above
// it.
func relInside(root, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty")
	}
	native := filepath.FromSlash(p)
	if filepath.IsAbs(native) {
		rel, err := filepath.Rel(root, filepath.Clean(native))
		if err != nil {
			return "", fmt.Errorf("%q is not inside the repository %s", p, root)
		}
		native = rel
	}
	rel := filepath.ToSlash(filepath.Clean(native))
	if rel == "." || rel == ".." || len(rel) > 2 && rel[:3] == "../" || filepath.IsAbs(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("%q is not inside the repository %s", p, root)
	}
	return rel, nil
}
