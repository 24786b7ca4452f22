package mcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/retrieve"
)

// The bounds of the tools' inputs.
const (
	maxTaskChars    = 20000 // a long issue with its traceback
	maxTop          = 50
	defaultTop      = 10
	minBudget       = 500
	maxBudget       = 32000
	defaultBudget   = 8000
	maxPatternChars = 200
	maxSymbols      = 100
	defaultSymbols  = 20
	maxPathChars    = 1000
	minKnowledge    = 200
	maxKnowledge    = 8000
	// reservedTokens makes a budget's window: any value works, as the
	// package gets exactly budget_tokens (bench/retrieval does the same).
	reservedTokens = 2048
	// defaultStages are the stages of a context package when the
	// config's [stages] default names none.
	defaultStages = "scope,precision"
)

// The bounds of the tools' outputs.
const (
	maxReasons      = 5
	maxReasonChars  = 200
	maxSignature    = 300
	maxDoc          = 400
	maxListed       = 100 // imports, importers, docstrings, comments of a file
	maxFileSymbols  = 300
	maxCommentChars = 300
	maxOverviewList = 50
)

var taskField = field{name: "task", kind: kindString, required: true, max: maxTaskChars,
	desc:    "The task in plain words, as an issue or a person states it: what is wrong or wanted, with any names, paths, error messages or traceback it has.",
	example: "the pager command is resolved twice"}

func (s *Server) addTools() {
	sp := map[string]spec{}
	for _, x := range s.specs() {
		sp[x.tool] = x
	}
	addTool(s, toolDef{name: "localize", title: "Rank the files a task needs", readsIndex: true,
		desc: `Find which files of this repository a task is about, before reading any code. Returns the files ranked best first, each with its reasons (named in the task, defines a symbol the task names, imports or is imported by such a file, changes together with it in git history, full-text relevance) and a score. Deterministic, from cra's local index; no model is called. Use it first on a new task to know where to look; use context instead when you want the relevant code itself.`},
		sp["localize"], s.localize)
	addTool(s, toolDef{name: "context", title: "The code a task needs, within a token budget", readsIndex: true,
		desc: `Assemble the code a task needs into one Markdown document that fits a token budget: for each ranked file, the symbols that matter in full, others as signatures, with line numbers and why the file is there. This is what 'cra retrieve --deterministic' prints; no model is called. Use it to start work on a task with the right code in view, instead of reading many files; the structured result lists the files and the token count.`},
		sp["context"], s.context)
	addTool(s, toolDef{name: "symbols", title: "Find definitions by name", readsIndex: true,
		desc: `Find the definitions (functions, classes, methods, interfaces, types, enums, variables) whose name matches a pattern, ignoring case: each with its file, line range, signature and docstring. A pattern without '*' matches anywhere in the name, exact matches first; with '*' it is a glob over the whole name ('Session*', '*_test'). Use it to jump to a name you know or half know.`},
		sp["symbols"], s.symbols)
	addTool(s, toolDef{name: "file_context", title: "Everything the index knows about a file", readsIndex: true,
		desc: `Describe one file from the index: its symbols with line ranges, docstrings, comments that explain why, the files it imports and the files that import it, the files that change together with it in git history, and its recent commits. Use it before editing a file, to know what depends on it and why it is written as it is.`},
		sp["file_context"], s.fileContext)
	addTool(s, toolDef{name: "overview", title: "The repository's shape", readsIndex: true,
		desc: `Summarise the repository from its index: files and lines by language, symbols by kind, dependency edges, the mined git history, the most connected files and the files most often changed together. Use it once to orient yourself in an unfamiliar repository.`},
		sp["overview"], s.overview)
	addTool(s, toolDef{name: "knowledge", title: "Project knowledge for a task",
		desc: `Return the project's written knowledge that applies to a task: its conventions (always), and the design notes, lessons and domain documents that share the most words with the task, each whole, within a token budget. This is the PROJECT KNOWLEDGE section cra puts in its own agents' prompts. Use it before changing code, to follow the project's rules; the documents are also resources (cra://knowledge/<path>).`},
		sp["knowledge"], s.knowledge)
}

