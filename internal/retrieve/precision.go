package retrieve

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/kb"
)

// SymbolCandidate is a definition the precision stage weighs (seed 001
// §5.7), with why it is one.
type SymbolCandidate struct {
	Path      string   `json:"path"`
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Signature string   `json:"signature,omitempty"`
	Line      int      `json:"line"`
	Score     float64  `json:"score"`
	Reasons   []string `json:"reasons,omitempty"`
	// Rationale is a comment in or above the definition that says why the
	// code is as it is ("# must stay sorted: …").
	Rationale string `json:"rationale,omitempty"`
	// Linked: found through a reference to a symbol the task points at, not
	// by the task's words (a caller, a callee, a test that exercises it).
	Linked bool  `json:"linked,omitempty"`
	id     int64 // symbols.id
}

// Bounds of the deterministic precision step.
const (
	precisionFiles = 8    // the scoped files whose definitions are weighed, by default
	precisionSeeds = 6    // the definitions links are followed from
	linksPerSeed   = 8    // linked definitions kept per seed
	maxNameUses    = 30   // a name used by more definitions locates nothing
	maxLinkRows    = 2000 // symbol_references rows read for the seeds
)

// symbolCandidates is the precision stage's deterministic step (seed 001
// §5.7): the definitions of the best scoped files, scored for the task as
// the assembler scores them; from the best of them, the definitions linked
// by references — Python's resolved symbol_references both ways, and for
// every language the names a definition uses (name signals) — including
// the tests that exercise them; and the rationale comments of all. Best
// first.
func symbolCandidates(ctx context.Context, r *Ranker, q TaskQuery, cands []Candidate, nFiles int) ([]SymbolCandidate, error) {
	top := cands[:min(nFiles, len(cands))]
	if len(top) == 0 {
		return nil, nil
	}
	a := NewAssemblerFor(r, r.Root)
	tt, err := r.reads.taskTerms(ctx, q.Keywords)
	if err != nil {
		return nil, fmt.Errorf("precision: %w", err)
	}
	wanted := map[string]bool{}
	for _, s := range q.Symbols {
		wanted[s] = true
	}
	symsOf, err := a.symbols(ctx, top)
	if err != nil {
		return nil, err
	}
	var out []*SymbolCandidate
	byID := map[int64]*SymbolCandidate{}
	for _, c := range top {
		var lines []string
		if r.Root != "" {
			lines, _ = r.reads.file(a.abs(c.Path)) // unreadable: scored by name only
		}
		ft := r.reads.scan(a.abs(c.Path), lines, tt)
		refLines := refLinesOf(q.FileLines, c.Path)
		for _, s := range symsOf[c.FileID] {
			decl := s.start
			if lines != nil {
				s.start = leadingComments(lines, s.start)
			}
			sc := &SymbolCandidate{Path: c.Path, Name: s.name, Kind: s.kind, Signature: s.signature, Line: decl, id: s.id,
				Score: symbolRelevance(s, ft, wanted, tt, refLines)}
			switch {
			case wanted[s.name]:
				sc.Reasons = append(sc.Reasons, "named in the task")
			case sc.Score >= 2:
				sc.Reasons = append(sc.Reasons, "holds a line the task points at")
			case sc.Score > 0:
				sc.Reasons = append(sc.Reasons, "holds the task's words")
			}
			out = append(out, sc)
			byID[s.id] = sc
		}
	}
	byScore := func(x, y *SymbolCandidate) int {
		return cmp.Or(cmp.Compare(y.Score, x.Score), strings.Compare(x.Path, y.Path), cmp.Compare(x.Line, y.Line))
	}
	slices.SortStableFunc(out, byScore)
	var seeds []*SymbolCandidate
	for _, sc := range out {
		if sc.Score <= 0 || len(seeds) == precisionSeeds {
			break
		}
		seeds = append(seeds, sc)
	}
	scoped := make(map[int64]bool, len(cands))
	for _, c := range cands {
		scoped[c.FileID] = true
	}
	linked, err := linkedSymbols(ctx, r, seeds, byID, scoped)
	if err != nil {
		return nil, err
	}
	out = append(out, linked...)
	slices.SortStableFunc(out, byScore)
	if err := rationales(ctx, r, out); err != nil {
		return nil, err
	}
	res := make([]SymbolCandidate, len(out))
	for i, sc := range out {
		res[i] = *sc
	}
	return res, nil
}

