package kb_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
)

// collect gathers what a method calls its function with.
func collect[T any](t *testing.T, each func(fn func(T)) error) []T {
	t.Helper()
	var out []T
	if err := each(func(v T) { out = append(out, v) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFilesWithCommits(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	got := collect(t, func(fn func(kb.FileCommits)) error { return k.FilesWithCommits(ctx, kbtest.MainRepoID, fn) })
	want := []kb.FileCommits{
		{kbtest.APIPy, "app/api.py", "python", 1},
		{kbtest.DBPy, "app/db.py", "python", 3},
		{kbtest.ModelsPy, "app/models.py", "python", 3},
		{kbtest.UtilPy, "app/util.py", "python", 1},
		{kbtest.ClientTS, "web/client.ts", "typescript", 1},
		{kbtest.TypesTS, "web/types.ts", "typescript", 0},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if empty := collect(t, func(fn func(kb.FileCommits)) error { return k.FilesWithCommits(ctx, kbtest.EmptyRepoID, fn) }); len(empty) != 0 {
		t.Errorf("empty repository: got %v, want no files", empty)
	}
}

func TestFileCount(t *testing.T) {
	k := openKB(t)
	for _, tc := range []struct {
		name string
		repo int64
		want int
	}{
		{"main", kbtest.MainRepoID, 6},
		{"other", kbtest.OtherRepoID, 1},
		{"empty", kbtest.EmptyRepoID, 0},
		{"unknown", 99, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.FileCount(context.Background(), tc.repo)
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v, want %d", got, err, tc.want)
			}
		})
	}
}

func TestDefiners(t *testing.T) {
	k := openKB(t)
	// Binary order: "User" sorts before "connect"; OtherRepo's connect is
	// not the main repository's.
	got, err := k.Definers(context.Background(), kbtest.MainRepoID, []string{"connect", "User", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.Definer{{"User", kbtest.ModelsPy}, {"User", kbtest.TypesTS}, {"connect", kbtest.DBPy}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("definers (-want +got):\n%s", diff)
	}
	// A pasted log names more identifiers than SQLite takes variables in
	// one statement.
	many := []string{"connect", "User"}
	for i := range 40000 {
		many = append(many, fmt.Sprintf("handler_%d", i))
	}
	got, err = k.Definers(context.Background(), kbtest.MainRepoID, many)
	if err != nil {
		t.Fatalf("40,000 names: %v", err)
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("definers of 40,000 names (-want +got):\n%s", diff)
	}
}

func TestSearchFiles(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		terms []string
		want  []int64 // sorted
	}{
		{"one term", []string{"session"}, []int64{kbtest.DBPy}},
		{"any term", []string{"retry", "types"}, []int64{kbtest.UtilPy, kbtest.TypesTS}},
		{"across repositories", []string{"connect"}, []int64{kbtest.DBPy, kbtest.OtherMainPy}},
		// Quoted: a hyphen and NOT are words, not query syntax.
		{"phrase", []string{"user-id"}, []int64{kbtest.TypesTS}},
		{"operator word", []string{"NOT"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := k.SearchFiles(ctx, tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for i, h := range hits {
				if h.Score <= 0 || i > 0 && h.Score > hits[i-1].Score {
					t.Errorf("hit %d: score %v after %v, want positive scores, best first", i, h.Score, hits)
				}
				ids = append(ids, h.FileID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tc.want) {
				t.Errorf("got files %v, want %v", ids, tc.want)
			}
		})
	}
	// A path match outweighs the same word in the text.
	hits, err := k.SearchFiles(ctx, []string{"models", "model"})
	if err != nil || len(hits) == 0 || hits[0].FileID != kbtest.ModelsPy {
		t.Errorf("got %v, %v, want app/models.py first", hits, err)
	}
}

func TestDocumentFrequencies(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	// More terms than one query asks for: the last batch still counts.
	terms := []string{"connect", "zzzabsent"}
	for i := range 1200 {
		terms = append(terms, fmt.Sprintf("filler%d", i))
	}
	terms = append(terms, "user")
	got, err := k.DocumentFrequencies(ctx, terms)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"connect": 2, "user": 4}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("document frequencies (-want +got):\n%s", diff)
	}
}

func TestFileDescriptions(t *testing.T) {
	k := openKB(t)
	got, err := k.FileDescriptions(context.Background(), kbtest.MainRepoID)
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.FileDescription{
		{kbtest.ModelsPy, "app.models", "users", `["user", "persistence"]`, "User model"},
		{kbtest.DBPy, "app.db", "storage", `["persistence", "SQL"]`, "Database access"},
		{kbtest.APIPy, "app.api", "users", `["http"]`, "HTTP handlers"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("descriptions (-want +got):\n%s", diff)
	}
	if none, err := k.FileDescriptions(context.Background(), kbtest.OtherRepoID); err != nil || len(none) != 0 {
		t.Errorf("unenriched repository: got %v, %v, want none", none, err)
	}
}

func TestFileLinks(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	byPair := func(ls []kb.FileLink) []kb.FileLink {
		return slices.SortedFunc(slices.Values(ls), func(a, b kb.FileLink) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
		})
	}
	tests := []struct {
		name   string
		links  func() ([]kb.FileLink, error)
		sorted bool // the order is the method's
		want   []kb.FileLink
	}{
		{"imports both ways", func() ([]kb.FileLink, error) { return k.ImportLinks(ctx, []int64{kbtest.ModelsPy}) }, true,
			[]kb.FileLink{{From: kbtest.ModelsPy, To: kbtest.DBPy}, {From: kbtest.ModelsPy, To: kbtest.APIPy}}},
		{"an import and a type reference", func() ([]kb.FileLink, error) { return k.ImportLinks(ctx, []int64{kbtest.ClientTS}) }, true,
			[]kb.FileLink{{From: kbtest.ClientTS, To: kbtest.TypesTS}, {From: kbtest.ClientTS, To: kbtest.TypesTS}}},
		{"co-change from either side", func() ([]kb.FileLink, error) { return k.CoChangeLinks(ctx, []int64{kbtest.DBPy}, 1) }, true,
			[]kb.FileLink{{kbtest.DBPy, kbtest.UtilPy, 1}, {kbtest.DBPy, kbtest.ModelsPy, 5}}},
		{"co-change above a count", func() ([]kb.FileLink, error) { return k.CoChangeLinks(ctx, []int64{kbtest.ModelsPy}, 3) }, true,
			[]kb.FileLink{{kbtest.ModelsPy, kbtest.DBPy, 5}}},
		// models.py uses connect (db.py, and main.py of OtherRepo: the
		// query is not one repository's) and Session (db.py).
		{"definers of used names", func() ([]kb.FileLink, error) {
			d, _, err := k.RareNameLinks(ctx, []int64{kbtest.ModelsPy, kbtest.DBPy}, 3)
			return d, err
		}, false, []kb.FileLink{{kbtest.ModelsPy, kbtest.DBPy, 2}, {kbtest.ModelsPy, kbtest.OtherMainPy, 1}, {kbtest.DBPy, kbtest.UtilPy, 1}}},
		{"definers of rarer names", func() ([]kb.FileLink, error) {
			d, _, err := k.RareNameLinks(ctx, []int64{kbtest.ModelsPy}, 1)
			return d, err
		}, false,
			[]kb.FileLink{{kbtest.ModelsPy, kbtest.DBPy, 1}}},
		// db.py defines connect (used by models.py) and Session (used by
		// models.py and at module level by api.py).
		{"users of defined names", func() ([]kb.FileLink, error) {
			_, u, err := k.RareNameLinks(ctx, []int64{kbtest.DBPy}, 3)
			return u, err
		}, false,
			[]kb.FileLink{{kbtest.DBPy, kbtest.ModelsPy, 2}, {kbtest.DBPy, kbtest.APIPy, 1}}},
		{"users of rarer names", func() ([]kb.FileLink, error) {
			_, u, err := k.RareNameLinks(ctx, []int64{kbtest.DBPy}, 1)
			return u, err
		}, false,
			[]kb.FileLink{{kbtest.DBPy, kbtest.ModelsPy, 1}, {kbtest.DBPy, kbtest.APIPy, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.links()
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if !tc.sorted {
				got, want = byPair(got), byPair(want)
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefinitionsOfFiles(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	ids := []int64{kbtest.DBPy, kbtest.ModelsPy}
	got := collect(t, func(fn func(kb.Definition)) error { return k.DefinitionsOfFiles(ctx, ids, fn) })
	want := []kb.Definition{
		{kbtest.SymUser, kbtest.ModelsPy, "User", "class", "class User:", 3, 20, 0},
		{kbtest.SymUserSave, kbtest.ModelsPy, "save", "method", "def save(self):", 8, 14, kbtest.SymUser},
		{kbtest.SymLoadUser, kbtest.ModelsPy, "load_user", "function", "def load_user(user_id):", 22, 30, 0},
		{kbtest.SymConnect, kbtest.DBPy, "connect", "function", "def connect(dsn):", 1, 10, 0},
		{kbtest.SymSession, kbtest.DBPy, "Session", "class", "class Session:", 12, 40, 0},
		{kbtest.SymQuery, kbtest.DBPy, "query", "method", "def query(self, sql):", 15, 25, kbtest.SymSession},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("definitions (-want +got):\n%s", diff)
	}
	spans := collect(t, func(fn func(kb.Span)) error { return k.SpansOfFiles(ctx, ids, fn) })
	var wantSpans []kb.Span
	for _, d := range want {
		wantSpans = append(wantSpans, kb.Span{FileID: d.FileID, StartLine: d.StartLine, EndLine: d.EndLine})
	}
	if diff := gocmp.Diff(wantSpans, spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

func TestReferencesOf(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	all := []kb.Reference{
		{kbtest.SymGetUser, kbtest.SymLoadUser},
		{kbtest.SymLoadUser, kbtest.SymConnect},
		{kbtest.SymLoadUser, kbtest.SymQuery},
		{kbtest.SymLoadUser, kbtest.SymUser},
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  []kb.Reference
	}{
		{"every edge, in order", 100, all},
		{"bounded", 2, all[:2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.ReferencesOf(ctx, []int64{kbtest.SymLoadUser}, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("references (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNameUsers(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, used string
		repo       int64
		limit      int
		want       int // users
	}{
		{"two definitions", "connect", kbtest.MainRepoID, 10, 2},
		{"bounded", "connect", kbtest.MainRepoID, 1, 1},
		{"module-level uses left out", "Session", kbtest.MainRepoID, 10, 1},
		{"another repository", "connect", kbtest.OtherRepoID, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.NameUsers(ctx, tc.repo, tc.used, tc.limit)
			if err != nil || len(got) != tc.want {
				t.Errorf("got %v, %v, want %d users", got, err, tc.want)
			}
		})
	}
	got, err := k.NameUsers(ctx, kbtest.MainRepoID, "connect", 10)
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []int64{kbtest.SymUserSave, kbtest.SymLoadUser}) {
		t.Errorf("users of connect: got %v, %v, want save and load_user", got, err)
	}
}

func TestSymbolsByID(t *testing.T) {
	k := openKB(t)
	ctx := context.Background()
	byID := func(ids []int64) []kb.SymbolLocation {
		return collect(t, func(fn func(kb.SymbolLocation)) error { return k.SymbolsByID(ctx, ids, fn) })
	}
	got := byID([]int64{kbtest.SymOtherConnect, kbtest.SymLoadUser, 999})
	want := []kb.SymbolLocation{
		{kbtest.SymLoadUser, kbtest.ModelsPy, "app/models.py", "load_user", "function", "def load_user(user_id):", 22},
		{kbtest.SymOtherConnect, kbtest.OtherMainPy, "main.py", "connect", "function", "def connect():", 1},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("symbols (-want +got):\n%s", diff)
	}
	// More ids than one query asks for: every batch is read.
	var ids []int64
	for id := int64(1200); id > 0; id-- {
		ids = append(ids, id)
	}
	// Batches of 500 ids in id order: 1200..701, 700..201, 200..1.
	many := byID(ids)
	if len(many) != 14 || many[0].ID != 1 || many[13].ID != 14 {
		t.Errorf("got %d symbols from %v, want all 14 in id order", len(many), many)
	}
	if none := byID(nil); len(none) != 0 {
		t.Errorf("no ids: got %v, want none", none)
	}
}

func TestRationalesOf(t *testing.T) {
	k := openKB(t)
	got, err := k.RationalesOf(context.Background(), []int64{kbtest.SymLoadUser, kbtest.SymSession, kbtest.SymUserSave})
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.SymbolComment{
		{kbtest.SymUserSave, "# flush before commit because the driver buffers writes"},
		{kbtest.SymLoadUser, "# cache misses are rare, so no lock here"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("rationales (-want +got):\n%s", diff)
	}
}
