package retrieve

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/terms"
	"github.com/cra-dev/cra/internal/tokens"
)

// Assembler builds context packages from ranked candidates (seed 001 §7):
// the symbols that matter in full, the rest of a file as signatures, file
// headers for orientation, filled by priority until the budget is spent.
type Assembler struct {
	kb     *kb.KnowledgeBase
	repoID int64
	root   string
	// MaxFiles bounds how many candidates are considered.
	MaxFiles int
	// WholeFileTokens: a top file this small goes in whole.
	WholeFileTokens int
	// WholeShare: one of the first wholeRanks files that fits in
	// 1/WholeShare of the budget (a fourth by default) is offered whole
	// as well as by its pieces; 0 offers none.
	WholeShare int
	// Details, when set, fixes the detail tier of symbols by file path and
	// symbol name (the precision stage's LLM judgment); unset symbols keep
	// the deterministic choice.
	Details map[string]map[string]string
	// Linked, when set, names definitions the precision stage reached
	// through a reference: they weigh at least as supporting ones do.
	Linked map[string]map[string]bool
	reads  *reads
}

// NewAssembler returns an assembler reading the knowledge base k and the
// files of the checkout at root.
func NewAssembler(k *kb.KnowledgeBase, repoID int64, root string) *Assembler {
	return &Assembler{kb: k, repoID: repoID, root: root, MaxFiles: 40, WholeFileTokens: 600, WholeShare: 4, reads: newReads(k, repoID)}
}

// NewAssemblerFor returns an assembler for the repository r ranks, reading
// the checkout at root, that shares what r has read: the vocabulary, the
// files and their scans for the task's terms.
func NewAssemblerFor(r *Ranker, root string) *Assembler {
	a := NewAssembler(r.kb, r.repoID, root)
	a.reads = r.reads
	return a
}

// densityUnit is the piece size, in tokens, below which size does not
// lower a piece's priority.
const densityUnit = 150

// symbolRow is a definition as the assembler sees it.
type symbolRow struct {
	name, kind, signature string
	start, end            int
	parent                int64
	id                    int64
}

// piece is an item waiting for budget.
type piece struct {
	file     int // index into the package's files
	item     Item
	priority float64
	cost     int // tokens, overhead included
}

