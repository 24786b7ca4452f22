// Package workspace opens the state of one repository: its root, its
// .clean_room/ directory, its config, the curated index (read-only, as seed
// 001 §4.3 has every reader), the raw database, the LLM gateway that
// resolves and records model calls, and the world log.
//
// A command opens one Workspace per call and closes it on return; the
// daemon holds one for its lifetime. Nothing is opened until it is first
// asked for, so a command pays only for what it uses, and each part is
// opened once: the checks of seed 001 §14 (models configured, repository
// indexed) run on that first use and their errors are the command's.
//
// The errors a caller may meet, matched with errors.Is:
//
//   - ErrNotInitialized: the config has no [models] (run 'cra init');
//   - ErrNotIndexed: the repository is not indexed, or its index is empty
//     (run 'cra index');
//   - ErrDamaged: a database file SQLite cannot read (the message says
//     which, and what to do with it).
//
// Their text is what a user reads; internal/cli maps them to exit codes.
package workspace

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/world"
)

// The errors of opening a workspace's parts; see the package doc.
var (
	ErrNotInitialized = config.ErrNoModels
	ErrNotIndexed     = kb.ErrNotIndexed
	ErrDamaged        = store.ErrDamaged
)

// Damaged reports whether err says a database file is damaged, whether it
// surfaced at open (ErrDamaged) or in a later query (SQLite's
// "malformed"): the caller then names the fix.
func Damaged(err error) bool { return store.IsDamaged(err) }

// Options are the optional settings of Open.
type Options struct {
	// Exact takes dir as the repository root. Without it, the root is the
	// nearest ancestor of dir (itself included) that holds .clean_room/,
	// or dir when none does, so a command works from any subdirectory.
	Exact bool
	// NoConfig leaves the config unread (Config stays nil), for readers of
	// the index alone: a broken config.toml does not stop them.
	NoConfig bool
	// Logger gets the diagnostics of the model router and clients; nil
	// discards them.
	Logger *slog.Logger
}

// Workspace is one repository's state. Its methods are safe for
// concurrent use.
type Workspace struct {
	// Root is the repository's absolute path.
	Root string
	// StateDir is Root's .clean_room/.
	StateDir string
	// Config is the loaded .clean_room/config.toml; nil when there is none.
	Config *config.Config

	logger  *slog.Logger
	factory *store.Factory

	mu      sync.Mutex
	curated *sql.DB
	kb      *kb.KnowledgeBase
	repo    kb.Repo
	raw     *sql.DB
	corpus  *corpus.Corpus
	gateway *llm.Gateway
	log     *world.Log
}

// Open finds the repository at dir (see Options.Exact) and loads its
// config. It opens no database; the methods below do, on first use.
func Open(ctx context.Context, dir string, opts Options) (*Workspace, error) {
	root, err := Dir(dir)
	if err != nil {
		return nil, err
	}
	if !opts.Exact {
		root = nearestState(root)
	}
	var cfg *config.Config
	if !opts.NoConfig {
		if cfg, err = LoadConfig(root); err != nil {
			return nil, err
		}
	}
	stateDir := StateDir(root)
	return &Workspace{Root: root, StateDir: stateDir, Config: cfg, logger: opts.Logger, factory: store.NewFactory(statedir.At(stateDir))}, nil
}

