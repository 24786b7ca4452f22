package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/verdict"
)

// schemas are seed 003's output schemas as the model is shown them, with
// cra's documents list (a model cannot write files).
var schemas = map[knowledge.Supervisor]string{
	knowledge.CodeStyle: `{
  "conventions_updated": ["conventions/error_handling.md"],
  "documents": [
    {"path": "conventions/error_handling.md", "title": "Error Handling Conventions",
     "rules": "1. Do X.\n2. Never Y.", "examples": {"good": "code", "bad": "code"}, "rationale": "why"}
  ],
  "directives": [
    {"type": "cleanup", "description": "Standardise error handling in src/tools/ to use pattern X",
     "rationale": "why", "files": ["src/tools/a.go"], "priority": "low"}
  ],
  "summary": "Brief description of findings"
}`,
	knowledge.Design: `{
  "design_updates": ["design/architecture.md"],
  "documents": [
    {"path": "design/architecture.md", "title": "Architecture",
     "rules": "1. Components talk through X.", "examples": {"good": "", "bad": ""}, "rationale": "why"}
  ],
  "directives": [
    {"type": "functional", "description": "Refactor storage from array to map to match the entity pattern",
     "rationale": "Entity lookups use maps; the array breaks consistency", "priority": "normal", "files": []}
  ],
  "summary": "Brief description of findings"
}`,
	knowledge.Internaliser: `{
  "knowledge_items": [
    {"category": "lesson", "content": "State reducers silently drop None values; always provide defaults",
     "source_task": "t-1a2b3c4d", "confidence": "high", "needs_user_review": false}
  ],
  "summary": "Brief description of what was captured"
}`,
}

// purposes are seed 003's purpose and behaviour of each supervisor.
var purposes = map[knowledge.Supervisor]string{
	knowledge.CodeStyle: `You are the code style supervisor of a coding agent's project. Review the code conventions across recent work, find inconsistencies, establish and enforce patterns: naming, formatting, error handling, file structure.
1. Read the files changed recently and compare them against the convention documents.
2. Where no convention exists yet for a pattern the code follows, establish one: return it in documents (path under conventions/).
3. Where a convention exists but the code does not match, issue a cleanup directive naming the files.
4. Where conventions exist and the code matches, do nothing.`,
	knowledge.Design: `You are the design supervisor of a coding agent's project. Review the solution design against what has been learned during execution; refine the design documents when experience contradicts them: architecture, data model, integration patterns, component boundaries.
1. Compare the design documents against what has been built (done list, recent runs).
2. Find where the implementation diverges from the design, and decide whether the implementation or the design is wrong.
3. If the design is outdated, return the updated document in documents (path under design/).
4. If the approach must change, issue a functional directive with specific direction and its rationale. Use priority critical only when continuing would be actively harmful.`,
	knowledge.Internaliser: `You are the internaliser of a coding agent's project. Capture novel discoveries and decisions from the recent work so that nothing is lost: a pattern that was discovered, a library behaviour that was unexpected, a design decision made implicitly.
Return each as a knowledge item: category lesson (what worked and what did not) or domain (facts of the problem domain). Capture facts and observations; never prescribe patterns. Set needs_user_review for significant decisions made implicitly that a person should confirm. Return nothing already in the knowledge shown.`,
}

const bootstrapNote = `BOOTSTRAP RUN: the knowledge store has no documents of yours yet. Establish baselines rather than report deviations: describe what the project does now, as rules, in a few short documents (or items). Issue no directives unless something is actively harmful.`

// system is the system prompt of s's run.
func system(s knowledge.Supervisor, bootstrap bool) string {
	var b strings.Builder
	b.WriteString(purposes[s])
	if bootstrap {
		b.WriteString("\n\n" + bootstrapNote)
	}
	fmt.Fprintf(&b, `

Your folders in the knowledge store: %s. Documents elsewhere are refused.
Documents are rules, not descriptions: "Do X", not "we tend to do X"; each addresses one concern; rules at most %d characters; concrete good and bad examples.
Directives: description about 200 characters; type functional (goes before planned work) or cleanup (after it); priority critical, normal or low.

Reply with one JSON object and nothing else, with exactly these keys (use [] for none):
%s`, strings.Join(slashed(s.Folders()), ", "), knowledge.MaxRules, schemas[s])
	return b.String()
}

func slashed(fs []string) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f + "/"
	}
	return out
}

// inputs are a run's inputs (seed 003, "Supervisor Contracts"), each
// part capped so that the whole stays near MaxInputTokens.
type inputs struct {
	Remit, Milestones, Done, Carry, Runs, Knowledge, Files string
}

// share is each part's share of the input budget, in percent.
var share = map[string]int{"remit": 6, "milestones": 6, "done": 12, "carry": 14, "runs": 22, "knowledge": 26, "files": 14}

