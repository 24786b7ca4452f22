package kb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/kb/kbtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

const mainRepo = "/src/shop"

// openKB writes the fixture and opens it read-only, as retrieval does.
func openKB(t *testing.T) *kb.KnowledgeBase {
	t.Helper()
	dir := t.TempDir()
	kbtest.Write(t, dir, mainRepo)
	db, err := store.NewFactory(statedir.At(dir)).Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return kb.New(db)
}

func paths(fs []kb.File) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	kbtest.Write(t, dir, mainRepo)
	db, err := store.NewFactory(statedir.At(dir)).Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(context.Background(), `DELETE FROM files`)
	if err == nil {
		t.Fatal("delete through the knowledge base's connection succeeded, want a read-only error")
	}
}

func TestRepo(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name      string
		path      string
		wantID    int64
		wantFiles int
		wantErr   error
	}{
		{"main", mainRepo, kbtest.MainRepoID, 6, nil},
		{"unclean path", mainRepo + "/./", kbtest.MainRepoID, 6, nil},
		{"registered without files", kbtest.EmptyRepo, kbtest.EmptyRepoID, 0, nil},
		{"unknown", "/src/nope", 0, 0, kb.ErrNotIndexed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := k.Repo(context.Background(), tc.path)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if r.ID != tc.wantID || r.Files != tc.wantFiles {
				t.Errorf("got repo %d with %d files, want %d with %d", r.ID, r.Files, tc.wantID, tc.wantFiles)
			}
		})
	}
}

