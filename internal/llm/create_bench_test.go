package llm

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cra-dev/cra/internal/llm/llmtest"
)

// BenchmarkCreateAdapterModel deploys a 32 MiB adapter (a small LoRA's
// size) on the fake Ollama over loopback: hashing, HEAD, upload, create.
// The server checks the upload's digest, as Ollama does.
func BenchmarkCreateAdapterModel(b *testing.B) {
	const size = 32 << 20
	data := make([]byte, size)
	rand.Read(data)
	copy(data, "GGUF")
	path := filepath.Join(b.TempDir(), "adapter.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := llmtest.Start() // a fresh server: every round uploads
		s.SetModels("qwen3:4b")
		m := testModel(ProviderOllama, s)
		b.StartTimer()
		if _, err := CreateAdapterModel(context.Background(), m, fmt.Sprintf("qwen3:4b-scope-v%d", i+1), path, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}
