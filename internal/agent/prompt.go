package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/tokens"
)

// CodeSystem is the coding model's system prompt. Small models follow a
// strict format with one worked example better than rules alone (seed
// 001 §19: search-and-replace is the single output format).
const CodeSystem = `You are a careful software engineer. You change code only by answering with SEARCH/REPLACE edit blocks.

An edit block looks exactly like this:

path/to/file.ext
` + "```" + `
<<<<<<< SEARCH
lines copied exactly from the current file
=======
the lines that replace them
>>>>>>> REPLACE
` + "```" + `

Rules:
1. The line before the fence is the file's path, relative to the repository root, alone on its line.
2. SEARCH copies the current lines of the file exactly: every character, space and comment. Copy enough lines that they occur in one place only, and no more than needed.
3. To create a new file, leave SEARCH empty and put the whole file in REPLACE.
4. To delete lines, leave REPLACE empty.
5. Use one block per change. Several blocks may edit the same file, in order.
6. Do not explain. Answer with edit blocks only.

Example. Task: "Add returns the difference instead of the sum." The answer:

calc/calc.go
` + "```" + `
<<<<<<< SEARCH
func Add(a, b int) int {
	return a - b
}
=======
func Add(a, b int) int {
	return a + b
}
>>>>>>> REPLACE
` + "```" + `

If the context lacks something you must see to make the change, do not guess. Answer with only this block, naming concrete files, symbols, tests or error messages that are missing:

` + "```" + `NEED_CONTEXT
{"reason": "what is missing and why", "missing_files": ["path/to/file.ext"], "missing_symbols": ["FunctionName"], "missing_tests": [], "error_signatures": []}
` + "```"

// PlanSystem is the reasoning model's system prompt in plan mode (seed 001
// §8.1).
const PlanSystem = `You plan code changes for a task in a repository. You do not write the code.

Answer with one JSON object and nothing else:
{"summary": "one or two sentences: the approach",
 "steps": [{"file": "path/relative/to/the/repository", "change": "what to change in this file, concretely: which functions, what behaviour", "why": "why this change is needed for the task"}]}

Rules:
1. List the steps in the order they should be made, one file per step.
2. Use the paths shown in the context, or new paths for files the task needs created.
3. Keep the plan as small as the task allows.`

// promptTokens estimates a prompt: system and user text, chars/4.
func promptTokens(system, user string) int {
	return tokens.Estimate(system) + tokens.Estimate(user)
}

// retryNote is what the next prompt says about an earlier attempt.
type retryNote struct {
	attempt  int
	class    string
	summary  string // one line, never trimmed
	evidence string // trimmed first under budget pressure (seed 001 §7.4)
}

// solvePrompt is the user message of an execute call, in sections that
// the budget gate can trim.
type solvePrompt struct {
	task      string
	plan      *Plan
	knowledge string
	pkg       *retrieve.Package // a copy: the gate trims its items
	changes   string            // the diff of the edits applied so far
	notes     []retryNote
	trimmed   []string
}

func (p *solvePrompt) render() string {
	var b strings.Builder
	b.WriteString("## TASK\n" + strings.TrimSpace(p.task) + "\n")
	if p.plan != nil {
		b.WriteString("\n## PLAN\nFollow these steps in order.\n")
		if p.plan.Summary != "" {
			b.WriteString(p.plan.Summary + "\n")
		}
		for i, s := range p.plan.Steps {
			fmt.Fprintf(&b, "%d. %s: %s (why: %s)\n", i+1, s.File, s.Change, s.Why)
		}
	}
	if p.knowledge != "" {
		b.WriteString("\n## PROJECT KNOWLEDGE\nConventions and decisions of this project. Follow them.\n\n" + p.knowledge + "\n")
	}
	b.WriteString("\n## CONTEXT\nCode of the repository selected for this task.\n")
	if p.pkg != nil && len(p.pkg.Files) > 0 {
		b.WriteString(p.pkg.Render())
	} else {
		b.WriteString("(none)\n")
	}
	if p.changes != "" {
		b.WriteString("\n## CURRENT CHANGES\nYour earlier edits below are already in the files. SEARCH must match the files as they are now, with these changes.\n```diff\n" +
			strings.TrimRight(p.changes, "\n") + "\n```\n")
	}
	if len(p.notes) > 0 {
		b.WriteString("\n## PREVIOUS ATTEMPTS\nThese attempts did not finish the task. Do not repeat their mistakes.\n")
		for _, n := range p.notes {
			fmt.Fprintf(&b, "\n### Attempt %d: %s\n%s\n", n.attempt, n.class, n.summary)
			if n.evidence != "" {
				b.WriteString(strings.TrimRight(n.evidence, "\n") + "\n")
			}
		}
	}
	b.WriteString("\n## YOUR ANSWER\nAnswer with SEARCH/REPLACE edit blocks only, or with one NEED_CONTEXT block.\n")
	return b.String()
}