// specs are the tools' arguments.
func (s *Server) specs() []spec {
	return []spec{
		{tool: "localize", fields: []field{taskField,
			{name: "top", kind: kindInt, min: 1, max: maxTop, def: defaultTop, desc: "How many files to return, best first."}}},
		{tool: "context", fields: []field{taskField,
			{name: "budget_tokens", kind: kindInt, min: minBudget, max: maxBudget, def: defaultBudget, desc: "The most tokens the document may hold (a token is about four characters)."}}},
		{tool: "symbols", fields: []field{
			{name: "pattern", kind: kindString, required: true, max: maxPatternChars, desc: "A name, part of one, or a glob with '*'.", example: "Session*"},
			{name: "kind", kind: kindString, enum: append([]string{""}, symbolKinds...), desc: "Only symbols of this kind."},
			{name: "limit", kind: kindInt, min: 1, max: maxSymbols, def: defaultSymbols, desc: "How many definitions to return."}}},
		{tool: "file_context", fields: []field{
			{name: "path", kind: kindString, required: true, max: maxPathChars, desc: "The file's path relative to the repository root.", example: "src/app/models.py",
				check: func(p string) error { _, err := s.rel(p); return err }, what: "a path relative to the repository root"}}},
		{tool: "overview"},
		{tool: "knowledge", fields: []field{taskField,
			{name: "max_tokens", kind: kindInt, min: minKnowledge, max: maxKnowledge, def: knowledge.MaxTokens, desc: "The most tokens of documents to return."}}},
	}
}

// symbolKinds is the symbol vocabulary of seed 001 §4.5.
var symbolKinds = []string{lang.KindFunction, lang.KindClass, lang.KindMethod, lang.KindInterface,
	lang.KindTypeAlias, lang.KindEnum, lang.KindVariable}

// index returns the knowledge base and the repository's row.
func (s *Server) index(ctx context.Context) (*kb.KnowledgeBase, kb.Repo, error) {
	return s.ws.Index(ctx)
}

type localizeInput struct {
	Task string `json:"task"`
	Top  int    `json:"top"`
}

// RankedFile is one file of a localize result.
type RankedFile struct {
	Rank  int     `json:"rank"`
	Path  string  `json:"path"`
	Score float64 `json:"score"`
	// Tier says why the file is a candidate: seed (the task names it or a
	// symbol it defines), dependency, co_change, metadata or search.
	Tier    string   `json:"tier"`
	Reasons []string `json:"reasons"`
}

// LocalizeOutput is the result of localize.
type LocalizeOutput struct {
	Files []RankedFile `json:"files"`
	// TaskType is what the task analysis read: bug, feature, refactor,
	// test or docs.
	TaskType string     `json:"task_type"`
	Index    IndexState `json:"index"`
}

func (s *Server) localize(ctx context.Context, in localizeInput, c call) (reply[LocalizeOutput], error) {
	st := c.index
	var r reply[LocalizeOutput]
	k, repo, err := s.index(ctx)
	if err != nil {
		return r, err
	}
	p := &retrieve.Pipeline{KB: k, RepoID: repo.ID, Root: s.files}
	q, cands, err := p.Localize(ctx, in.Task, in.Top)
	if err != nil {
		return r, err
	}
	out := LocalizeOutput{Files: []RankedFile{}, TaskType: q.Type, Index: st}
	var b strings.Builder
	b.WriteString(st.line() + "\n")
	for i, c := range cands {
		f := RankedFile{Rank: i + 1, Path: c.Path, Score: math.Round(c.Score*1000) / 1000, Tier: retrieve.TierName(c.Tier), Reasons: []string{}}
		for _, why := range c.Reasons[:min(len(c.Reasons), maxReasons)] {
			f.Reasons = append(f.Reasons, clipText(why, maxReasonChars))
		}
		out.Files = append(out.Files, f)
		fmt.Fprintf(&b, "%d. %s (%s, score %.3f): %s\n", f.Rank, f.Path, f.Tier, f.Score, strings.Join(f.Reasons, "; "))
	}
	if len(cands) == 0 {
		b.WriteString("no file matches the task: name a file, a symbol or an error message it mentions\n")
	}
	r.out, r.text = out, b.String()
	r.summary = fmt.Sprintf("%s → %s", quote(in.Task), plural(len(cands), "file"))
	if len(cands) > 0 {
		r.summary += ", first " + cands[0].Path
	}
	r.summary += "; " + st.State
	return r, nil
}

type contextInput struct {
	Task         string `json:"task"`
	BudgetTokens int    `json:"budget_tokens"`
}

// ContextOutput is the structured part of a context result; the package
// itself is the text.
type ContextOutput struct {
	Files  []string `json:"files"`
	Tokens int      `json:"tokens"`
	Budget int      `json:"budget"`
	Stages string   `json:"stages"`
	// Trimmed counts the items found that did not fit the budget.
	Trimmed int        `json:"trimmed"`
	Index   IndexState `json:"index"`
}

