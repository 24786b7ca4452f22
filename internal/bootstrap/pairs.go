package bootstrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/tokens"
)

// commit is a kept commit, ready for its pairs.
type commit struct {
	Hash, Parent string
	Date         time.Time
	// Task is the message as a task: its trailers (Signed-off-by: …) left
	// out.
	Task    string
	Changes []change
}

// deriver derives the pairs of one commit from the index of its parent,
// checked out at Root.
type deriver struct {
	KB     *kb.KnowledgeBase
	RepoID int64
	Root   string // the scratch worktree at the parent
	Repo   string // the bootstrapped repository, as Meta.Repo names it
	Budget retrieve.Budget
	// PromptTokens bounds a stage prompt (the reasoning window);
	// ReplyTokens is what the execute prompts keep free for the reply;
	// Candidates is how many ranked files scope judges.
	PromptTokens, ReplyTokens, Candidates int
	parser                                *lang.Parser
}

// derived is what one commit gave.
type derived struct {
	Records []dataset.Record
	// CodeTried: the commit's change could be written as edit blocks;
	// CodeReproduced: applying them to the parent gave the commit's files.
	CodeTried, CodeReproduced bool
	// CodeInContext: every line the blocks' SEARCH copies is in the
	// prompt (only then is the pair kept).
	CodeInContext bool
	// Missing says, by stage, why the commit has no pair of it.
	Missing map[string]string
}

// Meanings of the scope labels in the replies' reasons; the model reads
// them as the reasons it should give.
const (
	reasonChanged    = "holds code the task changes"
	reasonIrrelevant = "not needed for the task"
)

