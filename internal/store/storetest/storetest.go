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
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []Row
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		r := Row{}
		for i, c := range cols {
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
