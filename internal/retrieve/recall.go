package retrieve

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/terms"
)

// Candidate recall and the files kept out of the way: the ranking fuses
// many signals, and a file that only plain text search finds can fall
// below the cut; vendored, generated and example files can rise above the
// project's own source. These are set apart from the fused scoring so
// that each is one rule.

// RecallDepth is how many code files of plain BM25 over the task's words
// are always among the candidates, whatever their fused score: a file a
// baseline text search ranks highly is never lost.
const RecallDepth = 40

// maxRecallTerms bounds the recall query: the rarest terms of a long
// issue carry its BM25 ranking (a term in most files scores next to
// nothing).
const maxRecallTerms = 200

// recall returns the files plain BM25 ranks best for the task, best
// first: code files (a parsed language) that keep accepts, up to
// RecallDepth.
func (r *Ranker) recall(ctx context.Context, q TaskQuery, byID map[int64]*rankFile, keep func(*rankFile) bool) ([]*rankFile, error) {
	counts := map[string]int{}
	terms.Each(q.Text, func(t string) { counts[t]++ })
	if len(counts) == 0 {
		return nil, nil
	}
	words := make([]string, 0, len(counts))
	for t := range counts {
		words = append(words, t)
	}
	sort.Strings(words)
	present, err := r.reads.lookup(ctx, words)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	// Rarest first. No term is dropped for being common: the vocabulary's
	// counts can include files deleted since the last merge of the index,
	// and BM25 weighs a common term little anyway.
	sort.SliceStable(present, func(i, j int) bool { return present[i].df < present[j].df })
	var query []string
	for _, t := range present {
		if len(query) >= maxRecallTerms {
			break
		}
		for range min(counts[t.term], 4) {
			query = append(query, t.term)
		}
	}
	hits, err := r.kb.RecallFiles(ctx, query, 3*RecallDepth)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	var out []*rankFile
	for _, h := range hits {
		f := byID[h.FileID]
		if f == nil || !lang.Parsed(f.lang) || keep != nil && !keep(f) {
			continue
		}
		out = append(out, f)
		if len(out) == RecallDepth {
			break
		}
	}
	return out, nil
}

// unionRecall cuts the ranked candidates to limit so that the recalled
// files are among them (at most half the places, the best recalled
// first): the fused ranking's best files fill the other places, and the
// list keeps its order. build makes the candidate of a recalled file the
// ranking never scored (with its recall rank); those come last.
func unionRecall(out []Candidate, limit int, recalled []*rankFile, build func(*rankFile, int) Candidate) []Candidate {
	if limit <= 0 {
		limit = len(out) + len(recalled) // no cut: only the unscored join
	}
	recalled = recalled[:min(len(recalled), limit/2)]
	want := make(map[int64]bool, len(recalled))
	for _, f := range recalled {
		want[f.id] = true
	}
	scored := make(map[int64]bool, len(out))
	for _, c := range out {
		scored[c.FileID] = true
	}
	// Places left for files recall did not ask for.
	free := limit - len(recalled)
	res := make([]Candidate, 0, min(limit, len(out)+len(recalled)))
	for _, c := range out {
		switch {
		case want[c.FileID]:
			res = append(res, c)
		case free > 0:
			res = append(res, c)
			free--
		}
	}
	for i, f := range recalled {
		if !scored[f.id] {
			res = append(res, build(f, i+1))
		}
	}
	return res
}

// exampleDirs hold example programs, demos and tutorials: code about the
// project, not the project's code.
var exampleDirs = map[string]bool{
	"example": true, "examples": true, "sample": true, "samples": true, "demo": true, "demos": true,
	"docs_src": true, "tutorial": true, "tutorials": true, "cookbook": true,
}

// isExample reports whether a file lives in an examples directory at the
// top of the repository or of its documentation (examples/,
// docs/examples/): a package's own examples module (src/pkg/examples/)
// is source.
func isExample(p string) bool {
	parts := strings.Split(strings.ToLower(path.Dir(p)), "/")
	if len(parts) > 1 && (parts[0] == "doc" || parts[0] == "docs") {
		parts = parts[1:]
	}
	return exampleDirs[parts[0]]
}

// aboutExamples reports whether the task talks about examples ("fix the
// search example"): then an example is no less than source.
func aboutExamples(words map[string]bool) bool {
	for w := range exampleDirs {
		if words[w] {
			return true
		}
	}
	return false
}

// configLanguages are the files.language of configuration files: prose
// to a coding task and to a documentation task alike.
var configLanguages = map[string]bool{"toml": true, "yaml": true, "json": true, "ini": true}

// vendoredFiles returns the repository's vendored, generated and minified
// files by id (see index.Vendored); none on an index older than the flag.
func (r *Ranker) vendoredFiles(ctx context.Context) (map[int64]string, error) {
	vs, err := r.kb.VendoredFiles(ctx, r.repoID)
	if errors.Is(err, kb.ErrNoVendoredFlags) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	out := make(map[int64]string, len(vs))
	for _, v := range vs {
		out[v.ID] = v.Reason
	}
	return out, nil
}

// singledOut reports whether a mention names the files it matched on its
// own: a path with a directory, or a file name only one file has. A bare
// name several files share ("pyproject.toml", "__init__.py") names the
// project's own, not the copy under examples/ or a vendored directory.
func singledOut(m string, hits int) bool {
	return hits == 1 || strings.Contains(strings.Trim(strings.ReplaceAll(m, `\`, "/"), "/"), "/")
}

// namesByWord reports whether a task word is the name of the file's
// library, its base name up to the first dot or dash: "jquery" names
// static/jquery-3.5.1.js, "six" names _vendor/six.py; "search" does not
// name search_pb2.py.
func namesByWord(words map[string]bool, p string) bool {
	base := strings.ToLower(path.Base(p))
	if i := strings.IndexAny(base, ".-"); i > 0 {
		base = base[:i]
	}
	return words[base]
}
