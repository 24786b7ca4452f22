package knowledge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseRender(t *testing.T) {
	d := &Doc{Title: "Error Handling Conventions", UpdatedBy: "code_style", AfterTask: "t-12", Status: Established,
		Rules: "1. Wrap errors once per layer.\n2. Never log and return.", Good: `return fmt.Errorf("open: %w", err)`,
		Bad: "return err\nlog.Print(err); return err", Rationale: "One context per layer.",
		Changelog: []string{"2026-01-02 code_style after t-12: created"}}
	text := d.Render()
	for _, want := range []string{"# Error Handling Conventions\n", "_Last updated by: code_style, t-12_\n", "_Status: established_\n",
		"## Rules\n\n1. Wrap", "## Examples\n\nGood:\n  return fmt", "Bad:\n  return err\n  log.Print", "## Rationale\n", "## Changelog\n\n- 2026-01-02"} {
		if !strings.Contains(text, want) {
			t.Errorf("render lacks %q:\n%s", want, text)
		}
	}
	if diff := cmp.Diff(d, Parse(text)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	// A person's document: no metadata, its own sections, no labels.
	p := Parse("# Storage\n\nSome intro.\n\n## Rules\nUse SQLite.\n\n## Examples\ndb.Exec(...)\n\n## Notes\nKeep this.\n")
	if p.Title != "Storage" || p.Status != "" || p.EffectiveStatus() != Established || p.Rules != "Use SQLite." ||
		p.Good != "db.Exec(...)" || len(p.Extra) != 1 || p.Extra[0].Heading != "Notes" {
		t.Errorf("lenient parse: %+v", p)
	}
	if s := Parse("# X\n_Status: deprecated_\n_Needs user review: yes_\n"); s.Status != Deprecated || !s.NeedsReview {
		t.Errorf("got %+v", s)
	}

	// An example may hold a Markdown heading: indented, it is the
	// example's line, not a section of the document.
	ex := &Doc{Title: "READMEs", Status: Provisional, Rules: "1. Every package README has a Usage section.",
		Good: "# pkg\n## Usage\ngo run ./cmd/pkg", Bad: "# pkg\nSee the code."}
	if diff := cmp.Diff(ex, Parse(ex.Render())); diff != "" {
		t.Errorf("round trip of an example with a heading (-want +got):\n%s", diff)
	}
}

func TestCanWrite(t *testing.T) {
	for _, tc := range []struct {
		by   Supervisor
		path string
		want error
	}{
		{CodeStyle, "conventions/errors.md", nil},
		{CodeStyle, "conventions/go/errors.md", nil},
		{CodeStyle, "design/errors.md", ErrOutside},
		{Design, "design/architecture.md", nil},
		{Design, "conventions/x.md", ErrOutside},
		{Internaliser, "lessons/gotchas.md", nil},
		{Internaliser, "domain/domain.md", nil},
		{Internaliser, "design/x.md", ErrOutside},
		{Internaliser, "lessons.md", ErrOutside},
		{CodeStyle, "../conventions/x.md", ErrBadPath},
		{CodeStyle, "conventions/../design/x.md", ErrBadPath},
		{CodeStyle, "/etc/conventions/x.md", ErrBadPath},
		{CodeStyle, "conventions/x.txt", ErrBadPath},
		{CodeStyle, "conventions/.hidden.md", ErrBadPath},
		{CodeStyle, "conventions/_index.md", ErrBadPath},
		{CodeStyle, "conventions//x.md", ErrBadPath},
		{CodeStyle, `conventions\x.md`, ErrBadPath},
	} {
		err := tc.by.CanWrite(tc.path)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s writes %s: got %v, want %v", tc.by, tc.path, err, tc.want)
		}
	}
}

