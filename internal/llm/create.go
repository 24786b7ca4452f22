package llm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

// ErrNeedsOllama is returned when a LoRA adapter is to be deployed on a
// server that is not Ollama: an OpenAI-compatible server has no API to
// create a model (seed 001 §16.1: each LoRA is an Ollama model tag).
var ErrNeedsOllama = errors.New("adapters need Ollama")

// Deployment is what CreateAdapterModel did.
type Deployment struct {
	// Digest is the adapter blob's digest, "sha256:<hex>".
	Digest string
	// Uploaded is false when the server had the blob already.
	Uploaded bool
	// Statuses are the progress lines the server streamed.
	Statuses []string
}

// CreateAdapterModel deploys a GGUF LoRA adapter as an Ollama model (seed
// 001 §16.1): it uploads the file at path as a blob unless the server has
// it (HEAD /api/blobs/:digest, then POST), then creates tag FROM
// base.Model with the adapter (POST /api/create). base is the resolved
// coding or reasoning model whose server receives it. progress, when not
// nil, gets each status the server streams, once where it repeats, and a
// download's share at every tenth.
func CreateAdapterModel(ctx context.Context, base ModelConfig, tag, path string, progress func(string)) (Deployment, error) {
	if base.Provider != ProviderOllama {
		return Deployment{}, fmt.Errorf("%w: %s is an OpenAI-compatible server, which cannot create a model from a LoRA; serve the %s model from Ollama (models.provider = \"ollama\") to deploy adapters",
			ErrNeedsOllama, base, base.Role)
	}
	o, err := NewOllama(base)
	if err != nil {
		return Deployment{}, err
	}
	digest, err := FileDigest(path)
	if err != nil {
		return Deployment{}, err
	}
	dep := Deployment{Digest: digest}
	have, err := o.HasBlob(ctx, digest)
	if err != nil {
		return dep, err
	}
	if !have {
		if err := o.CreateBlob(ctx, digest, func() (io.ReadCloser, error) { return os.Open(path) }); err != nil {
			return dep, err
		}
		dep.Uploaded = true
	}
	last := ""
	err = o.Create(ctx, &api.CreateRequest{Model: tag, From: base.Model, Adapters: map[string]string{filepath.Base(path): digest}},
		func(p api.ProgressResponse) {
			// A pull repeats its status with every chunk: each once,
			// and a download's share at every tenth.
			if n := len(dep.Statuses); n == 0 || dep.Statuses[n-1] != p.Status {
				dep.Statuses = append(dep.Statuses, p.Status)
			}
			if line := progressLine(p); progress != nil && line != last {
				last = line
				progress(line)
			}
		})
	return dep, err
}

// progressLine is what a person watching a create reads of a progress
// line: its status, and for a download how far it is, in tenths so that a
// line is new only when the download moved by a tenth ("pulling
// qwen3:4b 30% (1.4 GB of 4.7 GB)").
func progressLine(p api.ProgressResponse) string {
	if p.Total <= 0 || p.Completed < 0 {
		return p.Status
	}
	tenth := min(p.Completed*10/p.Total, 10)
	return fmt.Sprintf("%s %d%% (%s of %s)", p.Status, tenth*10, size(tenth*p.Total/10), size(p.Total))
}

// size writes n bytes in the decimal unit Ollama's own client shows.
func size(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fGB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fMB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fkB", float64(n)/1e3)
	}
	return fmt.Sprintf("%dB", n)
}

// FileDigest returns the digest Ollama names a file's content by:
// "sha256:<hex>".
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}

// HasBlob reports whether the server holds the blob (HEAD
// /api/blobs/:digest: 200 or 404), with the model's retries.
func (o *Ollama) HasBlob(ctx context.Context, digest string) (bool, error) {
	key, err := apiKey(o.model)
	if err != nil {
		return false, &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	var have bool
	_, err = o.engine(key).run(ctx, func(ctx context.Context, hc *http.Client) (Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, o.base.JoinPath("/api/blobs", digest).String(), nil)
		if err != nil {
			return Response{}, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return Response{}, err
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			have = true
		case http.StatusNotFound:
			have = false
		default:
			return Response{}, api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status}
		}
		return Response{}, nil
	})
	return have, err
}

