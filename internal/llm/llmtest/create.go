package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/lazyre"
)

// This file is Ollama's model management as cra uses it to deploy a LoRA
// adapter (seed 001 §16.1): blobs (HEAD and POST /api/blobs/:digest) and
// POST /api/create, as github.com/ollama/ollama v0.30.0's server answers
// them (server/routes.go HeadBlobHandler and CreateBlobHandler,
// server/create.go CreateHandler). The fake keeps blobs in memory and
// checks what the real server checks before it touches a file: the
// digest's form, the body's digest, a base model it has, one adapter,
// GGUF content. It converts nothing: a safetensors adapter is refused.

// CreateRequest is the body of POST /api/create, the fields of
// api.CreateRequest (v0.30.0) that a model built FROM another uses.
type CreateRequest struct {
	Model      string            `json:"model"`
	Name       string            `json:"name,omitempty"` // deprecated spelling of Model
	From       string            `json:"from,omitempty"`
	Files      map[string]string `json:"files,omitempty"`
	Adapters   map[string]string `json:"adapters,omitempty"`
	Template   string            `json:"template,omitempty"`
	System     string            `json:"system,omitempty"`
	Parameters map[string]any    `json:"parameters,omitempty"`
	Quantize   string            `json:"quantize,omitempty"`
	Stream     *bool             `json:"stream,omitempty"`
}

// digestPattern is the form of a blob digest (manifest.BlobsPath).
var digestPattern = lazyre.New(`^sha256[:-][0-9a-fA-F]{64}$`)

// Digest returns the digest Ollama names content by: "sha256:<hex>".
func Digest(content []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(content)) }

// PutBlob stores a blob as if it had been uploaded, and returns its digest.
func (s *Server) PutBlob(content []byte) string {
	d := Digest(content)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.blobs[d] = bytes.Clone(content)
	return d
}

// Blob returns the content of a blob and whether the server has it.
func (s *Server) Blob(digest string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[normalDigest(digest)]
	return bytes.Clone(b), ok
}

// SetPullable makes the named models ones the server lacks but can pull,
// as Ollama pulls a missing base from its registry before a create FROM
// it: such a create streams "pulling manifest", then the download's
// progress every pullTick for d (a multi-GB download; the same line
// again and again, after SetPullStalls), then lists the model and goes on. The wait ends early
// when the client goes away or the server closes; the model is then not
// pulled.
func (s *Server) SetPullable(d time.Duration, names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pullable == nil {
		s.pullable = map[string]time.Duration{}
	}
	for _, n := range names {
		s.pullable[fullName(n)] = d
	}
}

// SetPullStalls makes the pulls of SetPullable stall: they go on
// streaming their progress line every pullTick, as Ollama's do, but the
// bytes completed no longer grow.
func (s *Server) SetPullStalls(stalls bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pullStalls = stalls
}

// pullTick is how often a pull streams its progress, as Ollama's does
// many times a second.
const pullTick = 20 * time.Millisecond

// Created returns the create requests that succeeded, in order.
func (s *Server) Created() []CreateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CreateRequest(nil), s.created...)
}

// normalDigest accepts the "sha256-<hex>" spelling Ollama also accepts.
func normalDigest(d string) string {
	return strings.Replace(strings.ToLower(d), "sha256-", "sha256:", 1)
}

// fullName is a model name as /api/tags lists it: with ":latest" when it
// names no tag.
func fullName(name string) string {
	if i := strings.LastIndex(name, "/"); strings.Contains(name[i+1:], ":") {
		return name
	}
	return name + ":latest"
}

// hasModel reports whether name is a listed model (SetModels) or one
// created; the caller holds s.mu.
func (s *Server) hasModel(name string) bool {
	for _, m := range s.models {
		if fullName(m) == fullName(name) {
			return true
		}
	}
	return false
}