// fit trims the prompt until it and reserve (the reply's tokens) fit
// window: retry evidence of older attempts first, then the current diff,
// then the last attempt's evidence, then context items from the lowest
// priority up, then the knowledge section (seed 001 §7.4). What is left
// out is listed in p.trimmed. A prompt that cannot fit is
// ErrPromptTooLarge.
func (p *solvePrompt) fit(system string, window, reserve int) (string, int, error) {
	for {
		user := p.render()
		tokens := promptTokens(system, user)
		if tokens+reserve <= window {
			return user, tokens, nil
		}
		if !p.trimOne() {
			return "", tokens, fmt.Errorf("%w: %d prompt tokens (system prompt, task, plan and retry summaries) + %d for the reply > %d: raise --context-window or shorten the task",
				ErrPromptTooLarge, tokens, reserve, window)
		}
	}
}

func (p *solvePrompt) trimOne() bool {
	for i := 0; i+1 < len(p.notes); i++ {
		if p.notes[i].evidence != "" {
			p.notes[i].evidence = ""
			p.trimmed = append(p.trimmed, fmt.Sprintf("retry details of attempt %d", p.notes[i].attempt))
			return true
		}
	}
	if p.changes != "" {
		p.changes = ""
		p.trimmed = append(p.trimmed, "current changes")
		return true
	}
	if n := len(p.notes); n > 0 && p.notes[n-1].evidence != "" {
		p.notes[n-1].evidence = ""
		p.trimmed = append(p.trimmed, fmt.Sprintf("retry details of attempt %d", p.notes[n-1].attempt))
		return true
	}
	if trimPackage(p.pkg, &p.trimmed) {
		return true
	}
	if p.knowledge != "" {
		p.knowledge = ""
		p.trimmed = append(p.trimmed, "project knowledge")
		return true
	}
	return false
}

// trimPackage drops the lowest-priority piece of a package (seed 001
// §7.4): type context (signatures, outlines) before supporting code
// before the primary symbols, and within a tier the lowest-ranked file's
// last item first (files come best first).
func trimPackage(pkg *retrieve.Package, trimmed *[]string) bool {
	if pkg == nil {
		return false
	}
	for tier := 0; tier <= 2; tier++ { // detailRank's tiers, lowest first
		for fi := len(pkg.Files) - 1; fi >= 0; fi-- {
			f := &pkg.Files[fi]
			for ii := len(f.Items) - 1; ii >= 0; ii-- {
				it := f.Items[ii]
				if detailRank(it.Detail) != tier {
					continue
				}
				f.Items = slices.Delete(f.Items, ii, ii+1)
				*trimmed = append(*trimmed, fmt.Sprintf("context %s lines %d-%d", f.Path, it.StartLine, it.EndLine))
				if len(f.Items) == 0 {
					pkg.Files = slices.Delete(pkg.Files, fi, fi+1)
				}
				return true
			}
		}
	}
	return false
}

// detailRank orders an item's detail tier for trimming: 0 goes first.
// A tier cra does not know is trimmed with the type context.
func detailRank(d string) int {
	switch d {
	case retrieve.DetailPrimary:
		return 2
	case retrieve.DetailSupporting:
		return 1
	}
	return 0
}

