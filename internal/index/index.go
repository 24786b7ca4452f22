// Package index is cra's deterministic indexer (seed 001 Phase 1): it scans
// a repository, hashes and parses the files that are new or changed,
// resolves imports to file dependencies, resolves Python symbol references,
// mines git history for co-change, and writes it all to the curated DB in
// one transaction, so a failed run leaves the previous index intact.
package index

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/terms"
)

// Defaults for the history miner's bounds; [index] in config.toml and the
// Builder's fields override them.
const (
	DefaultHistoryDepth   = 3000
	DefaultMaxCommitFiles = 50
)

// ExtractorVersion is the version of what a run extracts from a file's
// content: its symbols, references, imports and identifier names (package
// lang), its docstrings and comments, line count, full-text row and
// vendored flag. The stat gate and the content hash keep every unchanged
// file's old extraction, so bump it whenever any of these changes for
// some file: an index that stored another version (repo_state.extractor,
// curated migration 0006) reads every file again once, and stores this
// one when the run succeeds.
//
//	1: a JS function or class assigned to a property at module level or
//	   in a top-level IIFE is a definition (lang, after migration 0005).
//	2: a generated-file marker counts only in a file's leading comments
//	   (a generator's own source is not its output); a Go file's package
//	   doc after a byte order mark.
const ExtractorVersion = 2

// An incremental run rebuilds (see parseAndWrite) when more than
// rebuildShare of an index of at least rebuildMinFiles files needs
// reading. Deleting a changed file's rows costs about half to two thirds
// of writing them, so past about 55-60% changed an incremental run costs
// more than writing the unchanged files again (BenchmarkReindex: at 50%
// it takes 0.65-0.9 of a fresh run's CPU time); the share leaves a margin.
const (
	rebuildShare    = 0.5
	rebuildMinFiles = 100
)

// cacheKiB bounds the page cache of an index run's connection (SQLite's
// default is 2 MiB); it fills only as pages are touched.
//
// A first run (an empty index) writes its pages about once each, in
// order, and has none to read back: a large cache only holds what is
// written already, the bulk of the run's memory (64 MiB took a full
// index of django from 149 to 230 MiB at its peak), and the driver frees
// it page by page when the database closes (0.8 CPU-s of that run). It
// keeps firstRunCacheKiB.
const (
	cacheKiB         = 64 << 10
	firstRunCacheKiB = 8 << 10
)

// Builder indexes repositories into a curated DB.
type Builder struct {
	factory *store.Factory

	// HistoryDepth caps the commits mined, newest first (0: no git history).
	HistoryDepth int
	// MaxCommitFiles leaves commits touching more files out of co-change
	// counting.
	MaxCommitFiles int
	// LineStats mines insertions and deletions per commit (git log
	// --numstat). Off by default: it makes the history step about five
	// times slower, and nothing cra ranks with needs it.
	LineStats bool
	// ContinueOnError turns read failures (other than permission denied,
	// which is always a counted skip) into counted skips instead of
	// failing the run (seed 001 §15).
	ContinueOnError bool
	// Workers is the number of parallel readers/parsers; default all cores.
	Workers int
	// Progress, when set, is called from the indexing goroutine as files are
	// processed.
	Progress func(p Progress)
	// LockWait bounds the wait for another writer of the index (see
	// Lock); 0 means DefaultLockWait. Waiting, when set, is told the
	// other writer's pid before the wait.
	LockWait time.Duration
	Waiting  func(pid int)
	// readFile reads a file; tests replace it to inject I/O failures.
	readFile func(string) ([]byte, error)
	// ahead and searchBurst are parseAhead and searchBurst; tests make
	// them small.
	ahead, searchBurst int
}

// Progress reports one phase's advance.
type Progress struct {
	Phase string // "parse"
	Done  int
	Total int
}

// NewBuilder returns a Builder writing through factory, with defaults.
func NewBuilder(factory *store.Factory) *Builder {
	return &Builder{
		factory:        factory,
		HistoryDepth:   DefaultHistoryDepth,
		MaxCommitFiles: DefaultMaxCommitFiles,
		Workers:        runtime.GOMAXPROCS(0),
		readFile:       os.ReadFile,
		ahead:          parseAhead,
		searchBurst:    searchBurst,
	}
}

