package gitx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// diffFixture makes a repository whose second commit adds, modifies,
// deletes and renames files, with names holding spaces, a tab, non-ASCII
// letters and glob characters, and a binary file. It returns the
// directory and the two commits.
func diffFixture(t *testing.T) (dir, base, head string) {
	t.Helper()
	dir = t.TempDir()
	git(t, dir, "init", "-q")
	write(t, dir, "mod.txt", "one\ntwo\nthree\n")
	write(t, dir, "gone.txt", "bye\n")
	write(t, dir, "sp ace.txt", "a\nb\nc\nd\ne\nf\n")
	write(t, dir, "star*.txt", "star\n")
	write(t, dir, "stars.txt", "plain\n")
	write(t, dir, "bin.dat", "\x00\x01\x02")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "base")
	base = git(t, dir, "rev-parse", "HEAD")

	write(t, dir, "mod.txt", "one\n2\nthree\nfour\n")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "mv", "sp ace.txt", "ré named.txt")
	write(t, dir, "new\ttab.txt", "n\n")
	write(t, dir, "star*.txt", "star\nmore\n")
	write(t, dir, "stars.txt", "plain\nchanged\n")
	write(t, dir, "bin.dat", "\x00\x01\x03")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "work")
	head = git(t, dir, "rev-parse", "HEAD")
	return dir, base, head
}