// derive builds one pair per stage for c (seed 001 §16.4.3), each with
// the prompt builder and reply format cra uses at inference.
func (d *deriver) derive(ctx context.Context, c commit) (*derived, error) {
	out := &derived{Missing: map[string]string{}}
	if d.parser == nil {
		d.parser = lang.NewParser()
	}
	gold := goldFiles(c.Changes)
	add := func(stage, system, user, assistant string) {
		out.Records = append(out.Records, dataset.Record{Example: dataset.Chat(system, user, assistant),
			Meta: dataset.Meta{Stage: stage, Source: corpus.SourceSynthetic, Positive: true, Date: c.Date,
				Repo: d.Repo, Commit: c.Hash, Parent: c.Parent, Gold: gold}})
	}
	prim := d.primaries(c.Changes)
	refs := referencedNames(c.Changes)

	// Task analysis: the message → the TaskQuery the diff implies.
	q := retrieve.Analyze(c.Task)
	ta := taskAnalysisOf(c, q, prim)
	q.Intent = ta.Intent
	system, user := retrieve.TaskAnalysisPrompt(c.Task)
	add(dataset.TaskAnalysis, system, user, compactJSON(ta))

	// Scope: cra's own deterministic candidates at the parent, labelled
	// from the diff and the dependency graph.
	rk := retrieve.NewRanker(d.KB, d.RepoID)
	rk.Root = d.Root
	cands, err := rk.Rank(ctx, q, d.Candidates)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	support, known, err := d.dependencies(ctx, gold)
	if err != nil {
		return nil, err
	}
	var scoped []retrieve.Candidate
	switch {
	case len(cands) == 0:
		out.Missing[dataset.Scope] = "no candidates"
	case known == 0:
		// A file the commit creates is not in the parent's index, so
		// what it imports is not known: a candidate it uses would be
		// labelled not relevant. With no changed file known, no label
		// is sure, and nothing is judged.
		out.Missing[dataset.Scope] = "no changed file is in the parent's index (a new file): what it uses is not known"
		cands = nil
	}
	system, batches := retrieve.ScopePrompts(q, cands, d.PromptTokens)
	for _, b := range batches {
		var reply retrieve.ScopeReply
		for _, cand := range b.Candidates {
			v := retrieve.ScopeVerdict{Path: cand.Path, Reason: reasonIrrelevant}
			switch {
			case slices.Contains(gold, cand.Path):
				v.Relevant, v.Reason = true, reasonChanged
			case support[cand.Path] != "":
				v.Relevant, v.Reason = true, "imported by "+support[cand.Path]+", which the task changes"
			}
			if v.Relevant {
				scoped = append(scoped, cand)
			}
			reply.Files = append(reply.Files, v)
		}
		add(dataset.Scope, system, b.Prompt, compactJSON(reply))
	}

	// Precision: the scoped files' symbols, labelled from the changed lines.
	details := map[string]map[string]string{}
	for p, names := range prim {
		for _, n := range names {
			setIn(details, p, n, retrieve.DetailPrimary)
		}
	}
	if len(scoped) == 0 {
		out.Missing[dataset.Precision] = "no scoped file"
	} else {
		sc := &retrieve.StageContext{Task: q, Ranker: rk, Candidates: scoped, Excluded: map[string]string{}}
		if err := (&retrieve.PrecisionStage{}).Run(ctx, sc); err != nil {
			return nil, fmt.Errorf("precision: %w", err)
		}
		system, prompt, offered := retrieve.PrecisionPrompt(q, sc.Symbols, d.PromptTokens)
		var reply retrieve.PrecisionReply
		seen := map[[2]string]bool{}
		signal := false
		for _, s := range offered {
			key := [2]string{s.Path, s.Name}
			if seen[key] {
				continue
			}
			seen[key] = true
			tier := retrieve.DetailExcluded
			switch {
			case details[s.Path][s.Name] == retrieve.DetailPrimary:
				tier = retrieve.DetailPrimary
			case refs[s.Name]:
				tier = retrieve.DetailSupporting
				setIn(details, s.Path, s.Name, tier)
			}
			signal = signal || tier != retrieve.DetailExcluded
			reply.Symbols = append(reply.Symbols, retrieve.PrecisionVerdict{Path: s.Path, Symbol: s.Name, Tier: tier})
		}
		switch {
		case len(offered) == 0:
			out.Missing[dataset.Precision] = "no symbol offered"
		case !signal:
			out.Missing[dataset.Precision] = "no offered symbol is changed or used by the change"
		default:
			add(dataset.Precision, system, prompt, compactJSON(reply))
		}
	}

	// The context package of the execute stages: the files the change
	// touches (as a plan's files, tier 0) and their dependencies, the
	// changed symbols in full.
	pkg, err := d.contextPackage(ctx, rk, q, gold, support, details)
	if err != nil {
		return nil, err
	}
	know := ""
	if k, err := knowledge.Load(d.Root, c.Task, knowledge.MaxTokens); err != nil {
		return nil, err
	} else if k != nil {
		know = k.Text
	}

	// The blocks that make the diff, when it can be written so; the
	// context shows every line they copy.
	blocks, blocksErr := editBlocks(c.Changes)
	if blocksErr == nil {
		showChanges(pkg, c.Changes, blocks)
	}

	// Execute (plan): a plan derived from the diff.
	plan := d.planOf(c, ta.Intent, prim)
	system, user, _, err = agent.PlanPrompt(c.Task, pkg, know, d.Budget.ContextWindow, d.ReplyTokens)
	switch {
	case errors.Is(err, agent.ErrPromptTooLarge):
		out.Missing[dataset.ExecutePlan] = "prompt too large"
	case err != nil:
		return nil, err
	default:
		add(dataset.ExecutePlan, system, user, compactJSON(struct {
			Summary string           `json:"summary"`
			Steps   []agent.PlanStep `json:"steps"`
		}{plan.Summary, plan.Steps}))
	}

	// Execute (code): the blocks that reproduce the diff, kept only when
	// applying them to the parent gives the commit's files exactly.
	if blocksErr != nil {
		out.Missing[dataset.ExecuteCode] = blocksErr.Error()
		return out, nil
	}
	out.CodeTried = true
	reply := edit.Format(blocks)
	if err := reproduce(reply, c.Changes); err != nil {
		out.Missing[dataset.ExecuteCode] = "not reproduced: " + err.Error()
		return out, nil
	}
	out.CodeReproduced = true
	system, user, _, err = agent.CodePrompt(agent.Input{Task: c.Task, Package: pkg, Knowledge: know}, d.Budget.ContextWindow, d.ReplyTokens)
	switch {
	case errors.Is(err, agent.ErrPromptTooLarge):
		out.Missing[dataset.ExecuteCode] = "prompt too large"
		return out, nil
	case err != nil:
		return nil, err
	}
	// A model must not learn to copy lines it was not shown.
	if out.CodeInContext = searchVisible(blocks, user); !out.CodeInContext {
		out.Missing[dataset.ExecuteCode] = "a SEARCH line is not in the context"
		return out, nil
	}
	add(dataset.ExecuteCode, system, user, reply)
	return out, nil
}