// ApplyConfig takes the [index] bounds from a loaded config.
func (b *Builder) ApplyConfig(cfg *config.Config) {
	if cfg == nil || cfg.Index == nil {
		return
	}
	if v := cfg.Index.HistoryDepth; v != nil {
		b.HistoryDepth = *v
	}
	if v := cfg.Index.MaxCommitFiles; v != nil {
		b.MaxCommitFiles = *v
	}
}

// Warning is a file indexed with a problem, or a skipped file's error.
type Warning struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Result summarises one indexing run.
type Result struct {
	Repo      string         `json:"repo"`
	RepoID    int64          `json:"repo_id"`
	Git       bool           `json:"git"`
	Scanned   int            `json:"files_scanned"`
	Indexed   int            `json:"files_indexed"`
	Parsed    int            `json:"files_parsed"`
	Added     int            `json:"files_added"`
	Changed   int            `json:"files_changed"`
	Deleted   int            `json:"files_deleted"`
	Unchanged int            `json:"files_unchanged"`
	Skipped   map[string]int `json:"skipped"`
	SkipList  []Skip         `json:"skipped_files"`
	Warnings  []Warning      `json:"warnings"`

	Symbols      int `json:"symbols"`
	Dependencies int `json:"dependencies"`
	References   int `json:"symbol_references"`
	NewCommits   int `json:"commits_new"`
	Commits      int `json:"commits"`
	CoChanges    int `json:"co_change_pairs"`
	// Vendored counts the indexed files that are vendored, generated or
	// minified (Vendored).
	Vendored int `json:"files_vendored"`

	// Reextracted: the index was written by another extractor
	// (ExtractorVersion), so the run read every indexed file again and
	// counts those still present as changed.
	Reextracted bool `json:"reextracted"`

	// Rebuilt: most indexed files had changed, so the run replaced the
	// content rows of all (see parseAndWrite).
	Rebuilt  bool          `json:"rebuilt"`
	History  string        `json:"history"` // "none", "full", "incremental", "up to date"
	Duration time.Duration `json:"duration_ns"`
	Phases   PhaseTimes    `json:"phases_ns"`
}

// PhaseTimes breaks a run's duration down.
type PhaseTimes struct {
	Scan    time.Duration `json:"scan"`
	Parse   time.Duration `json:"parse_and_write"` // the writer runs behind the parsers
	Resolve time.Duration `json:"resolve"`
	Git     time.Duration `json:"git"` // what is left of the history step after parsing

}

// FilesChanged is the number of files added, changed or deleted.
func (r *Result) FilesChanged() int { return r.Added + r.Changed + r.Deleted }

// existing is a file row already in the index.
type existing struct {
	id    int64
	hash  string
	size  int64
	lang  string
	mtime int64
}

// outcome is what a worker found for one candidate.
type outcome struct {
	c      candidate
	skip   string // non-empty: skipped for this reason
	warn   string
	same   bool // content unchanged
	hash   string
	lines  int
	parsed *lang.File
	search *searchDoc
	// vendored says why the file is vendored or generated (Vendored).
	vendored string
	err      error
}

// searchDoc is a file's row of the full-text index, tokenised by the
// worker so the writer only inserts it.
type searchDoc struct {
	path, symbols, body string
}

// Run indexes the repository at root (an absolute directory path) into the
// curated DB and records the run in the raw DB.
func (b *Builder) Run(ctx context.Context, root string) (*Result, error) {
	if err := os.MkdirAll(b.factory.Dir(), 0o755); err != nil {
		return nil, err
	}
	lk, err := Lock(ctx, b.factory.Dir(), b.LockWait, b.Waiting)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	start := time.Now()
	res := &Result{Repo: root, Skipped: map[string]int{}, SkipList: []Skip{}, Warnings: []Warning{}}
	raw, err := b.factory.Open(ctx, store.Raw, "", false)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	runErr := b.run(ctx, root, res, start)
	res.Duration = time.Since(start)
	status := "ok"
	switch {
	case runErr != nil:
		status = "failed: " + runErr.Error()
	case len(res.Warnings) > 0:
		status = "ok_with_warnings"
	}
	// Record the run even when it failed or was cancelled: the raw DB is
	// the activity log.
	if err := corpus.New(raw).AddIndexRun(ctx, corpus.IndexRun{Repo: root, FilesScanned: res.Scanned,
		FilesChanged: res.FilesChanged(), Duration: res.Duration, Status: status}); err != nil && runErr == nil {
		return res, err
	}
	if runErr != nil {
		return res, runErr
	}
	return res, nil
}

