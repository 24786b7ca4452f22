package index

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
)

// IdentMaxDefs is the bound on defining files of the names in the
// identifier graph the index keeps (table ident_names, migration 0004):
// a name defined in more files links nothing. Retrieval asks for this
// bound; a reader asking for another computes the graph itself.
const IdentMaxDefs = 3

// identFullFiles is how many changed or deleted files an incremental run
// brings the identifier graph up to date for name by name; past it the
// graph is built anew, which costs about what parsing a few hundred files
// does.
const identFullFiles = 300

// identDirty is what a run must redo of the identifier graph, or all of
// it. A row (user, definer, name) depends on the files defining the name
// and on the user's own references. So the rows of a name whose definers
// changed (a changed file defines it now and did not before, or the
// other way round; a deleted or added file's every name) are all written
// again, since whether it is rare may have changed too; of the other
// names, only the rows from the changed and deleted files (their
// references) are. A name a changed file only uses, or defines before
// and after, keeps the rows of its other users: rewriting them all, for
// a name used in a thousand files, was most of an incremental run's cost
// of the graph.
type identDirty struct {
	full  bool
	files int // changed and deleted files so far
	// before holds the names each changed or deleted file defined, by
	// its ID (which a changed file keeps).
	before map[int64]map[string]bool
}

// dirtyNames returns the names whose definers changed: those the files
// defined before (d.before) and those the written files define now,
// each file's names that are in one of the two and not the other.
func (d *identDirty) dirtyNames(ctx context.Context, w *writer, written []int64) (map[string]bool, error) {
	after := make(map[int64]map[string]bool, len(written))
	for _, id := range written {
		after[id] = map[string]bool{}
	}
	err := w.queryIn(ctx, `SELECT file_id, name FROM symbols WHERE file_id IN (%s)`, written, func(rows *sql.Rows) error {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			return err
		}
		after[id][n] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	diff := func(a, b map[string]bool) {
		for n := range a {
			if !b[n] {
				names[n] = true
			}
		}
	}
	for id, b := range d.before {
		diff(b, after[id])
	}
	for id, a := range after {
		diff(a, d.before[id])
	}
	return names, nil
}

// updateIdentNames brings the identifier graph up to date after the
// run's writes: anew on a first run, a rebuild, many changes or an index
// that never had it; otherwise for the names whose definers changed and
// the rows from the changed, deleted and written files. A run that
// changed nothing leaves it alone.
func updateIdentNames(ctx context.Context, w *writer, ch *changes) error {
	d := &ch.ident
	var built int
	if err := w.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ident_state WHERE max_defs = ?`, IdentMaxDefs).Scan(&built); err != nil {
		return fmt.Errorf("read identifier graph state: %w", err)
	}
	full := d.full || ch.first || built == 0
	var names map[string]bool
	users := make([]int64, 0, len(d.before))
	if !full {
		if len(d.before) == 0 && len(ch.content) == 0 {
			return nil
		}
		var err error
		if names, err = d.dirtyNames(ctx, w, ch.content); err != nil {
			return fmt.Errorf("write identifier graph: %w", err)
		}
		for id := range d.before {
			users = append(users, id)
		}
		slices.Sort(users)
	}
	if err := writeIdentNames(ctx, w, full, names, users, ch.content); err != nil {
		return fmt.Errorf("write identifier graph: %w", err)
	}
	return nil
}

// writeIdentNames rewrites the graph: all of it when full, otherwise the
// rows of names and the rows from the files users (gone or changed) and
// written (their rows now). The rare names' definers go first into a
// temporary table, so that the join with name_refs reads each reference
// once: on a full run in table order, otherwise through the name index
// for the names asked and the file index for the files written.
func writeIdentNames(ctx context.Context, w *writer, full bool, names map[string]bool, users, written []int64) error {
	exec := func(qs ...string) error {
		for _, q := range qs {
			if _, err := w.tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
	if err := exec(`CREATE TEMP TABLE IF NOT EXISTS ident_defs (name TEXT NOT NULL, file_id INTEGER NOT NULL, PRIMARY KEY (name, file_id)) WITHOUT ROWID`,
		`DELETE FROM temp.ident_defs`); err != nil {
		return err
	}
	defer w.tx.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS temp.ident_defs`)
	state := []string{`DELETE FROM ident_state`, fmt.Sprintf(`INSERT INTO ident_state (max_defs) VALUES (%d)`, IdentMaxDefs)}
	if full {
		if err := exec(`DELETE FROM ident_names`); err != nil {
			return err
		}
		if g := w.ident; g != nil {
			w.ident = nil // let it go once written
			if err := g.write(ctx, w); err != nil {
				return err
			}
			return exec(state...)
		}
		if _, err := w.tx.ExecContext(ctx, `INSERT OR IGNORE INTO temp.ident_defs (name, file_id)
			SELECT s.name, s.file_id FROM symbols s JOIN (SELECT name FROM symbols GROUP BY name HAVING COUNT(DISTINCT file_id) <= ?) rare ON rare.name = s.name`, IdentMaxDefs); err != nil {
			return err
		}
		return exec(append([]string{`INSERT INTO ident_names (user_file, def_file, name) SELECT DISTINCT r.file_id, d.file_id, r.name
			FROM name_refs r CROSS JOIN temp.ident_defs d ON d.name = r.name WHERE d.file_id != r.file_id`}, state...)...)
	}
	// ident_dirty holds the names whose rows are all written again
	// (dirty), and the names the written files use, whose definers the
	// written files' rows need (dirty = 0).
	if err := exec(`CREATE TEMP TABLE IF NOT EXISTS ident_dirty (name TEXT PRIMARY KEY, dirty INTEGER NOT NULL) WITHOUT ROWID`, `DELETE FROM temp.ident_dirty`); err != nil {
		return err
	}
	defer w.tx.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS temp.ident_dirty`)
	ins, err := w.tx.PrepareContext(ctx, `INSERT INTO temp.ident_dirty (name, dirty) VALUES (?, 1)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for n := range names {
		if _, err := ins.ExecContext(ctx, n); err != nil {
			return err
		}
	}
	if len(names) > 0 {
		if err := exec(`DELETE FROM ident_names WHERE name IN (SELECT name FROM temp.ident_dirty)`); err != nil {
			return err
		}
	}
	if err := w.deleteIn(ctx, `DELETE FROM ident_names WHERE user_file IN (%s)`, users); err != nil {
		return err
	}
	if err := w.deleteIn(ctx, `INSERT OR IGNORE INTO temp.ident_dirty (name, dirty) SELECT DISTINCT name, 0 FROM name_refs WHERE file_id IN (%s)`, written); err != nil {
		return err
	}
	// Whether a name is rare needs its definers counted only up to one
	// past the bound: a name defined in a thousand files stops at four.
	if _, err := w.tx.ExecContext(ctx, `INSERT OR IGNORE INTO temp.ident_defs (name, file_id)
		SELECT s.name, s.file_id FROM temp.ident_dirty n JOIN symbols s ON s.name = n.name
		WHERE (SELECT COUNT(*) FROM (SELECT DISTINCT file_id FROM symbols WHERE name = n.name LIMIT ?)) <= ?`, IdentMaxDefs+1, IdentMaxDefs); err != nil {
		return err
	}
	if err := exec(`INSERT OR IGNORE INTO ident_names (user_file, def_file, name) SELECT DISTINCT r.file_id, d.file_id, r.name
		FROM temp.ident_dirty n JOIN temp.ident_defs d ON d.name = n.name JOIN name_refs r ON r.name = d.name
		WHERE n.dirty = 1 AND d.file_id != r.file_id`); err != nil {
		return err
	}
	if err := w.deleteIn(ctx, `INSERT OR IGNORE INTO ident_names (user_file, def_file, name) SELECT DISTINCT r.file_id, d.file_id, r.name
		FROM name_refs r JOIN temp.ident_defs d ON d.name = r.name WHERE r.file_id IN (%s) AND d.file_id != r.file_id`, written); err != nil {
		return err
	}
	return exec(state...)
}