// linkedSymbols follows references from the seeds: the definitions that
// call them or that they call (symbol_references, Python), and those
// whose body uses a seed's name (name_refs, every language). A link is
// worth half its seed. Definitions already weighed get the reason, and
// the link's worth when it is more.
func linkedSymbols(ctx context.Context, r *Ranker, seeds []*SymbolCandidate, byID map[int64]*SymbolCandidate, scoped map[int64]bool) ([]*SymbolCandidate, error) {
	if len(seeds) == 0 {
		return nil, nil
	}
	type link struct {
		from *SymbolCandidate
		to   int64
		why  string
	}
	var links []link
	ids := make([]int64, len(seeds))
	bySeed := map[int64]*SymbolCandidate{}
	for i, s := range seeds {
		ids[i], bySeed[s.id] = s.id, s
	}
	// Bounded: a function with thousands of callers keeps a few per seed
	// in the end anyway.
	refs, err := r.kb.ReferencesOf(ctx, ids, maxLinkRows)
	if err != nil {
		return nil, fmt.Errorf("precision: %w", err)
	}
	for _, ref := range refs {
		caller, callee := ref.CallerID, ref.CalleeID
		if s := bySeed[callee]; s != nil && caller != callee {
			links = append(links, link{s, caller, "calls " + s.Name})
		}
		if s := bySeed[caller]; s != nil && caller != callee {
			links = append(links, link{s, callee, "called by " + s.Name})
		}
	}
	// Name signals: definitions whose body uses a seed's name, unless the
	// name is used everywhere or a reference links them already.
	referenced := map[[2]int64]bool{}
	for _, l := range links {
		referenced[[2]int64{l.from.id, l.to}] = true
	}
	names := map[string][]*SymbolCandidate{}
	for _, s := range seeds {
		names[s.Name] = append(names[s.Name], s)
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		// One bounded query per name: a name used by more definitions than
		// maxNameUses is common and links nothing.
		users, err := r.kb.NameUsers(ctx, r.repoID, name, maxNameUses+1)
		if err != nil {
			return nil, fmt.Errorf("precision: %w", err)
		}
		if len(users) > maxNameUses {
			continue
		}
		slices.Sort(users)
		for _, id := range users {
			for _, s := range names[name] {
				if s.id != id && !referenced[[2]int64{s.id, id}] {
					links = append(links, link{s, id, "uses " + s.Name})
				}
			}
		}
	}
	// The linked definitions not weighed yet, with their files; only those
	// in the scoped files count (precision works on the scope's files).
	var missing []int64
	asked := map[int64]bool{}
	for _, l := range links {
		if byID[l.to] == nil && !asked[l.to] {
			asked[l.to] = true
			missing = append(missing, l.to)
		}
	}
	var added []*SymbolCandidate
	err = r.kb.SymbolsByID(ctx, missing, func(s kb.SymbolLocation) {
		if scoped[s.FileID] {
			sc := &SymbolCandidate{Linked: true, id: s.ID, Name: s.Name, Kind: s.Kind, Signature: s.Signature, Line: s.StartLine, Path: s.Path}
			byID[sc.id] = sc
			added = append(added, sc)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("precision: linked symbols: %w", err)
	}
	// Each seed keeps its best links: tests first (they pin the behaviour
	// the task changes), then by path and line.
	links = slices.DeleteFunc(links, func(l link) bool { return byID[l.to] == nil || byID[l.to] == l.from })
	slices.SortStableFunc(links, func(x, y link) int {
		a, b := byID[x.to], byID[y.to]
		ta, tb := isTest(a.Path), isTest(b.Path)
		if ta != tb {
			if ta {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line))
	})
	perSeed := map[*SymbolCandidate]int{}
	for _, l := range links {
		to := byID[l.to]
		if perSeed[l.from] >= linksPerSeed {
			continue
		}
		perSeed[l.from]++
		why := l.why
		if isTest(to.Path) {
			why = "exercises " + l.from.Name
		}
		if !slices.Contains(to.Reasons, why) {
			to.Reasons = append(to.Reasons, why)
		}
		if v := l.from.Score / 2; v > to.Score {
			to.Score, to.Linked = v, true
		}
	}
	var kept []*SymbolCandidate
	for _, sc := range added {
		if len(sc.Reasons) > 0 {
			kept = append(kept, sc)
		}
	}
	return kept, nil
}

// rationales attaches to each candidate its first rationale comment.
func rationales(ctx context.Context, r *Ranker, cs []*SymbolCandidate) error {
	if len(cs) == 0 {
		return nil
	}
	byID := make(map[int64]*SymbolCandidate, len(cs))
	ids := make([]int64, len(cs))
	for i, c := range cs {
		byID[c.id], ids[i] = c, c.id
	}
	comments, err := r.kb.RationalesOf(ctx, ids)
	if err != nil {
		return fmt.Errorf("precision: %w", err)
	}
	for _, c := range comments {
		if sc := byID[c.SymbolID]; sc != nil && sc.Rationale == "" {
			sc.Rationale = clip(strings.TrimSpace(c.Content), 160)
		}
	}
	return nil
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