// copyPackage copies a package deeply enough for trimPackage.
func copyPackage(pkg *retrieve.Package) *retrieve.Package {
	if pkg == nil {
		return nil
	}
	c := *pkg
	c.Files = make([]retrieve.PackageFile, len(pkg.Files))
	for i, f := range pkg.Files {
		f.Items = append([]retrieve.Item(nil), f.Items...)
		c.Files[i] = f
	}
	return &c
}

// planPrompt is the user message of a plan call.
type planPrompt struct {
	task      string
	knowledge string
	pkg       *retrieve.Package
	trimmed   []string
}

func (p *planPrompt) render() string {
	var b strings.Builder
	b.WriteString("## TASK\n" + strings.TrimSpace(p.task) + "\n")
	if p.knowledge != "" {
		b.WriteString("\n## PROJECT KNOWLEDGE\nConventions and decisions of this project. Plan within them.\n\n" + p.knowledge + "\n")
	}
	b.WriteString("\n## CONTEXT\nCode of the repository selected for this task.\n")
	if p.pkg != nil && len(p.pkg.Files) > 0 {
		b.WriteString(p.pkg.Render())
	} else {
		b.WriteString("(none)\n")
	}
	b.WriteString("\n## YOUR ANSWER\nAnswer with the plan as one JSON object: {\"summary\": …, \"steps\": [{\"file\": …, \"change\": …, \"why\": …}]}.\n")
	return b.String()
}

func (p *planPrompt) fit(system string, window, reserve int) (string, int, error) {
	for {
		user := p.render()
		tokens := promptTokens(system, user)
		if tokens+reserve <= window {
			return user, tokens, nil
		}
		switch {
		case trimPackage(p.pkg, &p.trimmed):
		case p.knowledge != "":
			p.knowledge = ""
			p.trimmed = append(p.trimmed, "project knowledge")
		default:
			return "", tokens, fmt.Errorf("%w: %d prompt tokens + %d for the reply > %d: raise --context-window or shorten the task",
				ErrPromptTooLarge, tokens, reserve, window)
		}
	}
}

// PlanPrompt builds the first plan call's prompts (seed 001 §8.1): the
// system prompt and the user prompt for task, the context package and the
// project knowledge, fitted to window with reply tokens kept free by the
// budget gate; trimmed lists what the gate left out. It is Planner.Plan's
// first call, for the bootstrapped training pairs (internal/bootstrap).
func PlanPrompt(task string, pkg *retrieve.Package, knowledge string, window, reply int) (system, user string, trimmed []string, err error) {
	p := &planPrompt{task: task, knowledge: knowledge, pkg: copyPackage(pkg)}
	user, _, err = p.fit(PlanSystem, window, reply)
	return PlanSystem, user, p.trimmed, err
}

// CodePrompt builds the first execute call's prompts (seed 001 §8.2): the
// system prompt and the user prompt for the task, its plan (may be nil),
// the project knowledge and the context package, before any edit or
// retry, fitted to window with reply tokens kept free; trimmed lists what
// the budget gate left out. Solver.Solve's first attempt and the
// bootstrapped training pairs (internal/bootstrap) both build it here.
func CodePrompt(in Input, window, reply int) (system, user string, trimmed []string, err error) {
	p := newSolvePrompt(in, in.Package, "", nil)
	user, _, err = p.fit(CodeSystem, window, reply)
	return CodeSystem, user, p.trimmed, err
}

// newSolvePrompt is the prompt of an attempt: the input, the package as
// retrieval (or refinement) left it, the changes made so far and the
// notes of the attempts before.
func newSolvePrompt(in Input, pkg *retrieve.Package, changes string, notes []retryNote) *solvePrompt {
	return &solvePrompt{task: in.Task, plan: in.Plan, knowledge: in.Knowledge, pkg: copyPackage(pkg), changes: changes, notes: slices.Clone(notes)}
}
