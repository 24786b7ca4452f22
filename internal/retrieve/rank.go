package retrieve

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/terms"
)

// Ranker ranks the files of one indexed repository for a task. It reads the
// curated DB only, through the knowledge base.
type Ranker struct {
	kb     *kb.KnowledgeBase
	repoID int64
	// Weights default to DefaultWeights.
	Weights Weights
	// MaxQueryTerms bounds the full-text query: a long issue keeps its
	// rarest terms.
	MaxQueryTerms int
	// Sources is how many of the strongest direct candidates propagate
	// score to their neighbours.
	Sources int
	// Root, when set, is the checkout the index describes: the ranker then
	// reads its best candidates and scores each definition in them on its
	// own (the chunk signal), so a long file with one relevant function is
	// not diluted by the rest.
	Root string
	// ChunkFiles bounds how many candidates the chunk signal reads.
	ChunkFiles int
	// ExtraFacts marks every candidate's DeclFile even when the weights
	// do not demote such files (DeclDemotion 0), as a learner's extraction
	// needs: the fusion's score is the same either way.
	ExtraFacts bool
	reads      *reads     // shared with the assemblers made by NewAssemblerFor
	past       *pastIndex // the mined commits' messages, read once (historySignal)
}

// NewRanker returns a ranker over the knowledge base k (best over a
// read-only connection) for the repository repoID.
func NewRanker(k *kb.KnowledgeBase, repoID int64) *Ranker {
	return &Ranker{kb: k, repoID: repoID, Weights: DefaultWeights, MaxQueryTerms: 48, Sources: 12, ChunkFiles: 60, reads: newReads(k, repoID)}
}

type rankFile struct {
	id      int64
	path    string
	lang    string
	commits int
}

type scored struct {
	f       *rankFile
	signals map[string]float64
	reasons []string
}

func (s *scored) add(signal string, v float64, reason string) {
	if v <= 0 {
		return
	}
	if v > s.signals[signal] {
		s.signals[signal] = v
	}
	if reason != "" && len(s.reasons) < 8 {
		for _, r := range s.reasons {
			if r == reason {
				return
			}
		}
		s.reasons = append(s.reasons, reason)
	}
}