// CreateBlob uploads a blob (POST /api/blobs/:digest), with the model's
// retries: open is called for each attempt. The server checks the
// content against digest.
func (o *Ollama) CreateBlob(ctx context.Context, digest string, open func() (io.ReadCloser, error)) error {
	key, err := apiKey(o.model)
	if err != nil {
		return &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	_, err = o.engine(key).run(ctx, func(ctx context.Context, hc *http.Client) (Response, error) {
		body, err := open()
		if err != nil {
			return Response{}, &localError{err}
		}
		defer body.Close()
		return Response{}, api.NewClient(o.base, hc).CreateBlob(ctx, digest, body)
	})
	var le *localError
	if errors.As(err, &le) {
		return le.err
	}
	return err
}

// errStalled is the cause with which Create gives up a create that
// streams nothing for models.timeout.
var errStalled = errors.New("stalled")

// localError is a failure on this side of an attempt (the file would not
// open): not the server's, and not retried.
type localError struct{ err error }

func (e *localError) Error() string { return e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

// progressWatch tells a create's progress from its repetition. Ollama
// streams a pull's line many times a second whether or not bytes arrive
// (and retries a stalled part for ever), so a line alone is no sign of
// life: a new status or digest, or more bytes completed, is.
type progressWatch struct {
	status, digest string
	completed      int64
}

// What a progress line says of the create (progressWatch.see).
const (
	progressSame     = iota // nothing new: the silence goes on
	progressAdvanced        // a new status or digest, or more bytes
	progressLocal           // verifying the download: disk work that says nothing until it ends
)

func (w *progressWatch) see(p api.ProgressResponse) int {
	advanced := p.Status != w.status || p.Digest != w.digest || p.Completed > w.completed
	if p.Digest != w.digest {
		w.completed = p.Completed // another layer counts from its own start
	} else {
		w.completed = max(w.completed, p.Completed) // a retried part counts again from lower
	}
	w.status, w.digest = p.Status, p.Digest
	switch {
	case !advanced:
		return progressSame
	case strings.HasPrefix(p.Status, "verifying"):
		return progressLocal
	}
	return progressAdvanced
}

// Create creates a model (POST /api/create), in one attempt: a create
// that failed is for the user to look at, not to repeat. progress gets
// each progress line the server streams. models.timeout does not bound the
// whole create: Ollama first pulls a base model it lacks, gigabytes that
// can take far longer than any reply. It bounds the silence instead: a
// pull streams its progress all the time, and a create that streams
// nothing new for that long has stalled (a register left running
// unattended would otherwise wait for ever, holding its locks): the same
// line again is nothing new (progressWatch), and the local check of a
// download's digest is not bounded.
func (o *Ollama) Create(ctx context.Context, req *api.CreateRequest, progress func(api.ProgressResponse)) error {
	key, err := apiKey(o.model)
	if err != nil {
		return &CallError{Model: o.model, Unavailable: true, Err: err}
	}
	ex := &exchange{}
	base := o.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{Transport: &recordingTransport{base: base, ex: ex, apiKey: key}}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var idle *time.Timer
	if o.model.Timeout > 0 {
		idle = time.AfterFunc(o.model.Timeout, func() { cancel(errStalled) })
		defer idle.Stop()
	}
	var watch progressWatch
	err = api.NewClient(o.base, hc).Create(cctx, req, func(p api.ProgressResponse) error {
		if idle != nil {
			switch watch.see(p) {
			case progressAdvanced:
				idle.Reset(o.model.Timeout)
			case progressLocal:
				idle.Stop()
			}
		}
		if progress != nil && p.Status != "" {
			progress(p)
		}
		return nil
	})
	if err == nil {
		return nil
	}
	if errors.Is(context.Cause(cctx), errStalled) && ctx.Err() == nil {
		return &CallError{Model: o.model, Attempts: 1, Unavailable: true,
			Err: fmt.Errorf("create model %s: the server sent nothing for %s (models.timeout) and seems stalled: "+
				"run 'ollama pull %s' to watch the base model's download, or raise models.timeout, then try again", req.Model, o.model.Timeout, req.From)}
	}
	sent, status, _, _ := ex.snapshot()
	ce := &CallError{Model: o.model, Attempts: 1, Err: fmt.Errorf("create model %s: %s", req.Model, ollamaMessage(err))}
	if !sent || status == 0 || status >= 500 && status != http.StatusInternalServerError {
		ce.Unavailable = ctx.Err() == nil
		ce.Err = fmt.Errorf("create model %s: %w", req.Model, err)
	}
	return ce
}
