package main

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/cra-dev/cra/internal/terms"
	"github.com/google/go-cmp/cmp"
)

// corpus is three documents whose one-letter paths add no terms:
// a = alpha beta (2 terms), b = beta beta gamma delta (4), c = gamma (1);
// avgdl = 7/3.
func corpus() []*bm25Doc {
	return []*bm25Doc{
		newBM25Doc("b", "beta beta gamma delta"),
		newBM25Doc("c", "gamma"),
		newBM25Doc("a", "alpha beta"),
	}
}

func TestBM25Rank(t *testing.T) {
	// idf(alpha) = ln(1 + 2.5/1.5), idf(beta) = ln(1 + 1.5/2.5);
	// tf part f(k1+1)/(f + k1(1 - b + b·dl/avgdl)).
	tf := func(f, dl float64) float64 { return f * 2.2 / (f + 1.2*(0.25+0.75*dl/(7.0/3))) }
	idfAlpha, idfBeta := math.Log(1+2.5/1.5), math.Log(1+1.5/2.5)
	tests := []struct {
		name  string
		query string
		paths []string
		score []float64
	}{
		{
			name:  "rare term wins",
			query: "alpha beta",
			paths: []string{"a", "b", "c"},
			score: []float64{idfAlpha*tf(1, 2) + idfBeta*tf(1, 2), idfBeta * tf(2, 4), 0}, // 1.5409, 0.5381, 0
		},
		{
			name:  "a repeated query term weighs twice; term frequency beats length",
			query: "beta, beta!",
			paths: []string{"b", "a", "c"},
			score: []float64{2 * idfBeta * tf(2, 4), 2 * idfBeta * tf(1, 2), 0}, // 1.0763, 0.9984, 0
		},
		{
			name:  "no match: all zero, by path",
			query: "omega",
			paths: []string{"a", "b", "c"},
			score: []float64{0, 0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits := bm25Rank(corpus(), terms.List(tc.query))
			if diff := cmp.Diff(tc.paths, hitPaths(hits)); diff != "" {
				t.Errorf("ranking (-want +got):\n%s", diff)
			}
			for i, h := range hits {
				if math.Abs(h.Score-tc.score[i]) > 1e-9 {
					t.Errorf("score of %s = %.6f, want %.6f", h.Doc.Path, h.Score, tc.score[i])
				}
			}
		})
	}
	if got := bm25Rank(nil, []string{"x"}); len(got) != 0 {
		t.Errorf("empty corpus: got %v", got)
	}
}

func TestNewBM25Doc(t *testing.T) {
	d := newBM25Doc("src/http_server.go", "func parseHTTPHeader() {}\n")
	want := map[string]int{
		// content: the identifier whole and split ("func" is a stop word)
		"parsehttpheader": 1, "parse": 1, "http": 2, "header": 1,
		// path: src, http_server split, go
		"src": 1, "httpserver": 1, "server": 1, "go": 1,
	}
	if diff := cmp.Diff(want, d.TF); diff != "" {
		t.Errorf("TF (-want +got):\n%s", diff)
	}
	if d.Len != 9 {
		t.Errorf("Len = %d, want 9", d.Len)
	}
	if want := (len("func parseHTTPHeader() {}\n") + 3) / 4; d.Tokens != want {
		t.Errorf("Tokens = %d, want %d", d.Tokens, want)
	}
}

func TestPackWhole(t *testing.T) {
	doc := func(path string, tokens int) *bm25Doc { return &bm25Doc{Path: path, Tokens: tokens} }
	hits := []bm25Hit{
		{doc("big.py", 9000), 5},  // never fits 8k
		{doc("mid.py", 5000), 4},  // fits 8k
		{doc("mid2.py", 4000), 3}, // 8k: passed over (3192 left), 32k: fits
		{doc("small.py", 3000), 2},
		{doc("tiny.py", 192), 1},     // fills 8k exactly
		{doc("nomatch.py", 10), 0},   // scores 0: never packed
		{doc("huge.py", 40000), 0.5}, // 32k: never fits
	}
	got8 := packWhole(hits, 8192)
	want8 := pack{"mid.py": {wholeFile}, "small.py": {wholeFile}, "tiny.py": {wholeFile}}
	if diff := cmp.Diff(want8, got8); diff != "" {
		t.Errorf("8k (-want +got):\n%s", diff)
	}
	got32 := packWhole(hits, 32768)
	paths := slices.Sorted(maps.Keys(got32))
	if want := []string{"big.py", "mid.py", "mid2.py", "small.py", "tiny.py"}; !slices.Equal(paths, want) {
		t.Errorf("32k packed %v, want %v", paths, want)
	}
}