// Assemble builds the package for q from cands within budget b. Pieces are
// taken by priority — a file's most relevant symbols first, then headers,
// then supporting signatures — and a piece that does not fit is skipped in
// favour of smaller ones: the lowest priority is what gets trimmed.
func (a *Assembler) Assemble(ctx context.Context, q TaskQuery, cands []Candidate, b Budget) (*Package, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	avail := b.Available()
	pkg := &Package{Task: q, Budget: avail}
	if len(cands) > a.MaxFiles {
		cands = cands[:a.MaxFiles]
	}
	wanted := map[string]bool{}
	for _, s := range q.Symbols {
		wanted[s] = true
	}
	tt, err := a.reads.taskTerms(ctx, q.Keywords)
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	topScore := 0.0
	if len(cands) > 0 {
		topScore = cands[0].Score
	}
	symsOf, err := a.symbols(ctx, cands)
	if err != nil {
		return nil, err
	}
	for _, c := range cands {
		pkg.Files = append(pkg.Files, PackageFile{Path: c.Path, Tier: c.Tier, Score: c.Score, Reasons: c.Reasons})
	}
	// Sources first, so that tests know which of their cases exercise the
	// definitions the package holds as primary; pieces stay in rank order.
	perFile := make([][]piece, len(cands))
	loc := &pointers{refs: q.FileLines, frags: fragments(q), gaps: gapsFor(avail)}
	if a.WholeShare > 0 {
		loc.whole = avail / a.WholeShare
	}
	for _, pass := range []bool{false, true} {
		for fi, c := range cands {
			if isTest(c.Path) != pass {
				continue
			}
			lines, err := a.reads.file(a.abs(c.Path))
			if err != nil {
				pkg.Trimmed = append(pkg.Trimmed, c.Path+" (unreadable: "+err.Error()+")")
				pkg.Stale++
				continue
			}
			syms := symsOf[c.FileID]
			if slices.ContainsFunc(syms, func(s symbolRow) bool { return s.end > len(lines) }) {
				// Shortened since it was indexed: its definitions past
				// the end are no more, and the rest may have moved.
				syms = slices.DeleteFunc(slices.Clone(syms), func(s symbolRow) bool { return s.start > len(lines) })
				pkg.Trimmed = append(pkg.Trimmed, c.Path+" (changed since it was indexed: run 'cra index')")
				pkg.Stale++
			}
			rel := 1.0
			if topScore > 0 {
				rel = c.Score / topScore
			}
			// Rank decays: the tenth file matters less than the first even at
			// equal score, since the model reads the package in order.
			fileWeight := rel / (1 + 0.15*float64(fi))
			perFile[fi] = a.filePieces(fi, c, lines, syms, wanted, tt, loc, fileWeight)
			if !pass && fi < exercisingFiles {
				loc.exercised = appendPrimaries(loc.exercised, perFile[fi])
			}
		}
	}
	var pieces []piece
	for _, ps := range perFile {
		pieces = append(pieces, ps...)
	}
	// Value per token: a budget buys several relevant medium definitions
	// rather than one huge one (sizes under densityUnit tokens count alike).
	density := func(p piece) float64 {
		return p.priority / math.Sqrt(math.Max(float64(p.cost), densityUnit)/densityUnit)
	}
	sort.SliceStable(pieces, func(i, j int) bool { return density(pieces[i]) > density(pieces[j]) })

	// Costs are the estimates of exactly what Render writes, piece by
	// piece; a sum of rounded-up estimates bounds the estimate of the whole,
	// so the rendered package never exceeds the budget.
	used := 0
	fileCharged := make([]bool, len(pkg.Files))
	covered := make([][]Item, len(pkg.Files))
	costs := make([][]int, len(pkg.Files))
	for _, p := range pieces {
		if p.item.Kind == "snippet" {
			// A snippet touching an included body shows the lines it does
			// not: the place after a test shown in full.
			it, clipped := unshown(covered[p.file], p.item)
			if clipped {
				if strings.TrimSpace(it.Text) == "" {
					continue
				}
				p.item, p.cost = it, tokens.Estimate(renderItem(it, fenceLang(pkg.Files[p.file].Path)))
			}
		}
		cost := p.cost
		if !fileCharged[p.file] {
			cost += tokens.Estimate(renderFileHeader(pkg.Files[p.file]))
		}
		if overlaps(covered[p.file], p.item) {
			continue // a symbol inside an included whole file or class
		}
		// A body replaces the signatures and snippets it contains, a
		// snippet the signatures: their budget is refunded.
		// A body also cuts a snippet it partly shows to the lines it does
		// not (the place after a test, included before the test's body).
		refund := 0
		var cut map[int]Item
		for i, h := range covered[p.file] {
			switch {
			case replaces(p.item, h):
				refund += costs[p.file][i]
			case h.Kind == "snippet" && (p.item.Kind == "symbol" || p.item.Kind == "file"):
				c, clipped := unshown([]Item{p.item}, h)
				if !clipped {
					continue
				}
				if cut == nil {
					cut = map[int]Item{}
				}
				cut[i] = c
				refund += costs[p.file][i]
				if strings.TrimSpace(c.Text) != "" {
					refund -= tokens.Estimate(renderItem(c, fenceLang(pkg.Files[p.file].Path)))
				}
			}
		}
		if used+cost-refund > avail {
			pkg.Trimmed = append(pkg.Trimmed, fmt.Sprintf("%s:%d-%d %s %s", pkg.Files[p.file].Path, p.item.StartLine, p.item.EndLine, p.item.Kind, p.item.Name))
			continue
		}
		if refund != 0 || cut != nil {
			keptItems, keptCosts := covered[p.file][:0], costs[p.file][:0]
			for i, h := range covered[p.file] {
				hc := costs[p.file][i]
				if c, ok := cut[i]; ok {
					if strings.TrimSpace(c.Text) == "" {
						continue
					}
					h, hc = c, tokens.Estimate(renderItem(c, fenceLang(pkg.Files[p.file].Path)))
				} else if replaces(p.item, h) {
					continue
				}
				keptItems, keptCosts = append(keptItems, h), append(keptCosts, hc)
			}
			covered[p.file], costs[p.file] = keptItems, keptCosts
		}
		used += cost - refund
		fileCharged[p.file] = true
		covered[p.file] = append(covered[p.file], p.item)
		costs[p.file] = append(costs[p.file], p.cost)
	}
	// Files in rank order, items in line order; files with nothing drop out.
	var files []PackageFile
	for i, f := range pkg.Files {
		items := covered[i]
		if len(items) == 0 {
			continue
		}
		sort.Slice(items, func(x, y int) bool { return items[x].StartLine < items[y].StartLine })
		f.Items = items
		for _, it := range items {
			f.Tokens += it.Tokens
		}
		files = append(files, f)
	}
	pkg.Files = files
	pkg.Tokens = used
	return pkg, nil
}