// Rank returns up to limit candidates, best first. Files the task names and
// files defining symbols it names are tier-1 seeds; propagated candidates
// carry the tier of the strongest signal that brought them.
func (r *Ranker) Rank(ctx context.Context, q TaskQuery, limit int) ([]Candidate, error) {
	files, byPath, err := r.files(ctx)
	if err != nil {
		return nil, err
	}
	all := map[int64]*scored{}
	get := func(f *rankFile) *scored {
		s := all[f.id]
		if s == nil {
			s = &scored{f: f, signals: map[string]float64{}}
			all[f.id] = s
		}
		return s
	}
	byID := make(map[int64]*rankFile, len(files))
	for _, f := range files {
		byID[f.id] = f
	}

	vendored, err := r.vendoredFiles(ctx)
	if err != nil {
		return nil, err
	}
	// named are the files the task singles out: by a path, a module, a
	// file name no other file has, or the plan (see singledOut).
	named := map[int64]bool{}

	// Plan files and mentions.
	for _, p := range q.PlanFiles {
		for _, f := range matchPath(p, files, byPath) {
			s := get(f)
			s.add("plan", 1, "in the plan")
			named[f.id] = true
		}
	}
	for _, m := range q.Files {
		hits := matchPath(m, files, byPath)
		for _, f := range hits {
			get(f).add("mention", 1/math.Sqrt(float64(len(hits))), "named in the task as "+m)
			named[f.id] = named[f.id] || singledOut(m, len(hits))
		}
	}
	for _, m := range q.Modules {
		hits := matchModule(m, files, byPath)
		for _, f := range hits {
			get(f).add("mention", 0.8/math.Sqrt(float64(len(hits))), "module "+m)
			named[f.id] = true
		}
	}
	// Vendored and generated files the task does not name are left out;
	// example programs weigh as prose unless the task names them or talks
	// about examples.
	words := make(map[string]bool, len(q.Keywords))
	for _, k := range q.Keywords {
		words[k] = true
	}
	examples := aboutExamples(words)
	leftOut := func(f *rankFile) bool {
		return vendored[f.id] != "" && !named[f.id] && !namesByWord(words, f.path)
	}
	// Symbols the task names, then what the task analysis implies.
	if err := r.symbolSignal(ctx, q.Symbols, "symbol", "", byID, get); err != nil {
		return nil, err
	}
	if err := r.symbolSignal(ctx, q.ImpliedSymbols, "implied", " (implied by the task analysis)", byID, get); err != nil {
		return nil, err
	}
	for _, m := range q.ImpliedFiles {
		hits := matchPath(m, files, byPath)
		for _, f := range hits {
			get(f).add("implied", 1/math.Sqrt(float64(len(hits))), "implied by the task analysis as "+m)
			named[f.id] = named[f.id] || singledOut(m, len(hits))
		}
	}
	// aside sets a file apart: left out (vendored, generated), an example
	// that weighs as prose, or neither. named is complete here, so a
	// file's kind is worked out once (the scores are computed again at
	// every comparison of a sort).
	asides := map[int64]int{}
	asideOf := func(s *scored) int {
		v, ok := asides[s.f.id]
		if !ok {
			switch {
			case leftOut(s.f):
				v = asideLeftOut
			case !named[s.f.id] && !examples && isExample(s.f.path):
				v = asideExample
			default:
				v = asideNone
			}
			asides[s.f.id] = v
		}
		return v
	}
	// aside weighs a file's signals: 0 left out, prose for an example.
	aside := func(s *scored) float64 {
		switch asideOf(s) {
		case asideLeftOut:
			return 0
		case asideExample:
			return r.Weights.Prose
		}
		return 1
	}

	// Full-text relevance.
	qterms, err := r.searchSignal(ctx, q, byID, get)
	if err != nil {
		return nil, err
	}

	nameSignal(q, files, get)
	areaSignal(q, files, get)

	w := r.Weights
	base := func(s *scored) float64 {
		return aside(s) * w.direct(s.signals)
	}
	if r.Root != "" && w.Chunk > 0 {
		if err := r.chunkSignal(ctx, qterms, len(files), all, base); err != nil {
			return nil, err
		}
	}
	// The strongest direct candidates propagate to their neighbours.
	direct := strongest(all, nil, base, r.Sources)
	maxBase := 0.0
	if len(direct) > 0 {
		maxBase = base(direct[0])
	}
	srcs := make(map[int64]float64, len(direct))
	if maxBase > 0 {
		for _, s := range direct {
			srcs[s.f.id] = base(s) / maxBase
		}
		if err := r.propagate(ctx, srcs, byID, get); err != nil {
			return nil, err
		}
	}
	if err := r.metadataSignal(ctx, q.Keywords[:min(len(q.Keywords), r.MaxQueryTerms)], len(files), srcs, byID, get); err != nil {
		return nil, err
	}
	// What past commits like the task changed: computed only when it
	// weighs (or a learner records every fact), so it costs nothing off.
	if w.History > 0 || r.ExtraFacts {
		if err := r.historySignal(ctx, q, w.History > 0, all, byID, get); err != nil {
			return nil, err
		}
	}

	// Churn prior, for files that are candidates at all; prose demoted.
	maxCommits := 0
	for _, f := range files {
		maxCommits = max(maxCommits, f.commits)
	}
	// prose counts the times the prose weight scales a file's score: an
	// example the task does not name, a file cra does not parse.
	prose := func(s *scored) int {
		n := 0
		if asideOf(s) == asideExample {
			n++
		}
		if !lang.Parsed(s.f.lang) && s.signals["mention"] == 0 && s.signals["plan"] == 0 && (q.Type != TypeDocs || configLanguages[s.f.lang]) {
			n++
		}
		return n
	}
	// testFile: a test the task does not ask about, which TestDemotion
	// scales.
	aboutTests := q.AboutTests()
	testFile := func(s *scored) bool {
		return !aboutTests && lang.Parsed(s.f.lang) && isTest(s.f.path)
	}
	// declFile: a source file that only declares types, which the task
	// does not name, which DeclDemotion scales. The kinds are read once
	// the candidates are known (after the test pairing below), and only
	// when the weights demote such files.
	var declOnly map[int64]bool
	declFile := func(s *scored) bool {
		return declOnly[s.f.id] && s.signals["mention"] == 0 && s.signals["plan"] == 0
	}
	score := func(s *scored) float64 {
		if asideOf(s) == asideLeftOut {
			return 0
		}
		return w.Fuse(s.signals, prose(s), testFile(s), declFile(s))
	}
	// Test pairing picks its sources by the score before the test
	// demotion, so that the signals, which a learner reads, do not depend
	// on it: the demotion only orders.
	pairScore := func(s *scored) float64 {
		if asideOf(s) == asideLeftOut {
			return 0
		}
		return w.Fuse(s.signals, prose(s), false, false)
	}
	churn := func() {
		for _, s := range all {
			if maxCommits > 0 && s.f.commits > 0 {
				s.signals["churn"] = math.Log1p(float64(s.f.commits)) / math.Log1p(float64(maxCommits))
			}
		}
	}
	churn()
	top := strongest(all, func(s *scored) bool { return lang.Parsed(s.f.lang) }, pairScore, 10)
	pairTests(top, files, pairScore, get)
	if w.PairHistory > 0 {
		// A partner's own match to the task: its direct score relative
		// to the best candidate's (as the propagating sources are), or
		// its history signal (past commits like the task changed it),
		// whichever is higher; none when no file matches the task.
		match := func(s *scored) float64 {
			if maxBase <= 0 {
				return 0
			}
			return math.Min(1, math.Max(base(s)/maxBase, s.signals["history"]))
		}
		if err := r.pairTestsByHistory(ctx, top, w.PairHistory, w.PairMatch, pairScore, match, byID, get); err != nil {
			return nil, err
		}
	}
	churn() // for the partners pairTests added
	if declOnly, err = r.declarationOnly(ctx, all, r.ExtraFacts || w.DeclDemotion > 0); err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(all))
	for _, s := range all {
		if leftOut(s.f) {
			continue
		}
		if why := vendored[s.f.id]; why != "" {
			s.reasons = append(s.reasons, "vendored or generated ("+why+"), named by the task")
		}
		out = append(out, Candidate{
			FileID: s.f.id, Path: s.f.path, Language: s.f.lang, Score: score(s),
			Tier: tierOf(s), Reasons: s.reasons, Signals: s.signals, Prose: prose(s), TestFile: testFile(s), DeclFile: declFile(s),
		})
	}
	// Plan files lead whatever their score (seed 001 §5.6: tier 0 before the
	// expansion); every other tier is ordered by the fused score.
	sort.Slice(out, func(i, j int) bool {
		if pi, pj := out[i].Tier == TierPlan, out[j].Tier == TierPlan; pi != pj {
			return pi
		}
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Path < out[j].Path
	})
	recalled, err := r.recall(ctx, q, byID, func(f *rankFile) bool { return !leftOut(f) })
	if err != nil {
		return nil, err
	}
	return unionRecall(out, limit, recalled, func(f *rankFile, rank int) Candidate {
		return Candidate{
			FileID: f.id, Path: f.path, Language: f.lang, Tier: TierSearch,
			Reasons: []string{fmt.Sprintf("full-text recall: BM25 ranks it %d", rank)},
			Signals: map[string]float64{"recall": 1 / float64(rank)},
		}
	}), nil
}