func (s *Server) context(ctx context.Context, in contextInput, c call) (reply[ContextOutput], error) {
	st := c.index
	var r reply[ContextOutput]
	k, repo, err := s.index(ctx)
	if err != nil {
		return r, err
	}
	list := defaultStages
	if s.cfg != nil && s.cfg.Stages != nil && s.cfg.Stages.Default != "" {
		list = s.cfg.Stages.Default
	}
	stages, err := retrieve.ParseStages(list)
	if err != nil {
		return r, fmt.Errorf("[stages] default in .clean_room/config.toml: %w", err)
	}
	p := &retrieve.Pipeline{KB: k, RepoID: repo.ID, Root: s.files}
	budget := retrieve.Budget{ContextWindow: in.BudgetTokens + reservedTokens, ReservedTokens: reservedTokens}
	res, err := p.Run(ctx, "", in.Task, stages, budget)
	if err != nil {
		return r, err
	}
	pkg := res.Package
	out := ContextOutput{Files: []string{}, Tokens: pkg.Tokens, Budget: pkg.Budget, Stages: list, Trimmed: len(pkg.Trimmed), Index: st}
	for _, f := range pkg.Files {
		out.Files = append(out.Files, f.Path)
	}
	text := pkg.Markdown(in.Task, retrieve.Made{Stages: list, Deterministic: true})
	if st.State != StateFresh {
		text = "<!-- " + st.line() + " -->\n" + text
	}
	r.out, r.text = out, text
	r.summary = fmt.Sprintf("%s → %s, %d of %d tokens; %s", quote(in.Task), plural(len(out.Files), "file"), pkg.Tokens, pkg.Budget, st.State)
	return r, nil
}

type symbolsInput struct {
	Pattern string `json:"pattern"`
	Kind    string `json:"kind"`
	Limit   int    `json:"limit"`
}

// Definition is one symbol of a symbols result.
type Definition struct {
	Name      string `json:"name"` // qualified: Class.method
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Signature string `json:"signature,omitempty"`
	Doc       string `json:"doc,omitempty"`
}

// SymbolsOutput is the result of symbols.
type SymbolsOutput struct {
	Symbols []Definition `json:"symbols"`
	// More says the limit cut the list: narrow the pattern, add a kind or
	// raise the limit.
	More  bool       `json:"more"`
	Index IndexState `json:"index"`
}

func (s *Server) symbols(ctx context.Context, in symbolsInput, c call) (reply[SymbolsOutput], error) {
	st := c.index
	var r reply[SymbolsOutput]
	k, repo, err := s.index(ctx)
	if err != nil {
		return r, err
	}
	// One more than shown tells whether the limit cut the list, as 'cra
	// query symbols' does.
	syms, err := k.SearchSymbolsByName(ctx, repo.ID, in.Pattern, in.Kind, in.Limit+1)
	if err != nil {
		return r, err
	}
	out := SymbolsOutput{Symbols: []Definition{}, More: len(syms) > in.Limit, Index: st}
	syms = syms[:min(len(syms), in.Limit)]
	ids := make([]int64, len(syms))
	for i, sym := range syms {
		ids[i] = sym.ID
	}
	docs, err := k.DocstringsOf(ctx, ids)
	if err != nil {
		return r, err
	}
	var b strings.Builder
	b.WriteString(st.line() + "\n")
	for _, sym := range syms {
		d := Definition{Name: sym.QualifiedName(), Kind: sym.Kind, Path: sym.Path, StartLine: sym.StartLine, EndLine: sym.EndLine,
			Signature: clipText(sym.Signature, maxSignature), Doc: clipText(strings.TrimSpace(docs[sym.ID]), maxDoc)}
		out.Symbols = append(out.Symbols, d)
		fmt.Fprintf(&b, "%s %s %s:%d-%d\n", d.Name, d.Kind, d.Path, d.StartLine, d.EndLine)
		if d.Signature != "" {
			fmt.Fprintf(&b, "    %s\n", firstLine(d.Signature))
		}
		if d.Doc != "" {
			fmt.Fprintf(&b, "    %s\n", clipText(firstLine(d.Doc), 160))
		}
	}
	switch {
	case len(syms) == 0:
		fmt.Fprintf(&b, "no symbol matches %q: try part of the name, or a glob such as '*%s*'\n", in.Pattern, strings.Trim(in.Pattern, "*"))
	case out.More:
		fmt.Fprintf(&b, "(the first %d: narrow the pattern, pass a kind, or raise limit)\n", in.Limit)
	}
	r.out, r.text = out, b.String()
	r.summary = fmt.Sprintf("%q → %s; %s", clipText(in.Pattern, 80), plural(len(syms), "symbol"), st.State)
	return r, nil
}