func TestDiffFiles(t *testing.T) {
	ctx := context.Background()
	dir, base, head := diffFixture(t)
	// A user's configuration does not change what cra reads.
	git(t, dir, "config", "diff.renames", "false")
	git(t, dir, "config", "diff.noprefix", "true")
	got, err := DiffFiles(ctx, dir, base, head)
	if err != nil {
		t.Fatal(err)
	}
	want := []ChangedFile{
		{Status: StatusModified, Path: "bin.dat", Insertions: -1, Deletions: -1},
		{Status: StatusDeleted, Path: "gone.txt", Insertions: 0, Deletions: 1},
		{Status: StatusModified, Path: "mod.txt", Insertions: 2, Deletions: 1},
		{Status: StatusAdded, Path: "new\ttab.txt", Insertions: 1, Deletions: 0},
		{Status: StatusRenamed, Path: "ré named.txt", OldPath: "sp ace.txt", Insertions: 0, Deletions: 0},
		{Status: StatusModified, Path: "star*.txt", Insertions: 1, Deletions: 0},
		{Status: StatusModified, Path: "stars.txt", Insertions: 1, Deletions: 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DiffFiles (-want +got):\n%s", d)
	}

	none, err := DiffFiles(ctx, dir, head, head)
	if err != nil || len(none) != 0 {
		t.Errorf("DiffFiles of a commit with itself: got %v, %v, want nothing", none, err)
	}
	if _, err := DiffFiles(ctx, dir, base, "no-such-branch"); err == nil {
		t.Error("DiffFiles to a missing revision: got no error")
	}
}

func TestDiffPatch(t *testing.T) {
	ctx := context.Background()
	dir, base, head := diffFixture(t)
	git(t, dir, "config", "diff.noprefix", "true")
	git(t, dir, "config", "diff.context", "0")

	// A glob character in a name is literal: star*.txt does not pull in
	// stars.txt.
	patch, cut, err := DiffPatch(ctx, dir, base, head, []string{"star*.txt"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/star*.txt b/star*.txt\n" +
		"index babcbcd..72ae371 100644\n" +
		"--- a/star*.txt\n" +
		"+++ b/star*.txt\n" +
		"@@ -1 +1,2 @@\n" +
		" star\n" +
		"+more\n"
	if cut || patch != want {
		t.Errorf("DiffPatch star*.txt: got cut=%v\n%s\nwant\n%s", cut, patch, want)
	}

	// Both paths of a rename make it one renamed file, not a deletion
	// and an addition.
	patch, _, err = DiffPatch(ctx, dir, base, head, []string{"sp ace.txt", "ré named.txt"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(patch, "rename from sp ace.txt\nrename to ré named.txt\n") || strings.Contains(patch, "deleted file") {
		t.Errorf("DiffPatch of a rename: got\n%s", patch)
	}

	// The cap cuts at a line boundary.
	all, cut, err := DiffPatch(ctx, dir, base, head, nil, 0)
	if err != nil || cut {
		t.Fatalf("DiffPatch of everything: cut=%v err=%v", cut, err)
	}
	if !strings.Contains(all, "+++ b/mod.txt") || !strings.Contains(all, "deleted file mode") {
		t.Errorf("DiffPatch of everything misses files:\n%s", all)
	}
	part, cut, err := DiffPatch(ctx, dir, base, head, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !cut || len(part) > 100 || !strings.HasSuffix(part, "\n") || !strings.HasPrefix(all, part) {
		t.Errorf("DiffPatch capped at 100: got cut=%v, %d bytes %q", cut, len(part), part)
	}
}

func TestParseRawNumstatRejects(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"short meta", ":100644 M\x00a\x00"},
		{"unknown status", ":100644 100644 abc def Z\x00a\x001\t1\ta\x00"},
		{"no path", ":100644 100644 abc def M\x00"},
		{"rename without new path", ":100644 100644 abc def R100\x00a\x00"},
		{"missing numstat", ":100644 100644 abc def M\x00a\x00"},
		{"numstat for another path", ":100644 100644 abc def M\x00a\x001\t1\tb\x00"},
		{"rename numstat mismatch", ":100644 100644 abc def R090\x00a\x00b\x001\t1\t\x00x\x00b\x00"},
		{"malformed numstat", ":100644 100644 abc def M\x00a\x001 1 a\x00"},
		{"trailing record", ":100644 100644 abc def M\x00a\x001\t1\ta\x00extra\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := parseRawNumstat([]byte(tc.in)); err == nil {
				t.Errorf("got %v, want an error", got)
			}
		})
	}
}

func FuzzParseRawNumstat(f *testing.F) {
	f.Add([]byte(":100644 100644 abc def M\x00a\x001\t1\ta\x00"))
	f.Add([]byte(":100644 100644 abc def R100\x00a\x00b\x000\t0\t\x00a\x00b\x00"))
	f.Add([]byte(":000000 100644 000 def A\x00x\ty\x00-\t-\tx\ty\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		files, err := parseRawNumstat(in)
		if err != nil {
			return
		}
		for _, c := range files {
			if c.Status == "" || (c.OldPath != "") != (c.Status == StatusRenamed || c.Status == StatusCopied) {
				t.Errorf("inconsistent file %+v", c)
			}
		}
	})
}

func TestDiffHunks(t *testing.T) {
	dir, base, head := diffFixture(t)
	got, err := DiffHunks(context.Background(), dir, base, head)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileHunks{
		{OldPath: "bin.dat", NewPath: "bin.dat", Binary: true},
		{OldPath: "gone.txt", Hunks: []Hunk{{1, 1, 0, 0}}},
		{OldPath: "mod.txt", NewPath: "mod.txt", Hunks: []Hunk{{2, 1, 2, 1}, {3, 0, 4, 1}}},
		{NewPath: "new\ttab.txt", Hunks: []Hunk{{0, 0, 1, 1}}},
		{NewPath: "ré named.txt", Hunks: []Hunk{{0, 0, 1, 6}}},
		{OldPath: "sp ace.txt", Hunks: []Hunk{{1, 6, 0, 0}}},
		{OldPath: "star*.txt", NewPath: "star*.txt", Hunks: []Hunk{{1, 0, 2, 1}}},
		{OldPath: "stars.txt", NewPath: "stars.txt", Hunks: []Hunk{{1, 0, 2, 1}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hunks (-want +got):\n%s", diff)
	}
}

func TestParseHunks(t *testing.T) {
	// A removed line "-- x" and an added "++ y" look like the ---/+++
	// headers; past the first @@ they are the hunk's lines.
	out := "diff --git a/q.sql b/q.sql\nindex 1..2 100644\n--- a/q.sql\n+++ b/q.sql\n@@ -3 +3,2 @@ select\n--- x\n+++ y\n+z\n" +
		"diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
	got, err := parseHunks(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileHunks{
		{OldPath: "q.sql", NewPath: "q.sql", Hunks: []Hunk{{3, 1, 3, 2}}},
		{OldPath: "run.sh", NewPath: "run.sh", ModeChanged: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"junk\n", "diff --git a/x b/x\n@@ -a +1 @@\n", "diff --git a/x b/x\n@@ -1 +1\n"} {
		if _, err := parseHunks(bad); err == nil {
			t.Errorf("parseHunks(%q): no error", bad)
		}
	}
}

func FuzzParseHunks(f *testing.F) {
	f.Add("diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -3 +3,2 @@ x\n-a\n+b\n+c\n")
	f.Add("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n")
	f.Add("diff --git a/b.bin b/b.bin\nBinary files a/b.bin and b/b.bin differ\n")
	f.Fuzz(func(t *testing.T, in string) {
		files, err := parseHunks(in)
		if err != nil {
			return
		}
		if len(files) > strings.Count(in, "diff --git ") {
			t.Errorf("%d files from %d diff lines", len(files), strings.Count(in, "diff --git "))
		}
	})
}
