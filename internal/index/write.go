package index

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
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
	// search holds full-text rows for flushSearch (see addSearch),
	// searchBytes their size.
	search      []searchRow
	searchBytes int
	searchBurst int // searchBurst unless a test says otherwise
	// ident, when set, gathers the identifier graph from the files
	// written: the run writes every row of symbols and name_refs (they
	// were empty when it began, and no row of theirs is deleted).
	ident *identGraph
	// content batches the content rows of the files written (see
	// contentRows).
	content *contentRows
	// pending are new and changed files waiting for flushPending.
	pending []outcome
	// rebuild: clearAll removed every file's content rows, so changed
	// files have none left to remove.
	rebuild bool
	// nothingOld: no file has rows to remove (a first run, a rebuild),
	// so a new or changed file is written at once instead of pending:
	// the writer keeps pace with the parsers and holds no outcomes.
	nothingOld bool
	// added are the paths of the files this run added.
	added []string
	// dropped are the definitions of the indexes dropIndexes dropped, for
	// createIndexes.
	dropped []string
}

func newWriter(tx *sql.Tx, repoID int64) *writer {
	return &writer{tx: tx, repoID: repoID, stmts: map[string]*sql.Stmt{}, searchBurst: searchBurst}
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
	suffix string // after the rows: an upsert's ON CONFLICT clause
	cols   int
	args   []any
	rows   int
	max    int // rows per statement; batchRows when 0
	// before is flushed first: the batch holds rows that refer to its.
	before *batcher
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
	if b.before != nil {
		if err := b.before.flush(ctx); err != nil {
			return err
		}
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", b.cols), ", ") + ")"
	q := b.prefix + strings.TrimSuffix(strings.Repeat(row+", ", b.rows), ", ") + b.suffix
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
	importers     map[int64]bool // files that imported a deleted file, or whose imports resolve elsewhere now
	ident         identDirty     // what the identifier graph must redo
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
	return &changes{first: first, removed: map[string]int{}, added: map[string]int{}, importers: map[int64]bool{},
		ident: identDirty{before: map[int64]map[string]bool{}}}
}

// searchRow is a file's row of the full-text index.
type searchRow struct {
	id  int64
	doc *searchDoc
}

// searchBurst is how many bytes of full-text rows the writer gathers
// before it inserts them (see addSearch).
const searchBurst = 1 << 20

// addSearch adds a file's row to the full-text index. FTS5 gathers the
// postings of the rows inserted in a transaction in memory, and writes
// them out as a new segment, to be merged with the others, at every
// statement that opens a statement journal: every multi-row INSERT with
// a constraint that may fail halfway (a NOT NULL or a foreign key: all of
// the content tables'), and a multi-row INSERT into file_search itself.
// Inserted between a file's content rows, every file's postings became
// a segment of their own, which FTS5 then merged over and over. So the
// rows are gathered and inserted together, a row per statement (a
// single-row INSERT opens no statement journal): the postings of a
// megabyte of rows go out at once.
func (w *writer) addSearch(ctx context.Context, id int64, doc *searchDoc) error {
	w.search = append(w.search, searchRow{id, doc})
	w.searchBytes += len(doc.path) + len(doc.symbols) + len(doc.body)
	if w.searchBytes >= w.searchBurst {
		return w.flushSearch(ctx)
	}
	return nil
}

// flushSearch inserts the full-text rows gathered by addSearch.
func (w *writer) flushSearch(ctx context.Context) error {
	for i, r := range w.search {
		if _, err := w.exec(ctx, `INSERT INTO file_search(rowid, path, symbols, body) VALUES (?, ?, ?, ?)`,
			r.id, r.doc.path, r.doc.symbols, r.doc.body); err != nil {
			return fmt.Errorf("write search index: %w", err)
		}
		w.search[i] = searchRow{}
	}
	w.search, w.searchBytes = w.search[:0], 0
	return nil
}