type fileContextInput struct {
	Path string `json:"path"`
}

// FileContextOutput is the result of file_context: kb.FileContext, each
// list bounded (Omitted counts what was left out, by list).
type FileContextOutput struct {
	Path         string       `json:"path"`
	Language     string       `json:"language"`
	Lines        int          `json:"lines"`
	SyntaxErrors int          `json:"syntax_errors,omitempty"`
	Purpose      string       `json:"purpose,omitempty"` // from promoted enrichment
	Domain       string       `json:"domain,omitempty"`
	Concepts     []string     `json:"concepts,omitempty"`
	Symbols      []FileSymbol `json:"symbols"`
	Docstrings   []FileNote   `json:"docstrings"`
	// RationaleComments are the comments that say why (seed 001 §4.5).
	RationaleComments []FileNote `json:"rationale_comments"`
	Imports           []string   `json:"imports"`
	ImportedBy        []string   `json:"imported_by"`
	// ChangedWith are the files most often in the same commits.
	ChangedWith   []CoChange     `json:"changed_with"`
	RecentCommits []CommitLine   `json:"recent_commits"`
	Omitted       map[string]int `json:"omitted,omitempty"`
	Index         IndexState     `json:"index"`
}

// FileSymbol is a definition of a file.
type FileSymbol struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

// FileNote is a docstring (Symbol names its owner, "" the module) or a
// comment (Line is its line).
type FileNote struct {
	Symbol string `json:"symbol,omitempty"`
	Line   int    `json:"line,omitempty"`
	Text   string `json:"text"`
}

// CoChange is a file changed together with another, and in how many
// commits.
type CoChange struct {
	Path    string `json:"path"`
	Commits int    `json:"commits"`
}

// CommitLine is a commit in one line.
type CommitLine struct {
	Hash    string `json:"hash"`
	Date    string `json:"date"`
	Author  string `json:"author"`
	Message string `json:"message"`
}

func (s *Server) fileContext(ctx context.Context, in fileContextInput, c call) (reply[FileContextOutput], error) {
	st := c.index
	var r reply[FileContextOutput]
	rel, err := s.rel(in.Path)
	if err != nil {
		return r, err // checked before the call: not reached
	}
	k, repo, err := s.index(ctx)
	if err != nil {
		return r, err
	}
	f, err := k.FileByPath(ctx, repo.ID, rel)
	if errors.Is(err, kb.ErrNotFound) {
		return r, fmt.Errorf("no indexed file %q: find the file with localize or symbols (binary, ignored and excluded files are not indexed)", rel)
	}
	if err != nil {
		return r, err
	}
	fc, err := k.FileContext(ctx, f.ID)
	if err != nil {
		return r, err
	}
	out := fileContextOf(fc)
	out.Index = st
	r.out, r.text = out, st.line()+"\n"+jsonText(out)
	r.summary = fmt.Sprintf("%s: %s, %s; %s", rel, plural(len(fc.Symbols), "symbol"), plural(len(fc.ImportedBy), "importer"), st.State)
	return r, nil
}

