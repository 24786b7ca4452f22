package terms

import (
	"strings"
	"testing"
)

// BenchmarkJoined measures term extraction, the indexer's hottest Go path:
// every file's text goes through it for the full-text index.
func BenchmarkJoined(b *testing.B) {
	text := strings.Repeat("def parse_http_header(self, rawValue):\n    return self._cache.get(rawValue) or parseHTTPHeader(rawValue)\n", 200)
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		Joined(text)
	}
}
