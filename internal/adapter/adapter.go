// Package adapter deploys the LoRA adapters of the self-improvement loop
// (seed 001 §2 Phase 4, §16) and keeps them honest:
//
//   - Register creates an Ollama model from a GGUF adapter FROM the
//     configured coding or reasoning model (§16.1: each LoRA is a model
//     tag), and records it in the raw adapter_registry (§4.6);
//   - Evaluate runs the adapter's stage on a dataset's validation split,
//     with the model the stage runs on now and with the adapter, and
//     stores both scores in adapter_registry.eval_metrics;
//   - Activate, Deactivate and Rollback maintain the curated
//     adapter_metadata (§4.5, §16.3), which the model router reads
//     (override → active adapter → role). One adapter per stage is
//     active; Activate refuses an adapter whose evaluation did not beat
//     the model it replaces, unless forced;
//   - Restore gives a new index back the active adapters the registry
//     records as deployed.
//
// The adapter_metadata writes take the index lock and open the curated
// database read-write for the write alone, as the indexer does.
package adapter

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/workspace"
)

// ErrNotGGUF matches (errors.Is) an adapter file Register refuses: not
// GGUF, which Ollama needs to apply a LoRA to a Qwen model.
var ErrNotGGUF = errors.New("adapter is not a GGUF file")

// FormatError is an adapter file that is not GGUF: a safetensors adapter
// (which llama.cpp converts) or something else, named by its first bytes.
type FormatError struct {
	Path string
	// Safetensors is set for a safetensors adapter (a file, or a trainer's
	// output directory holding one).
	Safetensors bool
	// Head is the file's first bytes.
	Head []byte
}

func (e *FormatError) Error() string {
	if e.Safetensors {
		dir := e.Path
		if st, err := os.Stat(e.Path); err == nil && !st.IsDir() {
			dir = filepath.Dir(e.Path)
		}
		return fmt.Sprintf("%s is a safetensors adapter, and Ollama applies a LoRA to a Qwen model only from GGUF: "+
			"convert it with llama.cpp's convert_lora_to_gguf.py, then register the .gguf:\n"+
			"  python convert_lora_to_gguf.py --base <the base model's Hugging Face directory> --outtype f16 --outfile adapter.gguf %s\n"+
			"  cra adapters register ... --adapter adapter.gguf", e.Path, dir)
	}
	return fmt.Sprintf("%s is not a GGUF adapter: it begins with %s, not \"GGUF\" (47 47 55 46); pass the .gguf file the trainer or llama.cpp's convert_lora_to_gguf.py wrote",
		e.Path, describeHead(e.Head))
}

// Is makes a FormatError match ErrNotGGUF.
func (e *FormatError) Is(target error) bool { return target == ErrNotGGUF }

// describeHead names bytes for a message: hex, and the printable text.
func describeHead(b []byte) string {
	if len(b) == 0 {
		return "nothing (the file is empty)"
	}
	hex := make([]string, len(b))
	text := make([]byte, len(b))
	for i, c := range b {
		hex[i] = fmt.Sprintf("%02x", c)
		text[i] = '.'
		if c >= 0x20 && c < 0x7f {
			text[i] = c
		}
	}
	return fmt.Sprintf("%s (%q)", strings.Join(hex, " "), text)
}

// ggufMagic begins every GGUF file.
var ggufMagic = []byte("GGUF")

// headBytes is how many bytes a refusal names.
const headBytes = 8

// safetensorsNames are the adapter files trainers write: PEFT's
// adapter_model.safetensors, mlx-lm's adapters.safetensors.
var safetensorsNames = []string{"adapter_model.safetensors", "adapters.safetensors"}

// Sniff checks that path is a GGUF adapter and returns the file to
// upload. A directory is a trainer's output: one .gguf file in it is the
// adapter; its safetensors adapter is a FormatError. A file must begin
// with the GGUF magic; a safetensors file (by name, or by its header: a
// little-endian length, then a JSON object) or any other file is a
// FormatError naming its first bytes. A pipe or a device is refused.
func Sniff(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("adapter: %w", err)
	}
	if st.IsDir() {
		ggufs, _ := filepath.Glob(filepath.Join(path, "*.gguf"))
		if len(ggufs) == 1 {
			return Sniff(ggufs[0])
		}
		for _, name := range safetensorsNames {
			if _, err := os.Stat(filepath.Join(path, name)); err == nil {
				return "", &FormatError{Path: filepath.Join(path, name), Safetensors: true}
			}
		}
		if len(ggufs) > 1 {
			return "", fmt.Errorf("adapter directory %s holds %d .gguf files: pass the adapter's file itself", path, len(ggufs))
		}
		return "", fmt.Errorf("adapter directory %s holds no .gguf file and no %s: pass the adapter's .gguf file", path, strings.Join(safetensorsNames, " or "))
	}
	if !st.Mode().IsRegular() {
		// A pipe would block the open, or be read empty by the upload.
		kind := "a device or a socket"
		if st.Mode()&os.ModeNamedPipe != 0 {
			kind = "a pipe; <(…) makes one"
		}
		return "", fmt.Errorf("adapter %s is not a regular file (%s): pass the .gguf file itself", path, kind)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("adapter: %w", err)
	}
	defer f.Close()
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("adapter: read %s: %w", path, err)
	}
	head = head[:n]
	if bytes.HasPrefix(head, ggufMagic) {
		return path, nil
	}
	if strings.HasSuffix(path, ".safetensors") || isSafetensors(head) {
		return "", &FormatError{Path: path, Safetensors: true, Head: head[:min(n, headBytes)]}
	}
	return "", &FormatError{Path: path, Head: head[:min(n, headBytes)]}
}