// pointers are what a task points at in files besides its words.
type pointers struct {
	refs  []FileLine // file:line references and traceback frames
	frags []fragment // texts to find verbatim: error messages, quoted source lines
	// exercised names the primary definitions of the package's top
	// sources, for their tests.
	exercised []string
	gaps      int // insertion-point snippets a test file may offer (gapsFor)
	whole     int // the largest top file, in tokens, offered whole (Assembler.WholeShare)
}

// wholeRanks is how many top files may be offered whole (see
// Assembler.WholeShare): the edit a task needs is often in lines no
// piece's words point at, and a whole file shows all of them. Offered,
// not forced: the file competes by value per token, and when it wins it
// replaces the pieces it holds.
const wholeRanks = 3

// exercisingFiles is how many top files lend their primary definitions'
// names to the tests that exercise them; maxExercised bounds the names.
const (
	exercisingFiles = 5
	maxExercised    = 12
)

// appendPrimaries adds the names of the primary definitions among ps.
// Names too short to tell a use from a word are left out.
func appendPrimaries(names []string, ps []piece) []string {
	for _, p := range ps {
		if len(names) >= maxExercised {
			break
		}
		it := p.item
		if it.Kind == "symbol" && it.Detail == DetailPrimary && len(it.Name) >= 4 && !slices.Contains(names, it.Name) {
			names = append(names, it.Name)
		}
	}
	return names
}

// overlaps reports whether it adds nothing to the items a file already
// has: it lies in an included body, or it is a signature or snippet
// touching lines already shown. A body is never redundant next to the
// signatures and snippets inside it: it replaces them.
func overlaps(have []Item, it Item) bool {
	for _, h := range have {
		if it.StartLine <= h.EndLine && h.StartLine <= it.EndLine {
			switch {
			case h.Kind == "file":
				return true
			case it.Kind == "file":
			case h.Kind == "symbol":
				return true
			case it.Kind == "symbol":
			case it.Kind == "snippet" && h.Kind == "signature":
			default:
				return true
			}
		}
	}
	return false
}

// unshown trims a snippet to the lines no included body or whole file
// shows, when one covers its first or its last lines (a gap between two
// tests starts on the last line of the test before it). clipped is false
// when nothing was cut; a snippet inside a body is left to overlaps.
func unshown(have []Item, it Item) (out Item, clipped bool) {
	lo, hi := it.StartLine, it.EndLine
	for _, h := range have {
		if h.Kind != "symbol" && h.Kind != "file" || h.EndLine < lo || h.StartLine > hi {
			continue
		}
		switch {
		case h.StartLine <= lo && h.EndLine < hi:
			lo = h.EndLine + 1
		case h.StartLine > lo && h.EndLine >= hi:
			hi = h.StartLine - 1
		}
	}
	if lo == it.StartLine && hi == it.EndLine {
		return it, false
	}
	if lines := strings.SplitAfter(it.Text, "\n"); lo <= hi && hi-it.StartLine < len(lines) {
		it.Text = strings.Join(lines[lo-it.StartLine:hi-it.StartLine+1], "")
	} else {
		it.Text = ""
	}
	it.StartLine, it.EndLine = lo, hi
	it.Tokens = tokens.Estimate(it.Text)
	return it, true
}

// replaces reports whether the new item it makes the included item h
// redundant: a body holding a signature or snippet, a snippet holding a
// signature.
func replaces(it, h Item) bool {
	inside := h.StartLine >= it.StartLine && h.EndLine <= it.EndLine
	switch it.Kind {
	case "file":
		return inside
	case "symbol":
		return inside && (h.Kind == "signature" || h.Kind == "snippet")
	case "snippet":
		return inside && h.Kind == "signature"
	}
	return false
}

// symbols returns the definitions of the candidates' files, by file ID,
// in line order: one query for the package.
func (a *Assembler) symbols(ctx context.Context, cands []Candidate) (map[int64][]symbolRow, error) {
	out := map[int64][]symbolRow{}
	if len(cands) == 0 {
		return out, nil
	}
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.FileID
	}
	err := a.kb.DefinitionsOfFiles(ctx, ids, func(d kb.Definition) {
		out[d.FileID] = append(out[d.FileID], symbolRow{name: d.Name, kind: d.Kind, signature: d.Signature,
			start: d.StartLine, end: d.EndLine, parent: d.ParentID, id: d.ID})
	})
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	return out, nil
}

