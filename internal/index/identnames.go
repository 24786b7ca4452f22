package index

import (
	"context"
	"database/sql"
	"fmt"
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

// identDirty is what a run must redo of the identifier graph: every name
// that a changed or deleted file defined or used before the run (names
// it defines or uses after are added from the written files), or all of
// it. A name's rows in the graph depend only on the files defining and
// using it, so those names are all that can change.
type identDirty struct {
	full  bool
	files int // changed and deleted files so far
	names map[string]bool
}

// addNamesOf adds the names the files ids define and use.
func (d *identDirty) addNamesOf(ctx context.Context, w *writer, ids []int64) error {
	for _, q := range []string{`SELECT name FROM symbols WHERE file_id IN (%s)`, `SELECT name FROM name_refs WHERE file_id IN (%s)`} {
		err := w.queryIn(ctx, q, ids, func(rows *sql.Rows) error {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			d.names[n] = true
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// updateIdentNames brings the identifier graph up to date after the
// run's writes: anew on a first run, a rebuild, many changes or an index
// that never had it; otherwise for the dirty names and the names of the
// files written. A run that changed nothing leaves it alone.
func updateIdentNames(ctx context.Context, w *writer, ch *changes) error {
	d := &ch.ident
	var built int
	if err := w.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM ident_state WHERE max_defs = ?`, IdentMaxDefs).Scan(&built); err != nil {
		return fmt.Errorf("read identifier graph state: %w", err)
	}
	full := d.full || ch.first || built == 0
	if !full {
		if err := d.addNamesOf(ctx, w, ch.content); err != nil {
			return err
		}
		if len(d.names) == 0 {
			return nil
		}
	}
	if err := writeIdentNames(ctx, w, full, d.names); err != nil {
		return fmt.Errorf("write identifier graph: %w", err)
	}
	return nil
}

// writeIdentNames rewrites the graph's rows of names (all of them when
// full). The rare names' definers go first into a temporary table, so
// that the join with name_refs reads each reference once: on a full run
// in table order, otherwise through the name index for the names asked.
func writeIdentNames(ctx context.Context, w *writer, full bool, names map[string]bool) error {
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
	rare := `SELECT name FROM symbols GROUP BY name HAVING COUNT(DISTINCT file_id) <= ?`
	join := `name_refs r CROSS JOIN temp.ident_defs d ON d.name = r.name`
	if full {
		if err := exec(`DELETE FROM ident_names`); err != nil {
			return err
		}
	} else {
		if err := exec(`CREATE TEMP TABLE IF NOT EXISTS ident_dirty (name TEXT PRIMARY KEY) WITHOUT ROWID`, `DELETE FROM temp.ident_dirty`); err != nil {
			return err
		}
		defer w.tx.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS temp.ident_dirty`)
		ins, err := w.tx.PrepareContext(ctx, `INSERT INTO temp.ident_dirty (name) VALUES (?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for n := range names {
			if _, err := ins.ExecContext(ctx, n); err != nil {
				return err
			}
		}
		if err := exec(`DELETE FROM ident_names WHERE name IN (SELECT name FROM temp.ident_dirty)`); err != nil {
			return err
		}
		rare = `SELECT s.name FROM temp.ident_dirty n JOIN symbols s ON s.name = n.name GROUP BY s.name HAVING COUNT(DISTINCT s.file_id) <= ?`
		join = `temp.ident_defs d JOIN name_refs r ON r.name = d.name`
	}
	if _, err := w.tx.ExecContext(ctx, `INSERT OR IGNORE INTO temp.ident_defs (name, file_id)
		SELECT s.name, s.file_id FROM symbols s JOIN (`+rare+`) rare ON rare.name = s.name`, IdentMaxDefs); err != nil {
		return err
	}
	return exec(`INSERT INTO ident_names (user_file, def_file, name) SELECT DISTINCT r.file_id, d.file_id, r.name FROM `+join+` WHERE d.file_id != r.file_id`,
		`DELETE FROM ident_state`, fmt.Sprintf(`INSERT INTO ident_state (max_defs) VALUES (%d)`, IdentMaxDefs))
}
