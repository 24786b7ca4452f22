package adapter_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cra-dev/cra/internal/adapter"
)

func TestSniff(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"ok.gguf":                           "GGUF\x03\x00\x00\x00\x00\x00\x00\x00",
		"noext":                             "GGUF",
		"empty.gguf":                        "",
		"short":                             "GG",
		"zip.gguf":                          "PK\x03\x04\x14\x00\x00\x00\x08\x00",
		"weights.safetensors":               "whatever",
		"renamed.bin":                       "\x20\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":{}}",
		"ggml.bin":                          "lmgg\x01\x00\x00\x00",
		"one/adapter-final.gguf":            "GGUF one",
		"one/log.txt":                       "loss 0.1",
		"peft/adapter_model.safetensors":    "x",
		"peft/adapter_config.json":          "{}",
		"mlx/adapters.safetensors":          "x",
		"two/a.gguf":                        "GGUF a",
		"two/b.gguf":                        "GGUF b",
		"none/readme.md":                    "nothing",
		"mixed/adapter_model.safetensors":   "x",
		"mixed/converted.gguf":              "GGUF converted",
		"badgguf/adapter.gguf":              "not gguf",
		"badgguf/adapter_model.safetensors": "x",
	}
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	for _, tc := range []struct {
		path        string
		want        string // the file taken, or "" for a refusal
		safetensors bool
		errHas      string
	}{
		{path: "ok.gguf", want: "ok.gguf"},
		{path: "noext", want: "noext"},
		{path: "empty.gguf", errHas: "nothing (the file is empty)"},
		{path: "short", errHas: `47 47 ("GG")`},
		{path: "zip.gguf", errHas: `50 4b 03 04 14 00 00 00 ("PK......")`},
		{path: "weights.safetensors", safetensors: true},
		{path: "renamed.bin", safetensors: true},
		{path: "ggml.bin", errHas: `6c 6d 67 67`},
		{path: "one", want: "one/adapter-final.gguf"},
		{path: "peft", safetensors: true, errHas: "peft/adapter_model.safetensors is a safetensors adapter"},
		{path: "mlx", safetensors: true, errHas: "adapters.safetensors"},
		{path: "two", errHas: "holds 2 .gguf files"},
		{path: "none", errHas: "holds no .gguf file"},
		{path: "mixed", want: "mixed/converted.gguf"},
		{path: "badgguf", errHas: "not a GGUF adapter"},
		{path: "missing.gguf", errHas: "no such file"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := adapter.Sniff(filepath.Join(dir, tc.path))
			if tc.want != "" {
				if err != nil || got != filepath.Join(dir, tc.want) {
					t.Errorf("got %q, %v; want %s", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want a refusal", got)
			}
			var fe *adapter.FormatError
			if tc.safetensors {
				if !errors.As(err, &fe) || !fe.Safetensors || !strings.Contains(err.Error(), "convert_lora_to_gguf.py") || !errors.Is(err, adapter.ErrNotGGUF) {
					t.Errorf("got %v, want a safetensors refusal naming convert_lora_to_gguf.py", err)
				}
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("got %v, want it to contain %q", err, tc.errHas)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "ok.gguf")); err != nil {
		t.Fatal(err)
	}
}

// TestSniffFIFO checks that a named pipe (or a shell's <(…), which is
// one) is refused at once: opening one with no writer blocks for ever,
// and a pipe read to sniff and digest it would then be uploaded empty.
func TestSniffFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "adapter.gguf")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// Before the fix this call never returned.
	if _, err := adapter.Sniff(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("got %v, want a refusal saying it is not a regular file", err)
	}
}

func TestDefaultTag(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"qwen3:4b-instruct-2507", "qwen3:4b-instruct-2507-scope-v2"},
		{"qwen3:latest", "qwen3-scope-v2"},
		{"qwen3", "qwen3-scope-v2"},
		{"hf.co/org/model:Q4_K_M", "hf.co/org/model:Q4_K_M-scope-v2"},
	} {
		if got := adapter.DefaultTag(tc.base, "scope", 2); got != tc.want {
			t.Errorf("DefaultTag(%q): got %s, want %s", tc.base, got, tc.want)
		}
	}
}

// FuzzSniff: any content is taken when, and only when, it begins with the
// GGUF magic; a refusal names the file's first bytes.
func FuzzSniff(f *testing.F) {
	for _, seed := range []string{"GGUF\x03\x00\x00\x00", "", "G", "PK\x03\x04", "\x20\x00\x00\x00\x00\x00\x00\x00{}", "\xff\xff\xff\xff\xff\xff\xff\xff{"} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "adapter.bin")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := adapter.Sniff(path)
		gguf := len(data) >= 4 && string(data[:4]) == "GGUF"
		if gguf != (err == nil) || (err == nil && got != path) {
			t.Fatalf("Sniff(%q) = %q, %v", data, got, err)
		}
		var fe *adapter.FormatError
		if err != nil {
			if !errors.As(err, &fe) || len(fe.Head) > 8 || string(fe.Head) != string(data[:len(fe.Head)]) {
				t.Fatalf("Sniff(%q): got %v, want a FormatError with the first bytes", data, err)
			}
			_ = err.Error()
		}
	})
}