// filePieces proposes the items of one file with their priorities.
func (a *Assembler) filePieces(fi int, c Candidate, lines []string, syms []symbolRow, wanted map[string]bool, tt *taskTerms,
	loc *pointers, weight float64) []piece {
	text := func(start, end int) string {
		start, end = max(start, 1), min(end, len(lines))
		if start > end {
			return ""
		}
		return strings.Join(lines[start-1:end], "")
	}
	fence := fenceLang(c.Path)
	mk := func(kind, name, detail string, start, end int, body string, prio float64) piece {
		it := Item{Kind: kind, Name: name, Detail: detail, StartLine: start, EndLine: end, Text: body, Tokens: tokens.Estimate(body)}
		return piece{file: fi, item: it, priority: prio, cost: tokens.Estimate(renderItem(it, fence))}
	}
	var out []piece
	whole := strings.Join(lines, "")
	// Small files, and files with no symbols (docs, configs, changelogs),
	// go in whole or by their head; a small file with a definition the
	// precision stage excluded goes by its definitions, without it.
	excludes := false
	for _, d := range a.Details[c.Path] {
		excludes = excludes || d == DetailExcluded
	}
	small := tokens.Estimate(whole) <= a.WholeFileTokens && !excludes
	// Leading imports the index defines (JS's `var x = require('x')`)
	// are the file's header, not an item each.
	syms = afterImports(lines, syms)
	if _, ok := lang.Detect(c.Path); ok && !small {
		// What no definition covers, by its top-level statements.
		from := headerLines + 1
		if len(syms) > 0 {
			from = min(from, syms[0].start)
		}
		if extra := layoutBlocks(lines, syms, from); len(extra) > 0 {
			syms = slices.SortedStableFunc(slices.Values(append(slices.Clip(syms), extra...)), func(x, y symbolRow) int { return x.start - y.start })
		}
	}
	if !small && !excludes && fi < wholeRanks && tokens.Estimate(whole) <= loc.whole {
		out = append(out, mk("file", "", DetailPrimary, 1, len(lines), whole, weight*1.5))
	}
	var blocks []testBlock
	defined := false
	if isTest(c.Path) && !small {
		blocks, defined = testBlocks(c.Path, lines, syms)
	}
	if small || len(syms) == 0 && len(blocks) == 0 {
		end := len(lines)
		body := whole
		if len(syms) == 0 && tokens.Estimate(whole) > a.WholeFileTokens {
			end = min(len(lines), 60)
			body = text(1, end)
		}
		kind := "file"
		if end < len(lines) {
			kind = "header"
		}
		out = append(out, mk(kind, "", DetailPrimary, 1, end, body, weight*1.5))
		return out
	}
	// Header: everything before the first symbol or test (imports, module
	// doc), capped, and short of the first symbol's leading comments, which
	// come with its body.
	firstLine := len(lines) + 1
	if len(syms) > 0 {
		firstLine = syms[0].start
	}
	if len(blocks) > 0 {
		firstLine = min(firstLine, blocks[0].start)
	}
	if first := leadingComments(lines, firstLine); first > 1 {
		end := min(first-1, headerLines)
		if body := text(1, end); strings.TrimSpace(body) != "" {
			out = append(out, mk("header", "", DetailSupporting, 1, end, body, weight*0.6))
		}
	}
	ft := a.reads.scan(a.abs(c.Path), lines, tt)
	fileRefLines := refLinesOf(loc.refs, c.Path)
	type relSym struct {
		s      symbolRow
		decl   int // the definition's own first line; s.start includes its comments
		body   string
		rel    float64
		detail string
	}
	rs := make([]relSym, 0, len(syms))
	var noDocs fileTerms // ft without block comments' lines, made when needed
	for _, s := range syms {
		// A definition comes with the comment block right above it: its doc
		// comment in Go and JS/TS, and the notes written for it in any
		// language.
		decl := s.start
		s.start = leadingComments(lines, s.start)
		body := text(s.start, s.end)
		// A block comment above it (JSDoc: the API's documentation, with
		// its examples) does not make it relevant: words it repeats from
		// the task are about using the definition, not about its code. Line
		// comments and decorators count.
		judged := s
		if strings.HasPrefix(strings.TrimSpace(text(s.start, s.start)), "/*") {
			judged.start = decl
		}
		judgedBy := ft
		if s.kind == lang.KindInterface || s.kind == lang.KindTypeAlias {
			// The same holds for the doc blocks of a type's members: an
			// options type documents every option in the words a task
			// uses, and would be a primary body for any of them.
			if noDocs.exact == nil {
				noDocs = withoutBlockComments(lines, ft)
			}
			judgedBy = noDocs
		}
		rel := symbolRelevance(judged, judgedBy, wanted, tt, fileRefLines)
		if a.Linked[c.Path][s.name] {
			rel = math.Max(rel, 0.5)
		}
		detail := DetailTypeContext
		if rel >= 1 {
			detail = DetailPrimary
		} else if rel > 0.2 {
			detail = DetailSupporting
		}
		if d, ok := a.Details[c.Path][s.name]; ok {
			// A tier the precision stage set weighs as that tier does,
			// whatever the task's words say.
			detail = d
			switch d {
			case DetailPrimary:
				rel = math.Max(rel, 1)
			case DetailSupporting:
				rel = math.Max(rel, 0.5)
			}
		}
		rs = append(rs, relSym{s, decl, body, rel, detail})
	}
	// Bodies within a file decay by their relevance rank, so a package
	// spreads over the files that matter instead of pouring one file in.
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return rs[order[i]].rel > rs[order[j]].rel })
	decay := make([]float64, len(rs))
	rank := make([]int, len(rs))
	for k, i := range order {
		decay[i] = math.Pow(0.6, float64(k))
		rank[i] = k
	}
	// A source file's primary definitions keep half their weight however
	// many there are: a task may need several. A test file's decay to
	// nothing: where every test holds the task's words (a file of retry
	// tests, a task about retries), its best few show what to copy, the
	// rest go by their signatures, and the budget goes to other files
	// (measured on held-out tasks: bench/retrieval/README.md, issue 33).
	floor := 0.5
	if isTest(c.Path) {
		floor = 0
	}
	var excluded [][2]int // what the precision stage left out: no snippet shows it
	for i, r := range rs {
		s := r.s
		switch r.detail {
		case DetailExcluded:
			excluded = append(excluded, [2]int{s.start, s.end})
			continue
		case DetailPrimary:
			out = append(out, mk("symbol", s.name, r.detail, s.start, s.end, r.body, weight*(1+r.rel)*math.Max(decay[i], floor)))
		case DetailSupporting:
			// The body if room allows, after the primaries; the signature in
			// any case.
			out = append(out, mk("symbol", s.name, r.detail, s.start, s.end, r.body, weight*r.rel*0.8*decay[i]))
		default:
			// Type context: the signature first; the body only with budget to
			// spare, after every signature, in file rank order.
			out = append(out, mk("symbol", s.name, r.detail, s.start, s.end, r.body, weight*0.2*math.Pow(0.9, float64(rank[i]))))
		}
		// The signature stands at the definition's own line, below its
		// comments.
		sig := s.signature
		if sig == "" {
			sig = strings.TrimSpace(text(r.decl, r.decl))
		}
		out = append(out, mk("signature", s.name, DetailTypeContext, r.decl, r.decl, sig+"\n", weight*(0.08+r.rel*0.2)))
	}
	if len(blocks) > 0 {
		mkLines := func(kind, name, detail string, start, end int, prio float64) piece {
			return mk(kind, name, detail, start, end, text(start, end), prio)
		}
		for _, p := range testPieces(blocks, defined, lines, ft, wanted, tt, fileRefLines, loc.exercised, loc.gaps, weight, mkLines) {
			if !hits(excluded, p.item.StartLine, p.item.EndLine) {
				out = append(out, p)
			}
		}
	}
	// The end of the file, where new definitions and tests usually go: an
	// edit that appends needs it as its anchor.
	if end := lastNonBlank(lines); end > 0 {
		start := max(1, end-tailLines+1)
		prio := weight * 0.15
		if isTest(c.Path) {
			prio = weight * 0.6 // tests are appended far more often than code
		}
		if !hits(excluded, start, end) {
			out = append(out, mk("snippet", "end of file", DetailTypeContext, start, end, text(start, end), prio))
		}
	}
	spans := make([][2]int, len(rs)) // as the bodies have them: with their comments
	for i, r := range rs {
		spans[i] = [2]int{r.s.start, r.s.end}
	}
	// The lines the task points at: high, as a named symbol is, since a
	// body too long for the budget would otherwise hide them.
	for _, sn := range pointedSnippets(pointedLines(c.Path, lines, loc.refs, loc.frags), spans, len(lines)) {
		if !hits(excluded, sn.start, sn.end) {
			out = append(out, mk("snippet", "pointed at", DetailPrimary, sn.start, sn.end, text(sn.start, sn.end), weight*1.6))
		}
	}
	// The lines that use an identifier the task names (namedLines):
	// below the lines it points at (a place, not a name), above the lines
	// of its words.
	for _, sn := range pointedSnippets(namedLines(lines, slices.Sorted(maps.Keys(wanted))), spans, len(lines)) {
		if !hits(excluded, sn.start, sn.end) {
			out = append(out, mk("snippet", "named in the task", DetailSupporting, sn.start, sn.end, text(sn.start, sn.end), weight*1.2))
		}
	}
	for _, sn := range snippets(lines, ft, tt, spans) {
		if !hits(excluded, sn.start, sn.end) {
			out = append(out, mk("snippet", "", DetailSupporting, sn.start, sn.end, text(sn.start, sn.end), weight*0.9*sn.rel))
		}
	}
	return out
}