// isSafetensors recognises a safetensors header: an 8-byte little-endian
// length, then the JSON header's opening brace.
func isSafetensors(head []byte) bool {
	if len(head) < 9 || head[8] != '{' {
		return false
	}
	var size uint64
	for i := 7; i >= 0; i-- {
		size = size<<8 | uint64(head[i])
	}
	return size > 1 && size < 100<<20
}

// RegisterOptions are the inputs of Register.
type RegisterOptions struct {
	Stage     string // one of dataset.Stages
	BaseModel string // dataset.Coding or dataset.Reasoning; must be the stage's
	Path      string // the GGUF adapter, or a trainer's output directory holding it
	// Tag is the new model's tag; "" makes one from the base model's tag,
	// the stage and the next version: "qwen3:4b-scope-v2".
	Tag string
	// DatasetID is the training_datasets row it was trained on; 0 for an
	// adapter trained outside cra.
	DatasetID int64
	// Progress gets the statuses the server streams; nil discards them.
	Progress func(string)
	// Waiting, when not nil, is called before Register waits for another
	// register to finish: of the repository, or on the same Ollama
	// server from any repository of this user; once, however many
	// turns it waits for.
	Waiting func()
}

// Registered is what Register did.
type Registered struct {
	Adapter    corpus.AdapterRecord
	From       llm.ModelConfig // the base model the adapter was applied to
	File       string          // the file uploaded
	Deployment llm.Deployment
}

// Register creates the adapter's Ollama model FROM the configured base
// model and records it in adapter_registry, inactive: Activate deploys
// it. Nothing is recorded when Ollama refuses the model. The tag never
// names a model the server has: Ollama's create would replace it. Only
// ctx bounds the create, which pulls a base model the server lacks first.
// The registers of a repository take turns (registerLock) from choosing
// the tag to recording it, so that two at once never choose one tag.
func Register(ctx context.Context, ws *workspace.Workspace, opts RegisterOptions) (*Registered, error) {
	if err := dataset.CheckStage(opts.Stage); err != nil {
		return nil, err
	}
	if want := dataset.BaseModel(opts.Stage); opts.BaseModel != want {
		return nil, fmt.Errorf("stage %s trains the %s model, not %q (seed 001 §3.4): pass --base-model %s", opts.Stage, want, opts.BaseModel, want)
	}
	file, err := Sniff(opts.Path)
	if err != nil {
		return nil, err
	}
	if err := preflight.CheckModels(ws.Config); err != nil {
		return nil, err
	}
	raw, err := ws.Corpus(ctx)
	if err != nil {
		return nil, err
	}
	if opts.DatasetID != 0 {
		ds, err := raw.Dataset(ctx, opts.DatasetID)
		if err != nil {
			return nil, fmt.Errorf("%w: list the datasets with 'cra curate-data' or 'cra bootstrap', or leave --dataset out", err)
		}
		if ds.Stage != opts.Stage {
			return nil, fmt.Errorf("training dataset %d is of stage %s, not %s", ds.ID, ds.Stage, opts.Stage)
		}
	}
	from, err := llm.NewRouter(ws.Config, nil).Resolve(ctx, llm.Role(opts.BaseModel), "")
	if err != nil {
		return nil, err
	}
	waiting := opts.Waiting
	if waiting != nil {
		waiting = sync.OnceFunc(waiting) // the repository's turn, then the server's: one wait to the user
	}
	lk, err := lockRegister(ctx, ws.StateDir, waiting)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	if from.Provider == llm.ProviderOllama {
		// The server's models are shared by every repository that uses
		// it: registers of two repositories take turns too.
		slk, err := lockServer(ctx, from.BaseURL, waiting)
		if err != nil {
			return nil, err
		}
		defer slk.Close()
	}
	existing, err := raw.Adapters(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("read adapter_registry: %w", err)
	}
	// Ollama's create replaces a model of the same name, so the tag must
	// name no model of the server either: --tag naming the base model
	// would put the adapter under every stage of its role.
	var served []string
	if from.Provider == llm.ProviderOllama {
		if served, err = llm.ListModels(ctx, from); err != nil {
			return nil, fmt.Errorf("list the models of the server: %w", err)
		}
	}
	tag := opts.Tag
	taken := map[string]bool{}
	version := 1
	for _, a := range existing {
		taken[a.ModelTag] = true
		if a.Stage == opts.Stage {
			version++
		}
	}
	free := func(t string) bool { return !taken[t] && !llm.HasModel(served, t) }
	if tag == "" {
		tag = DefaultTag(from.Model, opts.Stage, version)
		for v := version + 1; !free(tag); v++ {
			tag = DefaultTag(from.Model, opts.Stage, v)
		}
	} else if taken[tag] {
		return nil, fmt.Errorf("adapter tag %s is registered already: pass another --tag, or leave it out for %s", tag, DefaultTag(from.Model, opts.Stage, version))
	} else if llm.HasModel(served, tag) {
		return nil, fmt.Errorf("the server has a model named %s already, which creating the adapter under that tag would replace: pass another --tag, or leave it out for a new one", tag)
	}
	dep, err := llm.CreateAdapterModel(ctx, from, tag, file, opts.Progress)
	if err != nil && ctx.Err() != nil {
		// The server may finish a create whose client went away.
		return nil, fmt.Errorf("register adapter %s: interrupted (%w) before the server had created it, and nothing was recorded: "+
			"if 'ollama list' shows %s, remove it with 'ollama rm %s', then register the adapter again", tag, ctx.Err(), tag, tag)
	}
	if err != nil {
		return nil, fmt.Errorf("register adapter %s: %w", tag, err)
	}
	rec := corpus.AdapterRecord{DatasetID: opts.DatasetID, Stage: opts.Stage, BaseModel: opts.BaseModel, ModelTag: tag}
	if rec.ID, err = raw.RecordAdapter(ctx, rec); err != nil {
		return nil, fmt.Errorf("%w: the Ollama model %s was created but not recorded: run 'ollama rm %s', then register the adapter again", err, tag, tag)
	}
	if rec, err = raw.AdapterByTag(ctx, tag); err != nil {
		return nil, err
	}
	return &Registered{Adapter: rec, From: from, File: file, Deployment: dep}, nil
}