// Dir checks that path is an existing directory and returns it absolute,
// symbolic links resolved.
func Dir(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("repository path %q: %w", path, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("repository path %q does not exist: pass the directory of a repository", path)
	}
	if err != nil {
		return "", fmt.Errorf("repository path %q: %w", path, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("repository path %q is not a directory: pass the directory of a repository", path)
	}
	// One repository, one path: reached through a symbolic link (a linked
	// home or workspace, macOS's /tmp) it is the same index.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// Find resolves path as Open does without Options.Exact: the nearest
// ancestor of path (itself included) holding .clean_room/, or path itself
// when there is none.
func Find(path string) (string, error) {
	abs, err := Dir(path)
	if err != nil {
		return "", err
	}
	return nearestState(abs), nil
}

func nearestState(abs string) string {
	for dir := abs; ; {
		if HasState(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		dir = parent
	}
}

// HasState reports whether dir holds a .clean_room/ directory.
func HasState(dir string) bool {
	st, err := os.Stat(statedir.Of(dir).Path())
	return err == nil && st.IsDir()
}

// StateDir returns the state directory of the repository at root.
func StateDir(root string) string { return statedir.Of(root).Path() }

// ConfigPath returns the config file of the repository at root.
func ConfigPath(root string) string { return statedir.Of(root).Config() }

// LoadConfig reads the config of the repository at root (config.Load); a
// missing file is (nil, nil).
func LoadConfig(root string) (*config.Config, error) { return config.Load(ConfigPath(root)) }

// SaveConfig writes c over the config of the repository at root
// atomically: temp file, fsync, rename. A backup that is not nil is
// written first beside it, as config.toml.bak, and its path returned: the
// file as it was, when encoding c drops what a person wrote
// (config.Config.Lossy).
func SaveConfig(root string, c *config.Config, backup []byte) (bak string, err error) {
	data, err := c.Encode()
	if err != nil {
		return "", err
	}
	path := ConfigPath(root)
	if backup != nil {
		bak = path + ".bak"
		if err := atomicfile.Write(bak, backup, 0o644); err != nil {
			return "", err
		}
	}
	return bak, atomicfile.Write(path, data, 0o644)
}

// EnsureStateDir creates root/.clean_room if needed and returns its path.
// The directory carries its own .gitignore ("*"), so that nothing of cra
// ever shows up in 'git status' and the repository's own .gitignore, a
// tracked file, is never edited.
func EnsureStateDir(root string) (string, error) {
	sd := statedir.Of(root)
	dir := sd.Path()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	ignore := sd.GitIgnore()
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := atomicfile.Write(ignore, []byte("# cra state: never committed\n*\n"), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// Logger is the diagnostics logger the workspace was opened with, or nil.
func (w *Workspace) Logger() *slog.Logger { return w.logger }

// Index returns the read-only knowledge base and the repository's row in
// it, after checking that the repository is indexed and not empty (seed
// 001 §14.2).
func (w *Workspace) Index(ctx context.Context) (*kb.KnowledgeBase, kb.Repo, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.index(ctx)
}

func (w *Workspace) index(ctx context.Context) (*kb.KnowledgeBase, kb.Repo, error) {
	if w.kb != nil {
		return w.kb, w.repo, nil
	}
	// One open serves the check (seed 001 §14.2) and the reads after it.
	db, err := w.factory.Open(ctx, store.Curated, "", true)
	if errors.Is(err, store.ErrNotExist) {
		return nil, kb.Repo{}, fmt.Errorf("%s: %w", w.Root, kb.ErrNotIndexed)
	}
	if err != nil {
		return nil, kb.Repo{}, err
	}
	repo, err := preflight.CheckCuratedDB(ctx, db, w.Root)
	if err != nil {
		db.Close()
		return nil, kb.Repo{}, err
	}
	k := kb.New(db)
	w.curated, w.kb, w.repo = db, k, repo
	return k, repo, nil
}

// Corpus returns the raw database (seed 001 §4.6), created on first use.
func (w *Workspace) Corpus(ctx context.Context) (*corpus.Corpus, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.openRaw(ctx); err != nil {
		return nil, err
	}
	return w.corpus, nil
}

func (w *Workspace) openRaw(ctx context.Context) error {
	if w.raw != nil {
		return nil
	}
	db, err := w.factory.Open(ctx, store.Raw, "", false)
	if err != nil {
		return err
	}
	w.raw, w.corpus = db, corpus.New(db)
	return nil
}

// Router returns a model router over the config, with the index's active
// adapters when the repository is indexed and none otherwise.
func (w *Workspace) Router(ctx context.Context) *llm.Router { return w.RouterFor(ctx, w.Config) }

// RouterFor is Router over cfg rather than the config the workspace was
// opened with: a long-lived caller (the daemon's fleet) passes
// config.toml as it is now.
func (w *Workspace) RouterFor(ctx context.Context, cfg *config.Config) *llm.Router {
	w.mu.Lock()
	defer w.mu.Unlock()
	var adapters llm.AdapterSource
	if k, _, err := w.index(ctx); err == nil {
		adapters = Adapters(k)
	}
	r := llm.NewRouter(cfg, adapters)
	r.Logger = w.logger
	return r
}

// Adapters is the index's active LoRA adapters as the model router reads
// them (llm.AdapterSource over kb's adapter_metadata).
func Adapters(k *kb.KnowledgeBase) llm.AdapterSource {
	return llm.AdapterFunc(func(ctx context.Context, stage string) (*llm.Adapter, error) {
		a, err := k.AdapterForStage(ctx, stage)
		if err != nil || a == nil {
			return nil, err
		}
		return &llm.Adapter{ModelTag: a.ModelTag, BaseModel: a.BaseModel}, nil
	})
}

// Gateway returns the one entry point to the models: it resolves every
// call through the router (overrides, the index's adapters, roles) and
// records it in the raw database (DESIGN.md principle 4). It checks first
// that the config names the models (seed 001 §14.1), then that the
// repository is indexed.
func (w *Workspace) Gateway(ctx context.Context) (*llm.Gateway, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gateway != nil {
		return w.gateway, nil
	}
	if err := preflight.CheckModels(w.Config); err != nil {
		return nil, err
	}
	k, _, err := w.index(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.openRaw(ctx); err != nil {
		return nil, err
	}
	router := llm.NewRouter(w.Config, Adapters(k))
	router.Logger = w.logger
	g := llm.NewGateway(router, llm.NewRecorder(w.corpus))
	g.Logger = w.logger
	w.gateway = g
	return g, nil
}

// Log returns the world log (seed 002) of the state directory. While the
// configuration keeps the world log in PostgreSQL, which today only 'cra
// log' reads and writes, it refuses: the board, the daemon and the runs
// would write entries to the file that the configured log never shows.
func (w *Workspace) Log() (*world.Log, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if WorldBackendOf(w.Config) == WorldPostgres {
		return nil, ErrWorldInPostgres
	}
	if w.log == nil {
		l, err := world.Open(w.StateDir)
		if err != nil {
			return nil, err
		}
		w.log = l
	}
	return w.log, nil
}

// OpenSession opens (creating) the session database of a task run (seed
// 001 §4.7); the caller archives or closes it.
func (w *Workspace) OpenSession(ctx context.Context, taskID string) (*store.SessionDB, error) {
	return w.factory.OpenSession(ctx, taskID)
}

// ArchiveSession closes a run's session database, stores it in the raw
// database and removes its file (seed 001 §11.1).
func (w *Workspace) ArchiveSession(ctx context.Context, s *store.SessionDB, taskID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.openRaw(ctx); err != nil {
		return err
	}
	return s.Archive(ctx, w.factory, w.corpus, taskID)
}

// OpenIndexWriter opens the curated database read-write for one of its
// writers (the indexer, enrichment's promotion, adapters); the caller
// closes it.
func (w *Workspace) OpenIndexWriter(ctx context.Context) (*sql.DB, error) {
	return w.factory.Open(ctx, store.Curated, "", false)
}

// Close releases every database the workspace opened. The workspace must
// not be used after.
func (w *Workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	if w.raw != nil {
		errs = append(errs, w.raw.Close())
	}
	if w.curated != nil {
		errs = append(errs, w.curated.Close())
	}
	w.raw, w.curated, w.kb, w.corpus, w.gateway = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}
