package retrieve

import (
	"context"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/kb"
)

// reads keeps what one retrieval run reads more than once: document
// frequencies from the full-text vocabulary, the checkout's files, the
// task's weighted terms and each file's scan for them. The ranker, the
// precision stage and the assemblers made with NewAssemblerFor share one,
// so a file the chunk signal read is not read again, and a file the
// precision stage scanned is not scanned again.
type reads struct {
	kb     *kb.KnowledgeBase
	repoID int64
	files  int                   // files of the repository; -1 until counted
	df     map[string]int        // every term looked up; 0: not in any file
	text   map[string]fileRead   // by absolute path
	terms  map[string]*taskTerms // by the keyword list
	scans  map[scanKey]fileTerms
}

type fileRead struct {
	lines []string // strings.SplitAfter(content, "\n")
	err   error
}

type scanKey struct {
	path string
	tt   *taskTerms
}

func newReads(k *kb.KnowledgeBase, repoID int64) *reads {
	return &reads{kb: k, repoID: repoID, files: -1, df: map[string]int{}, text: map[string]fileRead{},
		terms: map[string]*taskTerms{}, scans: map[scanKey]fileTerms{}}
}

// lookup returns the document frequency of each term that occurs in the
// repository, in the order of terms; absent terms are left out.
func (v *reads) lookup(ctx context.Context, terms []string) ([]termDF, error) {
	var ask []string
	asked := map[string]bool{}
	for _, t := range terms {
		if _, ok := v.df[t]; !ok && !asked[t] {
			asked[t] = true
			ask = append(ask, t)
		}
	}
	// Into the cache only once every batch has been read: a lookup that
	// fails leaves nothing half known.
	if len(ask) > 0 {
		found, err := v.kb.DocumentFrequencies(ctx, ask)
		if err != nil {
			return nil, err
		}
		for t := range asked {
			v.df[t] = found[t] // 0: in no file
		}
	}
	var out []termDF
	seen := map[string]bool{}
	for _, t := range terms {
		if df := v.df[t]; df > 0 && !seen[t] {
			seen[t] = true
			out = append(out, termDF{t, df})
		}
	}
	return out, nil
}

// fileCount returns how many files the repository has.
func (v *reads) fileCount(ctx context.Context) (int, error) {
	if v.files < 0 {
		n, err := v.kb.FileCount(ctx, v.repoID)
		if err != nil {
			return 0, err
		}
		v.files = n
	}
	return v.files, nil
}

// idf is the inverse document frequency of a term in df of n files, as
// Lucene's BM25 has it.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// file returns the lines of the file at path (absolute), each with its
// newline, read once.
func (v *reads) file(path string) ([]string, error) {
	if f, ok := v.text[path]; ok {
		return f.lines, f.err
	}
	var f fileRead
	data, err := os.ReadFile(path)
	if err != nil {
		f.err = err
	} else {
		f.lines = strings.SplitAfter(string(data), "\n")
	}
	v.text[path] = f
	return f.lines, f.err
}

// taskTerms gives the task's most telling terms their inverse document
// frequency over the repository's files, so that a symbol sharing the
// task's rare words outranks one sharing "get" and "context".
func (v *reads) taskTerms(ctx context.Context, keywords []string) (*taskTerms, error) {
	key := strings.Join(keywords, "\x00")
	if tt, ok := v.terms[key]; ok {
		return tt, nil
	}
	w := map[string]float64{}
	if len(keywords) > 0 {
		n, err := v.fileCount(ctx)
		if err != nil {
			return nil, err
		}
		present, err := v.lookup(ctx, keywords[:min(len(keywords), 500)])
		if err != nil {
			return nil, err
		}
		sort.SliceStable(present, func(i, j int) bool {
			wi, wj := idf(n, present[i].df), idf(n, present[j].df)
			if wi != wj {
				return wi > wj
			}
			return present[i].term < present[j].term
		})
		for _, p := range present[:min(len(present), 16)] {
			w[p.term] = idf(n, p.df)
		}
	}
	tt := newTaskTerms(w)
	v.terms[key] = tt
	return tt, nil
}

// scan returns the file's lines as the task's terms (scanTerms), scanned
// once per file and task.
func (v *reads) scan(path string, lines []string, tt *taskTerms) fileTerms {
	k := scanKey{path, tt}
	if ft, ok := v.scans[k]; ok {
		return ft
	}
	ft := scanTerms(lines, tt)
	v.scans[k] = ft
	return ft
}