// declarationOnly returns which of the candidates are parsed source files
// (not tests) that only declare types (lang.DeclarationOnly); nothing
// unless read is set.
func (r *Ranker) declarationOnly(ctx context.Context, all map[int64]*scored, read bool) (map[int64]bool, error) {
	if !read {
		return nil, nil
	}
	ids := make([]int64, 0, len(all))
	for id, s := range all {
		if lang.Parsed(s.f.lang) && !isTest(s.f.path) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	kinds, err := r.kb.DeclarationKinds(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	out := make(map[int64]bool, len(kinds))
	for id, k := range kinds {
		if lang.DeclarationOnly(k) {
			out[id] = true
		}
	}
	return out, nil
}

// How Rank sets a file apart from the others (see aside in Rank).
const (
	asideNone = iota
	asideLeftOut
	asideExample
)

// tierOf names why a file is a candidate: the scope tier of seed 001 §5.6.
func tierOf(s *scored) int {
	switch {
	case s.signals["plan"] > 0:
		return TierPlan
	case s.signals["mention"] > 0 || s.signals["symbol"] > 0:
		return TierSeed
	}
	dep, co, id, meta, search := s.signals["dep"], s.signals["cochange"], s.signals["ident"], s.signals["metadata"], s.signals["search"]
	switch {
	case dep > 0 && dep >= co && dep >= search:
		return TierDep
	case co > 0 && co >= search:
		return TierCoChange
	case id > search:
		return TierDep
	case meta > 0 && meta >= search:
		return TierMetadata
	}
	return TierSearch
}

func (r *Ranker) files(ctx context.Context) ([]*rankFile, map[string]*rankFile, error) {
	var files []*rankFile
	byPath := map[string]*rankFile{}
	err := r.kb.FilesWithCommits(ctx, r.repoID, func(row kb.FileCommits) {
		f := &rankFile{id: row.ID, path: row.Path, lang: row.Language, commits: row.Commits}
		files = append(files, f)
		byPath[f.path] = f
	})
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %w", err)
	}
	return files, byPath, nil
}

// matchPath finds the files a mentioned path means: the exact path, else
// files whose path ends with it (a traceback's absolute path ends with the
// repository path; a bare name matches every file of that name).
func matchPath(m string, files []*rankFile, byPath map[string]*rankFile) []*rankFile {
	m = strings.Trim(strings.ReplaceAll(m, `\`, "/"), "/")
	if m == "" {
		return nil
	}
	if f := byPath[m]; f != nil {
		return []*rankFile{f}
	}
	// The longest suffix of m that is a suffix of some paths.
	parts := strings.Split(m, "/")
	for i := range parts {
		suffix := strings.Join(parts[i:], "/")
		var hits []*rankFile
		for _, f := range files {
			if f.path == suffix || strings.HasSuffix(f.path, "/"+suffix) {
				hits = append(hits, f)
			}
		}
		if len(hits) > 0 {
			return hits
		}
	}
	return nil
}

// matchModule finds files a dotted module path names: a.b.c → a/b/c.py,
// a/b/c/__init__.py, a/b/c.go's directory... matched as path suffixes, and
// a.b.c where c is a symbol → a/b.py.
func matchModule(m string, files []*rankFile, byPath map[string]*rankFile) []*rankFile {
	parts := strings.Split(m, ".")
	if len(parts) < 2 {
		return nil
	}
	for n := len(parts); n >= 2; n-- {
		p := strings.Join(parts[:n], "/")
		var hits []*rankFile
		for _, f := range files {
			base := strings.TrimSuffix(f.path, path.Ext(f.path))
			if strings.HasSuffix(base, "/__init__") {
				base = strings.TrimSuffix(base, "/__init__")
			}
			if base == p || strings.HasSuffix(base, "/"+p) {
				hits = append(hits, f)
			}
		}
		if len(hits) > 0 && len(hits) <= 3 {
			return hits
		}
	}
	return nil
}

// symbolSignal scores files that define the symbols the task names: a
// name defined in one file points at it; a name defined in many points
// weakly at each.
func (r *Ranker) symbolSignal(ctx context.Context, names []string, signal, note string, byID map[int64]*rankFile, get func(*rankFile) *scored) error {
	if len(names) == 0 {
		return nil
	}
	definers, err := r.kb.Definers(ctx, r.repoID, names)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	defs := map[string][]int64{}
	for _, d := range definers {
		if l := defs[d.Name]; len(l) == 0 || l[len(l)-1] != d.FileID {
			defs[d.Name] = append(l, d.FileID)
		}
	}
	score := map[int64]float64{}
	reason := map[int64]string{}
	for _, n := range names {
		ids := defs[n]
		if len(ids) == 0 || len(ids) > 20 {
			continue
		}
		for _, id := range ids {
			score[id] += 1 / float64(len(ids))
			if reason[id] == "" {
				reason[id] = "defines " + n
			}
		}
	}
	for id, v := range score {
		if f := byID[id]; f != nil {
			get(f).add(signal, math.Min(1, v), reason[id]+note)
		}
	}
	return nil
}

// searchSignal runs the full-text query: the task's rarest terms, BM25
// with path matches weighing most, then symbol names, then text.
func (r *Ranker) searchSignal(ctx context.Context, q TaskQuery, byID map[int64]*rankFile, get func(*rankFile) *scored) ([]termDF, error) {
	kw := q.Keywords
	if len(kw) == 0 {
		return nil, nil
	}
	// Document frequencies from the vocabulary: keep terms that occur at
	// all, rarest first.
	present, err := r.reads.lookup(ctx, kw)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	if len(present) == 0 {
		return nil, nil
	}
	sort.Slice(present, func(i, j int) bool {
		if present[i].df != present[j].df {
			return present[i].df < present[j].df
		}
		return present[i].term < present[j].term
	})
	if len(present) > r.MaxQueryTerms {
		present = present[:r.MaxQueryTerms]
	}
	words := make([]string, len(present))
	for i, t := range present {
		words[i] = t.term
	}
	hits, err := r.kb.SearchFiles(ctx, words)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	best := 0.0
	for _, h := range hits {
		if h.Score > best {
			best = h.Score
		}
	}
	for _, h := range hits {
		if f := byID[h.FileID]; f != nil && best > 0 {
			get(f).add("search", h.Score/best, "")
		}
	}
	return present, nil
}

// metadataSignal is Scope Tier 4 (seed 001 §5.6): files whose enrichment,
// promoted into file_metadata by 'cra enrich --promote', shares the task's
// rare words (in its module, domain, concepts or purpose), and files of
// the same module or domain as a strong candidate. Without promoted
// enrichment it adds nothing.
func (r *Ranker) metadataSignal(ctx context.Context, keywords []string, nFiles int, srcs map[int64]float64, byID map[int64]*rankFile, get func(*rankFile) *scored) error {
	descs, err := r.kb.FileDescriptions(ctx, r.repoID)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	if len(descs) == 0 {
		return nil
	}
	type meta struct {
		id             int64
		module, domain string
		text           string
	}
	all := make([]meta, len(descs))
	for i, d := range descs {
		m := meta{id: d.FileID, module: strings.ToLower(strings.TrimSpace(d.Module)), domain: strings.ToLower(strings.TrimSpace(d.Domain))}
		m.text = strings.Join([]string{m.module, m.domain, d.Concepts, d.Purpose}, " ")
		all[i] = m
	}
	// The task's words, weighted by rarity in the code as the search
	// weighs them; a word no file holds can still describe one.
	present, err := r.reads.lookup(ctx, keywords)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	df := make(map[string]int, len(present))
	for _, t := range present {
		df[t.term] = t.df
	}
	weight := map[string]float64{}
	total := 0.0
	for _, k := range keywords {
		if _, dup := weight[k]; dup {
			continue
		}
		w := idf(nFiles, df[k])
		weight[k] = w
		total += w
	}
	byModule, byDomain := map[string][]int64{}, map[string][]int64{}
	for _, m := range all {
		if m.module != "" {
			byModule[m.module] = append(byModule[m.module], m.id)
		}
		if m.domain != "" {
			byDomain[m.domain] = append(byDomain[m.domain], m.id)
		}
		if total == 0 {
			continue
		}
		got, seen := 0.0, map[string]bool{}
		terms.Each(m.text, func(t string) {
			if w, ok := weight[t]; ok && !seen[t] {
				seen[t] = true
				got += w
			}
		})
		if f := byID[m.id]; f != nil && got > 0 {
			get(f).add("metadata", math.Min(1, 2*got/total), "its description shares the task's words")
		}
	}
	// Same module or domain as a strong candidate; a domain shared by many
	// files points weakly at each.
	ids := slices.Sorted(maps.Keys(srcs))
	metaOf := make(map[int64]meta, len(all))
	for _, m := range all {
		metaOf[m.id] = m
	}
	share := func(src int64, group []int64, v float64, why string) {
		for _, id := range group {
			if f := byID[id]; f != nil && id != src {
				get(f).add("metadata", v/math.Sqrt(math.Max(1, float64(len(group))/4)), why+byID[src].path)
			}
		}
	}
	for _, s := range ids {
		m, ok := metaOf[s]
		if !ok || byID[s] == nil {
			continue
		}
		if m.module != "" {
			share(s, byModule[m.module], srcs[s], "same module as ")
		}
		if m.domain != "" {
			share(s, byDomain[m.domain], 0.5*srcs[s], "same domain as ")
		}
	}
	return nil
}

// termDF is a query term with its document frequency.
type termDF struct {
	term string
	df   int
}

// minCoChange is the fewest shared commits that make two files co-change
// neighbours.
const minCoChange = 2

// propagate spreads the strongest candidates' scores to files linked to
// them by imports, co-change and shared rare identifiers. srcs maps a
// source file to its score relative to the best candidate.
func (r *Ranker) propagate(ctx context.Context, srcs map[int64]float64, byID map[int64]*rankFile, get func(*rankFile) *scored) error {
	ids := make([]int64, 0, len(srcs))
	for id := range srcs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })

	// Imports, both ways, damped by the source's degree.
	imports, err := r.kb.ImportLinks(ctx, ids)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	links := map[int64][]int64{}
	for _, l := range imports {
		links[l.From] = append(links[l.From], l.To)
	}
	for _, s := range ids {
		n := len(links[s])
		for _, t := range links[s] {
			if f := byID[t]; f != nil && t != s {
				get(f).add("dep", srcs[s]/math.Sqrt(math.Max(1, float64(n)/4)), "linked by imports to "+byID[s].path)
			}
		}
	}

	// Co-change: the share of the source's commits that also touched the
	// file, smoothed so one shared commit of a new file means little, and
	// from minCoChange shared commits on (seed 001 §5.6: "above a minimum
	// count"): one commit together is as often a sweeping change.
	co, err := r.kb.CoChangeLinks(ctx, ids, minCoChange)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	for _, l := range co {
		src, f := byID[l.From], byID[l.To]
		if src == nil || f == nil {
			continue
		}
		share := float64(l.Count) / float64(src.commits+2)
		get(f).add("cochange", srcs[l.From]*math.Min(1, share), fmt.Sprintf("changed with %s in %d commits", src.path, l.Count))
	}
	return r.identSignal(ctx, srcs, ids, byID, get)
}

// maxIdentDefs is how many files may define a name for it to link files:
// names defined everywhere (String, get, __init__) link nothing. It is the
// bound the index keeps the graph for (kb reads the kept graph only for
// it, and falls back to a slow query for any other).
const maxIdentDefs = index.IdentMaxDefs

// identSignal links sources to files through rare identifiers: the files
// defining names a source uses, and the files using names a source
// defines (the identifier graph of Aider's repo map, one hop from the
// task's strongest files).
func (r *Ranker) identSignal(ctx context.Context, srcs map[int64]float64, ids []int64, byID map[int64]*rankFile, get func(*rankFile) *scored) error {
	// Files defining names the sources use, and files using names the
	// sources define, counting names defined in at most maxIdentDefs files.
	definers, users, err := r.kb.RareNameLinks(ctx, ids, maxIdentDefs)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	addIdent(definers, srcs, byID, get, "defines names used by ")
	addIdent(users, srcs, byID, get, "uses names defined in ")
	return nil
}

func addIdent(links []kb.FileLink, srcs map[int64]float64, byID map[int64]*rankFile, get func(*rankFile) *scored, why string) {
	for _, l := range links {
		src, f := byID[l.From], byID[l.To]
		if src == nil || f == nil {
			continue
		}
		// Three shared rare names are as good as it gets.
		get(f).add("ident", srcs[l.From]*math.Min(1, float64(l.Count)/3), why+src.path)
	}
}

// nameSignal scores files whose name is a word of the task: "chore(mode):"
// or "the pager" point at mode.go and pager.py, and a dotted name points
// at the file named after it ("res.send()" → test/res.send.js,
// "fix(express.json):" → test/express.json.js). A name shared by many
// files (index, utils, __init__) points weakly at each.
func nameSignal(q TaskQuery, files []*rankFile, get func(*rankFile) *scored) {
	words := map[string]bool{}
	for _, k := range q.Keywords {
		words[singular(k)] = true
	}
	for _, m := range slices.Concat(q.Modules, q.Areas) {
		if strings.Contains(m, ".") {
			words[joinedStem(m)] = true
		}
	}
	if len(words) == 0 {
		return
	}
	byStem := map[string][]*rankFile{}
	for _, f := range files {
		base := path.Base(f.path)
		first, whole := testStem(base), fileStem(base)
		if first == "" {
			continue
		}
		// The whole stem as one term: "form_mapping" → formmapping, "L031" → l031.
		key := joinedStem(first)
		byStem[key] = append(byStem[key], f)
		if whole != first {
			byStem[joinedStem(whole)] = append(byStem[joinedStem(whole)], f)
		}
	}
	for key, fs := range byStem {
		if !words[key] || len(fs) > 8 {
			continue
		}
		for _, f := range fs {
			get(f).add("name", 1/math.Sqrt(float64(len(fs))), "its name is a word of the task")
		}
	}
}

// joinedStem is a file stem or dotted name as one term, lower case and
// singular: "form_mapping" → formmapping, "res.clearCookie" → resclearcookie.
func joinedStem(s string) string {
	return singular(strings.ToLower(stemJoiner.Replace(s)))
}

// areaSignal scores files whose path holds a word of the task's commit
// scope: "feat(form):" points at binding/form_mapping.go, "fix(recover):"
// at recovery.go, "fix(binding):" weakly at every file under binding/.
func areaSignal(q TaskQuery, files []*rankFile, get func(*rankFile) *scored) {
	for _, a := range q.Areas {
		// "http-client" and "form_mapping" name a directory or file whole.
		a = singular(stemJoiner.Replace(a))
		var hits []*rankFile
		for _, f := range files {
			dir, base := path.Split(f.path)
			parts := strings.Split(strings.ToLower(dir+fileStem(base)), "/")
			var words []string
			for _, p := range parts {
				words = append(words, stemJoiner.Replace(p))
				words = append(words, strings.FieldsFunc(p, func(r rune) bool { return r == '_' || r == '-' || r == '.' })...)
			}
			if slices.ContainsFunc(words, func(w string) bool { w = singular(w); return w != "" && (w == a || sameWord(w, a)) }) {
				hits = append(hits, f)
			}
		}
		for _, f := range hits {
			get(f).add("area", 1/math.Sqrt(float64(len(hits))), "its path is in the task's scope ("+a+")")
		}
	}
}

// stemJoiner joins a file stem's words into one term.
var stemJoiner = strings.NewReplacer("_", "", "-", "", ".", "")

// singular folds an English plural to its singular, roughly: file names
// are often plural (types.py, test_options.py) where a task is not.
func singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

// testStem is a file's base name up to its first dot, without test
// markers: test_types.py, types_test.go, types.test.ts and types.spec.js
// all give "types", and so does types.d.ts. It pairs a source with its
// tests.
func testStem(base string) string {
	stem, _, _ := strings.Cut(fileStem(base), ".")
	return stem
}

// fileStem is a file's base name without its extension and test markers,
// keeping inner dots: res.send.js gives "res.send", express.json.test.ts
// "express.json", test_types.py "types".
func fileStem(base string) string {
	stem := base
	if i := strings.LastIndexByte(stem, '.'); i > 0 {
		stem = stem[:i]
	}
	for _, marker := range []string{".test", ".spec", ".d"} {
		stem = strings.TrimSuffix(stem, marker)
	}
	stem = strings.TrimPrefix(stem, "test_")
	stem = strings.TrimSuffix(stem, "_test")
	stem = strings.TrimSuffix(stem, "_tests")
	return stem
}

// IsTestPath reports whether a path is a test by the common conventions,
// as Rank judges it (Candidate.TestFile).
func IsTestPath(p string) bool { return isTest(p) }

// isTest reports whether a path is a test by the common conventions.
func isTest(p string) bool {
	base := path.Base(p)
	if strings.HasPrefix(base, "test_") || strings.Contains(base, "_test.") || strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") {
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "tests" || dir == "test" || dir == "__tests__" || dir == "spec" {
			return true
		}
	}
	return false
}

// pairTests links sources and their tests by naming convention — Go's
// x.go and x_test.go side by side, Python's x.py and test_x.py anywhere,
// JS/TS's x.ts and x.test.ts or x.spec.ts: a change to one usually
// changes the other, and an agent needs both. The strongest candidates
// (top, best first) lend their score to their partners.
func pairTests(top []*scored, files []*rankFile, score func(*scored) float64, get func(*rankFile) *scored) {
	if len(top) == 0 || score(top[0]) <= 0 {
		return
	}
	best := score(top[0])
	byStem := map[string][]*rankFile{}
	for _, f := range files {
		if lang.Parsed(f.lang) {
			byStem[testStem(path.Base(f.path))] = append(byStem[testStem(path.Base(f.path))], f)
		}
	}
	for _, s := range top {
		srcTest := isTest(s.f.path)
		stem := testStem(path.Base(s.f.path))
		partners := byStem[stem]
		if len(partners) > 6 {
			// index.ts and index.test.ts in every directory: only the one
			// beside it (or in its __tests__) is evidence; __init__ and
			// utils across a tree are none.
			partners = slices.DeleteFunc(slices.Clone(partners), func(p *rankFile) bool { return !besides(p.path, s.f.path) })
			if len(partners) > 2 {
				continue
			}
		}
		for _, p := range partners {
			if p.id == s.f.id || isTest(p.path) == srcTest || p.lang != s.f.lang && !(isJS(p.lang) && isJS(s.f.lang)) {
				continue
			}
			// Go pairs live in one directory; elsewhere the closest wins.
			if p.lang == "go" && path.Dir(p.path) != path.Dir(s.f.path) {
				continue
			}
			why := "test of " + s.f.path
			if srcTest {
				why = "tested by " + s.f.path
			}
			get(p).add("test", math.Min(1, score(s)/best), why)
		}
	}
}

// pairTestsByHistory pairs the strongest source files (top, best first)
// with the tests the repository's own history changed together with them,
// which no naming convention finds: click's core.py with
// tests/test_options.py and test_commands.py, express's lib/response.js
// with test/res.json.js, gin's gin.go with context_test.go, hono's
// src/hono-base.ts with src/hono.test.ts. On 280 commits of seven
// repositories' older history (bench/retrieval/mkset -skip 100), 87 of
// the 194 tests changed with a source file had no partner by name, and 73
// of them had changed with it in two earlier commits or more. A test
// scores by the share of the source's commits that changed it, doubled
// (a test changed in half of them is a partner as sure as one by name),
// scaled by share and by the source's score relative to the best
// candidate, into the test signal (kept at its highest). The co-changes
// are those mined up to the indexed HEAD, never later.
//
// A big module has several partner tests, each changed in a small share
// of its many commits (astroid's node_classes.py with test_inference.py,
// test_nodes.py, ...), and the task is about one of them. With byMatch
// above 0 (Weights.PairMatch) a test's value is its commits with the
// source relative to those of the source's closest partner test, scaled
// by 1 − byMatch + byMatch × match(test), its own match to the task in
// [0, 1]: the partners holding the task's words take the share.
func (r *Ranker) pairTestsByHistory(ctx context.Context, top []*scored, share, byMatch float64, score, match func(*scored) float64, byID map[int64]*rankFile, get func(*rankFile) *scored) error {
	if len(top) == 0 || score(top[0]) <= 0 {
		return nil
	}
	best := score(top[0])
	var ids []int64
	rel := map[int64]float64{}
	for _, s := range top {
		if !isTest(s.f.path) && score(s) > 0 {
			ids = append(ids, s.f.id)
			rel[s.f.id] = math.Min(1, score(s)/best)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	links, err := r.kb.CoChangeLinks(ctx, ids, minCoChange)
	if err != nil {
		return fmt.Errorf("rank: %w", err)
	}
	// The signal keeps each file's highest value and the first reason of
	// equal ones: walk the links in one order.
	slices.SortFunc(links, func(a, b kb.FileLink) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	partner := func(l kb.FileLink) bool {
		src, f := byID[l.From], byID[l.To]
		return src != nil && f != nil && lang.Parsed(f.lang) && isTest(f.path) && (f.lang == src.lang || isJS(f.lang) && isJS(src.lang))
	}
	// The most commits a source shares with one of its partner tests.
	most := map[int64]int{}
	for _, l := range links {
		if partner(l) {
			most[l.From] = max(most[l.From], l.Count)
		}
	}
	for _, l := range links {
		if !partner(l) {
			continue
		}
		src, f := byID[l.From], byID[l.To]
		// As the co-change signal smooths it: one shared commit of a
		// new file means little.
		v := share * rel[l.From] * math.Min(1, 2*float64(l.Count)/float64(src.commits+2))
		if byMatch > 0 {
			// Relative to the source's closest partner, and by the
			// test's own match to the task.
			v = share * rel[l.From] * float64(l.Count) / float64(most[l.From])
			v *= 1 - byMatch + byMatch*match(get(f))
		}
		get(f).add("test", v, fmt.Sprintf("its test by history: changed with %s in %d commits", src.path, l.Count))
	}
	return nil
}

// besides reports whether two files sit in one directory, or one in the
// other's __tests__ directory.
func besides(a, b string) bool {
	da, db := path.Dir(a), path.Dir(b)
	return da == db || da == path.Join(db, "__tests__") || db == path.Join(da, "__tests__")
}

// strongest returns the n best candidates by score among those keep
// accepts (all when keep is nil), best first, ties by path.
func strongest(all map[int64]*scored, keep func(*scored) bool, score func(*scored) float64, n int) []*scored {
	out := make([]*scored, 0, len(all))
	for _, s := range all {
		if keep == nil || keep(s) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		si, sj := score(out[i]), score(out[j])
		if si != sj {
			return si > sj
		}
		return out[i].f.path < out[j].f.path
	})
	return out[:min(len(out), n)]
}

func isJS(l string) bool { return l == "javascript" || l == "typescript" || l == "tsx" }
