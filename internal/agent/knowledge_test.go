package agent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadKnowledge(t *testing.T) {
	repo := t.TempDir()
	if k, err := LoadKnowledge(repo, "task", KnowledgeTokens); k != nil || err != nil {
		t.Fatalf("no knowledge directory: got %v, %v", k, err)
	}
	writeFile(t, repo, "docs/knowledge/_index.md", "# Index\n")
	writeFile(t, repo, "docs/knowledge/conventions/errors.md", "# Errors\n\nWrap errors once per layer.\n")
	writeFile(t, repo, "docs/knowledge/design/pager.md", "# Pager\n\nThe pager command is resolved once, at startup.\n")
	writeFile(t, repo, "docs/knowledge/design/storage.md", "# Storage\n\nSQLite through database/sql.\n")
	writeFile(t, repo, "docs/knowledge/lessons/old.md", "# Old\n_Status: deprecated_\n\nUse the v1 API.\n")
	writeFile(t, repo, "docs/knowledge/lessons/huge.md", "# Huge pager notes\n\n"+strings.Repeat("pager pager ", 2000))
	writeFile(t, repo, "docs/knowledge/domain/notes.txt", "not markdown\n")

	k, err := LoadKnowledge(repo, "Resolve the pager command once", 200)
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
	writeFile(t, repo, "docs/knowledge/conventions/style.md", "# Style\n\n"+strings.Repeat("Name things plainly. ", 200))
	writeFile(t, repo, "docs/knowledge/design/a.md", "# A\n")
	k, err = LoadKnowledge(repo, "pager", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(k.Docs, []string{"conventions/style.md"}) || !cmp.Equal(k.Skipped, []string{"design/a.md"}) || !strings.Contains(k.Text, "… (cut to fit: read docs/knowledge/conventions/style.md)") || k.Tokens > 100 {
		t.Errorf("got %+v\n%s", k, k.Text)
	}
}