// lockRegister takes the register lock of stateDir (adapters.lock, whose
// flock(2) a Register holds from choosing its tag until it is recorded), waiting for another
// register until ctx ends; waiting, when not nil, is called before the
// wait. Closing the returned file releases the lock.
func lockRegister(ctx context.Context, stateDir string, waiting func()) (*os.File, error) {
	f, err := lockWaiting(ctx, statedir.At(stateDir).AdaptersLock(), waiting)
	if err != nil {
		return nil, fmt.Errorf("lock the adapter registry: %w", err)
	}
	return f, nil
}

// lockServer takes the register lock of the Ollama server at baseURL, a
// file of the user's in the system's temporary directory named after
// the URL, after the repository's (always in that order): registers of
// any repository on one machine take turns on one server from choosing
// the tag until the model is created and recorded.
func lockServer(ctx context.Context, baseURL string, waiting func()) (*os.File, error) {
	dir, err := privateDir(filepath.Join(os.TempDir(), fmt.Sprintf("cra-%d", os.Getuid())))
	if err != nil {
		return nil, fmt.Errorf("lock the server's adapter tags: %w", err)
	}
	sum := sha256.Sum256([]byte(serverKey(baseURL)))
	path := filepath.Join(dir, "register-"+hex.EncodeToString(sum[:8])+".lock")
	f, err := lockWaiting(ctx, path, waiting)
	if err != nil {
		return nil, fmt.Errorf("lock the server's adapter tags (%s): %w", path, err)
	}
	return f, nil
}

// serverKey names the server at baseURL however it is spelled: scheme
// and host in lower case, the scheme's port when none is given, and every
// loopback name (localhost, 127.0.0.0/8, ::1, 0.0.0.0) as one, since
// http://localhost:11434 and http://127.0.0.1:11434/ are one Ollama.
func serverKey(baseURL string) string {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || u.Host == "" {
		return strings.TrimRight(baseURL, "/")
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		host = "loopback"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + strings.TrimRight(u.EscapedPath(), "/")
}

// privateDir makes dir, or checks the one there, as a directory of this
// user's that no one else can write: in a shared temporary directory
// another user could otherwise make it first and hold its locks.
func privateDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w (set TMPDIR to a writable directory)", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByMe(fi) {
		return "", fmt.Errorf("%s is not a directory only you can write (mode %v): remove it, or set TMPDIR to another directory", dir, fi.Mode())
	}
	return dir, nil
}

// lockWaiting takes an exclusive flock on path, calling waiting (when not
// nil) before it waits for the holder, until ctx ends.
func lockWaiting(ctx context.Context, path string, waiting func()) (*os.File, error) {
	f, ok, err := flock.TryLock(path)
	if err == nil && !ok {
		if waiting != nil {
			waiting()
		}
		f, err = flock.Lock(ctx, path, true)
	}
	return f, err
}

// DefaultTag is the tag Register gives an adapter: the base model's tag
// without ":latest", the stage and the version, "qwen3:4b-scope-v2".
func DefaultTag(base, stage string, version int) string {
	return fmt.Sprintf("%s-%s-v%d", strings.TrimSuffix(base, ":latest"), stage, version)
}