// serveBlob answers HEAD and POST /api/blobs/:digest.
func (s *Server) serveBlob(w http.ResponseWriter, req Request) {
	param := strings.TrimPrefix(req.Path, "/api/blobs/")
	if !digestPattern().MatchString(param) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid digest format"})
		return
	}
	digest := normalDigest(param)
	s.mu.Lock()
	_, have := s.blobs[digest]
	s.mu.Unlock()
	if req.Method == http.MethodHead {
		if !have {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("blob %q not found", param)})
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if have {
		w.WriteHeader(http.StatusOK)
		return
	}
	if got := Digest(req.Body); got != digest {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("digest mismatch, expected %q, got %q", param, got)})
		return
	}
	s.PutBlob(req.Body)
	w.WriteHeader(http.StatusCreated)
}

// serveCreate answers POST /api/create: it checks the request the way
// Ollama does, then streams the statuses of a create (or, with "stream":
// false, answers the last one) and lists the new model.
func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, req Request) {
	if len(req.Body) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "missing request body"})
		return
	}
	cr := req.Create
	if cr == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "llmtest: cannot decode the create request"})
		return
	}
	for _, d := range cr.Adapters {
		if d == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid digest format"})
			return
		}
	}
	name := cr.Model
	if name == "" {
		name = cr.Name
	}
	if !validName(name) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid model name"})
		return
	}
	stream := cr.Stream == nil || *cr.Stream
	enc := json.NewEncoder(w)
	pulled, ok := s.pull(w, r, enc, cr.From, stream)
	if !ok {
		return
	}
	statuses, status, errMsg := s.create(cr, name)
	statuses = append(pulled, statuses...)
	if errMsg != "" && (!stream || len(statuses) == 0) {
		writeJSON(w, status, map[string]string{"error": errMsg})
		return
	}
	if !stream {
		writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	for _, st := range statuses[len(pulled):] {
		enc.Encode(map[string]string{"status": st})
		flush(w)
	}
	if errMsg != "" {
		enc.Encode(map[string]string{"error": errMsg}) // after a status: Ollama keeps the 200
		return
	}
	enc.Encode(map[string]string{"status": "success"})
}

// pull pulls the base model from when the server lacks it and it is
// pullable (SetPullable), streaming its statuses when stream is set. It
// returns the statuses already sent, and false when the client went away
// or the server closed during the pull.
func (s *Server) pull(w http.ResponseWriter, r *http.Request, enc *json.Encoder, from string, stream bool) ([]string, bool) {
	s.mu.Lock()
	d, pullable := s.pullable[fullName(from)]
	pullable = pullable && from != "" && !s.hasModel(from)
	stalls := s.pullStalls
	s.mu.Unlock()
	if !pullable {
		return nil, true
	}
	statuses := []string{"pulling manifest"}
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc.Encode(map[string]string{"status": statuses[0]})
		flush(w)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(pullTick)
	defer tick.Stop()
	// The download is as big as d lets it finish: a tick's worth a tick.
	total := int64(d/pullTick+1) << 20
	for done, completed := false, int64(0); !done; {
		select {
		case <-t.C:
			done = true
		case <-tick.C:
			if stream {
				if !stalls || completed == 0 {
					completed += 1 << 20
				}
				enc.Encode(map[string]any{"status": "pulling " + fullName(from), "digest": "sha256:0", "total": total, "completed": completed})
				flush(w)
			}
		case <-r.Context().Done():
			return nil, false
		case <-s.closing:
			return nil, false
		}
	}
	s.mu.Lock()
	if !s.hasModel(from) {
		s.models = append(s.models, fullName(from))
	}
	s.mu.Unlock()
	statuses = append(statuses, "verifying sha256 digest")
	if stream {
		enc.Encode(map[string]string{"status": statuses[1]})
		flush(w)
	}
	return statuses, true
}