func TestRepos(t *testing.T) {
	rs, err := openKB(t).Repos(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.Repo{
		{ID: 3, Path: kbtest.EmptyRepo, IndexedAt: "2024-03-03T12:00:00.000Z"},
		{ID: 2, Path: kbtest.OtherRepo, IndexedAt: "2024-03-04T12:00:00.000Z", Files: 1},
		{ID: 1, Path: mainRepo, RemoteURL: "https://example.com/shop.git", IndexedAt: "2024-03-05T12:00:00.000Z", Files: 6},
	}
	if diff := cmp.Diff(want, rs); diff != "" {
		t.Errorf("repos (-want +got):\n%s", diff)
	}
}

func TestFiles(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name     string
		repo     int64
		language string
		want     []string
	}{
		{"all", kbtest.MainRepoID, "", []string{"app/api.py", "app/db.py", "app/models.py", "app/util.py", "web/client.ts", "web/types.ts"}},
		{"python", kbtest.MainRepoID, "python", []string{"app/api.py", "app/db.py", "app/models.py", "app/util.py"}},
		{"language ignores case", kbtest.MainRepoID, "TypeScript", []string{"web/client.ts", "web/types.ts"}},
		{"no such language", kbtest.MainRepoID, "rust", []string{}},
		{"other repo", kbtest.OtherRepoID, "", []string{"main.py"}},
		{"empty repo", kbtest.EmptyRepoID, "", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := k.Files(context.Background(), tc.repo, tc.language)
			if err != nil {
				t.Fatal(err)
			}
			if fs == nil {
				t.Fatal("got nil, want a non-nil slice")
			}
			if diff := cmp.Diff(tc.want, paths(fs)); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFileByPath(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name    string
		repo    int64
		path    string
		want    kb.File
		wantErr error
	}{
		{"found", kbtest.MainRepoID, "app/db.py", kb.File{ID: kbtest.DBPy, RepoID: 1, Path: "app/db.py", Language: "python",
			ContentHash: "aa02", SizeBytes: 1500, Lines: 40, SyntaxErrors: 2}, nil},
		{"unclean path", kbtest.MainRepoID, "./web/../app/util.py", kb.File{ID: kbtest.UtilPy, RepoID: 1, Path: "app/util.py", Language: "python",
			ContentHash: "aa04", SizeBytes: 200, Lines: 8}, nil},
		{"missing", kbtest.MainRepoID, "app/nope.py", kb.File{}, kb.ErrNotFound},
		{"other repo's file", kbtest.MainRepoID, "main.py", kb.File{}, kb.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := k.FileByPath(context.Background(), tc.repo, tc.path)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, f); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := k.FileByID(context.Background(), 99); !errors.Is(err, kb.ErrNotFound) {
		t.Errorf("FileByID(99): got error %v, want ErrNotFound", err)
	}
}

func TestSearchFilesByMetadata(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name           string
		repo           int64
		domain, module string
		concepts       []string
		want           []string
	}{
		{"no filter", kbtest.MainRepoID, "", "", nil, []string{"app/api.py", "app/db.py", "app/models.py"}},
		{"domain", kbtest.MainRepoID, "users", "", nil, []string{"app/api.py", "app/models.py"}},
		{"domain ignores case", kbtest.MainRepoID, "USERS", "", nil, []string{"app/api.py", "app/models.py"}},
		{"module", kbtest.MainRepoID, "", "app.db", nil, []string{"app/db.py"}},
		{"any concept", kbtest.MainRepoID, "", "", []string{"http", "persistence"}, []string{"app/api.py", "app/db.py", "app/models.py"}},
		{"concept ignores case", kbtest.MainRepoID, "", "", []string{"sql"}, []string{"app/db.py"}},
		{"domain and concept", kbtest.MainRepoID, "users", "", []string{"persistence"}, []string{"app/models.py"}},
		{"no match", kbtest.MainRepoID, "billing", "", nil, []string{}},
		{"not enriched", kbtest.OtherRepoID, "", "", nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := k.SearchFilesByMetadata(context.Background(), tc.repo, tc.domain, tc.module, tc.concepts)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, m := range ms {
				got = append(got, m.Path)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
	ms, err := k.SearchFilesByMetadata(context.Background(), kbtest.MainRepoID, "", "app.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.FileMetadata{{FileID: kbtest.DBPy, Path: "app/db.py", Purpose: "Database access", Module: "app.db", Domain: "storage",
		Concepts: []string{"persistence", "SQL"}, PublicAPISurface: []string{"connect", "Session"}, ComplexityNotes: "session lifetime is subtle"}}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

func TestEnrichmentPromoted(t *testing.T) {
	k := openKB(t)
	for repo, want := range map[int64]bool{kbtest.MainRepoID: true, kbtest.OtherRepoID: false, kbtest.EmptyRepoID: false} {
		got, err := k.EnrichmentPromoted(context.Background(), repo)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("repo %d: got %v, want %v", repo, got, want)
		}
	}
}

// names renders symbols as "qualified kind path:start" for compact diffs.
func names(ss []kb.Symbol) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s %s %s:%d", s.QualifiedName(), s.Kind, s.Path, s.StartLine))
	}
	return out
}

func TestSymbolsForFile(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name string
		file int64
		kind string
		want []string
	}{
		{"all in source order", kbtest.ModelsPy, "", []string{"User class app/models.py:3", "User.save method app/models.py:8", "load_user function app/models.py:22"}},
		{"kind", kbtest.ModelsPy, "method", []string{"User.save method app/models.py:8"}},
		{"no such kind", kbtest.ModelsPy, "enum", []string{}},
		{"unknown file", 99, "", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := k.SymbolsForFile(context.Background(), tc.file, tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(ss)); diff != "" {
				t.Errorf("symbols (-want +got):\n%s", diff)
			}
		})
	}
	ss, err := k.SymbolsForFile(context.Background(), kbtest.ModelsPy, "method")
	if err != nil {
		t.Fatal(err)
	}
	want := kb.Symbol{ID: kbtest.SymUserSave, FileID: kbtest.ModelsPy, Path: "app/models.py", Name: "save", Kind: "method",
		StartLine: 8, EndLine: 14, Signature: "def save(self):", ParentID: kbtest.SymUser, Parent: "User"}
	if diff := cmp.Diff([]kb.Symbol{want}, ss); diff != "" {
		t.Errorf("symbol (-want +got):\n%s", diff)
	}
}