// withoutBlockComments returns ft with no terms on the lines of /* */
// block comments (JSDoc).
func withoutBlockComments(lines []string, ft fileTerms) fileTerms {
	out := fileTerms{exact: slices.Clone(ft.exact), loose: ft.loose, onLines: ft.onLines}
	in := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !in && strings.HasPrefix(t, "/*") {
			in = true
		}
		if in {
			out.exact[i] = nil
			if strings.Contains(t, "*/") {
				in = false
			}
		}
	}
	return out
}

// headerLines caps the header item of a file with definitions.
const headerLines = 40

// afterImports drops the definitions that open a file within its first
// headerLines lines and are imports: a CommonJS `const x = require('x')`
// is a variable to the index, but its line is part of the header that
// lists what the file uses.
func afterImports(lines []string, syms []symbolRow) []symbolRow {
	k := 0
	for k < len(syms) && syms[k].end <= headerLines && syms[k].end-syms[k].start < 4 && importLine(lines, syms[k].start) {
		k++
	}
	return syms[k:]
}

// importLine reports whether line n (1-based) imports a module.
func importLine(lines []string, n int) bool {
	if n < 1 || n > len(lines) {
		return false
	}
	l := strings.TrimSpace(lines[n-1])
	return strings.HasPrefix(l, "import ") || strings.Contains(l, "require(") &&
		(strings.HasPrefix(l, "var ") || strings.HasPrefix(l, "const ") || strings.HasPrefix(l, "let "))
}