// create checks a create request and, when it is good, lists the model.
// It returns the statuses streamed before the end, and the error's status
// and message when it fails.
func (s *Server) create(cr *CreateRequest, name string) (statuses []string, status int, errMsg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case cr.From == "" && cr.Files == nil:
		return nil, http.StatusBadRequest, "neither 'from' or 'files' was specified"
	case cr.From == "":
		return nil, http.StatusBadRequest, "llmtest: only 'from' is supported, not 'files'"
	case !validName(cr.From):
		return nil, http.StatusBadRequest, "invalid model name"
	case !s.hasModel(cr.From):
		// Ollama pulls a base it lacks; the fake has no registry.
		return nil, http.StatusInternalServerError, "pull model manifest: file does not exist"
	}
	statuses = append(statuses, "using existing layer "+Digest([]byte(fullName(cr.From))))
	if cr.Adapters != nil {
		if len(cr.Adapters) == 0 {
			return statuses, http.StatusBadRequest, "unknown type"
		}
		if len(cr.Adapters) > 1 {
			return statuses, http.StatusBadRequest, "only one adapter is currently supported"
		}
		for file, d := range cr.Adapters {
			if strings.HasSuffix(file, ".safetensors") {
				return statuses, http.StatusBadRequest, "llmtest: converting a safetensors adapter is not supported: upload a GGUF adapter"
			}
			content, ok := s.blobs[normalDigest(d)]
			if !digestPattern().MatchString(d) {
				return statuses, http.StatusBadRequest, "invalid digest format"
			}
			if !ok {
				return statuses, http.StatusBadRequest, fmt.Sprintf("open /llmtest/models/blobs/%s: no such file or directory", strings.Replace(d, ":", "-", 1))
			}
			gguf := bytes.HasPrefix(content, []byte("GGUF"))
			if !strings.HasSuffix(file, ".gguf") && !gguf {
				return statuses, http.StatusBadRequest, "unknown type"
			}
			statuses = append(statuses, "parsing GGUF")
			if !gguf {
				return statuses, http.StatusBadRequest, "supplied file was not in GGUF format"
			}
			statuses = append(statuses, "creating new layer "+normalDigest(d))
		}
	}
	statuses = append(statuses, "writing manifest")
	s.created = append(s.created, *cr)
	if !s.hasModel(name) {
		s.models = append(s.models, fullName(name))
	}
	return statuses, 0, ""
}

// namePattern approximates Ollama's model names: [host/][namespace/]model[:tag].
// It compiles on first use: its counted repetitions make a large
// program, which every process of a test binary that links llmtest (a
// script's cra commands) would compile at start.
var namePattern = lazyre.New(`^([A-Za-z0-9][A-Za-z0-9._-]{0,349}/){0,2}[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,79})?$`)

func validName(name string) bool { return namePattern().MatchString(name) }

// CreateSummary is one line describing a model-management request, for
// scripts: "HEAD /api/blobs/sha256:… 404", "POST /api/create 200
// model=… from=… adapters=file=sha256:…".
func (r Request) CreateSummary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %d", r.Method, r.Path, r.Status)
	if c := r.Create; c != nil {
		fmt.Fprintf(&b, " model=%s from=%s", c.Model, c.From)
		var files []string
		for f, d := range c.Adapters {
			files = append(files, f+"="+d)
		}
		sort.Strings(files)
		if len(files) > 0 {
			fmt.Fprintf(&b, " adapters=%s", strings.Join(files, ","))
		}
		if c.Stream != nil {
			fmt.Fprintf(&b, " stream=%t", *c.Stream)
		}
	}
	if r.Method == http.MethodPost && strings.HasPrefix(r.Path, "/api/blobs/") {
		fmt.Fprintf(&b, " bytes=%d", len(r.Body))
	}
	return b.String()
}

// Manages reports whether the request is one of model management: blobs
// or create.
func (r Request) Manages() bool {
	return strings.HasPrefix(r.Path, "/api/blobs/") || r.Path == "/api/create"
}