func TestSearchSymbolsByName(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name    string
		repo    int64
		pattern string
		kind    string
		limit   int
		want    []string
	}{
		{"substring ranks exact, prefix, rest", kbtest.MainRepoID, "user", "", 0, []string{
			"User class app/models.py:3", "User interface web/types.ts:1", "UserId type_alias web/types.ts:6",
			"create_user function app/api.py:12", "fetchUser function web/client.ts:3", "get_user function app/api.py:1", "load_user function app/models.py:22"}},
		{"limit", kbtest.MainRepoID, "user", "", 2, []string{"User class app/models.py:3", "User interface web/types.ts:1"}},
		{"kind", kbtest.MainRepoID, "user", "interface", 0, []string{"User interface web/types.ts:1"}},
		{"scoped to the repo", kbtest.MainRepoID, "connect", "", 0, []string{"connect function app/db.py:1"}},
		{"other repo", kbtest.OtherRepoID, "connect", "", 0, []string{"connect function main.py:1"}},
		{"prefix glob", kbtest.MainRepoID, "User*", "", 0, []string{"User class app/models.py:3", "User interface web/types.ts:1", "UserId type_alias web/types.ts:6"}},
		{"suffix glob", kbtest.MainRepoID, "*_USER", "", 0, []string{"create_user function app/api.py:12", "get_user function app/api.py:1", "load_user function app/models.py:22"}},
		{"everything of a kind", kbtest.MainRepoID, "*", "method", 0, []string{"Session.query method app/db.py:15", "User.save method app/models.py:8"}},
		{"LIKE metacharacters are literal", kbtest.MainRepoID, "%", "", 0, []string{}},
		{"underscore is literal", kbtest.MainRepoID, "d_u", "", 0, []string{"load_user function app/models.py:22"}},
		{"no match", kbtest.MainRepoID, "zzz", "", 0, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := k.SearchSymbolsByName(context.Background(), tc.repo, tc.pattern, tc.kind, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(ss)); diff != "" {
				t.Errorf("symbols (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("default limit", func(t *testing.T) {
		k.SymbolLimit = 3
		defer func() { k.SymbolLimit = kb.DefaultSymbolLimit }()
		ss, err := k.SearchSymbolsByName(context.Background(), kbtest.MainRepoID, "*", "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != 3 {
			t.Errorf("got %d symbols, want 3", len(ss))
		}
	})
	t.Run("empty pattern", func(t *testing.T) {
		if _, err := k.SearchSymbolsByName(context.Background(), kbtest.MainRepoID, "", "", 0); err == nil {
			t.Error("got no error, want one")
		}
	})
}

func TestSymbolNeighbors(t *testing.T) {
	k := openKB(t)
	render := func(ns []kb.SymbolNeighbor) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, fmt.Sprintf("%s %s %s %.1f", n.Direction, n.Symbol.QualifiedName(), n.ReferenceKind, n.Confidence))
		}
		return out
	}
	tests := []struct {
		name      string
		symbol    int64
		direction string
		kinds     []string
		want      []string
	}{
		{"callers", kbtest.SymConnect, kb.Callers, nil, []string{"callers User.save call 0.8", "callers load_user call 0.8"}},
		{"callees by confidence", kbtest.SymLoadUser, kb.Callees, nil, []string{"callees connect call 0.8", "callees Session.query call 0.6", "callees User type_ref 0.5"}},
		{"kinds", kbtest.SymLoadUser, kb.Callees, []string{"call"}, []string{"callees connect call 0.8", "callees Session.query call 0.6"}},
		{"both", kbtest.SymLoadUser, kb.Both, []string{"call"}, []string{"callers get_user call 0.9", "callees connect call 0.8", "callees Session.query call 0.6"}},
		{"several kinds", kbtest.SymUser, kb.Callers, []string{"instantiation", "type_ref"}, []string{"callers create_user instantiation 0.7", "callers load_user type_ref 0.5"}},
		{"none", kbtest.SymRetry, kb.Both, nil, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := k.SymbolNeighbors(context.Background(), tc.symbol, tc.direction, tc.kinds)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, render(ns)); diff != "" {
				t.Errorf("neighbours (-want +got):\n%s", diff)
			}
		})
	}
	ns, err := k.SymbolNeighbors(context.Background(), kbtest.SymGetUser, kb.Callees, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 || ns[0].Symbol.Path != "app/models.py" || ns[0].Symbol.ID != kbtest.SymLoadUser {
		t.Errorf("got %+v, want load_user in app/models.py", ns)
	}
	if _, err := k.SymbolNeighbors(context.Background(), kbtest.SymConnect, "up", nil); err == nil {
		t.Error("direction \"up\": got no error, want one")
	}
}