// searchVisible reports whether every line of every SEARCH is a line of
// the prompt: the model saw what it must copy (the context shows a file
// in pieces, a signature apart from the body below it, so a SEARCH that
// spans two pieces is not one run of the prompt's text).
func searchVisible(blocks []edit.Block, prompt string) bool {
	lines := map[string]bool{}
	for _, l := range strings.Split(prompt, "\n") {
		lines[l] = true
	}
	for _, b := range blocks {
		for _, l := range splitLines(b.Search) {
			if l = strings.TrimSuffix(l, "\n"); strings.TrimSpace(l) != "" && !lines[l] {
				return false
			}
		}
	}
	return true
}

// goldFiles are the files the change touches that exist at the parent,
// in the diff's order: what retrieval should find.
func goldFiles(changes []change) []string {
	var out []string
	for _, c := range changes {
		if c.OldPath != "" {
			out = append(out, c.OldPath)
		}
	}
	return out
}

// primaries are, by file, the names of the innermost definitions at the
// parent whose lines the change touches.
func (d *deriver) primaries(changes []change) map[string][]string {
	out := map[string][]string{}
	for _, c := range changes {
		if c.OldPath == "" {
			continue
		}
		syms := d.symbols(c.OldPath, c.Old)
		touched := make([]bool, len(syms))
		for i, s := range syms {
			touched[i] = touches(c.Hunks, s.StartLine, s.EndLine)
		}
		for i, s := range syms {
			if !touched[i] {
				continue
			}
			inner := false
			for j, t := range syms {
				if t.Parent == i && touched[j] {
					inner = true
				}
			}
			if !inner && !slices.Contains(out[c.OldPath], s.Name) {
				out[c.OldPath] = append(out[c.OldPath], s.Name)
			}
		}
	}
	return out
}

// symbols parses content as the indexer does; nil for a file in no
// parsed language or that does not parse.
func (d *deriver) symbols(p string, content []byte) []lang.Symbol {
	l, ok := lang.Detect(p)
	if !ok || content == nil {
		return nil
	}
	f, err := d.parser.Parse(l, content)
	if err != nil {
		return nil
	}
	return f.Symbols
}

// touches reports whether the old lines start..end hold a changed line,
// or an insertion between two of them.
func touches(hs []gitx.Hunk, start, end int) bool {
	for _, h := range hs {
		if h.OldLines == 0 {
			if h.OldStart >= start && h.OldStart+1 <= end {
				return true
			}
			continue
		}
		if h.OldStart <= end && start <= h.OldStart+h.OldLines-1 {
			return true
		}
	}
	return false
}

var identRe = lazyre.New(`[A-Za-z_][A-Za-z0-9_]*`)

