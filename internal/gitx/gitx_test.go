package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/gitx/gittest"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, dir, args...)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestListFilesAndHead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if ok, err := IsRepo(ctx, dir); ok || err != nil {
		t.Fatalf("IsRepo on a plain dir: got %v, %v, want false, nil", ok, err)
	}
	git(t, dir, "init", "-q")
	if ok, _ := IsRepo(ctx, dir); !ok {
		t.Fatal("IsRepo after git init: got false")
	}
	if h, err := Head(ctx, dir); h != "" || err != nil {
		t.Fatalf("Head with no commits: got %q, %v, want empty", h, err)
	}
	write(t, dir, ".gitignore", "ignored.txt\nbuild/\n")
	write(t, dir, "a.py", "x = 1\n")
	write(t, dir, "sub/b c.py", "y = 2\n")
	write(t, dir, "ignored.txt", "no")
	write(t, dir, "build/out.js", "no")
	write(t, dir, "untracked.go", "package x\n")
	write(t, dir, "ünïcode.py", "z = 3\n")
	git(t, dir, "add", "a.py", "sub/b c.py", ".gitignore")
	git(t, dir, "commit", "-qm", "first")
	files, err := ListFiles(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".gitignore", "a.py", "sub/b c.py", "untracked.go", "ünïcode.py"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("ListFiles (-want +got):\n%s", diff)
	}
	head, err := Head(ctx, dir)
	if err != nil || len(head) != 40 {
		t.Errorf("Head: got %q, %v, want a 40-hex hash", head, err)
	}
	// From a subdirectory, paths are relative to it.
	sub, err := ListFiles(ctx, filepath.Join(dir, "sub"))
	if err != nil || len(sub) != 1 || sub[0] != "b c.py" {
		t.Errorf("ListFiles(sub): got %v, %v, want [b c.py]", sub, err)
	}
}

func TestLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "a.py", "1\n2\n")
	write(t, dir, "b.py", "1\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "add a and b\n\nwith a body\x1e that has odd bytes")
	first := git(t, dir, "rev-parse", "HEAD")
	write(t, dir, "a.py", "1\n3\n4\n")
	write(t, dir, "tab\tname.py", "x\n")
	write(t, dir, "bin.dat", "\x00\x01\x02")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "change a")
	git(t, dir, "mv", "b.py", "c.py")
	git(t, dir, "commit", "-qm", "rename b")

	var got []Commit
	if err := Log(ctx, dir, LogOptions{LineStats: true}, func(c Commit) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d commits, want 3", len(got))
	}
	if got[0].Message != "rename b" || got[2].Hash != first {
		t.Errorf("order: got %q ... %s, want newest first", got[0].Message, got[2].Hash)
	}
	// A record separator inside a message is ours too; the commit still parses.
	if !strings.HasPrefix(got[2].Message, "add a and b") || got[2].Author != "A U Thor" || got[2].Timestamp == "" {
		t.Errorf("first commit header: got %+v", got[2])
	}
	wantRename := []FileChange{{"b.py", 0, 1}, {"c.py", 1, 0}}
	if diff := cmp.Diff(wantRename, got[0].Files); diff != "" {
		t.Errorf("rename as delete+add (-want +got):\n%s", diff)
	}
	wantChange := []FileChange{{"a.py", 2, 1}, {"bin.dat", -1, -1}, {"tab\tname.py", 1, 0}}
	if diff := cmp.Diff(wantChange, got[1].Files); diff != "" {
		t.Errorf("numstat (-want +got):\n%s", diff)
	}

	// Without line stats, files come from --name-only with -1 counts.
	var plain []Commit
	if err := Log(ctx, dir, LogOptions{Max: 1}, func(c Commit) error { plain = append(plain, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]FileChange{{"b.py", -1, -1}, {"c.py", -1, -1}}, plain[0].Files); diff != "" {
		t.Errorf("name-only files (-want +got):\n%s", diff)
	}

	var since []string
	Log(ctx, dir, LogOptions{Since: first}, func(c Commit) error { since = append(since, c.Message); return nil })
	if diff := cmp.Diff([]string{"rename b", "change a"}, since); diff != "" {
		t.Errorf("Since (-want +got):\n%s", diff)
	}
	var capped int
	Log(ctx, dir, LogOptions{Max: 1}, func(Commit) error { capped++; return nil })
	if capped != 1 {
		t.Errorf("Max 1: got %d commits", capped)
	}
	if !IsAncestor(ctx, dir, first, "HEAD") || IsAncestor(ctx, dir, "HEAD", first) {
		t.Error("IsAncestor: wrong answer")
	}

	// Until walks from another revision than HEAD.
	second := git(t, dir, "rev-parse", "HEAD~1")
	var until []string
	if err := Log(ctx, dir, LogOptions{Until: second}, func(c Commit) error { until = append(until, c.Message); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(until) != 2 || until[0] != "change a" {
		t.Errorf("Until HEAD~1: got %q, want change a, then the first", until)
	}
	if err := Log(ctx, dir, LogOptions{Until: "--all"}, func(Commit) error { return nil }); err == nil {
		t.Error("Until --all: got no error, want an option refused as a revision")
	}
	anc, err := Ancestors(ctx, dir, second)
	if err != nil || len(anc) != 2 || !anc[first] || !anc[second] {
		t.Errorf("Ancestors(HEAD~1): got %v, %v, want it and the first commit", anc, err)
	}
	if _, err := Ancestors(ctx, dir, "--all"); err == nil {
		t.Error("Ancestors(--all): got no error")
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain.py", "plain.py"},
		{`"tab\tname"`, "tab\tname"},
		{`"\303\251t\303\251.py"`, "été.py"},
		{`"quote\"d"`, `quote"d`},
		{`"trailing\"`, `trailing\`},
		{`"`, `"`},
	}
	for _, tc := range tests {
		if got := unquote(tc.in); got != tc.want {
			t.Errorf("unquote(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestConfiguredURL(t *testing.T) {
	ctx := context.Background()
	repo := gittest.Init(t)
	gittest.Run(t, repo, "remote", "add", "origin", "/srv/shared.git")
	gittest.Run(t, repo, "config", "remote.dash.url", "--upload-pack=touch /tmp/x")
	for _, tc := range []struct{ remote, want, err string }{
		{"origin", "/srv/shared.git", ""},
		{"shared", "", "git remote add shared URL"},
		{"dash", "", "git remote set-url dash URL"},
		{"a.b=c", "", "is not a git remote name"},
	} {
		t.Run(tc.remote, func(t *testing.T) {
			got, err := ConfiguredURL(ctx, repo, tc.remote)
			if got != tc.want || tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %q, %v; want %q, an error with %q", got, err, tc.want, tc.err)
			}
		})
	}
}