func edges(ds []kb.Dependency) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s -> %s %s", d.SourcePath, d.TargetPath, d.Kind))
	}
	return out
}

func TestDependencies(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name      string
		file      int64
		direction string
		want      []string
	}{
		{"imports", kbtest.DBPy, kb.Imports, []string{"app/db.py -> app/util.py import"}},
		{"imported by", kbtest.DBPy, kb.ImportedBy, []string{"app/api.py -> app/db.py import", "app/models.py -> app/db.py import"}},
		{"both", kbtest.DBPy, kb.Both, []string{"app/db.py -> app/util.py import", "app/api.py -> app/db.py import", "app/models.py -> app/db.py import"}},
		{"two kinds", kbtest.ClientTS, kb.Imports, []string{"web/client.ts -> web/types.ts import", "web/client.ts -> web/types.ts type_ref"}},
		{"leaf", kbtest.UtilPy, kb.Imports, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := k.Dependencies(context.Background(), tc.file, tc.direction)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, edges(ds)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := k.Dependencies(context.Background(), kbtest.DBPy, "callers"); err == nil {
		t.Error("direction \"callers\": got no error, want one")
	}
}

func TestDependencyWalk(t *testing.T) {
	k := openKB(t)
	render := func(g *kb.DependencyGraph) []string {
		out := []string{}
		for _, n := range g.Nodes {
			out = append(out, fmt.Sprintf("%d %s", n.Distance, n.Path))
		}
		return out
	}
	tests := []struct {
		name          string
		seeds         []int64
		direction     string
		depth         int
		limit         int
		want          []string
		wantEdges     []string
		wantTruncated bool
	}{
		{name: "depth 0", seeds: []int64{kbtest.UtilPy}, direction: kb.Both, depth: 0,
			want: []string{"0 app/util.py"}, wantEdges: []string{}},
		{name: "depth 1", seeds: []int64{kbtest.UtilPy}, direction: kb.Both, depth: 1,
			want: []string{"0 app/util.py", "1 app/db.py"}, wantEdges: []string{"app/db.py -> app/util.py import"}},
		{name: "depth 2 reaches everything connected", seeds: []int64{kbtest.UtilPy}, direction: kb.Both, depth: 2,
			want: []string{"0 app/util.py", "1 app/db.py", "2 app/api.py", "2 app/models.py"},
			wantEdges: []string{"app/api.py -> app/db.py import", "app/api.py -> app/models.py import",
				"app/db.py -> app/util.py import", "app/models.py -> app/db.py import"}},
		{name: "depth beyond the graph", seeds: []int64{kbtest.UtilPy}, direction: kb.Both, depth: 9,
			want: []string{"0 app/util.py", "1 app/db.py", "2 app/api.py", "2 app/models.py"},
			wantEdges: []string{"app/api.py -> app/db.py import", "app/api.py -> app/models.py import",
				"app/db.py -> app/util.py import", "app/models.py -> app/db.py import"}},
		{name: "imports only", seeds: []int64{kbtest.ModelsPy}, direction: kb.Imports, depth: 2,
			want:      []string{"0 app/models.py", "1 app/db.py", "2 app/util.py"},
			wantEdges: []string{"app/db.py -> app/util.py import", "app/models.py -> app/db.py import"}},
		{name: "imported by only", seeds: []int64{kbtest.DBPy}, direction: kb.ImportedBy, depth: 3,
			want:      []string{"0 app/db.py", "1 app/api.py", "1 app/models.py"},
			wantEdges: []string{"app/api.py -> app/db.py import", "app/api.py -> app/models.py import", "app/models.py -> app/db.py import"}},
		{name: "several seeds, duplicates dropped", seeds: []int64{kbtest.ClientTS, kbtest.UtilPy, kbtest.ClientTS}, direction: kb.Both, depth: 1,
			want:      []string{"0 app/util.py", "0 web/client.ts", "1 app/db.py", "1 web/types.ts"},
			wantEdges: []string{"app/db.py -> app/util.py import", "web/client.ts -> web/types.ts import", "web/client.ts -> web/types.ts type_ref"}},
		{name: "node limit exactly met", seeds: []int64{kbtest.UtilPy}, direction: kb.Both, depth: 2, limit: 3,
			want: []string{"0 app/util.py", "1 app/db.py", "2 app/api.py", "2 app/models.py"},
			wantEdges: []string{"app/api.py -> app/db.py import", "app/api.py -> app/models.py import",
				"app/db.py -> app/util.py import", "app/models.py -> app/db.py import"}},
		{name: "node limit truncates in path order", seeds: []int64{kbtest.UtilPy}, direction: kb.Both, depth: 2, limit: 2,
			want:      []string{"0 app/util.py", "1 app/db.py", "2 app/api.py"},
			wantEdges: []string{"app/api.py -> app/db.py import", "app/db.py -> app/util.py import"}, wantTruncated: true},
		{name: "no seeds", seeds: nil, direction: kb.Both, depth: 2, want: []string{}, wantEdges: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k.NodeLimit = kb.DefaultNodeLimit
			if tc.limit > 0 {
				k.NodeLimit = tc.limit
			}
			g, err := k.DependencyWalk(context.Background(), tc.seeds, tc.direction, tc.depth)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, render(g)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEdges, edges(g.Edges)); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
			if g.Truncated != tc.wantTruncated {
				t.Errorf("got truncated %v, want %v", g.Truncated, tc.wantTruncated)
			}
		})
	}
	k.NodeLimit = kb.DefaultNodeLimit

	t.Run("subgraph is both ways", func(t *testing.T) {
		g, err := k.DependencySubgraph(context.Background(), []int64{kbtest.ModelsPy}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"0 app/models.py", "1 app/api.py", "1 app/db.py"}, render(g)); diff != "" {
			t.Errorf("nodes (-want +got):\n%s", diff)
		}
	})
	for name, call := range map[string]func() error{
		"unknown seed": func() error {
			_, err := k.DependencySubgraph(context.Background(), []int64{99}, 1)
			if !errors.Is(err, kb.ErrNotFound) {
				return fmt.Errorf("got %v, want ErrNotFound", err)
			}
			return nil
		},
		"negative depth": func() error {
			if _, err := k.DependencySubgraph(context.Background(), []int64{1}, -1); err == nil {
				return errors.New("got no error, want one")
			}
			return nil
		},
		"bad direction": func() error {
			if _, err := k.DependencyWalk(context.Background(), []int64{1}, "sideways", 1); err == nil {
				return errors.New("got no error, want one")
			}
			return nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := call(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestCoChangeNeighbors(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name     string
		file     int64
		minCount int
		want     []kb.CoChange
	}{
		{"both sides of the pair, most first", kbtest.ModelsPy, 1, []kb.CoChange{
			{FileID: kbtest.DBPy, Path: "app/db.py", Count: 5, LastCommitHash: "c3c3c3c3c3c3"},
			{FileID: kbtest.APIPy, Path: "app/api.py", Count: 2, LastCommitHash: "c2c2c2c2c2c2"}}},
		{"file on the b side", kbtest.DBPy, 1, []kb.CoChange{
			{FileID: kbtest.ModelsPy, Path: "app/models.py", Count: 5, LastCommitHash: "c3c3c3c3c3c3"},
			{FileID: kbtest.UtilPy, Path: "app/util.py", Count: 1, LastCommitHash: "c4c4c4c4c4c4"}}},
		{"min count", kbtest.DBPy, 2, []kb.CoChange{
			{FileID: kbtest.ModelsPy, Path: "app/models.py", Count: 5, LastCommitHash: "c3c3c3c3c3c3"}}},
		{"min count above all", kbtest.DBPy, 6, []kb.CoChange{}},
		{"only b side", kbtest.TypesTS, 0, []kb.CoChange{
			{FileID: kbtest.ClientTS, Path: "web/client.ts", Count: 3, LastCommitHash: "c2c2c2c2c2c2"}}},
		{"none", kbtest.OtherMainPy, 1, []kb.CoChange{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := k.CoChangeNeighbors(context.Background(), tc.file, tc.minCount)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cs); diff != "" {
				t.Errorf("co-changes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocstringsForFile(t *testing.T) {
	k := openKB(t)
	ds, err := k.DocstringsForFile(context.Background(), kbtest.ModelsPy)
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.Docstring{
		{ID: 1, FileID: kbtest.ModelsPy, Content: "User model and persistence.", Format: "plain"},
		{ID: 3, FileID: kbtest.ModelsPy, SymbolID: kbtest.SymUser, Symbol: "User", Content: "A shop customer.", Format: "plain"},
		{ID: 2, FileID: kbtest.ModelsPy, SymbolID: kbtest.SymLoadUser, Symbol: "load_user", Content: "Load a user by id.\n\nArgs:\n    user_id: the id.",
			Format: "google", ParsedFields: `{"args":{"user_id":"the id."}}`},
	}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("docstrings (-want +got):\n%s", diff)
	}
	ds, err = k.DocstringsForFile(context.Background(), kbtest.UtilPy)
	if err != nil {
		t.Fatal(err)
	}
	if ds == nil || len(ds) != 0 {
		t.Errorf("got %v, want an empty list", ds)
	}
}

func TestDocstringsOf(t *testing.T) {
	k := openKB(t)
	got, err := k.DocstringsOf(context.Background(), []int64{kbtest.SymUser, kbtest.SymLoadUser, kbtest.SymUserSave})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{kbtest.SymUser: "A shop customer.", kbtest.SymLoadUser: "Load a user by id.\n\nArgs:\n    user_id: the id."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docstrings (-want +got):\n%s", diff)
	}
	if got, err := k.DocstringsOf(context.Background(), nil); err != nil || len(got) != 0 {
		t.Errorf("no symbols: got %v, %v, want an empty map", got, err)
	}
}

func TestRationaleComments(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name string
		file int64
		want []kb.Comment
	}{
		{"only rationale, by line", kbtest.ModelsPy, []kb.Comment{
			{ID: 1, FileID: kbtest.ModelsPy, SymbolID: kbtest.SymUserSave, Symbol: "User.save", Line: 10,
				Content: "# flush before commit because the driver buffers writes", Kind: "rationale", IsRationale: true},
			{ID: 3, FileID: kbtest.ModelsPy, SymbolID: kbtest.SymLoadUser, Symbol: "load_user", Line: 25,
				Content: "# cache misses are rare, so no lock here", Kind: "rationale", IsRationale: true}}},
		{"none", kbtest.DBPy, []kb.Comment{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := k.RationaleComments(context.Background(), tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cs); diff != "" {
				t.Errorf("comments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecentCommitsForFile(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		name  string
		file  int64
		limit int
		want  []string
	}{
		{"newest first", kbtest.ModelsPy, 10, []string{"c3c3c3c3c3c3", "c2c2c2c2c2c2", "c1c1c1c1c1c1"}},
		{"by instant, not text", kbtest.DBPy, 10, []string{"c4c4c4c4c4c4", "c3c3c3c3c3c3", "c1c1c1c1c1c1"}},
		{"limit", kbtest.DBPy, 1, []string{"c4c4c4c4c4c4"}},
		{"default limit", kbtest.DBPy, 0, []string{"c4c4c4c4c4c4", "c3c3c3c3c3c3", "c1c1c1c1c1c1"}},
		{"none", kbtest.TypesTS, 10, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := k.RecentCommitsForFile(context.Background(), tc.file, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, c := range cs {
				got = append(got, c.Hash)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("commits (-want +got):\n%s", diff)
			}
		})
	}
	cs, err := k.RecentCommitsForFile(context.Background(), kbtest.APIPy, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.Commit{{ID: 2, RepoID: 1, Hash: "c2c2c2c2c2c2", Author: "Bob", Message: "Add the API\n\nLong description.",
		Timestamp: "2024-02-01T10:00:00Z", FilesChanged: 2, Insertions: 30, Deletions: 2}}
	if diff := cmp.Diff(want, cs); diff != "" {
		t.Errorf("commit (-want +got):\n%s", diff)
	}
}

func TestFileContext(t *testing.T) {
	k := openKB(t)
	k.CoChangeLimit = 1
	c, err := k.FileContext(context.Background(), kbtest.ModelsPy)
	if err != nil {
		t.Fatal(err)
	}
	if c.File.Path != "app/models.py" || c.Metadata == nil || c.Metadata.Domain != "users" {
		t.Errorf("got file %q with metadata %+v, want app/models.py in domain users", c.File.Path, c.Metadata)
	}
	got := map[string]int{
		"symbols": len(c.Symbols), "docstrings": len(c.Docstrings), "rationale": len(c.RationaleComments),
		"imports": len(c.Imports), "imported_by": len(c.ImportedBy), "co_changes": len(c.CoChanges), "commits": len(c.RecentCommits),
	}
	want := map[string]int{"symbols": 3, "docstrings": 3, "rationale": 2, "imports": 1, "imported_by": 1, "co_changes": 1, "commits": 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("section sizes (-want +got):\n%s", diff)
	}
	if c.Imports[0].TargetPath != "app/db.py" || c.ImportedBy[0].SourcePath != "app/api.py" || c.CoChanges[0].Path != "app/db.py" {
		t.Errorf("got imports %v, imported by %v, co-changes %v", c.Imports, c.ImportedBy, c.CoChanges)
	}

	t.Run("without enrichment or history", func(t *testing.T) {
		c, err := k.FileContext(context.Background(), kbtest.TypesTS)
		if err != nil {
			t.Fatal(err)
		}
		if c.Metadata != nil || c.RecentCommits == nil || len(c.RecentCommits) != 0 {
			t.Errorf("got metadata %v and commits %v, want nil and []", c.Metadata, c.RecentCommits)
		}
	})
	t.Run("unknown file", func(t *testing.T) {
		if _, err := k.FileContext(context.Background(), 99); !errors.Is(err, kb.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
}

func TestRepoOverview(t *testing.T) {
	k := openKB(t)
	k.TopN = 4
	tests := []struct {
		name string
		repo int64
		want *kb.RepoOverview
	}{
		{"main", kbtest.MainRepoID, &kb.RepoOverview{
			Repo:  kb.Repo{ID: 1, Path: mainRepo, RemoteURL: "https://example.com/shop.git", IndexedAt: "2024-03-05T12:00:00.000Z", Files: 6},
			Files: 6, Lines: 129,
			Languages:       []kb.LanguageCount{{"python", 4, 98}, {"typescript", 2, 31}},
			Symbols:         13,
			SymbolKinds:     []kb.Count{{"function", 6}, {"class", 2}, {"interface", 2}, {"method", 2}, {"type_alias", 1}},
			DependencyEdges: 5,
			Commits:         4, FirstCommitAt: "2024-01-01T10:00:00Z", LastCommitAt: "2024-03-01T08:30:00Z",
			EnrichedFiles: 3, Domains: []kb.Count{{"users", 2}, {"storage", 1}},
			MostConnected: []kb.ConnectedFile{
				{FileID: kbtest.DBPy, Path: "app/db.py", Imports: 1, ImportedBy: 2},
				{FileID: kbtest.ModelsPy, Path: "app/models.py", Imports: 1, ImportedBy: 1},
				{FileID: kbtest.APIPy, Path: "app/api.py", Imports: 2, ImportedBy: 0},
				{FileID: kbtest.UtilPy, Path: "app/util.py", Imports: 0, ImportedBy: 1},
			},
			TopCoChanges: []kb.CoChangePair{
				{FileAID: 1, PathA: "app/models.py", FileBID: 2, PathB: "app/db.py", Count: 5},
				{FileAID: 5, PathA: "web/client.ts", FileBID: 6, PathB: "web/types.ts", Count: 3},
				{FileAID: 1, PathA: "app/models.py", FileBID: 3, PathB: "app/api.py", Count: 2},
				{FileAID: 2, PathA: "app/db.py", FileBID: 4, PathB: "app/util.py", Count: 1},
			},
			SyntaxWarnings: 1,
		}},
		{"not enriched", kbtest.OtherRepoID, &kb.RepoOverview{
			Repo:  kb.Repo{ID: 2, Path: kbtest.OtherRepo, IndexedAt: "2024-03-04T12:00:00.000Z", Files: 1},
			Files: 1, Lines: 5,
			Languages: []kb.LanguageCount{{"python", 1, 5}},
			Symbols:   1, SymbolKinds: []kb.Count{{"function", 1}},
			Commits: 1, FirstCommitAt: "2023-06-01T00:00:00Z", LastCommitAt: "2023-06-01T00:00:00Z",
			Domains: []kb.Count{}, MostConnected: []kb.ConnectedFile{}, TopCoChanges: []kb.CoChangePair{},
		}},
		{"empty", kbtest.EmptyRepoID, &kb.RepoOverview{
			Repo:      kb.Repo{ID: 3, Path: kbtest.EmptyRepo, IndexedAt: "2024-03-03T12:00:00.000Z"},
			Languages: []kb.LanguageCount{}, SymbolKinds: []kb.Count{},
			Domains: []kb.Count{}, MostConnected: []kb.ConnectedFile{}, TopCoChanges: []kb.CoChangePair{},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := k.RepoOverview(context.Background(), tc.repo)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o); diff != "" {
				t.Errorf("overview (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unknown repo", func(t *testing.T) {
		if _, err := k.RepoOverview(context.Background(), 99); !errors.Is(err, kb.ErrNotFound) {
			t.Errorf("got %v, want ErrNotFound", err)
		}
	})
}

func TestAdapterForStage(t *testing.T) {
	k := openKB(t)
	tests := []struct {
		stage string
		want  *kb.Adapter
	}{
		{"scope", &kb.Adapter{ID: 2, StageName: "scope", BaseModel: "reasoning", ModelTag: "qwen3:4b-scope-v2", Version: 2,
			Active: true, PerformanceNotes: "recall +4%", DeployedAt: "2024-02-10T00:00:00Z"}},
		{"precision", nil}, // only an inactive one
		{"execute_code", nil},
	}
	for _, tc := range tests {
		t.Run(tc.stage, func(t *testing.T) {
			a, err := k.AdapterForStage(context.Background(), tc.stage)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, a); diff != "" {
				t.Errorf("adapter (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdapters(t *testing.T) {
	k := openKB(t)
	all, err := k.Adapters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range all {
		got = append(got, fmt.Sprintf("%s v%d %v", a.ModelTag, a.Version, a.Active))
	}
	want := []string{"qwen3:4b-precision-v1 v1 false", "qwen3:4b-scope-v1 v1 true", "qwen3:4b-scope-v2 v2 true", "qwen3:4b-scope-v3 v3 false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("adapters by stage, then version (-want +got):\n%s", diff)
	}
}
