// Package retrieve selects the context a model needs for a task (seed 001
// §5, §7, §11, §13): deterministic task analysis, file ranking that fuses
// full-text relevance with what the task names and what the repository's
// structure and history say, symbol-level selection, and assembly of a
// package that fits a token budget. The deterministic result stands on its
// own (--deterministic); the LLM stages refine it.
//
// It reads the curated index only through a *kb.KnowledgeBase and records
// its decisions only through a *corpus.Corpus: no SQL lives here.
package retrieve

import "errors"

// ErrEmptyTask is returned for a task with no text to search by.
var ErrEmptyTask = errors.New("the task is empty: describe what to change")

// Task types (seed 001 §5.2).
const (
	TypeBug      = "bug"
	TypeFeature  = "feature"
	TypeRefactor = "refactor"
	TypeTest     = "test"
	TypeDocs     = "docs"
)

// FileLine is a file:line reference found in the task (a traceback frame,
// a compiler message, a path with a line).
type FileLine struct {
	Path string `json:"path"`
	Line int    `json:"line"`
}

// TaskQuery is the analysed task (seed 001 §5.2, §18). Everything but Intent
// is extracted deterministically by Analyze.
type TaskQuery struct {
	Text string `json:"text"`
	Type string `json:"type"`
	// Files are paths or file names the task mentions, as written.
	Files []string `json:"files,omitempty"`
	// FileLines are file:line references, from tracebacks or messages.
	FileLines []FileLine `json:"file_lines,omitempty"`
	// Symbols are identifiers that look like code: in backticks, calls,
	// camelCase, snake_case, dotted paths (their last part).
	Symbols []string `json:"symbols,omitempty"`
	// Modules are dotted paths that may name a module or package
	// ("django.db.models.base", "click.termui").
	Modules []string `json:"modules,omitempty"`
	// PlanFiles are the files of a plan (implement mode with --plan): tier
	// 0 seeds, ahead of everything else (seed 001 §5.6).
	PlanFiles []string `json:"plan_files,omitempty"`
	// Errors are exception or error names and messages.
	Errors []string `json:"errors,omitempty"`
	// Areas are the parts of the project a conventional-commit scope
	// names: "fix(binding): …" → binding.
	Areas []string `json:"areas,omitempty"`
	// Keywords are the task's search terms (internal/terms), most telling
	// first.
	Keywords []string `json:"keywords,omitempty"`
	// Intent is the reasoning model's one-paragraph reading of the task;
	// empty in deterministic mode.
	Intent string `json:"intent,omitempty"`
	// ImpliedSymbols and ImpliedFiles are what the reasoning model's task
	// analysis adds: names and paths the task implies without saying. They
	// rank as guesses, not as seeds: the scope judgment may drop them.
	ImpliedSymbols []string `json:"implied_symbols,omitempty"`
	ImpliedFiles   []string `json:"implied_files,omitempty"`
}

// Scope tiers (seed 001 §5.6): why a file is a candidate. Plan files
// (implement mode with --plan) are tier 0.
const (
	TierPlan     = 0
	TierSeed     = 1 // named in the task, or defines a symbol it names
	TierDep      = 2 // imports or is imported by a seed
	TierCoChange = 3 // changes together with a seed
	TierMetadata = 4 // enrichment metadata matches
	TierSearch   = 5 // full-text and identifier relevance only
)

// Candidate is a ranked file.
type Candidate struct {
	FileID   int64   `json:"file_id"`
	Path     string  `json:"path"`
	Language string  `json:"language"`
	Score    float64 `json:"score"`
	Tier     int     `json:"tier"`
	// Reasons say, in words, what put the file here ("defines
	// _pager_contextmanager", "imported by click/termui.py").
	Reasons []string `json:"reasons"`
	// Signals are the named parts of Score, for inspection and tuning.
	Signals map[string]float64 `json:"signals"`
	// Prose counts the times Weights.Prose scaled Score (an example the
	// task does not name, a file cra does not parse): Score is
	// Weights.Fuse(Signals, Prose, TestFile, DeclFile) for every file the fusion
	// scored.
	Prose int `json:"prose,omitempty"`
	// TestFile: Weights.TestDemotion scaled Score, a test file (IsTestPath,
	// in a language cra parses) for a task that does not speak of tests
	// (TaskQuery.AboutTests).
	TestFile bool `json:"test_file,omitempty"`
	// DeclFile: Weights.DeclDemotion scaled Score, a source file that only
	// declares types (lang.DeclarationOnly; not a test) which the task
	// does not name (no mention or plan signal).
	DeclFile bool `json:"decl_file,omitempty"`
}

// Detail tiers of the precision stage (seed 001 §5.7).
const (
	DetailPrimary     = "primary"      // in full
	DetailSupporting  = "supporting"   // signature with its enclosing scope
	DetailTypeContext = "type_context" // signature only
	DetailExcluded    = "excluded"
)

// Item is one piece of a file in a context package.
type Item struct {
	// Kind is "symbol" (a definition in full), "signature", "header" (the
	// file's imports and module docstring), "file" (the whole file) or
	// "snippet" (lines around the task's rarest words, or, named "end of
	// file", a file's last lines: the anchor for appending).
	Kind      string `json:"kind"`
	Name      string `json:"name,omitempty"`
	Detail    string `json:"detail,omitempty"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Text      string `json:"text"`
	Tokens    int    `json:"tokens"`
}

// PackageFile is a file's share of a context package.
type PackageFile struct {
	Path    string   `json:"path"`
	Tier    int      `json:"tier"`
	Score   float64  `json:"score"`
	Reasons []string `json:"reasons"`
	Items   []Item   `json:"items"`
	Tokens  int      `json:"tokens"`
}

// Package is the assembled context: what the execute model reads.
type Package struct {
	Task   TaskQuery     `json:"task"`
	Files  []PackageFile `json:"files"`
	Tokens int           `json:"tokens"`
	Budget int           `json:"budget"`
	// Trimmed lists what did not fit, lowest priority first dropped.
	Trimmed []string `json:"trimmed,omitempty"`
	// Stale counts the entries of Trimmed that are files changed, moved
	// or deleted since they were indexed: the fix is 'cra index', not a
	// bigger budget.
	Stale int `json:"-"`
}