// deleteSearch deletes the full-text rows of ids, after inserting the
// gathered ones: a row is never deleted before it is written.
func (w *writer) deleteSearch(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if err := w.flushSearch(ctx); err != nil {
		return err
	}
	return w.deleteIn(ctx, `DELETE FROM file_search WHERE rowid IN (%s)`, ids)
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
	return w.deleteOld(ctx, gone, old, res, ch)
}

// deleteOld removes the files at paths, all of them in the index, with
// every row that refers to them.
func (w *writer) deleteOld(ctx context.Context, paths []string, old map[string]existing, res *Result, ch *changes) error {
	if len(paths) == 0 {
		return nil
	}
	var ids, py []int64
	for _, p := range paths {
		e := old[p]
		ids = append(ids, e.id)
		if e.lang == string(lang.Python) {
			py = append(py, e.id)
		}
		if resolverConfigFile(p) {
			ch.configChanged = true
		}
	}
	if err := w.collectOld(ctx, ids, py, ch); err != nil {
		return err
	}
	if err := w.collectImporters(ctx, ids, ch.importers); err != nil {
		return err
	}
	if err := w.deleteFiles(ctx, ids); err != nil {
		if len(paths) == 1 {
			return fmt.Errorf("delete %s from index: %w", paths[0], err)
		}
		return fmt.Errorf("delete %d files from index: %w", len(paths), err)
	}
	res.Deleted += len(paths)
	ch.fileSet = true
	return nil
}

// pendingFiles is how many new or changed files the writer gathers before
// it writes them: their old rows go in a few statements for all of them
// (rows of neighbouring files sit on the same b-tree pages), and the
// full-text index sees its deletes apart from its inserts.
const pendingFiles = 256

// parseAhead is how many files the parsers may have read and parsed
// ahead of the writer (see parseAndWrite): 64 files are about 50 ms of a
// parser's work on django's files, past any one file but the largest;
// with 256 a full index of django peaked at 154 MiB, 20 more.
const parseAhead = 64