func TestStorePut(t *testing.T) {
	repo := t.TempDir()
	s := &Store{Root: repo, Now: func() time.Time { return time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) }}
	if empty, err := s.Empty(); !empty || err != nil {
		t.Fatalf("empty store: %v %v", empty, err)
	}
	w, err := s.Put(CodeStyle, "conventions/errors.md", &Doc{Title: "Errors", Rules: "Wrap once.", Good: "a", Bad: "b", Rationale: "why"}, "t-1")
	if err != nil || w.Change != "created" || w.Status != Provisional {
		t.Fatalf("create: %+v %v", w, err)
	}
	d, _, err := s.Read("conventions/errors.md")
	if err != nil || d.Status != Provisional || d.UpdatedBy != "code_style" || d.AfterTask != "t-1" ||
		!cmp.Equal(d.Changelog, []string{"2026-01-02 code_style after t-1: created"}) {
		t.Fatalf("read: %+v %v", d, err)
	}
	// Unchanged: nothing written.
	if w, err = s.Put(CodeStyle, "conventions/errors.md", &Doc{Title: "Errors", Rules: "Wrap once.", Good: "a", Bad: "b", Rationale: "why"}, "t-2"); err != nil || w.Change != "" {
		t.Fatalf("same: %+v %v", w, err)
	}
	// Established, then a new rationale: still established; new rules: provisional.
	if _, err := s.SetStatus("conventions/errors.md", Established, "person", "checked"); err != nil {
		t.Fatal(err)
	}
	if w, _ = s.Put(CodeStyle, "conventions/errors.md", &Doc{Title: "Errors", Rules: "Wrap once.", Good: "a", Bad: "b", Rationale: "because"}, "t-3"); w.Status != Established || w.Change != "rationale changed" {
		t.Errorf("rationale: %+v", w)
	}
	if w, _ = s.Put(CodeStyle, "conventions/errors.md", &Doc{Title: "Errors", Rules: "Wrap twice.", Rationale: "because"}, "t-4"); w.Status != Provisional || w.Change != "rules, examples changed" {
		t.Errorf("rules: %+v", w)
	}
	d, _, _ = s.Read("conventions/errors.md")
	if len(d.Changelog) != 4 || !strings.Contains(d.Changelog[3], "code_style after t-4: rules, examples changed") {
		t.Errorf("changelog: %q", d.Changelog)
	}

	// Refusals write nothing.
	if _, err := s.Put(CodeStyle, "design/x.md", &Doc{Title: "X", Rules: "r"}, "t-5"); !errors.Is(err, ErrOutside) {
		t.Errorf("outside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, Dir, "design")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused write made %v", err)
	}
	if _, err := s.Put(CodeStyle, "conventions/long.md", &Doc{Title: "X", Rules: strings.Repeat("r", MaxRules+1)}, "t-5"); err == nil {
		t.Error("rules over the limit were written")
	}
	person := "# Tabs\n\nWe like tabs.\n\n## Rules\nIndent with tabs.\n"
	if err := os.WriteFile(filepath.Join(repo, Dir, "conventions", "tabs.md"), []byte(person), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(CodeStyle, "conventions/tabs.md", &Doc{Title: "Tabs", Rules: "Spaces."}, "t-6"); !errors.Is(err, ErrPersonDoc) {
		t.Errorf("over a person's document: %v", err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(repo, Dir, "conventions", "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(CodeStyle, "conventions/out/x.md", &Doc{Title: "X", Rules: "r"}, "t-7"); !errors.Is(err, ErrBadPath) {
		t.Errorf("through a symlink: %v", err)
	}

	// Deprecating a person's document changes its status line only.
	if _, err := s.SetStatus("conventions/tabs.md", Deprecated, "person", "we use gofmt"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(repo, Dir, "conventions", "tabs.md"))
	want := "# Tabs\n\n_Status: deprecated_\n\nWe like tabs.\n\n## Rules\nIndent with tabs.\n\n## Changelog\n\n- 2026-01-02 person after none: status deprecated: we use gofmt\n"
	if string(data) != want {
		t.Errorf("deprecated person's doc:\n%s\nwant:\n%s", data, want)
	}
	l, err := s.List()
	if err != nil || len(l) != 2 || l[1].Path != "conventions/tabs.md" || l[1].Status != Deprecated || !l[1].Person || l[0].Person {
		t.Errorf("list: %+v %v", l, err)
	}
	k, err := Load(repo, "errors", MaxTokens)
	if err != nil || !cmp.Equal(k.Docs, []string{"conventions/errors.md"}) || strings.Contains(k.Text, "Changelog") {
		t.Errorf("load: %+v %v\n%s", k, err, k.Text)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("# T\n_Last updated by: code_style, t-1_\n_Status: provisional_\n\n## Rules\n1. x\n\n## Examples\nGood:\n  a\nBad:\n  b\n\n## Changelog\n- one\n")
	f.Add("## Rules\n## rules\n# late title\n_status: ESTABLISHED_\n")
	f.Fuzz(func(t *testing.T, text string) {
		d := Parse(text)
		// What Render writes parses back to itself.
		again := Parse(d.Render())
		if again.Render() != Parse(again.Render()).Render() {
			t.Fatalf("render not stable for %q", text)
		}
		_ = withoutChangelog(text)
		_ = setStatusText(text, Deprecated, "entry")
	})
}

// TestPutKeepsDeprecation: a person deprecated a supervisor's document;
// the supervisor's next rewrite of its rules does not bring it back into
// the prompts as provisional.
func TestPutKeepsDeprecation(t *testing.T) {
	root := t.TempDir()
	s := &Store{Root: root}
	if _, err := s.Put(CodeStyle, "conventions/errors.md", &Doc{Title: "Errors", Rules: "1. Panic on every error."}, "t-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetStatus("conventions/errors.md", Deprecated, "person", "wrong: we never panic"); err != nil {
		t.Fatal(err)
	}
	w, err := s.Put(CodeStyle, "conventions/errors.md", &Doc{Title: "Errors", Rules: "1. Panic on every error, with context."}, "t-2")
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != Deprecated {
		t.Errorf("after the rewrite: status %q, want it deprecated still", w.Status)
	}
	if sec, err := Load(root, "errors panic", MaxTokens); err != nil || sec != nil && len(sec.Docs) != 0 {
		t.Errorf("the deprecated document is in the prompts again: %+v, %v", sec, err)
	}
}

// TestStoreRefusesLinkedDir: a symbolic link anywhere on the store's
// path (docs/ or docs/knowledge/, as a repository may commit) is
// refused by every reader and writer, and nothing is written through it.
func TestStoreRefusesLinkedDir(t *testing.T) {
	for _, link := range []string{"docs", "docs/knowledge"} {
		t.Run(link, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			if err := os.MkdirAll(filepath.Join(outside, "knowledge", "conventions"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "knowledge", "conventions", "x.md"), []byte("# X\n\n## Rules\nsecret\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			target := outside
			if link == "docs/knowledge" {
				target = filepath.Join(outside, "knowledge")
				if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(link))); err != nil {
				t.Fatal(err)
			}
			s := &Store{Root: root}
			want := filepath.Join(root, filepath.FromSlash(link)) + " is a symbolic link"
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want ErrBadPath naming %q", what, err, want)
				}
			}
			_, err := s.Put(CodeStyle, "conventions/y.md", &Doc{Title: "Y", Rules: "r"}, "t-1")
			check("put", err)
			_, _, err = s.Read("conventions/x.md")
			check("read", err)
			_, err = s.List()
			check("list", err)
			_, err = s.SetStatus("conventions/x.md", Deprecated, "person", "why")
			check("set status", err)
			_, err = Load(root, "secret", MaxTokens)
			check("load", err)
			if _, err := os.Stat(filepath.Join(outside, "knowledge", "conventions", "y.md")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a write went through the link: %v", err)
			}
			if data, _ := os.ReadFile(filepath.Join(outside, "knowledge", "conventions", "x.md")); !strings.Contains(string(data), "secret") || strings.Contains(string(data), "deprecated") {
				t.Errorf("the document behind the link changed:\n%s", data)
			}
		})
	}
}