// fileContextOf bounds c's lists for a model.
func fileContextOf(c *kb.FileContext) FileContextOutput {
	out := FileContextOutput{Path: c.File.Path, Language: c.File.Language, Lines: c.File.Lines, SyntaxErrors: c.File.SyntaxErrors,
		Symbols: []FileSymbol{}, Docstrings: []FileNote{}, RationaleComments: []FileNote{}, Imports: []string{}, ImportedBy: []string{},
		ChangedWith: []CoChange{}, RecentCommits: []CommitLine{}, Omitted: map[string]int{}}
	if m := c.Metadata; m != nil {
		out.Purpose, out.Domain, out.Concepts = clipText(m.Purpose, maxCommentChars), m.Domain, m.Concepts[:min(len(m.Concepts), 20)]
	}
	keep := func(name string, have, most int) int {
		if have > most {
			out.Omitted[name] = have - most
		}
		return min(have, most)
	}
	for _, sym := range c.Symbols[:keep("symbols", len(c.Symbols), maxFileSymbols)] {
		out.Symbols = append(out.Symbols, FileSymbol{sym.QualifiedName(), sym.Kind, sym.StartLine, sym.EndLine})
	}
	for _, d := range c.Docstrings[:keep("docstrings", len(c.Docstrings), maxListed)] {
		out.Docstrings = append(out.Docstrings, FileNote{Symbol: d.Symbol, Text: clipText(strings.TrimSpace(d.Content), maxCommentChars)})
	}
	for _, cm := range c.RationaleComments[:keep("rationale_comments", len(c.RationaleComments), maxListed)] {
		out.RationaleComments = append(out.RationaleComments, FileNote{Line: cm.Line, Text: clipText(strings.TrimSpace(cm.Content), maxCommentChars)})
	}
	for _, e := range c.Imports[:keep("imports", len(c.Imports), maxListed)] {
		out.Imports = append(out.Imports, e.TargetPath)
	}
	for _, e := range c.ImportedBy[:keep("imported_by", len(c.ImportedBy), maxListed)] {
		out.ImportedBy = append(out.ImportedBy, e.SourcePath)
	}
	for _, cc := range c.CoChanges {
		out.ChangedWith = append(out.ChangedWith, CoChange{cc.Path, cc.Count})
	}
	for _, cm := range c.RecentCommits {
		out.RecentCommits = append(out.RecentCommits, CommitLine{cm.Hash[:min(len(cm.Hash), 12)], cm.Timestamp[:min(len(cm.Timestamp), 10)],
			clipText(cm.Author, 60), clipText(firstLine(cm.Message), 120)})
	}
	if len(out.Omitted) == 0 {
		out.Omitted = nil
	}
	return out
}

type overviewInput struct{}

// OverviewOutput is the result of overview: kb.RepoOverview, its lists
// bounded.
type OverviewOutput struct {
	kb.RepoOverview
	Index IndexState `json:"index"`
}

func (s *Server) overview(ctx context.Context, _ overviewInput, c call) (reply[OverviewOutput], error) {
	st := c.index
	var r reply[OverviewOutput]
	k, repo, err := s.index(ctx)
	if err != nil {
		return r, err
	}
	o, err := k.RepoOverview(ctx, repo.ID)
	if err != nil {
		return r, err
	}
	o.Languages = o.Languages[:min(len(o.Languages), maxOverviewList)]
	o.SymbolKinds = o.SymbolKinds[:min(len(o.SymbolKinds), maxOverviewList)]
	o.Domains = o.Domains[:min(len(o.Domains), maxOverviewList)]
	out := OverviewOutput{RepoOverview: *o, Index: st}
	r.out, r.text = out, st.line()+"\n"+jsonText(out)
	r.summary = fmt.Sprintf("%s, %s; %s", plural(o.Files, "file"), plural(o.Symbols, "symbol"), st.State)
	return r, nil
}

type knowledgeInput struct {
	Task      string `json:"task"`
	MaxTokens int    `json:"max_tokens"`
}

// KnowledgeOutput is the structured part of a knowledge result; the
// documents themselves are the text.
type KnowledgeOutput struct {
	// Documents are the documents included, Skipped those that did not
	// fit, as paths under docs/knowledge/ (resources
	// cra://knowledge/<path>).
	Documents []string `json:"documents"`
	Skipped   []string `json:"skipped"`
	Tokens    int      `json:"tokens"`
}

func (s *Server) knowledge(_ context.Context, in knowledgeInput, _ call) (reply[KnowledgeOutput], error) {
	var r reply[KnowledgeOutput]
	sec, err := knowledge.Load(s.root, in.Task, in.MaxTokens)
	if err != nil {
		return r, err
	}
	out := KnowledgeOutput{Documents: []string{}, Skipped: []string{}}
	if sec == nil || len(sec.Docs) == 0 {
		r.out, r.text = out, "no project knowledge applies: "+knowledge.Dir+"/ holds no document for this task"
		r.summary = quote(in.Task) + " → no documents"
		return r, nil
	}
	out.Documents, out.Tokens = sec.Docs, sec.Tokens
	if sec.Skipped != nil {
		out.Skipped = sec.Skipped
	}
	text := "## PROJECT KNOWLEDGE\n\n" + sec.Text + "\n"
	if len(sec.Skipped) > 0 {
		text += fmt.Sprintf("\n(%d more document(s) did not fit in %d tokens: %s; read them as resources cra://knowledge/<path>)\n",
			len(sec.Skipped), in.MaxTokens, strings.Join(sec.Skipped, ", "))
	}
	r.out, r.text = out, text
	r.summary = fmt.Sprintf("%s → %s, %d tokens", quote(in.Task), plural(len(out.Documents), "document"), out.Tokens)
	return r, nil
}
