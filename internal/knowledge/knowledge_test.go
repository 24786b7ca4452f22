package knowledge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoad(t *testing.T) {
	repo := t.TempDir()
	if k, err := Load(repo, "task", MaxTokens); k != nil || err != nil {
		t.Fatalf("no knowledge directory: got %v, %v", k, err)
	}
	if err := os.CopyFS(repo, fstest.MapFS{
		"docs/knowledge/_index.md":             {Data: []byte("# Index\n")},
		"docs/knowledge/conventions/errors.md": {Data: []byte("# Errors\n\nWrap errors once per layer.\n")},
		"docs/knowledge/design/pager.md":       {Data: []byte("# Pager\n\nThe pager command is resolved once, at startup.\n")},
		"docs/knowledge/design/storage.md":     {Data: []byte("# Storage\n\nSQLite through database/sql.\n")},
		"docs/knowledge/lessons/old.md":        {Data: []byte("# Old\n_Status: deprecated_\n\nUse the v1 API.\n")},
		"docs/knowledge/lessons/huge.md":       {Data: []byte("# Huge pager notes\n\n" + strings.Repeat("pager pager ", 2000))},
		"docs/knowledge/domain/notes.txt":      {Data: []byte("not markdown\n")},
	}); err != nil {
		t.Fatal(err)
	}

	k, err := Load(repo, "Resolve the pager command once", 200)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"conventions/errors.md", "design/pager.md", "design/storage.md"}, k.Docs); diff != "" {
		t.Errorf("docs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"lessons/huge.md"}, k.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(k.Text, "### conventions/errors.md\n# Errors") || strings.Contains(k.Text, "v1 API") || k.Tokens > 200 {
		t.Errorf("text (%d tokens):\n%s", k.Tokens, k.Text)
	}

	// A first document too long on its own comes cut, and says so.
	repo = t.TempDir()
	if err := os.CopyFS(repo, fstest.MapFS{
		"docs/knowledge/conventions/style.md": {Data: []byte("# Style\n\n" + strings.Repeat("Name things plainly. ", 200))},
		"docs/knowledge/design/a.md":          {Data: []byte("# A\n")},
	}); err != nil {
		t.Fatal(err)
	}
	k, err = Load(repo, "pager", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(k.Docs, []string{"conventions/style.md"}) || !cmp.Equal(k.Skipped, []string{"design/a.md"}) || !strings.Contains(k.Text, "… (cut to fit: read docs/knowledge/conventions/style.md)") || k.Tokens > 100 {
		t.Errorf("got %+v\n%s", k, k.Text)
	}
}

// TestLoadRuleMentioningDeprecated: a document is deprecated by its status
// line, not by a rule that speaks of deprecation.
func TestLoadRuleMentioningDeprecated(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, Dir, "conventions", "api.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	text := "# API fields\n\n_Status: established_\n\n## Rules\n1. Never delete a field: set `status: deprecated` on it in openapi.yaml.\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sec, err := Load(root, "remove the old api field", MaxTokens)
	if err != nil {
		t.Fatal(err)
	}
	if sec == nil || len(sec.Docs) != 1 {
		t.Errorf("an established convention that mentions deprecation: got %+v, want it in the prompt", sec)
	}
}

// TestLoadDeprecatedWithAReason: a status line that says why (a person's
// words) still deprecates its document.
func TestLoadDeprecatedWithAReason(t *testing.T) {
	for _, status := range []string{"_Status: deprecated (use api-v2.md)_", "Status: deprecated, see api-v2.md", "_Status: Deprecated._"} {
		root := t.TempDir()
		p := filepath.Join(root, Dir, "conventions", "api.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# API fields\n\n"+status+"\n\n## Rules\n1. Delete old api fields.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sec, err := Load(root, "remove the old api field", MaxTokens)
		if err != nil {
			t.Fatal(err)
		}
		if sec != nil && len(sec.Docs) != 0 {
			t.Errorf("%q: the deprecated document is in the prompt", status)
		}
	}
}