// referencedNames are the identifiers on the lines the change removes or
// adds: the code the change uses.
func referencedNames(changes []change) map[string]bool {
	out := map[string]bool{}
	for _, c := range changes {
		old, nw := splitLines(string(c.Old)), splitLines(string(c.New))
		for _, h := range c.Hunks {
			var lines []string
			if h.OldLines > 0 && h.OldStart-1+h.OldLines <= len(old) {
				lines = append(lines, old[h.OldStart-1:h.OldStart-1+h.OldLines]...)
			}
			if h.NewLines > 0 && h.NewStart-1+h.NewLines <= len(nw) {
				lines = append(lines, nw[h.NewStart-1:h.NewStart-1+h.NewLines]...)
			}
			for _, l := range lines {
				for _, n := range identRe().FindAllString(l, -1) {
					out[n] = true
				}
			}
		}
		if c.OldPath == "" { // a new file uses what it names
			for _, n := range identRe().FindAllString(string(c.New), -1) {
				out[n] = true
			}
		}
	}
	return out
}

// maxImplied bounds the names and paths task analysis's reply adds.
const maxImplied = 8

// taskAnalysisOf is the reply task analysis should give for c: the
// message's own reading as the intent, a type, and the changed
// definitions and files the message does not name.
func taskAnalysisOf(c commit, q retrieve.TaskQuery, prim map[string][]string) retrieve.TaskAnalysis {
	ta := retrieve.TaskAnalysis{Intent: intentOf(c.Task), Type: q.Type, Symbols: []string{}, Files: []string{}}
	tests, code := 0, 0
	added := false
	for _, ch := range c.Changes {
		if isTestPath(ch.Path()) {
			tests++
		} else {
			code++
		}
		added = added || ch.OldPath == ""
	}
	switch {
	case code == 0:
		ta.Type = retrieve.TypeTest
	case ta.Type == "" && added:
		ta.Type = retrieve.TypeFeature
	case ta.Type == "":
		ta.Type = retrieve.TypeBug
	}
	for _, g := range goldFiles(c.Changes) {
		for _, n := range prim[g] {
			if len(ta.Symbols) < maxImplied && !slices.Contains(q.Symbols, n) && !slices.Contains(ta.Symbols, n) {
				ta.Symbols = append(ta.Symbols, n)
			}
		}
		if len(ta.Files) < maxImplied && !slices.Contains(q.Files, g) {
			ta.Files = append(ta.Files, g)
		}
	}
	return ta
}

// intentOf reads a commit message as an intent: its first paragraph on
// one line, at most two sentences, ending in a full stop.
func intentOf(task string) string {
	para, _, _ := strings.Cut(strings.TrimSpace(task), "\n\n")
	s := strings.Join(strings.Fields(para), " ")
	if n := sentenceEnd(s, 2); n > 0 {
		s = s[:n]
	}
	if len(s) > 300 {
		s = agent.FirstLine(s, 300)
	}
	if last, _ := utf8.DecodeLastRuneInString(s); s != "" && !strings.ContainsRune(".!?…", last) {
		s += "."
	}
	return s
}