func (b *Builder) run(ctx context.Context, root string, res *Result, start time.Time) error {
	isGit, err := gitx.IsRepo(ctx, root)
	if err != nil {
		return err
	}
	res.Git = isGit

	// The listing (git ls-files and a stat of every file) runs while the
	// database opens and the index's file rows load: on a run with
	// nothing to do, these are most of its time.
	type listing struct {
		cands   []candidate
		skips   []Skip
		scanned int
		took    time.Duration
		err     error
	}
	listed := make(chan listing, 1)
	go func() {
		t := time.Now()
		var l listing
		l.cands, l.skips, l.scanned, l.err = scan(ctx, root, isGit)
		l.took = time.Since(t)
		listed <- l
	}()
	var list *listing
	waitList := func() *listing {
		if list == nil {
			l := <-listed
			list = &l
		}
		return list
	}
	defer waitList() // no return leaves the listing running

	db, err := b.factory.Open(ctx, store.Curated, "", false)
	if err != nil {
		return err
	}
	defer db.Close()

	// The run is one transaction on one connection, tuned for it: a page
	// cache that holds the b-tree pages an incremental run rewrites all
	// over the file (with SQLite's default of 2 MB every page it touches
	// is read again and dirty ones spill to the WAL mid-transaction), and
	// statement journals in memory instead of temp files.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin index transaction: %w", err)
	}
	defer conn.Close()
	for _, p := range []string{fmt.Sprintf("PRAGMA cache_size = -%d", cacheKiB), "PRAGMA temp_store = MEMORY"} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("tune index connection: %w", err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin index transaction: %w", err)
	}
	defer tx.Rollback()

	repoID, lastRun, extractor, err := b.repoRow(ctx, tx, root, isGit)
	if err != nil {
		return err
	}
	res.RepoID = repoID
	// An index written by another extractor keeps that one's extraction
	// for every file the gates let through: forget its hashes, and every
	// file is read and extracted again.
	reextract := extractor != ExtractorVersion
	old, err := loadExisting(ctx, tx, repoID, reextract)
	if err != nil {
		return err
	}
	res.Reextracted = reextract && len(old) > 0
	if len(old) == 0 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA cache_size = -%d", firstRunCacheKiB)); err != nil {
			return fmt.Errorf("tune index connection: %w", err)
		}
	}
	l := waitList()
	if l.err != nil {
		return fmt.Errorf("scan %s: %w", root, l.err)
	}
	cands, skips := l.cands, l.skips
	res.Scanned, res.Phases.Scan = l.scanned, l.took

	// Git history is read concurrently with parsing; it is written once
	// the files it refers to have their rows.
	hist := b.startHistory(ctx, tx, root, repoID, isGit)
	defer hist.cancel() // stops the reading on any early return

	for _, s := range skips {
		res.Skipped[s.Reason]++
		res.SkipList = append(res.SkipList, s)
	}
	t := time.Now()
	w := newWriter(tx, repoID)
	w.searchBurst = b.searchBurst
	ch, err := b.parseAndWrite(ctx, w, cands, old, lastRun, res)
	if err != nil {
		return err
	}
	res.Phases.Parse = time.Since(t)

	t = time.Now()
	if err := w.resolveDependencies(ctx, root, ch, res); err != nil {
		return err
	}
	// The identifier graph first: a first run holds it in memory
	// (writer.ident) until it is written.
	if err := updateIdentNames(ctx, w, ch); err != nil {
		return err
	}
	if err := w.resolvePythonRefs(ctx, ch); err != nil {
		return err
	}
	if err := w.createIndexes(ctx); err != nil {
		return err
	}
	res.Phases.Resolve = time.Since(t)

	t = time.Now()
	if err := b.finishHistory(ctx, w, hist, res); err != nil {
		return err
	}
	res.Phases.Git = time.Since(t)

	if _, err := tx.ExecContext(ctx, `UPDATE repo_state SET last_run_ns = ?, extractor = ? WHERE repo_id = ?`,
		start.UnixNano(), ExtractorVersion, repoID); err != nil {
		return fmt.Errorf("update repo state: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE repos SET indexed_at = ? WHERE id = ?`, store.Now(), repoID); err != nil {
		return fmt.Errorf("update repo: %w", err)
	}
	if err := totals(ctx, tx, repoID, res); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit index: %w", err)
	}
	if res.FilesChanged() > 0 {
		if err := fixSearchTotals(ctx, conn); err != nil {
			return err
		}
	}
	sort.Slice(res.SkipList, func(i, j int) bool { return res.SkipList[i].Path < res.SkipList[j].Path })
	sort.Slice(res.Warnings, func(i, j int) bool { return res.Warnings[i].Path < res.Warnings[j].Path })
	return nil
}

