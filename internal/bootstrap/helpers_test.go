package bootstrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
)

// writeFile writes content to dir/name, making its directories.
func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitFiles writes files and commits them all with message.
func commitFiles(t testing.TB, dir, message string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		writeFile(t, dir, name, content)
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "--allow-empty", "-m", message)
	return gittest.Run(t, dir, "rev-parse", "HEAD")
}

func newRepo(t testing.TB) string {
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q", "-b", "main")
	return dir
}

func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	return b.String()
}

// TestFilter crafts one commit per rule of seed 001 §16.4.2 and checks
// the reason Filter.Check gives each.
