package index

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
)

// writer applies one run's outcomes inside the run's transaction.
type writer struct {
	tx     *sql.Tx
	repoID int64
	stmts  map[string]*sql.Stmt
	// nextSymbol is the next free symbols.id. The run holds the only write
	// transaction, so it can number symbols itself and insert a file's
	// symbols, parents included, in a few multi-row statements.
	nextSymbol int64
	// search batches full-text rows across files: FTS5 flushes its pending
	// postings at every statement, so one row per statement costs a flush
	// and a merge per file.
	search *batcher
}

func newWriter(tx *sql.Tx, repoID int64) *writer {
	return &writer{tx: tx, repoID: repoID, stmts: map[string]*sql.Stmt{}}
}

// batchRows is how many rows one multi-row INSERT carries (at most 9
// columns × 100 rows, far below SQLite's variable limit).
const batchRows = 100

// batcher accumulates rows for one table and inserts them in multi-row
// statements: one database/sql round trip per hundred rows instead of one
// per row.
type batcher struct {
	w      *writer
	prefix string
	cols   int
	args   []any
	rows   int
	max    int // rows per statement; batchRows when 0
}

func (w *writer) batch(table string, cols ...string) *batcher {
	return &batcher{w: w, prefix: "INSERT INTO " + table + "(" + strings.Join(cols, ", ") + ") VALUES ", cols: len(cols)}
}

func (b *batcher) add(ctx context.Context, vals ...any) error {
	b.args = append(b.args, vals...)
	b.rows++
	if b.rows == batchRows || b.rows == b.max {
		return b.flush(ctx)
	}
	return nil
}

func (b *batcher) flush(ctx context.Context) error {
	if b.rows == 0 {
		return nil
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", b.cols), ", ") + ")"
	q := b.prefix + strings.TrimSuffix(strings.Repeat(row+", ", b.rows), ", ")
	_, err := b.w.exec(ctx, q, b.args...)
	b.args, b.rows = b.args[:0], 0
	return err
}

// exec runs a statement, preparing it once per run.
func (w *writer) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, ok := w.stmts[q]
	if !ok {
		var err error
		if st, err = w.tx.PrepareContext(ctx, q); err != nil {
			return nil, err
		}
		w.stmts[q] = st
	}
	return st.ExecContext(ctx, args...)
}

// changes is what the write phase tells the resolvers.
type changes struct {
	first         bool           // the index was empty before this run
	fileSet       bool           // files were added or deleted
	configChanged bool           // a file that steers import resolution changed
	content       []int64        // files whose content was (re)written
	pyContent     []int64        // of those, Python files
	removed       map[string]int // Python definitions by name in deleted or changed files, before
	added         map[string]int // Python definitions by name in new or changed files, after
	importers     map[int64]bool // files that imported a deleted file
}

// resolverConfigFiles steer import resolution: when one changes, every
// import is resolved again.
func resolverConfigFile(rel string) bool {
	switch path.Base(rel) {
	case "go.mod", "package.json":
		return true
	}
	b := path.Base(rel)
	return (strings.HasPrefix(b, "tsconfig") || strings.HasPrefix(b, "jsconfig")) && strings.HasSuffix(b, ".json")
}

func newChanges(first bool) *changes {
	return &changes{first: first, removed: map[string]int{}, added: map[string]int{}, importers: map[int64]bool{}}
}

// flushSearch writes the full-text rows still batched.
func (w *writer) flushSearch(ctx context.Context) error {
	if w.search == nil {
		return nil
	}
	if err := w.search.flush(ctx); err != nil {
		return fmt.Errorf("write search index: %w", err)
	}
	return nil
}