// sentenceEnd is the index after the n-th sentence's full stop, or 0.
func sentenceEnd(s string, n int) int {
	for i := 0; i+1 < len(s); i++ {
		if strings.ContainsRune(".!?", rune(s[i])) && s[i+1] == ' ' {
			if n--; n == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// isTestPath says whether a path is a test file by the usual names.
func isTestPath(p string) bool {
	base := path.Base(p)
	return strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") ||
		strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") ||
		strings.HasPrefix(p, "tests/") || strings.HasPrefix(p, "test/") || strings.Contains(p, "/tests/") || strings.Contains(p, "/__tests__/")
}

// dependencies are the files the gold files import (seed 001 §16.4.3:
// supporting), each with the gold file that imports it, and how many of
// the gold files the parent's index holds (a new file's imports are not
// known).
func (d *deriver) dependencies(ctx context.Context, gold []string) (map[string]string, int, error) {
	out, known := map[string]string{}, 0
	for _, g := range gold {
		f, err := d.KB.FileByPath(ctx, d.RepoID, g)
		if errors.Is(err, kb.ErrNotFound) {
			continue // not indexed (new at the parent, or too large)
		}
		if err != nil {
			return nil, 0, err
		}
		known++
		deps, err := d.KB.Dependencies(ctx, f.ID, kb.Imports)
		if err != nil {
			return nil, 0, err
		}
		for _, dep := range deps {
			if _, ok := out[dep.TargetPath]; !ok && !slices.Contains(gold, dep.TargetPath) {
				out[dep.TargetPath] = g
			}
		}
	}
	return out, known, nil
}

// contextPackage assembles what the execute stages read: the gold files
// ranked as a plan's files (tier 0) and the ranked files that support
// them, the changed definitions in full (details), within the budget.
func (d *deriver) contextPackage(ctx context.Context, rk *retrieve.Ranker, q retrieve.TaskQuery, gold []string, support map[string]string, details map[string]map[string]string) (*retrieve.Package, error) {
	pq := q
	pq.PlanFiles = gold
	cands, err := rk.Rank(ctx, pq, d.Candidates)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	var keep []retrieve.Candidate
	for _, c := range cands {
		if slices.Contains(gold, c.Path) || support[c.Path] != "" {
			keep = append(keep, c)
		}
	}
	a := retrieve.NewAssemblerFor(rk, d.Root)
	a.Details = details
	pkg, err := a.Assemble(ctx, q, keep, d.Budget)
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	return pkg, nil
}

// planOf derives the plan of a commit from its diff: one step per file,
// code before its tests and its docs, a file before the changed files
// that import it; each step names the definitions it changes, adds and
// removes.
func (d *deriver) planOf(c commit, intent string, prim map[string][]string) *agent.Plan {
	order := slices.Clone(c.Changes)
	rank := func(ch change) int {
		switch p := ch.Path(); {
		case isTestPath(p):
			return 2
		case func() bool { _, ok := lang.Detect(p); return !ok }():
			return 3 // docs, changelogs, configs
		}
		return 1
	}
	slices.SortStableFunc(order, func(a, b change) int { return rank(a) - rank(b) })
	subject := strings.TrimSuffix(intent, ".")
	var code []string
	for _, ch := range order {
		if rank(ch) == 1 {
			code = append(code, ch.Path())
		}
	}
	p := &agent.Plan{Task: c.Task, Summary: intent}
	for _, ch := range order {
		step := agent.PlanStep{File: ch.Path(), Change: d.changeOf(ch, prim[ch.OldPath])}
		switch rank(ch) {
		case 1:
			step.Why = "the task: " + subject
		case 2:
			step.Why = "tests the change"
			if len(code) > 0 {
				step.Why += " to " + strings.Join(code, ", ")
			}
		default:
			step.Why = "records the change for readers of " + path.Base(ch.Path())
		}
		p.Steps = append(p.Steps, step)
	}
	return p
}

// changeOf says what a step changes in one file.
func (d *deriver) changeOf(ch change, prim []string) string {
	switch {
	case ch.NewPath == "":
		return "Delete the file."
	case ch.OldPath == "":
		names := symbolNames(d.symbols(ch.NewPath, ch.New), true)
		if len(names) == 0 {
			return "Create the file."
		}
		return "Create the file with " + list(names) + "."
	case ch.ModeChanged && len(ch.Hunks) == 0:
		// Its executable bit alone: no definition, and no line, changes.
		return "Change the file's mode (no line changes)."
	}
	oldNames := symbolNames(d.symbols(ch.OldPath, ch.Old), false)
	newNames := symbolNames(d.symbols(ch.NewPath, ch.New), false)
	var added, removed, changed []string
	for _, n := range newNames {
		if !slices.Contains(oldNames, n) {
			added = append(added, n)
		}
	}
	for _, n := range oldNames {
		if !slices.Contains(newNames, n) {
			removed = append(removed, n)
		}
	}
	for _, n := range prim {
		if !slices.Contains(removed, n) && !slices.ContainsFunc(removed, func(r string) bool { return strings.HasSuffix(r, "."+n) }) {
			changed = append(changed, n)
		}
	}
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, "Change "+list(changed))
	}
	if len(added) > 0 {
		parts = append(parts, "add "+list(added))
	}
	if len(removed) > 0 {
		parts = append(parts, "remove "+list(removed))
	}
	if len(parts) == 0 {
		return "Edit the lines outside any definition (imports, constants, text)."
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// symbolNames are the qualified names of definitions (Parent.Name), top
// level only when top.
func symbolNames(syms []lang.Symbol, top bool) []string {
	var out []string
	for _, s := range syms {
		n := s.Name
		if s.Parent >= 0 {
			if top {
				continue
			}
			n = syms[s.Parent].Name + "." + n
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// list writes names in backticks, at most six of them.
func list(names []string) string {
	shown := names[:min(6, len(names))]
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = "`" + n + "`"
	}
	s := strings.Join(q, ", ")
	if len(names) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return s
}

// compactJSON is v as one line of JSON, < > & as they are: the reply a
// model should write.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // plain structs of strings: cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

func setIn(m map[string]map[string]string, p, name, v string) {
	if m[p] == nil {
		m[p] = map[string]string{}
	}
	m[p][name] = v
}

// showChanges adds to pkg, as snippets, the lines of the parent the
// blocks' SEARCH copies where the assembler left them out (a class's
// header shown as a signature apart from its members, module-level code
// between definitions), so that the execute pairs show the model every
// line it must copy: the context is the pre-commit state of the changed
// code (seed 001 §16.4.3). A snippet takes in the items it overlaps.
func showChanges(pkg *retrieve.Package, changes []change, blocks []edit.Block) {
	old := map[string]string{}
	for _, c := range changes {
		if c.OldPath != "" && c.NewPath == c.OldPath {
			old[c.OldPath] = string(c.Old)
		}
	}
	for _, b := range blocks {
		text, ok := old[b.Path]
		if !ok || b.Search == "" {
			continue
		}
		at := strings.Index(text, b.Search)
		if at < 0 || at > 0 && text[at-1] != '\n' {
			continue // it copies lines an earlier block wrote: not the parent's
		}
		lo := strings.Count(text[:at], "\n") + 1
		hi := lo + len(splitLines(b.Search)) - 1
		fi := slices.IndexFunc(pkg.Files, func(f retrieve.PackageFile) bool { return f.Path == b.Path })
		if fi < 0 {
			pkg.Files = append(pkg.Files, retrieve.PackageFile{Path: b.Path, Reasons: []string{"holds the code the task changes"}})
			fi = len(pkg.Files) - 1
		}
		f := &pkg.Files[fi]
		if covered(f.Items, lo, hi) {
			continue
		}
		var keep []retrieve.Item
		for _, it := range f.Items {
			if it.StartLine <= hi && lo <= it.EndLine {
				lo, hi = min(lo, it.StartLine), max(hi, it.EndLine)
				pkg.Tokens -= it.Tokens
				continue
			}
			keep = append(keep, it)
		}
		lines := splitLines(text)
		body := strings.Join(lines[lo-1:min(hi, len(lines))], "")
		it := retrieve.Item{Kind: "snippet", Detail: retrieve.DetailPrimary, StartLine: lo, EndLine: hi, Text: body, Tokens: tokens.Estimate(body)}
		pkg.Tokens += it.Tokens
		f.Items = append(keep, it)
		slices.SortFunc(f.Items, func(a, b retrieve.Item) int { return a.StartLine - b.StartLine })
	}
}

// covered reports whether items show every line from lo to hi.
func covered(items []retrieve.Item, lo, hi int) bool {
	for l := lo; l <= hi; l++ {
		if !slices.ContainsFunc(items, func(it retrieve.Item) bool { return it.StartLine <= l && l <= it.EndLine }) {
			return false
		}
	}
	return true
}