// hits reports whether lines start-end touch any of the spans.
func hits(spans [][2]int, start, end int) bool {
	return slices.ContainsFunc(spans, func(s [2]int) bool { return start <= s[1] && s[0] <= end })
}

// tailLines is how many lines the end-of-file snippet shows.
const tailLines = 3

// lastNonBlank returns the number of the last line with text, 0 if none.
func lastNonBlank(lines []string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return i + 1
		}
	}
	return 0
}

// fileTerms is a file's lines as the task's terms: for each line, the
// task terms it holds exactly and those it holds inflected too, tokenized
// once for the definitions' relevance and the snippets alike.
type fileTerms struct {
	exact, loose [][]string // by 0-based line; distinct per line
	onLines      map[string]int
}

func scanTerms(lines []string, tt *taskTerms) fileTerms {
	ft := fileTerms{exact: make([][]string, len(lines)), loose: make([][]string, len(lines)), onLines: map[string]int{}}
	if tt == nil || len(tt.w) == 0 {
		return ft
	}
	for i, l := range lines {
		terms.Each(l, func(t string) {
			q, ok := tt.match(t)
			if !ok {
				return
			}
			if q == t && !slices.Contains(ft.exact[i], q) {
				ft.exact[i] = append(ft.exact[i], q)
			}
			if !slices.Contains(ft.loose[i], q) {
				ft.loose[i] = append(ft.loose[i], q)
				ft.onLines[q]++
			}
		})
	}
	return ft
}

// snippetContext is how many lines a snippet shows around a matching line.
const snippetContext = 2

// maxSnippets bounds the snippets of one file.
const maxSnippets = 6

type snippet struct {
	start, end int
	rel        float64
	lo, hi     int // the innermost definition holding it (or the file)
}

// innermost returns the span of the smallest definition in defs holding
// line n or, outside every definition, the lines between its neighbours.
// A snippet stays inside it, so a body included later holds the whole
// snippet or none of it.
func innermost(defs [][2]int, n, last int) (lo, hi int) {
	lo, hi = 1, last
	inside := false
	for _, d := range defs {
		if d[0] <= n && n <= d[1] && (!inside || d[1]-d[0] < hi-lo) {
			lo, hi, inside = d[0], d[1], true
		}
	}
	if inside {
		return lo, hi
	}
	// Between definitions: up to the neighbours, not into them.
	for _, d := range defs {
		if d[1] < n {
			lo = max(lo, d[1]+1)
		}
		if d[0] > n {
			hi = min(hi, d[0]-1)
		}
	}
	return lo, hi
}