// identGraph gathers the identifier graph of a run that writes every
// content row of the index (see writer.ident): the files that define
// each name, up to one past IdentMaxDefs, and the names each file uses.
// Built from these, the graph is the full query's rows (writeIdentNames)
// without reading the references and symbols back through a join.
type identGraph struct {
	names map[string]string  // one copy of each name
	defs  map[string][]int64 // defining files, in the order written
	uses  []identUse         // each file's names, once each
	// file and used: the file being gathered and the names it used.
	file int64
	used map[string]bool
}

type identUse struct {
	file int64
	name string
}

func newIdentGraph() *identGraph {
	return &identGraph{names: map[string]string{}, defs: map[string][]int64{}, used: map[string]bool{}}
}

func (g *identGraph) intern(n string) string {
	if s, ok := g.names[n]; ok {
		return s
	}
	s := strings.Clone(n)
	g.names[s] = s
	return s
}

// addFile gathers a file's definitions and references: all of its rows
// in symbols and name_refs.
func (g *identGraph) addFile(id int64, f *lang.File) {
	for _, s := range f.Symbols {
		d := g.defs[s.Name]
		if len(d) > IdentMaxDefs || len(d) > 0 && d[len(d)-1] == id {
			continue
		}
		n := g.intern(s.Name)
		g.defs[n] = append(d, id)
	}
	if g.file != id {
		g.file = id
		clear(g.used)
	}
	for _, r := range f.References {
		if g.used[r.Name] {
			continue
		}
		n := g.intern(r.Name)
		g.used[n] = true
		g.uses = append(g.uses, identUse{id, n})
	}
}

// write inserts the graph into the emptied ident_names, in its key's
// order: for each file's use of a name defined in at most IdentMaxDefs
// files, a row for each of those files but the user.
func (g *identGraph) write(ctx context.Context, w *writer) error {
	type row struct {
		user, def int64
		name      string
	}
	var rows []row
	for _, u := range g.uses {
		defs := g.defs[u.name]
		if len(defs) > IdentMaxDefs {
			continue
		}
		for _, d := range defs {
			if d != u.file {
				rows = append(rows, row{u.file, d, u.name})
			}
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.user, b.user), cmp.Compare(a.def, b.def), strings.Compare(a.name, b.name))
	})
	ins := w.batch("ident_names", "user_file", "def_file", "name")
	for _, r := range rows {
		if err := ins.add(ctx, r.user, r.def, r.name); err != nil {
			return err
		}
	}
	return ins.flush(ctx)
}