// repoRow finds or creates the repository's row and its state row, and
// returns when the last run started and the extractor version it stored.
func (b *Builder) repoRow(ctx context.Context, tx *sql.Tx, root string, isGit bool) (id, lastRunNS int64, extractor int, err error) {
	err = tx.QueryRowContext(ctx, `SELECT id FROM repos WHERE path = ?`, root).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		// A state directory inside the repository moves with it: the one
		// repository its index holds is this one, moved or renamed, and
		// keeps its rows rather than being indexed again beside them.
		if id, err = b.movedRepo(ctx, tx, root); err == nil && id == 0 {
			err = sql.ErrNoRows
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		var remote sql.NullString
		if isGit {
			if u := gitx.RemoteURL(ctx, root); u != "" {
				remote = sql.NullString{String: u, Valid: true}
			}
		}
		r, err := tx.ExecContext(ctx, `INSERT INTO repos(path, remote_url, indexed_at) VALUES (?, ?, ?)`, root, remote, store.Now())
		if err != nil {
			return 0, 0, 0, fmt.Errorf("register repo: %w", err)
		}
		id, _ = r.LastInsertId()
	} else if err != nil {
		return 0, 0, 0, fmt.Errorf("find repo: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO repo_state(repo_id) VALUES (?)`, id); err != nil {
		return 0, 0, 0, fmt.Errorf("repo state: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT last_run_ns, extractor FROM repo_state WHERE repo_id = ?`, id).Scan(&lastRunNS, &extractor); err != nil {
		return 0, 0, 0, fmt.Errorf("repo state: %w", err)
	}
	return id, lastRunNS, extractor, nil
}

// movedRepo returns the repository row of an index that moved with its
// repository to root (its state directory is root's .clean_room/, and it
// holds one other repository), with its path set to root; 0 when there
// is none.
func (b *Builder) movedRepo(ctx context.Context, tx *sql.Tx, root string) (int64, error) {
	if b.factory == nil || filepath.Clean(b.factory.Dir()) != statedir.Of(root).Path() {
		return 0, nil
	}
	var n int
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(id), 0) FROM repos`).Scan(&n, &id); err != nil {
		return 0, fmt.Errorf("find repo: %w", err)
	}
	if n != 1 {
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE repos SET path = ? WHERE id = ?`, root, id); err != nil {
		return 0, fmt.Errorf("move repo: %w", err)
	}
	return id, nil
}

// querier is a transaction or a database: what loadExisting reads
// through, in an index run or in Changes.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// loadExisting reads the repository's indexed files by path. With
// forgetHashes every file's hash is left empty, which no content hashes
// to: neither the stat gate nor the hash comparison takes the file as
// unchanged, and it counts as changed when written.
func loadExisting(ctx context.Context, tx querier, repoID int64, forgetHashes bool) (map[string]existing, error) {
	rows, err := tx.QueryContext(ctx, `SELECT f.id, f.path, f.content_hash, f.size_bytes, f.language, COALESCE(fi.mtime_ns, 0)
		FROM files f LEFT JOIN file_index fi ON fi.file_id = f.id WHERE f.repo_id = ?`, repoID)
	if err != nil {
		return nil, fmt.Errorf("load index: %w", err)
	}
	defer rows.Close()
	out := map[string]existing{}
	for rows.Next() {
		var (
			e    existing
			path string
		)
		if err := rows.Scan(&e.id, &path, &e.hash, &e.size, &e.lang, &e.mtime); err != nil {
			return nil, fmt.Errorf("load index: %w", err)
		}
		if forgetHashes {
			e.hash = ""
		}
		out[path] = e
	}
	return out, rows.Err()
}