// snippets finds where in a file the task's rarest words occur: lines
// holding a term at least half as telling as the task's best, with a
// little context within the innermost definition holding them, merged
// when close within one definition. A term on more than a tenth of the
// file's lines (a parameter used throughout) locates nothing and is not
// looked for. Inside a definition too long to include whole, snippets are
// the lines an edit is likely to touch. rel is the share of the task's
// term weight a snippet holds, on the curve of symbolRelevance. The best
// maxSnippets are returned, in line order.
func snippets(lines []string, ft fileTerms, tt *taskTerms, defs [][2]int) []snippet {
	if tt == nil || len(tt.w) == 0 {
		return nil
	}
	total, best := tt.total, tt.best
	hits, onLines := ft.loose, ft.onLines
	locates := func(t string) bool { return tt.w[t] >= best/2 && onLines[t] <= max(3, len(lines)/10) }
	var out []snippet
	var cur *snippet
	var curHits map[string]bool
	for i := range lines {
		if !slices.ContainsFunc(hits[i], locates) {
			continue
		}
		n := i + 1
		lo, hi := innermost(defs, n, len(lines))
		start, end := max(lo, n-snippetContext), min(hi, n+snippetContext)
		if cur != nil && start <= cur.end+1 && cur.lo == lo && cur.hi == hi {
			cur.end = end
		} else {
			if cur != nil {
				out = append(out, *cur)
			}
			cur, curHits = &snippet{start: start, end: end, lo: lo, hi: hi}, map[string]bool{}
		}
		for _, t := range hits[i] {
			if !curHits[t] {
				curHits[t] = true
				cur.rel += tt.w[t]
			}
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	for i := range out {
		out[i].rel = math.Min(1.5, 2.5*out[i].rel/total)
	}
	if len(out) > maxSnippets {
		sort.SliceStable(out, func(i, j int) bool { return out[i].rel > out[j].rel })
		out = out[:maxSnippets]
		sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	}
	return out
}

// leadingComments returns the first line of the comment block (and
// decorators) directly above line start, or start when there is none.
func leadingComments(lines []string, start int) int {
	for start > 1 && start-1 <= len(lines) {
		l := strings.TrimSpace(lines[start-2])
		if !(strings.HasPrefix(l, "//") || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "/*") ||
			strings.HasPrefix(l, "*") || strings.HasPrefix(l, "@")) {
			break
		}
		start--
	}
	return start
}

// symbolRelevance scores a definition for the task: named in the task (or
// holding a referenced line) is certain; otherwise the IDF-weighted share
// of the task's terms its text contains, on a curve that saturates, with a
// bonus when its own name carries one of them.
func symbolRelevance(s symbolRow, ft fileTerms, wanted map[string]bool, tt *taskTerms, refLines map[int]bool) float64 {
	if wanted[s.name] {
		return 2
	}
	for l := range refLines {
		if l >= s.start && l <= s.end {
			return 2
		}
	}
	if len(tt.w) == 0 {
		return 0
	}
	total := tt.total
	hits := map[string]bool{}
	got := 0.0
	// Exact terms only: matching inflections here made whole definitions
	// relevant on common words (measured: lower recall within budget).
	for l := max(s.start, 1); l <= min(s.end, len(ft.exact)); l++ {
		for _, t := range ft.exact[l-1] {
			if !hits[t] {
				hits[t] = true
				got += tt.w[t]
			}
		}
	}
	rel := math.Min(1.5, 2.5*got/total)
	nameHit := 0.0
	terms.Each(s.name, func(t string) {
		nameHit = math.Max(nameHit, tt.w[t])
	})
	if nameHit > 0 {
		rel += 0.5 * nameHit / tt.best
	}
	return math.Min(1.9, rel)
}

// taskTerms are the task's most telling terms with their weights, and the
// match of every term met so far: a term of the code stands for the task
// term it is or inflects ("allowed" for "allow", "collection" for
// "collections").
type taskTerms struct {
	w           map[string]float64
	total, best float64             // the weights' sum and maximum
	byPre       map[string][]string // task terms of five letters or more by their first five, sorted
	forms       map[string]string   // term → task term, "" for none
}

func newTaskTerms(w map[string]float64) *taskTerms {
	tt := &taskTerms{w: w, total: sumWeights(w), best: maxWeight(w), byPre: map[string][]string{}, forms: map[string]string{}}
	for k := range w {
		if len(k) >= 5 {
			tt.byPre[k[:5]] = append(tt.byPre[k[:5]], k)
		}
	}
	for _, ks := range tt.byPre {
		sort.Strings(ks) // the first match wins, deterministically
	}
	return tt
}

// match returns the task term t stands for.
func (tt *taskTerms) match(t string) (string, bool) {
	if _, ok := tt.w[t]; ok {
		return t, true
	}
	if len(t) < 5 {
		return "", false // too short to inflect (sameWord needs five letters)
	}
	if q, ok := tt.forms[t]; ok {
		return q, q != ""
	}
	q := ""
	for _, k := range tt.byPre[t[:5]] {
		if sameWord(k, t) {
			q = k
			break
		}
	}
	tt.forms[t] = q
	return q, q != ""
}

// sameWord reports whether two terms are one word inflected: equal, or
// one a prefix of the other at least five letters long and at most three
// letters shorter (collection, collections; allow, allowed).
func sameWord(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || len(a) >= 5 && len(b)-len(a) <= 3 && strings.HasPrefix(b, a)
}

// sumWeights adds the weights in a fixed order: float addition is not
// associative, and map order would make near-ties fall differently from
// run to run.
func sumWeights(m map[string]float64) float64 {
	total := 0.0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		total += m[k]
	}
	return total
}

