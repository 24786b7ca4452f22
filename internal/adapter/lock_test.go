package adapter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServerKey(t *testing.T) {
	same := []string{"http://127.0.0.1:11434", "http://localhost:11434/", "HTTP://LOCALHOST:11434", "http://[::1]:11434", "http://0.0.0.0:11434", " http://127.0.0.2:11434 "}
	for _, u := range same[1:] {
		if got, want := serverKey(u), serverKey(same[0]); got != want {
			t.Errorf("serverKey(%q) = %q, want %q as for %q", u, got, want, same[0])
		}
	}
	if serverKey("http://gpu-box") != serverKey("http://gpu-box:80") {
		t.Errorf("a URL without a port: got %q, want the scheme's port as %q", serverKey("http://gpu-box"), serverKey("http://gpu-box:80"))
	}
	for _, other := range []string{"http://127.0.0.1:11435", "https://127.0.0.1:11434", "http://gpu-box:11434", "http://127.0.0.1:11434/proxy"} {
		if serverKey(other) == serverKey(same[0]) {
			t.Errorf("serverKey(%q) = %q: want another server's key than %q", other, serverKey(other), same[0])
		}
	}
}

func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "cra-1")
	if _, err := privateDir(dir); err != nil {
		t.Fatalf("a new directory: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("got %v, %v, want a directory of mode 0700", fi, err)
	}
	if _, err := privateDir(dir); err != nil {
		t.Errorf("the same directory again: %v", err)
	}
	open := filepath.Join(base, "cra-2")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777) // whatever the umask
	if _, err := privateDir(open); err == nil || !strings.Contains(err.Error(), "only you can write") || !strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("a directory anyone can write: got %v, want a refusal naming the fix", err)
	}
	link := filepath.Join(base, "cra-3")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := privateDir(link); err == nil {
		t.Error("a symbolic link: got no error, want a refusal")
	}
}
