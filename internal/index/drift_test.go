package index

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// A contentless FTS5 table never takes a deleted row out of the totals
// bm25() weighs by, and a changed file is a delete and an insert: BM25
// over an index kept up to date drifted from a fresh index's, and a run
// past a fifth of dead rows rebuilt everything (a django step every few
// tasks: p95 of the harness's re-index 6 s -> 20 s). Every run now sets
// the totals to its live rows' (fixSearchTotals), so after each
// incremental run, files changed or deleted, the scores are a fresh
// index's, and nothing is rebuilt.
func TestSearchTotalsFresh(t *testing.T) {
	r := newRepo(t, true)
	const files = 40
	for i := range files {
		r.write(fmt.Sprintf("pkg/mod%02d.py", i), fmt.Sprintf("def handler_%d(request):\n    return request.session\n", i))
	}
	r.commit("init")
	r.index()
	bm25 := func(f *store.Factory) string {
		t.Helper()
		rr := &repo{t: t, root: r.root, f: f}
		return fmt.Sprint(rr.strings(`SELECT f.path || ' ' || printf('%.9f', -bm25(file_search)) FROM file_search JOIN files f ON f.id = file_search.rowid
			WHERE file_search MATCH 'session OR request OR edit' ORDER BY f.path`))
	}
	fresh := func() string {
		t.Helper()
		f := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
		if _, err := NewBuilder(f).Run(t.Context(), r.root); err != nil {
			t.Fatal(err)
		}
		return bm25(f)
	}
	// Each run rewrites 6 files (18 dead rows after the third, past the
	// fifth of 40 that rebuilt before), then a run deletes two.
	for run := 1; run <= 4; run++ {
		want := 6
		if run < 4 {
			for i := range 6 {
				r.write(fmt.Sprintf("pkg/mod%02d.py", i), fmt.Sprintf("def handler_%d(request):\n    return request.session  # edit %d\n", i, run))
			}
		} else {
			r.git("rm", "-q", "pkg/mod38.py", "pkg/mod39.py")
			want = 2
		}
		r.commit(fmt.Sprintf("edit %d", run))
		res := r.index()
		if res.Rebuilt || res.FilesChanged() != want {
			t.Errorf("run %d: rebuilt %v, %d files changed; want an incremental run of %d", run, res.Rebuilt, res.FilesChanged(), want)
		}
		if got, want := bm25(r.f), fresh(); got != want {
			t.Errorf("run %d: scores\n%s\nwant a fresh index's\n%s", run, got, want)
		}
	}
	r.integrity()
}

func TestSQLiteVarint(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		v    uint64
		size int
	}{
		{[]byte{0x05, 0xff}, 5, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0x82, 0x80, 0x01}, 1<<15 | 1, 3},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ^uint64(0), 9},
		{[]byte{0x81}, 0, 0},
		{nil, 0, 0},
	} {
		if v, n := sqliteVarint(tc.in); v != tc.v || n != tc.size {
			t.Errorf("sqliteVarint(%x): got %d, %d; want %d, %d", tc.in, v, n, tc.v, tc.size)
		}
	}
}

// putSQLiteVarint encodes v as SQLite does: big-endian groups of 7 bits,
// and a ninth byte of 8 when the value needs more than 56 bits.
func putSQLiteVarint(v uint64) []byte {
	if v > 1<<56-1 {
		b := make([]byte, 9)
		b[8] = byte(v)
		v >>= 8
		for i := 7; i >= 0; i-- {
			b[i] = byte(v&0x7f) | 0x80
			v >>= 7
		}
		return b
	}
	var rev []byte
	for {
		rev = append(rev, byte(v&0x7f))
		v >>= 7
		if v == 0 {
			break
		}
	}
	b := make([]byte, len(rev))
	for i := range rev {
		b[i] = rev[len(rev)-1-i]
		if i < len(rev)-1 {
			b[i] |= 0x80
		}
	}
	return b
}

// FuzzSQLiteVarint: any bytes decode without a panic to a length within
// them, and every value survives SQLite's encoding and back.
func FuzzSQLiteVarint(f *testing.F) {
	f.Add([]byte{0x81, 0x00}, uint64(128))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ^uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, v uint64) {
		if _, n := sqliteVarint(b); n < 0 || n > len(b) || n > 9 {
			t.Fatalf("sqliteVarint(%x): length %d", b, n)
		}
		enc := putSQLiteVarint(v)
		if got := appendSQLiteVarint([]byte{0xff}, v); !bytes.Equal(got[1:], enc) || got[0] != 0xff {
			t.Fatalf("appendSQLiteVarint(%d): %x, want %x after the first byte", v, got, enc)
		}
		if got, n := sqliteVarint(append(enc, 0x01)); got != v || n != len(enc) {
			t.Fatalf("%d encoded %x: decoded %d in %d bytes", v, enc, got, n)
		}
	})
}