// parseAndWrite reads, hashes and parses candidates on all workers and
// writes each outcome as soon as it and all before it are done, so the
// writer runs behind the parsers and the rows are written in path order
// (stable IDs from run to run). A candidate whose size and mtime match the
// index, and whose mtime predates the last run, is not even read (the stat
// gate).
func (b *Builder) parseAndWrite(ctx context.Context, w *writer, cands []candidate, old map[string]existing, lastRunNS int64, res *Result) (*changes, error) {
	ch := newChanges(len(old) == 0)
	present := make(map[string]bool, len(cands))
	for _, c := range cands {
		present[c.rel] = true
	}
	outs := make([]outcome, len(cands))
	ready := make([]bool, len(cands))
	var todo []int
	// inTodo: handed to the parsers, which hold a slot for it.
	inTodo := make([]bool, len(cands))
	stale := 0 // indexed files the stat gate lets through
	for i, c := range cands {
		outs[i].c = c
		e, ok := old[c.rel]
		if ok && statSame(e, c, lastRunNS) {
			outs[i].same, outs[i].hash = true, e.hash
			ready[i] = true
			continue
		}
		if ok {
			stale++
		}
		todo = append(todo, i)
		inTodo[i] = true
	}
	// When most indexed files may have changed, replacing their rows one
	// file at a time costs more than building the index anew: the old rows
	// go all at once and every file is parsed and written as in a first
	// run, into the same file rows (IDs, history and enrichment stay).
	sameAs := old
	if len(old) >= rebuildMinFiles && float64(stale) > rebuildShare*float64(len(old)) {
		if err := w.clearAll(ctx); err != nil {
			return nil, err
		}
		w.rebuild, ch.first, sameAs, res.Rebuilt = true, true, nil, true
		todo = todo[:0]
		for i := range cands {
			outs[i].same, outs[i].hash, ready[i] = false, "", false
			todo = append(todo, i)
			inTodo[i] = true
		}
	}
	if err := w.deleteGone(ctx, old, present, res, ch); err != nil {
		return nil, err
	}
	w.nothingOld = len(old) == 0 || w.rebuild
	if w.nothingOld {
		var rows bool
		if err := w.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM symbols) OR EXISTS (SELECT 1 FROM name_refs)`).Scan(&rows); err != nil {
			return nil, fmt.Errorf("read index: %w", err)
		}
		if !rows {
			w.ident = newIdentGraph()
			if err := w.dropIndexes(ctx, bulkIndexes...); err != nil {
				return nil, err
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := max(b.Workers, 1)
	// The parsers run up to parseAhead files ahead of the writer: enough
	// that a large file (a minified bundle parses for a tenth of a
	// second) or a flush of pending files does not stop the other
	// parsers, few enough that the outcomes waiting for the writer stay
	// small. A slot is taken when a file is handed to a parser and given
	// back when the writer has taken its outcome; done holds every
	// outcome a slot allows, so a parser never waits on the writer.
	slots := make(chan struct{}, b.ahead)
	jobs := make(chan int)
	done := make(chan int, b.ahead)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := lang.NewParser()
			defer p.Close()
			for i := range jobs {
				b.processOne(&outs[i], sameAs, p)
				done <- i
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, i := range todo {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Stop the workers and drain their results on every return path.
	defer func() {
		cancel()
		go func() {
			for range done {
			}
		}()
		wg.Wait()
		close(done)
	}()
	parsed := 0
	for next := 0; next < len(cands); {
		if !ready[next] {
			select {
			case i := <-done:
				ready[i] = true
				parsed++
				if b.Progress != nil {
					b.Progress(Progress{Phase: "parse", Done: parsed, Total: len(todo)})
				}
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		o := &outs[next]
		if o.err != nil {
			if !b.ContinueOnError {
				return nil, fmt.Errorf("read %s: %w (pass --continue-on-error to skip such files)", o.c.rel, o.err)
			}
			o.skip, o.warn = SkipReadError, o.err.Error()
		}
		if err := w.applyOne(ctx, o, old, res, ch); err != nil {
			return nil, err
		}
		if inTodo[next] {
			<-slots
		}
		outs[next] = outcome{} // let the parse result go
		next++
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := w.flushPending(ctx, old, res, ch); err != nil {
		return nil, err
	}
	if err := w.flushContent(ctx); err != nil {
		return nil, err
	}
	if err := w.flushSearch(ctx); err != nil {
		return nil, err
	}
	return ch, nil
}

// statSame is the stat gate: an indexed file whose size, mtime and
// language are unchanged, and whose mtime predates the last run (as git
// trusts racily clean files), is taken as unchanged without reading it.
// A file whose hash is empty (curated migration 0005, or an index from
// another extractor) must be read again, whatever its stat.
func statSame(e existing, c candidate, lastRunNS int64) bool {
	return e.hash != "" && e.size == c.size && e.mtime == c.mtime && c.mtime < lastRunNS && e.lang == c.lang
}

// processOne reads, hashes and parses a candidate; a file whose content
// is the one in old (nil: none) is not parsed.
func (b *Builder) processOne(o *outcome, old map[string]existing, p *lang.Parser) {
	data, err := b.readFile(o.c.abs)
	switch {
	case errors.Is(err, fs.ErrPermission):
		o.skip, o.warn = SkipUnreadable, "permission denied"
		return
	case errors.Is(err, fs.ErrNotExist):
		o.skip = "deleted during the run"
		return
	case err != nil:
		o.err = err
		return
	}
	head := data
	if len(head) > 8000 {
		head = head[:8000]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		o.skip = SkipBinary
		return
	}
	sum := sha256.Sum256(data)
	o.hash = hex.EncodeToString(sum[:])
	if e, ok := old[o.c.rel]; ok && e.hash == o.hash && e.lang == o.c.lang {
		o.same = true
		return
	}
	o.lines = bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		o.lines++
	}
	o.search = &searchDoc{path: terms.Joined(o.c.rel), body: terms.Joined(string(data))}
	o.vendored = Vendored(o.c.rel, data)
	if o.c.parse == "" {
		return
	}
	f, err := p.Parse(o.c.parse, data)
	if err != nil {
		o.warn = "parse: " + err.Error()
		return
	}
	o.parsed = f
	if f.SyntaxErrors > 0 {
		o.warn = fmt.Sprintf("%d syntax error(s); indexed what parsed", f.SyntaxErrors)
	}
	var names strings.Builder
	for _, s := range f.Symbols {
		names.WriteString(s.Name)
		names.WriteByte(' ')
	}
	o.search.symbols = terms.Joined(names.String())
}

func totals(ctx context.Context, tx *sql.Tx, repoID int64, res *Result) error {
	q := []struct {
		dst *int
		sql string
	}{
		{&res.Indexed, `SELECT COUNT(*) FROM files WHERE repo_id = ?`},
		{&res.Symbols, `SELECT COUNT(*) FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.repo_id = ?`},
		{&res.Dependencies, `SELECT COUNT(*) FROM dependencies d JOIN files f ON f.id = d.source_file_id WHERE f.repo_id = ?`},
		{&res.References, `SELECT COUNT(*) FROM symbol_references r JOIN symbols s ON s.id = r.caller_symbol_id JOIN files f ON f.id = s.file_id WHERE f.repo_id = ?`},
		{&res.Commits, `SELECT COUNT(*) FROM commits WHERE repo_id = ?`},
		{&res.CoChanges, `SELECT COUNT(*) FROM co_changes c JOIN files f ON f.id = c.file_a_id WHERE f.repo_id = ?`},
		{&res.Vendored, `SELECT COUNT(*) FROM file_index fi INDEXED BY idx_file_index_vendored JOIN files f ON f.id = fi.file_id WHERE fi.vendored != '' AND f.repo_id = ?`},
	}
	// With one repository in the database every row is its own (the
	// foreign keys hold, enforced on every connection), so a table's
	// count needs no join: SQLite counts its smallest b-tree instead of
	// looking up each row's file.
	var repos int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM repos`).Scan(&repos); err != nil {
		return fmt.Errorf("count index: %w", err)
	}
	if repos == 1 {
		for _, x := range []struct {
			dst   *int
			table string
		}{{&res.Indexed, "files"}, {&res.Symbols, "symbols"}, {&res.Dependencies, "dependencies"}, {&res.References, "symbol_references"}, {&res.Commits, "commits"}, {&res.CoChanges, "co_changes"}} {
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+x.table).Scan(x.dst); err != nil {
				return fmt.Errorf("count index: %w", err)
			}
		}
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM file_index INDEXED BY idx_file_index_vendored WHERE vendored != ''`).Scan(&res.Vendored); err != nil {
			return fmt.Errorf("count index: %w", err)
		}
		return nil
	}
	for _, x := range q {
		if err := tx.QueryRowContext(ctx, x.sql, repoID).Scan(x.dst); err != nil {
			return fmt.Errorf("count index: %w", err)
		}
	}
	return nil
}