func maxWeight(m map[string]float64) float64 {
	best := 0.0
	for _, w := range m {
		best = math.Max(best, w)
	}
	return best
}

// abs is the path of a repository file in the checkout.
func (a *Assembler) abs(p string) string {
	return filepath.Join(a.root, filepath.FromSlash(p))
}

// Made says what made a package, for the line under its heading.
type Made struct {
	// TaskID is the run's task id; "" leaves it out (a tool call).
	TaskID string
	// Stages is the stage list as written ("scope,precision").
	Stages string
	// Deterministic: no model judged the candidates.
	Deterministic bool
}

// Markdown is the package as 'cra retrieve' prints it and the MCP
// context tool returns it: a heading with the task's first line, a line
// saying what made the package and its size, then Render's files.
func (p *Package) Markdown(task string, m Made) string {
	var b strings.Builder
	line := strings.TrimSpace(task)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fmt.Fprintf(&b, "# Context for: %s\n\n", clip(line, 100))
	if m.TaskID != "" {
		fmt.Fprintf(&b, "task %s · ", m.TaskID)
	}
	mode := "deterministic"
	if !m.Deterministic {
		mode = "with the reasoning model"
	}
	fmt.Fprintf(&b, "stages %s (%s) · %d files · %d of %d tokens\n", m.Stages, mode, len(p.Files), p.Tokens, p.Budget)
	b.WriteString(p.Render())
	return b.String()
}

// Render writes the package as Markdown, ready to paste into any agent:
// one section per file, each item fenced with its line range.
func (p *Package) Render() string { return p.RenderAt(2) }

// RenderAt is Render with the files' headings at level (2 is "##"), for
// a package placed under a heading of its own (a prompt's Context).
func (p *Package) RenderAt(level int) string {
	var b strings.Builder
	for _, f := range p.Files {
		b.WriteString(strings.Replace(renderFileHeader(f), "\n## ", "\n"+strings.Repeat("#", max(level, 1))+" ", 1))
		lang := fenceLang(f.Path)
		for _, it := range f.Items {
			b.WriteString(renderItem(it, lang))
		}
	}
	return b.String()
}

// renderFileHeader is a file's heading, with why it is there.
func renderFileHeader(f PackageFile) string {
	h := "\n## " + f.Path + "\n"
	if len(f.Reasons) > 0 {
		why := f.Reasons[0]
		if r := []rune(why); len(r) > 100 {
			why = string(r[:100]) + "…" // whole characters: a path may be CJK
		}
		h += fmt.Sprintf("<!-- tier %d: %s -->\n", f.Tier, why)
	}
	return h
}

// renderItem is one fenced piece of a file with its caption.
func renderItem(it Item, lang string) string {
	caption := fmt.Sprintf("lines %d-%d: %s", it.StartLine, it.EndLine, it.Kind)
	if it.Name != "" {
		caption += " " + it.Name
	}
	nl := ""
	if !strings.HasSuffix(it.Text, "\n") {
		nl = "\n"
	}
	fence := "```"
	for strings.Contains(it.Text, fence) {
		fence += "`" // Markdown files quoting code keep their fences
	}
	return caption + "\n" + fence + lang + "\n" + it.Text + nl + fence + "\n"
}

func fenceLang(p string) string {
	if l, ok := lang.Detect(p); ok {
		return string(l) // the fence names of Markdown are the language names
	}
	if strings.ToLower(filepath.Ext(p)) == ".md" {
		return "markdown"
	}
	return ""
}