// gather builds the inputs of s's run from the repository, the board,
// the reviews and the store, within maxTokens.
func gather(ctx context.Context, s knowledge.Supervisor, root string, hist verdict.HistoryStore, v *boardView, store *knowledge.Store, maxTokens int) inputs {
	chars := func(part string) int { return maxTokens * 4 * share[part] / 100 }
	in := inputs{}
	in.Remit = capText(readmeHead(root), chars("remit"))

	var ms []string
	for _, m := range v.milestones {
		state := "open"
		if slices.Contains(v.done, m) {
			state = "all tasks verified"
		}
		ms = append(ms, fmt.Sprintf("- %s: %s", m, state))
	}
	in.Milestones = capText(strings.Join(ms, "\n"), chars("milestones"))

	var done, carry []string
	var finished []*board.Task
	for _, t := range v.all {
		if v.folder[t.ID] == board.CompletedFinalized {
			finished = append(finished, t)
		}
	}
	slices.SortFunc(finished, func(a, b *board.Task) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	for _, t := range finished {
		done = append(done, fmt.Sprintf("- %s %s%s", t.ID, oneLine(t.Title, 120), milestoneOf(t)))
	}
	in.Done = capText(strings.Join(done, "\n"), chars("done"))
	for _, t := range board.Order(v.pending, nil) {
		carry = append(carry, fmt.Sprintf("- %s [%s %s] %s%s", t.ID, t.Kind, t.Priority, oneLine(t.Title, 120), milestoneOf(t)))
	}
	in.Carry = capText(strings.Join(carry, "\n"), chars("carry"))

	// Recent runs: the latest reviews across the board, newest first.
	type rv struct {
		t *board.Task
		r verdict.Review
	}
	var rvs []rv
	for _, t := range v.all {
		reviews, _, _ := verdict.ReadHistory(ctx, hist, t.ID)
		for _, r := range reviews {
			rvs = append(rvs, rv{t, r})
		}
	}
	slices.SortFunc(rvs, func(a, b rv) int { return b.r.Time.Compare(a.r.Time) })
	var runs []string
	for _, x := range rvs[:min(len(rvs), 12)] {
		runs = append(runs, fmt.Sprintf("- %s run %d %q: %s → %s. Done: %s Remaining: %s", x.t.ID, x.r.Run, oneLine(x.t.Title, 80),
			x.r.Classification, x.r.Action, oneLine(x.r.Note.Accomplished, 200), oneLine(x.r.Note.Remaining, 200)))
	}
	in.Runs = capText(strings.Join(runs, "\n"), chars("runs"))

	// The knowledge: the supervisor's own documents whole (without
	// changelog), the others by title.
	var own, others []string
	listed, _ := store.List()
	for _, l := range listed {
		first, _, _ := strings.Cut(l.Path, "/")
		if slices.Contains(s.Folders(), first) {
			d, _, err := store.Read(l.Path)
			if err == nil {
				own = append(own, fmt.Sprintf("### %s (%s)\n%s\nRules:\n%s", l.Path, l.Status, d.Title, d.Rules))
			}
			continue
		}
		others = append(others, fmt.Sprintf("- %s: %s (%s)", l.Path, l.Title, l.Status))
	}
	in.Knowledge = capText(strings.Join(append(own, others...), "\n"), chars("knowledge"))

	if s == knowledge.CodeStyle {
		in.Files = capText(changedFiles(ctx, root), chars("files"))
	}
	return in
}

func milestoneOf(t *board.Task) string {
	if t.Milestone == "" {
		return ""
	}
	return " (milestone " + t.Milestone + ")"
}

// text is the user message of a run.
func (in inputs) text(s knowledge.Supervisor, reasons []string, after string) string {
	var b strings.Builder
	part := func(title, body string) {
		if strings.TrimSpace(body) == "" {
			body = "(none)"
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", title, strings.TrimSpace(body))
	}
	part("WHY THIS RUN", strings.Join(reasons, "; ")+"; the last verdict was on task "+after)
	part("REMIT", in.Remit)
	part("MILESTONES", in.Milestones)
	part("DONE (verified tasks, newest first)", in.Done)
	part("CARRY-FORWARD (pending tasks, in the order they run)", in.Carry)
	part("RECENT RUNS AND THEIR REVIEWS", in.Runs)
	part("CURRENT KNOWLEDGE", in.Knowledge)
	if s == knowledge.CodeStyle {
		part("FILES CHANGED RECENTLY", in.Files)
	}
	b.WriteString("Reply with the JSON object only.")
	return b.String()
}

// readmeHead is the start of the repository's README: the remit.
func readmeHead(root string) string {
	for _, name := range []string{"README.md", "README", "readme.md"} {
		if data, err := os.ReadFile(filepath.Join(root, name)); err == nil {
			return string(data[:min(len(data), 2000)])
		}
	}
	return ""
}

// changedFiles lists the files changed by the latest commits on every
// branch, the task branches (cra/<id>) included: what code_style reads.
func changedFiles(ctx context.Context, root string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "log", "--all", "-n", "15", "--name-only", "--format=commit %h %s")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// capText cuts s to n bytes at a line, saying so.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], '\n')
	if cut < n/2 {
		cut = n
	}
	return strings.ToValidUTF8(s[:cut], "") + "\n… (cut)"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// retryRequest is the bounded retry after a malformed reply: the same
// conversation, the reply, and the problem named.
func retryRequest(req llm.Request, reply string, perr error) llm.Request {
	r := req
	r.Messages = append(slices.Clone(req.Messages),
		llm.Message{Role: "assistant", Content: reply},
		llm.Message{Role: "user", Content: fmt.Sprintf("That reply does not follow the schema: %v. Reply again with the JSON object only, exactly the keys shown.", perr)})
	return r
}
