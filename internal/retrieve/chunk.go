package retrieve

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/terms"
)

// BM25 parameters of the chunk signal (Okapi's usual values).
const (
	chunkK1 = 1.2
	chunkB  = 0.75
)

// chunkSignal scores definitions instead of files: the strongest direct
// candidates are read from the checkout, each of their definitions is
// scored with BM25 against the task (document frequencies from the
// full-text index, lengths against the mean definition), and a file's
// signal is its best definition's score over the best of all. A commit
// touching one function of a 3,000-line module finds that module through
// the function, where file-level BM25 divides the evidence by the length
// of everything else.
func (r *Ranker) chunkSignal(ctx context.Context, qterms []termDF, nFiles int, all map[int64]*scored, base func(*scored) float64) error {
	if len(qterms) == 0 || r.ChunkFiles <= 0 {
		return nil
	}
	cands := strongest(all, func(s *scored) bool { return lang.Parsed(s.f.lang) && base(s) > 0 }, base, r.ChunkFiles)
	if len(cands) == 0 {
		return nil
	}
	weight := make(map[string]float64, len(qterms))
	for _, t := range qterms {
		weight[t.term] = idf(nFiles, t.df)
	}
	spans, err := r.definitionSpans(ctx, cands)
	if err != nil {
		return err
	}

	type chunk struct {
		file   *scored
		length int
		tf     map[string]int
	}
	var chunks []chunk
	for _, s := range cands {
		lines, err := r.reads.file(filepath.Join(r.Root, filepath.FromSlash(s.f.path)))
		if err != nil {
			continue // changed or gone since indexing: the file keeps its other signals
		}
		// Per line: its number of terms and its query-term hits.
		lineLen := make([]int, len(lines)+1) // prefix sums, 1-based
		hits := map[int][]string{}
		for i, l := range lines {
			n := 0
			terms.Each(l, func(t string) {
				n++
				if _, ok := weight[t]; ok {
					hits[i+1] = append(hits[i+1], t)
				}
			})
			lineLen[i+1] = lineLen[i] + n
		}
		hitLines := make([]int, 0, len(hits))
		for l := range hits {
			hitLines = append(hitLines, l)
		}
		sort.Ints(hitLines)
		for _, sp := range fileChunks(s.f, lines, spans[s.f.id]) {
			start, end := max(sp[0], 1), min(sp[1], len(lines))
			if start > end {
				continue
			}
			c := chunk{file: s, length: lineLen[end] - lineLen[start-1], tf: map[string]int{}}
			for i := sort.SearchInts(hitLines, start); i < len(hitLines) && hitLines[i] <= end; i++ {
				for _, t := range hits[hitLines[i]] {
					c.tf[t]++
				}
			}
			chunks = append(chunks, c)
		}
	}
	if len(chunks) == 0 {
		return nil
	}
	total := 0
	for _, c := range chunks {
		total += c.length
	}
	avg := math.Max(1, float64(total)/float64(len(chunks)))
	bestOf := map[*scored]float64{}
	best := 0.0
	for _, c := range chunks {
		if len(c.tf) == 0 {
			continue
		}
		norm := chunkK1 * (1 - chunkB + chunkB*float64(c.length)/avg)
		v := 0.0
		for _, t := range slices.Sorted(maps.Keys(c.tf)) { // a fixed order: float sums do not depend on map order
			tf := float64(c.tf[t])
			v += weight[t] * tf * (chunkK1 + 1) / (tf + norm)
		}
		if v > bestOf[c.file] {
			bestOf[c.file] = v
		}
		best = math.Max(best, v)
	}
	if best == 0 {
		return nil
	}
	for s, v := range bestOf {
		s.add("chunk", v/best, "")
	}
	return nil
}

// fileChunks returns the spans a file's chunks cover: its definitions,
// its tests (testChunks), and the top-level code no definition covers
// (layoutStatements: setup.py's call of setup, a script's body, the
// assignments of a module), which is the whole file when it defines
// nothing. A statement that does not hold the task's words scores
// nothing, so unlike the assembler's pieces the statements are taken
// whatever share of the file they hold.
func fileChunks(f *rankFile, lines []string, defs [][2]int) [][2]int {
	out := slices.Concat(defs, testChunks(f, lines))
	syms := make([]symbolRow, len(defs))
	for i, d := range defs {
		syms[i] = symbolRow{start: d[0], end: d[1]}
	}
	from := headerLines + 1
	if len(defs) > 0 {
		from = min(from, defs[0][0])
	}
	for _, b := range layoutStatements(lines, syms, from) {
		out = append(out, [2]int{b.start, b.end})
	}
	if len(out) == 0 && len(lines) > 0 {
		out = append(out, [2]int{1, len(lines)})
	}
	return out
}

// testChunks returns the spans of a JS/TS test file's test cases. Its
// tests are calls (describe/it/test), which the index does not define, so
// without them the file's best chunk would be a helper function, or none:
// test/req.fresh.js, whose cases are all about freshness, had no chunk at
// all. Groups are left out; their cases stand for them.
func testChunks(f *rankFile, lines []string) [][2]int {
	if !isJS(f.lang) || !isTest(f.path) {
		return nil
	}
	var out [][2]int
	for _, b := range jsTestBlocks(lines) {
		if !b.group {
			out = append(out, [2]int{b.start, b.end})
		}
	}
	return out
}

// definitionSpans returns the line spans of the definitions of the
// candidates' files, by file ID.
func (r *Ranker) definitionSpans(ctx context.Context, cands []*scored) (map[int64][][2]int, error) {
	ids := make([]int64, len(cands))
	for i, s := range cands {
		ids[i] = s.f.id
	}
	out := map[int64][][2]int{}
	err := r.kb.SpansOfFiles(ctx, ids, func(sp kb.Span) {
		out[sp.FileID] = append(out[sp.FileID], [2]int{sp.StartLine, sp.EndLine})
	})
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	return out, nil
}
