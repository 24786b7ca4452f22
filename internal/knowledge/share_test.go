package knowledge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMerge3(t *testing.T) {
	f := func(kv ...string) map[string][]byte {
		m := map[string][]byte{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []byte(kv[i+1])
		}
		return m
	}
	for _, tc := range []struct {
		name               string
		base, ours, theirs map[string][]byte
		want               map[string][]byte
		conflicts          []string
	}{
		{"nothing", f(), f(), f(), f(), nil},
		{"ours added", f(), f("a.md", "1"), f(), f("a.md", "1"), nil},
		{"theirs added", f(), f(), f("a.md", "1"), f("a.md", "1"), nil},
		{"both added the same", f(), f("a.md", "1"), f("a.md", "1"), f("a.md", "1"), nil},
		{"both added differently", f(), f("a.md", "1"), f("a.md", "2"), f("a.md", "2"), []string{"a.md"}},
		{"theirs changed", f("a.md", "1"), f("a.md", "1"), f("a.md", "2"), f("a.md", "2"), nil},
		{"ours changed", f("a.md", "1"), f("a.md", "3"), f("a.md", "1"), f("a.md", "3"), nil},
		{"both changed", f("a.md", "1"), f("a.md", "3"), f("a.md", "2"), f("a.md", "2"), []string{"a.md"}},
		{"ours removed", f("a.md", "1"), f(), f("a.md", "1"), f(), nil},
		{"theirs removed", f("a.md", "1"), f("a.md", "1"), f(), f(), nil},
		{"ours removed, theirs changed", f("a.md", "1"), f(), f("a.md", "2"), f("a.md", "2"), []string{"a.md"}},
		{"separate files", f("a.md", "1", "b.md", "1"), f("a.md", "2", "b.md", "1"), f("a.md", "1", "b.md", "3"), f("a.md", "2", "b.md", "3"), nil},
		{"ours made the file a directory, theirs changed it", f("n.md", "1"), f("n.md/x.md", "2"), f("n.md", "3"), f("n.md", "3"), []string{"n.md", "n.md/x.md"}},
		{"theirs made the file a directory, ours changed it", f("n.md", "1"), f("n.md", "2"), f("n.md/x.md", "3"), f("n.md/x.md", "3"), []string{"n.md"}},
		{"ours added a file where theirs added a directory", f(), f("n/a.md", "1", "n/b.md", "2"), f("n", "3"), f("n", "3"), []string{"n/a.md", "n/b.md"}},
		{"a deep directory of theirs", f(), f("n", "1", "n/a", "2"), f("n/a/b.md", "3"), f("n/a/b.md", "3"), []string{"n", "n/a"}},
		{"theirs holds both (no file system does)", f(), f(), f("n.md", "1", "n.md/x.md", "2"), f("n.md", "1"), []string{"n.md/x.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts := Merge3(tc.base, tc.ours, tc.theirs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("merged (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.conflicts, conflicts); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApplyRefusesOddPaths: a synced file whose path leaves the store or
// hides is never written; a link inside the store is never followed.
func TestApplyRefusesOddPaths(t *testing.T) {
	root := t.TempDir()
	s := &Store{Root: root}
	outside := t.TempDir()
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(s.Dir(), "linked")); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"../escape.md": []byte("x"), ".hidden": []byte("x"), "linked/x.md": []byte("x"), "ok/doc.md": []byte("fine")}
	changed, skipped, err := s.Apply(map[string][]byte{}, want)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(changed, ",") != "ok/doc.md" || strings.Join(skipped, ",") != "../escape.md,.hidden,linked/x.md" {
		t.Errorf("changed %v skipped %v", changed, skipped)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote through the link: %v", entries)
	}
	files, err := s.Files()
	if err != nil || len(files) != 1 || string(files["ok/doc.md"]) != "fine" {
		t.Errorf("Files = %v, %v", files, err)
	}
}

// TestApplyFileAndDirectoryOfOneName: a document replaced by a
// directory of its name is written, and the way back; a directory that
// holds a file the store does not sync is not removed, and the error
// says what to move.
func TestApplyFileAndDirectoryOfOneName(t *testing.T) {
	s := &Store{Root: t.TempDir()}
	f := func(kv ...string) map[string][]byte {
		m := map[string][]byte{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []byte(kv[i+1])
		}
		return m
	}
	steps := []struct{ ours, want map[string][]byte }{
		{f(), f("a/n.md", "file")},
		{f("a/n.md", "file"), f("a/n.md/x.md", "dir")},
		{f("a/n.md/x.md", "dir"), f("a/n.md", "file again")},
		{f("a/n.md", "file again"), f("a/n.md/deep/x.md", "deeper")},
		{f("a/n.md/deep/x.md", "deeper"), f("a/n.md", "file at last")},
	}
	for i, st := range steps {
		if _, _, err := s.Apply(st.ours, st.want); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, err := s.Files()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Fatalf("step %d: the store (-want +got):\n%s", i, diff)
		}
	}

	// A file this host keeps (a hidden one) in the way.
	if _, _, err := s.Apply(f("a/n.md", "file at last"), f("a/n.md/x.md", "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), "a", "n.md", ".draft"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Apply(f("a/n.md/x.md", "dir"), f("a/n.md", "file"))
	if err == nil || !strings.Contains(err.Error(), "move them out") {
		t.Errorf("a directory in the way: %v, want an error saying to move its files out", err)
	}
	if data, err := os.ReadFile(filepath.Join(s.Dir(), "a", "n.md", ".draft")); err != nil || string(data) != "mine" {
		t.Errorf("this host's file: %q, %v", data, err)
	}
}

// FuzzMerge3: whatever three stores a sync meets (the remote's is
// outside input), the merge keeps only their files, each file's version
// is ours or theirs, one side's change is never a conflict, and two
// sides that agree merge to what they agree on.
func FuzzMerge3(f *testing.F) {
	f.Add("a.md=1", "a.md=2", "a.md=1;b.md=3")
	f.Add("", "a.md=1", "a.md=2")
	f.Add("a.md=1;b.md=1", "b.md=2", "a.md=1;b.md=1;c.md=")
	f.Add("n.md=1", "n.md/x.md=2", "n.md=3")
	f.Add("", "n=1;n/a=2", "n/a/b.md=3")
	parse := func(s string) map[string][]byte {
		m := map[string][]byte{}
		for _, kv := range strings.Split(s, ";") {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				m[k] = []byte(v)
			}
		}
		return m
	}
	f.Fuzz(func(t *testing.T, b, o, th string) {
		base, ours, theirs := parse(b), parse(o), parse(th)
		merged, conflicts := Merge3(base, ours, theirs)
		conflicted := map[string]bool{}
		for _, p := range conflicts {
			conflicted[p] = true
		}
		// under says whether p is at or below d's path as a directory.
		under := func(p, d string) bool { return strings.HasPrefix(p, d+"/") }
		// clashes says whether a file of ours or theirs sits where p's
		// directories are, or under p as a directory: such a path may be
		// left out whatever the sides did.
		clashes := func(p string) bool {
			for _, side := range []map[string][]byte{ours, theirs} {
				for q := range side {
					if under(p, q) || under(q, p) {
						return true
					}
				}
			}
			return false
		}
		for p := range merged {
			for q := range merged {
				if under(p, q) {
					t.Fatalf("merged holds %s and %s, a file and a directory of one name", q, p)
				}
			}
		}
		for p, v := range merged {
			ov, inO := ours[p]
			tv, inT := theirs[p]
			if !(inO && string(ov) == string(v)) && !(inT && string(tv) == string(v)) {
				t.Fatalf("%s = %q is neither ours nor theirs", p, v)
			}
		}
		for _, side := range []map[string][]byte{base, ours, theirs} {
			for p := range side {
				bv, inB := base[p]
				ov, inO := ours[p]
				tv, inT := theirs[p]
				sameOB := inO == inB && string(ov) == string(bv)
				sameTB := inT == inB && string(tv) == string(bv)
				sameOT := inO == inT && string(ov) == string(tv)
				if clashes(p) {
					continue
				}
				if conflicted[p] && (sameOB || sameTB || sameOT) {
					t.Fatalf("%s: a conflict where one side did not change", p)
				}
				mv, inM := merged[p]
				if sameOT && (inM != inO || string(mv) != string(ov)) {
					t.Fatalf("%s: both sides agree on %q (%v), merged %q (%v)", p, ov, inO, mv, inM)
				}
			}
		}
	})
}
