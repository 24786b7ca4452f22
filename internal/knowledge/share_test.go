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

// FuzzMerge3: whatever three stores a sync meets (the remote's is
// outside input), the merge keeps only their files, each file's version
// is ours or theirs, one side's change is never a conflict, and two
// sides that agree merge to what they agree on.
func FuzzMerge3(f *testing.F) {
	f.Add("a.md=1", "a.md=2", "a.md=1;b.md=3")
	f.Add("", "a.md=1", "a.md=2")
	f.Add("a.md=1;b.md=1", "b.md=2", "a.md=1;b.md=1;c.md=")
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