// applyOne takes one outcome: a skip (deleting the file's old rows if it
// had any) or an unchanged file is written at once, a new or changed file
// joins the pending ones, written by flushPending.
func (w *writer) applyOne(ctx context.Context, o *outcome, old map[string]existing, res *Result, ch *changes) error {
	if o.warn != "" {
		res.Warnings = append(res.Warnings, Warning{o.c.rel, o.warn})
	}
	e, had := old[o.c.rel]
	if o.skip != "" {
		res.Skipped[o.skip]++
		res.SkipList = append(res.SkipList, Skip{o.c.rel, o.skip})
		if had {
			return w.deleteOld(ctx, []string{o.c.rel}, old, res, ch)
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
	w.pending = append(w.pending, *o)
	if len(w.pending) >= pendingFiles || w.nothingOld {
		return w.flushPending(ctx, old, res, ch)
	}
	return nil
}

// flushPending writes the pending new and changed files: first the old
// rows of the changed ones go, all together, then each file's new rows.
func (w *writer) flushPending(ctx context.Context, old map[string]existing, res *Result, ch *changes) error {
	if len(w.pending) == 0 {
		return nil
	}
	var ids, py []int64
	for i := range w.pending {
		if e, had := old[w.pending[i].c.rel]; had && !w.rebuild {
			ids = append(ids, e.id)
			if e.lang == string(lang.Python) {
				py = append(py, e.id)
			}
		}
	}
	if err := w.collectOld(ctx, ids, py, ch); err != nil {
		return err
	}
	if err := w.clearContent(ctx, ids); err != nil {
		return fmt.Errorf("update %d changed files: %w", len(ids), err)
	}
	if err := w.deleteSearch(ctx, ids); err != nil {
		return fmt.Errorf("update %d changed files: %w", len(ids), err)
	}
	for i := range w.pending {
		if err := w.writeOne(ctx, &w.pending[i], old, res, ch); err != nil {
			return err
		}
		w.pending[i] = outcome{} // let the parse result go
	}
	w.pending = w.pending[:0]
	return nil
}

// writeOne writes the rows of a new file, or the new rows of a changed
// one whose old rows flushPending removed.
func (w *writer) writeOne(ctx context.Context, o *outcome, old map[string]existing, res *Result, ch *changes) error {
	e, had := old[o.c.rel]
	id := e.id
	if had {
		if _, err := w.exec(ctx, `UPDATE files SET language = ?, content_hash = ?, size_bytes = ? WHERE id = ?`,
			o.c.lang, o.hash, o.c.size, id); err != nil {
			return fmt.Errorf("update %s: %w", o.c.rel, err)
		}
		if w.rebuild && e.hash == o.hash && e.lang == o.c.lang {
			res.Unchanged++
		} else {
			res.Changed++
		}
	} else {
		r, err := w.exec(ctx, `INSERT INTO files(repo_id, path, language, content_hash, size_bytes) VALUES (?, ?, ?, ?, ?)`,
			w.repoID, o.c.rel, o.c.lang, o.hash, o.c.size)
		if err != nil {
			return fmt.Errorf("add %s: %w", o.c.rel, err)
		}
		id, _ = r.LastInsertId()
		res.Added++
		w.added = append(w.added, o.c.rel)
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
	if _, err := w.exec(ctx, `INSERT INTO file_index(file_id, mtime_ns, line_count, syntax_errors, parsed, vendored) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(file_id) DO UPDATE SET mtime_ns = excluded.mtime_ns, line_count = excluded.line_count,
		syntax_errors = excluded.syntax_errors, parsed = excluded.parsed, vendored = excluded.vendored`, id, o.c.mtime, o.lines, syntaxErrors, parsed, o.vendored); err != nil {
		return fmt.Errorf("index %s: %w", o.c.rel, err)
	}
	if o.search != nil {
		if err := w.addSearch(ctx, id, o.search); err != nil {
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

// inChunk bounds the IDs of one IN (...) list, far below SQLite's limit
// on variables.
const inChunk = 500

// deleteIn runs q, a statement with one IN (%s) list, for ids in chunks.
func (w *writer) deleteIn(ctx context.Context, q string, ids []int64) error {
	for chunk := range slices.Chunk(ids, inChunk) {
		args, marks := inArgs(chunk)
		if _, err := w.exec(ctx, fmt.Sprintf(q, marks), args...); err != nil {
			return err
		}
	}
	return nil
}

// collectOld reads what the files ids, about to be changed or deleted,
// defined: the Python definitions by name (py, those of ids in Python)
// for the resolvers, and, until more than identFullFiles files changed,
// the names and the files for the identifier graph (identDirty).
func (w *writer) collectOld(ctx context.Context, ids, py []int64, ch *changes) error {
	if len(ids) > 0 {
		w.ident = nil // rows not of this run's
		// What follows reads and deletes content rows.
		if err := w.flushContent(ctx); err != nil {
			return err
		}
	}
	d := &ch.ident
	d.files += len(ids)
	d.full = d.full || d.files > identFullFiles
	isPy := make(map[int64]bool, len(py))
	for _, id := range py {
		isPy[id] = true
	}
	symbolsOf := ids
	if d.full {
		symbolsOf = py
	} else {
		for _, id := range ids {
			d.before[id] = map[string]bool{}
		}
	}
	err := w.queryIn(ctx, `SELECT file_id, name FROM symbols WHERE file_id IN (%s)`, symbolsOf, func(rows *sql.Rows) error {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		if isPy[id] {
			ch.removed[n]++
		}
		if !d.full {
			d.before[id][n] = true
		}
		return nil
	})
	if d.full {
		d.before = nil // the graph is built anew
	}
	return err
}

// collectImporters adds the files that import any of ids.
func (w *writer) collectImporters(ctx context.Context, ids []int64, into map[int64]bool) error {
	return w.queryIn(ctx, `SELECT source_file_id FROM dependencies WHERE target_file_id IN (%s)`, ids, func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[id] = true
		return nil
	})
}

// queryIn runs q, a query with one IN (%s) list, for ids in chunks, and
// calls row for each row.
func (w *writer) queryIn(ctx context.Context, q string, ids []int64, row func(*sql.Rows) error) error {
	for chunk := range slices.Chunk(ids, inChunk) {
		args, marks := inArgs(chunk)
		rows, err := w.tx.QueryContext(ctx, fmt.Sprintf(q, marks), args...)
		if err != nil {
			return fmt.Errorf("read index: %w", err)
		}
		for rows.Next() {
			if err := row(rows); err != nil {
				rows.Close()
				return err
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("read index: %w", err)
		}
	}
	return nil
}

// clearContent deletes what was extracted from the files ids' content,
// keeping their rows, their history and the edges other files have to
// them.
func (w *writer) clearContent(ctx context.Context, ids []int64) error {
	for _, q := range []string{
		`DELETE FROM symbol_references WHERE caller_symbol_id IN (SELECT id FROM symbols WHERE file_id IN (%s))`,
		`DELETE FROM symbol_references WHERE callee_symbol_id IN (SELECT id FROM symbols WHERE file_id IN (%s))`,
		`DELETE FROM name_refs WHERE file_id IN (%s)`,
		`DELETE FROM docstrings WHERE file_id IN (%s)`,
		`DELETE FROM inline_comments WHERE file_id IN (%s)`,
		`DELETE FROM file_imports WHERE file_id IN (%s)`,
		`DELETE FROM dependencies WHERE source_file_id IN (%s)`,
		`DELETE FROM symbols WHERE file_id IN (%s)`,
	} {
		if err := w.deleteIn(ctx, q, ids); err != nil {
			return err
		}
	}
	return nil
}

// clearAll deletes what was extracted from the content of every file of
// the repository, and its full-text rows, as clearContent does for some.
// With one repository in the database the tables are emptied whole.
func (w *writer) clearAll(ctx context.Context) error {
	var others int
	if err := w.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM repos WHERE id != ?`, w.repoID).Scan(&others); err != nil {
		return fmt.Errorf("clear index: %w", err)
	}
	const ofRepo = `(SELECT id FROM files WHERE repo_id = ?1)`
	qs := []string{
		`DELETE FROM symbol_references WHERE caller_symbol_id IN (SELECT id FROM symbols WHERE file_id IN ` + ofRepo + `)`,
		`DELETE FROM symbol_references WHERE callee_symbol_id IN (SELECT id FROM symbols WHERE file_id IN ` + ofRepo + `)`,
		`DELETE FROM name_refs WHERE file_id IN ` + ofRepo,
		`DELETE FROM docstrings WHERE file_id IN ` + ofRepo,
		`DELETE FROM inline_comments WHERE file_id IN ` + ofRepo,
		`DELETE FROM file_imports WHERE file_id IN ` + ofRepo,
		`DELETE FROM dependencies WHERE source_file_id IN ` + ofRepo,
		`DELETE FROM symbols WHERE file_id IN ` + ofRepo,
		`DELETE FROM file_search WHERE rowid IN ` + ofRepo,
	}
	if others == 0 {
		qs = []string{
			`DELETE FROM symbol_references`, `DELETE FROM name_refs`, `DELETE FROM docstrings`,
			`DELETE FROM inline_comments`, `DELETE FROM file_imports`, `DELETE FROM dependencies`,
			`DELETE FROM symbols`, `INSERT INTO file_search(file_search) VALUES ('delete-all')`,
		}
	}
	for _, q := range qs {
		var args []any
		if strings.Contains(q, "?1") {
			args = append(args, w.repoID)
		}
		if _, err := w.tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("clear index: %w", err)
		}
	}
	return nil
}

// fixSearchTotals sets the totals bm25() weighs terms by (the averages
// record of the full-text index: its row count and each column's token
// count) to those of its live rows, which a fresh index of the same files
// has. A contentless FTS5 table with contentless_delete never takes a
// deleted row out of them, and every changed file is a delete and an
// insert: without this the row count grows with every change, common
// terms gain weight, and an index kept up to date ranks differently from
// a fresh one, more so the longer it lives. The live rows' sizes are in
// file_search_docsize, a row each. FTS5 writes its cached totals when a
// transaction that wrote the table commits, so this runs in a transaction
// of its own after the run's: a process stopped between the two leaves
// the drift to the next run. A record this code does not know is left
// alone.
func fixSearchTotals(ctx context.Context, conn *sql.Conn) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("full-text totals: %w", err)
	}
	defer tx.Rollback()
	var averages []byte
	err = tx.QueryRowContext(ctx, `SELECT block FROM file_search_data WHERE id = 1`).Scan(&averages)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // nothing was ever written
	}
	if err != nil {
		return fmt.Errorf("full-text totals: %w", err)
	}
	have, ok := searchTotals(averages)
	if !ok {
		return nil
	}
	want := make([]uint64, len(have))
	rows, err := tx.QueryContext(ctx, `SELECT sz FROM file_search_docsize`)
	if err != nil {
		return fmt.Errorf("full-text totals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sz []byte
		if err := rows.Scan(&sz); err != nil {
			return fmt.Errorf("full-text totals: %w", err)
		}
		want[0]++
		for i := 1; i < len(want) && len(sz) > 0; i++ {
			v, n := sqliteVarint(sz)
			if n == 0 {
				return nil // not a size record this code knows: leave the totals
			}
			want[i] += v
			sz = sz[n:]
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("full-text totals: %w", err)
	}
	if slices.Equal(have, want) {
		return nil
	}
	var rec []byte
	for _, v := range want {
		rec = appendSQLiteVarint(rec, v)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE file_search_data SET block = ? WHERE id = 1`, rec); err != nil {
		return fmt.Errorf("full-text totals: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("full-text totals: %w", err)
	}
	return nil
}

// searchColumns is the number of columns of file_search (path, symbols,
// body).
const searchColumns = 3

// searchTotals decodes FTS5's averages record: the row count, then each
// column's token count, as SQLite varints. ok is false for a record of
// another shape.
func searchTotals(b []byte) (_ []uint64, ok bool) {
	out := make([]uint64, 0, 1+searchColumns)
	for len(b) > 0 {
		v, n := sqliteVarint(b)
		if n == 0 {
			return nil, false
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, len(out) == 1+searchColumns
}

// appendSQLiteVarint appends v as a SQLite varint (big-endian, 7 bits a
// byte with the high bit set on all but the last, a ninth byte whole),
// the encoding sqliteVarint decodes.
func appendSQLiteVarint(b []byte, v uint64) []byte {
	if v>>56 != 0 {
		var buf [9]byte
		buf[8] = byte(v)
		v >>= 8
		for i := 7; i >= 0; i-- {
			buf[i] = byte(v&0x7f) | 0x80
			v >>= 7
		}
		return append(b, buf[:]...)
	}
	var buf [8]byte
	i := len(buf) - 1
	buf[i] = byte(v & 0x7f)
	for v >>= 7; v != 0; v >>= 7 {
		i--
		buf[i] = byte(v&0x7f) | 0x80
	}
	return append(b, buf[i:]...)
}

// sqliteVarint decodes the SQLite varint at the start of b (big-endian, 7
// bits a byte, the ninth byte whole) and its length, 0 if b is too short.
func sqliteVarint(b []byte) (uint64, int) {
	var v uint64
	for i := range min(len(b), 8) {
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	if len(b) < 9 {
		return 0, 0
	}
	return v<<8 | uint64(b[8]), 9
}

// deleteFiles removes the files ids and every row that refers to them.
func (w *writer) deleteFiles(ctx context.Context, ids []int64) error {
	if err := w.clearContent(ctx, ids); err != nil {
		return err
	}
	for _, q := range []string{
		`DELETE FROM dependencies WHERE target_file_id IN (%s)`,
		`DELETE FROM file_commits WHERE file_id IN (%s)`,
		`DELETE FROM co_changes WHERE file_a_id IN (%s)`,
		`DELETE FROM co_changes WHERE file_b_id IN (%s)`,
		`DELETE FROM file_metadata WHERE file_id IN (%s)`,
		`DELETE FROM file_index WHERE file_id IN (%s)`,
		`DELETE FROM files WHERE id IN (%s)`,
	} {
		if err := w.deleteIn(ctx, q, ids); err != nil {
			return err
		}
	}
	return w.deleteSearch(ctx, ids)
}

func nullID(ids []int64, i int) any {
	if i < 0 || i >= len(ids) {
		return nil
	}
	return ids[i]
}

// contentRows batches the content rows of the files a run writes, across
// files: a statement carries up to batchRows rows of any number of files
// instead of one file's, about a fifth of the statements (each opens a
// statement journal, and makes FTS5 write out the postings it holds).
// Each table's rows go in the order they did a file at a time, so their
// row IDs are the same. The rows that name a symbol go after the
// symbols they name (the foreign keys are checked at every statement's
// end): a batch flushes the symbols' first.
type contentRows struct {
	syms, docs, comments, imports, refs *batcher
}

func (w *writer) contentRows() *contentRows {
	if w.content == nil {
		c := &contentRows{
			syms:     w.batch("symbols", "id", "file_id", "name", "kind", "start_line", "end_line", "signature", "parent_symbol_id"),
			docs:     w.batch("docstrings", "symbol_id", "file_id", "content", "format", "parsed_fields"),
			comments: w.batch("inline_comments", "file_id", "symbol_id", "line", "content", "kind", "is_rationale"),
			imports:  w.batch("file_imports", "file_id", "module", "level", "names", "type_only", "line"),
			refs:     w.batch("name_refs", "file_id", "symbol_id", "name", "qualifier", "kind", "line"),
		}
		c.docs.before, c.comments.before, c.refs.before = c.syms, c.syms, c.syms
		w.content = c
	}
	return w.content
}

// flushContent writes the batched content rows: before the index's
// content rows are read or deleted, and at the end of the writes.
func (w *writer) flushContent(ctx context.Context) error {
	if w.content == nil {
		return nil
	}
	c := w.content
	for _, b := range []*batcher{c.syms, c.docs, c.comments, c.imports, c.refs} {
		if err := b.flush(ctx); err != nil {
			return fmt.Errorf("write index: %w", err)
		}
	}
	return nil
}

func (w *writer) insertContent(ctx context.Context, fileID int64, f *lang.File) error {
	if w.nextSymbol == 0 {
		if err := w.tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM symbols`).Scan(&w.nextSymbol); err != nil {
			return err
		}
	}
	if w.ident != nil {
		w.ident.addFile(fileID, f)
	}
	c := w.contentRows()
	ids := make([]int64, len(f.Symbols))
	for i, s := range f.Symbols {
		ids[i] = w.nextSymbol
		w.nextSymbol++
		var parent any
		if s.Parent >= 0 && s.Parent < i {
			parent = ids[s.Parent]
		}
		if err := c.syms.add(ctx, ids[i], fileID, s.Name, s.Kind, s.StartLine, s.EndLine, s.Signature, parent); err != nil {
			return err
		}
	}
	for _, d := range f.Docstrings {
		if err := c.docs.add(ctx, nullID(ids, d.Symbol), fileID, d.Content, d.Format, d.ParsedFields); err != nil {
			return err
		}
	}
	for _, cm := range f.Comments {
		if err := c.comments.add(ctx, fileID, nullID(ids, cm.Symbol), cm.Line, cm.Content, cm.Kind, cm.IsRationale); err != nil {
			return err
		}
	}
	for _, im := range f.Imports {
		if err := c.imports.add(ctx, fileID, im.Path, im.Level, strings.Join(im.Names, ","), im.TypeOnly, im.Line); err != nil {
			return err
		}
	}
	for _, r := range f.References {
		if err := c.refs.add(ctx, fileID, nullID(ids, r.Caller), r.Name, r.Qualifier, r.Kind, r.Line); err != nil {
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

// edges reads the repository's dependency edges.
func (w *writer) edges(ctx context.Context) (map[edge]bool, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT d.source_file_id, d.target_file_id FROM dependencies d
		JOIN files f ON f.id = d.source_file_id WHERE f.repo_id = ?`, w.repoID)
	if err != nil {
		return nil, fmt.Errorf("read dependencies: %w", err)
	}
	defer rows.Close()
	out := map[edge]bool{}
	for rows.Next() {
		var e edge
		if err := rows.Scan(&e.src, &e.dst); err != nil {
			return nil, err
		}
		out[e] = true
	}
	return out, rows.Err()
}

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
	// The files the resolver reads (tsconfig's "extends" targets, whatever
	// their names, besides resolverConfigFile's): a change to one resolves
	// every import again.
	read, steering := map[string]bool{}, false
	r := NewResolver(paths, func(rel string) ([]byte, error) {
		read[rel] = true
		return os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	})
	for _, id := range ch.content {
		steering = steering || read[byID[id].path]
	}
	full = full || steering
	var before map[edge]bool // a full run's edges as they were
	if full {
		if before, err = w.edges(ctx); err != nil {
			return err
		}
		if _, err := w.tx.ExecContext(ctx, `DELETE FROM dependencies WHERE source_file_id IN (SELECT id FROM files WHERE repo_id = ?)`, w.repoID); err != nil {
			return fmt.Errorf("reset dependencies: %w", err)
		}
	}
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
	// A file whose imports now resolve elsewhere (a new __init__.py, a
	// moved module), its content unchanged, has its symbol references
	// resolved again too: they follow its imports.
	for e := range before {
		if _, ok := kinds[e]; !ok && byID[e.src].lang == string(lang.Python) {
			ch.importers[e.src] = true
		}
	}
	if full {
		for e := range kinds {
			if !before[e] && byID[e.src].lang == string(lang.Python) {
				ch.importers[e.src] = true
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

// bulkIndexes are the indexes a run writing into empty content tables
// builds after their rows are in (dropIndexes, createIndexes): their keys
// (a symbol's name, a reference's callee) come in no order, so a row
// inserted with the index in place goes to a random leaf of its b-tree,
// which the small page cache of a first run (firstRunCacheKiB) has long
// evicted, where CREATE INDEX sorts the keys and writes its pages once,
// in order. On a full index of django the content writes (insertContent
// and createIndexes) took about 7% less CPU time in CPU profiles of
// BenchmarkIndexRepo side by side, 1-2% of the run's (whole-process
// pairs at load 6-12 said 8-12%, within their noise); peak memory +3
// MiB. Built the same way, the name index of name_refs cost 20-30 MiB
// more at the peak (CREATE INDEX sorts in memory: temp_store is MEMORY),
// so it stays; indexes on file and symbol IDs grow at their end as the
// rows are written. Nothing the run reads before createIndexes looks
// rows up through these.
var bulkIndexes = []string{"idx_symbols_name", "idx_symbol_references_callee"}

// dropIndexes drops the indexes names, keeping their definitions for
// createIndexes. The run's transaction holds both: a run that fails
// leaves them as they were.
func (w *writer) dropIndexes(ctx context.Context, names ...string) error {
	for _, n := range names {
		var def string
		if err := w.tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?`, n).Scan(&def); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				continue // a schema without it: nothing to build again
			}
			return fmt.Errorf("read index %s: %w", n, err)
		}
		if _, err := w.tx.ExecContext(ctx, `DROP INDEX `+n); err != nil {
			return fmt.Errorf("drop index %s: %w", n, err)
		}
		w.dropped = append(w.dropped, def)
	}
	return nil
}

// createIndexes builds again, from their own definitions, the indexes
// dropIndexes dropped.
func (w *writer) createIndexes(ctx context.Context) error {
	for _, def := range w.dropped {
		if _, err := w.tx.ExecContext(ctx, def); err != nil {
			return fmt.Errorf("build index: %w", err)
		}
	}
	w.dropped = nil
	return nil
}
