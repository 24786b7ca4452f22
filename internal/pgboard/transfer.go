package pgboard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/board"
)

// Import copies every task file of files, all six folders, into
// board_tasks in transaction tx (pgstore.Log.ImportWith, so that the
// board and the world log move together): each file's bytes as written,
// its folder and its modification time. The table must be empty. A file
// the file store cannot read (malformed, a symbolic link, a name that is
// no task id) or a task in two folders refuses the whole import, naming
// the file and the fix: nothing is lost on the way, and nothing is taken
// that the board could not read back. It returns how many tasks it
// copied.
func Import(ctx context.Context, tx pgx.Tx, files *board.FileStore) (int, error) {
	var have int64
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM board_tasks").Scan(&have); err != nil {
		return 0, fmt.Errorf("import tasks: %w", err)
	}
	if have > 0 {
		return 0, fmt.Errorf("import tasks: the PostgreSQL board already holds %d tasks: import goes into an empty one", have)
	}
	listed, err := files.List(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("import tasks: %w", err)
	}
	folders := map[string][]board.Folder{}
	var rows [][]any
	for _, l := range listed {
		if l.Err != nil {
			return 0, fmt.Errorf("import tasks: %w: fix or remove the file ('cra task rebuild --check' lists what it finds), then import again", l.Err)
		}
		folders[l.ID] = append(folders[l.ID], l.Folder)
		if len(folders[l.ID]) > 1 {
			return 0, fmt.Errorf("import tasks: %w", &board.DuplicateError{ID: l.ID, Folders: folders[l.ID]})
		}
		_, body, mtime, err := files.ReadFile(l.ID, l.Folder)
		if err != nil {
			return 0, fmt.Errorf("import tasks: %w: stop the writers of the board and import again", err)
		}
		rows = append(rows, []any{l.ID, string(l.Folder), body, mtime.UnixMilli()})
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"board_tasks"}, []string{"id", "folder", "body", "updated_ms"}, pgx.CopyFromRows(rows)); err != nil {
		return 0, fmt.Errorf("import tasks: %w", err)
	}
	if _, err := tx.Exec(ctx, "ANALYZE board_tasks"); err != nil {
		return 0, fmt.Errorf("import tasks: %w", err)
	}
	return len(rows), nil
}

// Export writes every task into files, each row's body as the file
// tasks/<folder>/<id>.yaml byte for byte, and returns how many it wrote.
// files must hold no task yet: export does not merge. A row that is no
// task (TaskOfRow) refuses the export before anything is written.
func (t *Tasks) Export(ctx context.Context, files *board.FileStore) (int, error) {
	if ids, err := files.IDs(ctx, ""); err != nil {
		return 0, fmt.Errorf("export tasks: %w", err)
	} else if len(ids) > 0 {
		return 0, fmt.Errorf("export tasks: %s already holds %d tasks: export into a state directory without a board", files.Dir(), len(ids))
	}
	rows, err := t.q.Query(ctx, `SELECT id, folder, body FROM board_tasks ORDER BY id COLLATE "C"`)
	if err != nil {
		return 0, fmt.Errorf("export tasks: %w", err)
	}
	type file struct {
		path string
		body []byte
	}
	var out []file
	for rows.Next() {
		var id, folder string
		var body []byte
		if err := rows.Scan(&id, &folder, &body); err != nil {
			rows.Close()
			return 0, fmt.Errorf("export tasks: %w", err)
		}
		if _, f, err := TaskOfRow(id, folder, body); err != nil {
			rows.Close()
			return 0, fmt.Errorf("export tasks: %w", err)
		} else {
			out = append(out, file{files.Path(id, f), body})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("export tasks: %w", err)
	}
	for _, f := range board.Folders() {
		if err := os.MkdirAll(filepath.Dir(files.Path("x", f)), 0o755); err != nil {
			return 0, fmt.Errorf("export tasks: %w", err)
		}
	}
	for i, f := range out {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return i, err
			}
		}
		if err := writeNew(f.path, f.body); err != nil {
			if errors.Is(err, os.ErrExist) {
				return i, fmt.Errorf("export tasks: %s appeared while exporting: stop its writers and export into an empty directory", f.path)
			}
			return i, fmt.Errorf("export tasks: %w", err)
		}
	}
	return len(out), nil
}

// writeNew writes a file that must not exist yet. It is not synced: the
// database still holds what a crash would lose, and an export is run
// again.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