// deleteGone removes the files of the index that are no longer candidates.
func (w *writer) deleteGone(ctx context.Context, old map[string]existing, present map[string]bool, res *Result, ch *changes) error {
	var gone []string
	for p := range old {
		if !present[p] {
			gone = append(gone, p)
		}
	}
	sort.Strings(gone)
	for _, p := range gone {
		if err := w.deleteOld(ctx, p, old[p], res, ch); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) deleteOld(ctx context.Context, p string, e existing, res *Result, ch *changes) error {
	if e.lang == string(lang.Python) {
		if err := w.collectNames(ctx, e.id, ch.removed); err != nil {
			return err
		}
	}
	if err := w.collectImporters(ctx, e.id, ch.importers); err != nil {
		return err
	}
	if err := w.deleteFile(ctx, e.id); err != nil {
		return fmt.Errorf("delete %s from index: %w", p, err)
	}
	if resolverConfigFile(p) {
		ch.configChanged = true
	}
	res.Deleted++
	ch.fileSet = true
	return nil
}

// applyOne writes one outcome: a skip (deleting the file's old rows if it
// had any), an unchanged file, or a new or changed one.
func (w *writer) applyOne(ctx context.Context, o *outcome, old map[string]existing, res *Result, ch *changes) error {
	if o.warn != "" {
		res.Warnings = append(res.Warnings, Warning{o.c.rel, o.warn})
	}
	e, had := old[o.c.rel]
	if o.skip != "" {
		res.Skipped[o.skip]++
		res.SkipList = append(res.SkipList, Skip{o.c.rel, o.skip})
		if had {
			return w.deleteOld(ctx, o.c.rel, e, res, ch)
		}
		return nil
	}
	if o.same {
		res.Unchanged++
		if had && e.mtime != o.c.mtime {
			if _, err := w.exec(ctx, `UPDATE file_index SET mtime_ns = ? WHERE file_id = ?`, o.c.mtime, e.id); err != nil {
				return fmt.Errorf("update %s: %w", o.c.rel, err)
			}
		}
		return nil
	}
	id := e.id
	if had {
		if e.lang == string(lang.Python) {
			if err := w.collectNames(ctx, id, ch.removed); err != nil {
				return err
			}
		}
		if err := w.clearContent(ctx, id); err != nil {
			return fmt.Errorf("update %s: %w", o.c.rel, err)
		}
		if _, err := w.exec(ctx, `UPDATE files SET language = ?, content_hash = ?, size_bytes = ? WHERE id = ?`,
			o.c.lang, o.hash, o.c.size, id); err != nil {
			return fmt.Errorf("update %s: %w", o.c.rel, err)
		}
		res.Changed++
	} else {
		r, err := w.exec(ctx, `INSERT INTO files(repo_id, path, language, content_hash, size_bytes) VALUES (?, ?, ?, ?, ?)`,
			w.repoID, o.c.rel, o.c.lang, o.hash, o.c.size)
		if err != nil {
			return fmt.Errorf("add %s: %w", o.c.rel, err)
		}
		id, _ = r.LastInsertId()
		res.Added++
		ch.fileSet = true
	}
	if resolverConfigFile(o.c.rel) {
		ch.configChanged = true
	}
	syntaxErrors, parsed := 0, 0
	if o.parsed != nil {
		syntaxErrors, parsed = o.parsed.SyntaxErrors, 1
		res.Parsed++
	}
	if _, err := w.exec(ctx, `INSERT INTO file_index(file_id, mtime_ns, line_count, syntax_errors, parsed) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(file_id) DO UPDATE SET mtime_ns = excluded.mtime_ns, line_count = excluded.line_count,
		syntax_errors = excluded.syntax_errors, parsed = excluded.parsed`, id, o.c.mtime, o.lines, syntaxErrors, parsed); err != nil {
		return fmt.Errorf("index %s: %w", o.c.rel, err)
	}
	if o.search != nil {
		if had {
			if _, err := w.exec(ctx, `DELETE FROM file_search WHERE rowid = ?`, id); err != nil {
				return fmt.Errorf("index %s: %w", o.c.rel, err)
			}
		}
		if w.search == nil {
			w.search = w.batch("file_search", "rowid", "path", "symbols", "body")
			w.search.max = 32
		}
		if err := w.search.add(ctx, id, o.search.path, o.search.symbols, o.search.body); err != nil {
			return fmt.Errorf("index %s: %w", o.c.rel, err)
		}
	}
	if o.parsed != nil {
		if err := w.insertContent(ctx, id, o.parsed); err != nil {
			return fmt.Errorf("index %s: %w", o.c.rel, err)
		}
		if o.c.parse == lang.Python {
			for _, s := range o.parsed.Symbols {
				ch.added[s.Name]++
			}
			ch.pyContent = append(ch.pyContent, id)
		}
	}
	ch.content = append(ch.content, id)
	return nil
}

// collectNames counts the definitions of a file by name.
func (w *writer) collectNames(ctx context.Context, fileID int64, into map[string]int) error {
	rows, err := w.tx.QueryContext(ctx, `SELECT name FROM symbols WHERE file_id = ?`, fileID)
	if err != nil {
		return fmt.Errorf("read symbols: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		into[n]++
	}
	return rows.Err()
}

// collectImporters adds the files that import fileID.
func (w *writer) collectImporters(ctx context.Context, fileID int64, into map[int64]bool) error {
	rows, err := w.tx.QueryContext(ctx, `SELECT source_file_id FROM dependencies WHERE target_file_id = ?`, fileID)
	if err != nil {
		return fmt.Errorf("read dependencies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[id] = true
	}
	return rows.Err()
}

// clearContent deletes what was extracted from a file's content, keeping
// its row, its history and the edges other files have to it.
func (w *writer) clearContent(ctx context.Context, id int64) error {
	for _, q := range []string{
		`DELETE FROM symbol_references WHERE caller_symbol_id IN (SELECT id FROM symbols WHERE file_id = ?)`,
		`DELETE FROM symbol_references WHERE callee_symbol_id IN (SELECT id FROM symbols WHERE file_id = ?)`,
		`DELETE FROM name_refs WHERE file_id = ?`,
		`DELETE FROM docstrings WHERE file_id = ?`,
		`DELETE FROM inline_comments WHERE file_id = ?`,
		`DELETE FROM file_imports WHERE file_id = ?`,
		`DELETE FROM dependencies WHERE source_file_id = ?`,
		`DELETE FROM symbols WHERE file_id = ?`,
	} {
		if _, err := w.exec(ctx, q, id); err != nil {
			return err
		}
	}
	return nil
}

// deleteFile removes a file and every row that refers to it.
func (w *writer) deleteFile(ctx context.Context, id int64) error {
	if err := w.clearContent(ctx, id); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM dependencies WHERE target_file_id = ?`,
		`DELETE FROM file_commits WHERE file_id = ?`,
		`DELETE FROM co_changes WHERE file_a_id = ?1 OR file_b_id = ?1`,
		`DELETE FROM file_metadata WHERE file_id = ?`,
		`DELETE FROM file_index WHERE file_id = ?`,
		`DELETE FROM file_search WHERE rowid = ?`,
		`DELETE FROM files WHERE id = ?`,
	} {
		if _, err := w.exec(ctx, q, id); err != nil {
			return err
		}
	}
	return nil
}

func nullID(ids []int64, i int) any {
	if i < 0 || i >= len(ids) {
		return nil
	}
	return ids[i]
}

func (w *writer) insertContent(ctx context.Context, fileID int64, f *lang.File) error {
	if w.nextSymbol == 0 {
		if err := w.tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM symbols`).Scan(&w.nextSymbol); err != nil {
			return err
		}
	}
	ids := make([]int64, len(f.Symbols))
	syms := w.batch("symbols", "id", "file_id", "name", "kind", "start_line", "end_line", "signature", "parent_symbol_id")
	for i, s := range f.Symbols {
		ids[i] = w.nextSymbol
		w.nextSymbol++
		var parent any
		if s.Parent >= 0 && s.Parent < i {
			parent = ids[s.Parent]
		}
		if err := syms.add(ctx, ids[i], fileID, s.Name, s.Kind, s.StartLine, s.EndLine, s.Signature, parent); err != nil {
			return err
		}
	}
	if err := syms.flush(ctx); err != nil {
		return err
	}
	docs := w.batch("docstrings", "symbol_id", "file_id", "content", "format", "parsed_fields")
	for _, d := range f.Docstrings {
		if err := docs.add(ctx, nullID(ids, d.Symbol), fileID, d.Content, d.Format, d.ParsedFields); err != nil {
			return err
		}
	}
	comments := w.batch("inline_comments", "file_id", "symbol_id", "line", "content", "kind", "is_rationale")
	for _, c := range f.Comments {
		if err := comments.add(ctx, fileID, nullID(ids, c.Symbol), c.Line, c.Content, c.Kind, c.IsRationale); err != nil {
			return err
		}
	}
	imports := w.batch("file_imports", "file_id", "module", "level", "names", "type_only", "line")
	for _, im := range f.Imports {
		if err := imports.add(ctx, fileID, im.Path, im.Level, strings.Join(im.Names, ","), im.TypeOnly, im.Line); err != nil {
			return err
		}
	}
	refs := w.batch("name_refs", "file_id", "symbol_id", "name", "qualifier", "kind", "line")
	for _, r := range f.References {
		if err := refs.add(ctx, fileID, nullID(ids, r.Caller), r.Name, r.Qualifier, r.Kind, r.Line); err != nil {
			return err
		}
	}
	for _, b := range []*batcher{docs, comments, imports, refs} {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// fileRow is a file of the index as the resolvers see it.
type fileRow struct {
	id   int64
	path string
	lang string
}

func (w *writer) files(ctx context.Context) ([]fileRow, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT id, path, language FROM files WHERE repo_id = ? ORDER BY path`, w.repoID)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	defer rows.Close()
	var out []fileRow
	for rows.Next() {
		var f fileRow
		if err := rows.Scan(&f.id, &f.path, &f.lang); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

type edge struct{ src, dst int64 }

// resolveDependencies turns stored imports into file dependency edges: all
// of them when files appeared or vanished or a resolution config changed,
// else only those of files whose content changed.
func (w *writer) resolveDependencies(ctx context.Context, root string, ch *changes, res *Result) error {
	full := ch.first || ch.fileSet || ch.configChanged
	if !full && len(ch.content) == 0 {
		return nil
	}
	files, err := w.files(ctx)
	if err != nil {
		return err
	}
	paths := make([]string, len(files))
	byPath := make(map[string]fileRow, len(files))
	byID := make(map[int64]fileRow, len(files))
	for i, f := range files {
		paths[i] = f.path
		byPath[f.path] = f
		byID[f.id] = f
	}
	if full {
		if _, err := w.tx.ExecContext(ctx, `DELETE FROM dependencies WHERE source_file_id IN (SELECT id FROM files WHERE repo_id = ?)`, w.repoID); err != nil {
			return fmt.Errorf("reset dependencies: %w", err)
		}
	}
	read := func(rel string) ([]byte, error) {
		return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	}
	r := NewResolver(paths, read)
	for _, werr := range r.Warnings() {
		res.Warnings = append(res.Warnings, Warning{"", "import resolution: " + werr.Error()})
	}
	kinds := map[edge]string{}
	resolve := func(where string, args ...any) error {
		rows, err := w.tx.QueryContext(ctx, `SELECT i.file_id, i.module, i.level, i.names, i.type_only, i.line FROM file_imports i
			JOIN files f ON f.id = i.file_id WHERE f.repo_id = ?`+where+` ORDER BY i.file_id, i.line`, append([]any{w.repoID}, args...)...)
		if err != nil {
			return fmt.Errorf("read imports: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id       int64
				im       lang.Import
				names    string
				typeOnly bool
			)
			if err := rows.Scan(&id, &im.Path, &im.Level, &names, &typeOnly, &im.Line); err != nil {
				return err
			}
			if names != "" {
				im.Names = strings.Split(names, ",")
			}
			im.TypeOnly = typeOnly
			src := byID[id]
			for _, target := range r.Resolve(src.path, lang.Language(src.lang), im) {
				t, ok := byPath[target]
				if !ok || t.id == id {
					continue
				}
				k := "import"
				if typeOnly {
					k = "type_ref"
				}
				e := edge{id, t.id}
				if prev, ok := kinds[e]; !ok || prev == "type_ref" {
					kinds[e] = k
				}
			}
		}
		return rows.Err()
	}
	// A full run resolves every file's imports; an incremental one only
	// those of the changed files, read by their IDs.
	if full {
		if err := resolve(""); err != nil {
			return err
		}
	} else {
		for chunk := range slices.Chunk(ch.content, 500) {
			args, marks := inArgs(chunk)
			if err := resolve(" AND i.file_id IN ("+marks+")", args...); err != nil {
				return err
			}
		}
	}
	edges := slices.SortedFunc(maps.Keys(kinds), func(x, y edge) int { return cmp.Or(cmp.Compare(x.src, y.src), cmp.Compare(x.dst, y.dst)) })
	ins := w.batch("dependencies", "source_file_id", "target_file_id", "kind")
	for _, e := range edges {
		if err := ins.add(ctx, e.src, e.dst, kinds[e]); err != nil {
			return fmt.Errorf("write dependencies: %w", err)
		}
	}
	if err := ins.flush(ctx); err != nil {
		return fmt.Errorf("write dependencies: %w", err)
	}
	return nil
}
