// Package storetest reads database rows for tests that check what a
// writer stored, column by column.
package storetest

import (
	"database/sql"
	"testing"
)

// Row is one stored row by column name; SQL NULL is nil.
type Row map[string]any

// Rows runs query q on db and returns every row, failing t on any error.
func Rows(t testing.TB, db *sql.DB, q string) []Row {
	t.Helper()
	cols, rows := scan(t, db, q)
	out := make([]Row, 0, len(rows))
	for _, vals := range rows {
		r := Row{}
		for i, c := range cols {
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	return out
}

// RowList is Rows with each row's values in the order of q's columns.
func RowList(t testing.TB, db *sql.DB, q string) [][]any {
	t.Helper()
	_, rows := scan(t, db, q)
	return rows
}

func scan(t testing.TB, db *sql.DB, q string) ([]string, [][]any) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return cols, out
}
