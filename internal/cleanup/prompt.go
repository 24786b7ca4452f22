package cleanup

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/llm"
)

// The bounds of the calls' inputs (DESIGN.md principle 6).
const (
	// MaxIndexChars is how much of _index.md Call 1 reads.
	MaxIndexChars = 12000
	// MaxDocs is how many knowledge documents Call 1 sees summaries of,
	// and MaxSummaryChars the length of each summary.
	MaxDocs         = 60
	MaxSummaryChars = 240
	// MaxTaskLines is how many pending tasks each call sees: Call 2 sees
	// the pre-pass groups first, so past this many the pre-pass narrows
	// what it sees.
	MaxTaskLines = 150
)

// The context windows the calls ask for (Ollama's num_ctx), whatever
// window the supervisor model has set: Call 1's bounded input (about 9k
// tokens at most) and its 2,048-token reply fit in 16k, Call 2's (about
// 4k) and its 1,024 in 8k.
const (
	RewriteWindow  = 16384
	CollapseWindow = 8192
)

const rewriteSystem = `You are the cleanup pass of a coding agent's knowledge store. You rewrite the project's knowledge index and its todo list so that nothing is said twice, and you add the todos that are missing.

Reply with exactly these two blocks and nothing else:
<WORLD_MODEL>
the rewritten index as clean Markdown under ## sections (such as ## Project, ## Architecture, ## Conventions, ## Decisions, ## Open questions); each fact once; no malformed lines
</WORLD_MODEL>
<TODOS>
one todo per line: -HIGH: text, -MEDIUM: text, -LOW: text, or -DONE: text for one that is done
</TODOS>

In TODOS, merge near-duplicates into one canonical line per intent and sort by priority (HIGH, MEDIUM, LOW, DONE). Then look at the index and the todos for gaps, inconsistencies or missing work that would improve the project, and append each as a new todo line.`

const collapseSystem = `You find duplicate tasks on a task board. Tasks that ask for the same thing are one group, whatever their wording. For each group of two or more tasks write one line:
canonical text | keep_id | drop_id1,drop_id2
The canonical text is one line that says what the whole group asks for; keep_id is the task to keep; the drop ids are the group's other tasks. Use only ids from the list, and each id at most once. Write no header and no explanation. If no tasks are duplicates, write NONE.`

// doc is a knowledge document's summary for Call 1.
type doc struct{ rel, summary string }

// readKnowledge reads _index.md and the summaries of the documents under
// dir (docs/knowledge): each document's title and its first lines.
func readKnowledge(root, dir string) (index string, docs []doc, err error) {
	// A committed link on the store's path would lead the index's write
	// out of the repository (knowledge.CheckDir, which cleanup may not
	// import).
	p := root
	for _, part := range strings.Split(KnowledgeDir, "/") {
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, fmt.Errorf("%s is a symbolic link, which could lead out of the repository: replace it with a directory", p)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, IndexFile))
	switch {
	case err == nil:
		index = string(data)
	case !os.IsNotExist(err):
		return "", nil, err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipAll
			}
			return err
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".md") || d.Name() == IndexFile {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		docs = append(docs, doc{rel: filepath.ToSlash(rel), summary: summarize(string(text))})
		return nil
	})
	return index, docs, err
}

// summarize is a document's title and first lines of text, its status
// kept (seed 003's format: title, _Last updated by_, _Status_, Rules …).
func summarize(text string) string {
	var title, status string
	var body []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case title == "" && strings.HasPrefix(l, "# "):
			title = strings.TrimSpace(l[2:])
		case strings.HasPrefix(strings.ToLower(l), "_status:"):
			status = strings.Trim(l[len("_status:"):], "_ ")
		case strings.HasPrefix(l, "_"), strings.HasPrefix(l, "#"):
		default:
			body = append(body, l)
		}
	}
	s := title
	if status != "" {
		s += " (" + status + ")"
	}
	if len(body) > 0 {
		s += ": " + strings.Join(body, " ")
	}
	return clip(strings.TrimSpace(s), MaxSummaryChars)
}

// todoPriority is a task's priority as a TODOS line's (seed 000's
// HIGH/MEDIUM/LOW).
func todoPriority(p board.Priority) string {
	switch p {
	case board.Critical, board.High:
		return PriorityHigh
	case board.Low:
		return PriorityLow
	}
	return PriorityMedium
}

// boardPriority is a TODOS priority as a task's.
func boardPriority(p string) board.Priority {
	switch p {
	case PriorityHigh:
		return board.High
	case PriorityLow:
		return board.Low
	}
	return board.Normal
}

// rewritePrompt is Call 1's request: the index, the documents'
// summaries, the pending tasks as -PRIORITY: text and today's date.
func rewritePrompt(index string, docs []doc, pending []*board.Task, today string) llm.Request {
	var b strings.Builder
	fmt.Fprintf(&b, "Today is %s.\n\n", today)
	b.WriteString("## CURRENT INDEX (docs/knowledge/_index.md)\n")
	switch index = strings.TrimSpace(index); {
	case index == "":
		b.WriteString("(empty)\n")
	case len(index) > MaxIndexChars:
		b.WriteString(strings.ToValidUTF8(index[:MaxIndexChars], "") + "\n… (cut)\n")
	default:
		b.WriteString(index + "\n")
	}
	b.WriteString("\n## KNOWLEDGE DOCUMENTS\n")
	if len(docs) == 0 {
		b.WriteString("(none)\n")
	}
	for i, d := range docs {
		if i == MaxDocs {
			fmt.Fprintf(&b, "… and %d more\n", len(docs)-MaxDocs)
			break
		}
		fmt.Fprintf(&b, "- %s — %s\n", d.rel, d.summary)
	}
	b.WriteString("\n## TODOS (the pending tasks)\n")
	if len(pending) == 0 {
		b.WriteString("(none)\n")
	}
	tasks := slices.Clone(pending)
	slices.SortStableFunc(tasks, func(x, y *board.Task) int {
		return strings.Compare(rankTodo(todoPriority(x.Priority)), rankTodo(todoPriority(y.Priority)))
	})
	for i, t := range tasks {
		if i == MaxTaskLines {
			fmt.Fprintf(&b, "… and %d more\n", len(tasks)-MaxTaskLines)
			break
		}
		fmt.Fprintf(&b, "-%s: %s\n", todoPriority(t.Priority), t.Title)
	}
	req := llm.UserPrompt(rewriteSystem, b.String())
	req.MaxTokens, req.ContextWindow = RewriteMaxTokens, RewriteWindow
	return req
}

func rankTodo(p string) string {
	return map[string]string{PriorityHigh: "0", PriorityMedium: "1", PriorityLow: "2"}[p]
}

// collapseLines orders the pending tasks for Call 2: the pre-pass groups
// first, each group's tasks together, then the rest, at most
// MaxTaskLines.
func collapseLines(pending []*board.Task, groups []Group) []*board.Task {
	byID := map[string]*board.Task{}
	for _, t := range pending {
		byID[t.ID] = t
	}
	var out []*board.Task
	seen := map[string]bool{}
	for _, id := range groupedIDs(groups) {
		if t := byID[id]; t != nil && !seen[id] {
			out, seen[id] = append(out, t), true
		}
	}
	for _, t := range pending {
		if !seen[t.ID] {
			out, seen[t.ID] = append(out, t), true
		}
	}
	return out[:min(len(out), MaxTaskLines)]
}

// collapsePrompt is Call 2's request: the candidate groups, then the
// tasks as id | bucket | type | content (bucket is the task's kind).
func collapsePrompt(shown []*board.Task, groups []Group) llm.Request {
	var b strings.Builder
	on := map[string]bool{}
	for _, t := range shown {
		on[t.ID] = true
	}
	if len(groups) > 0 {
		b.WriteString("Candidate groups by shared words (check each; they may not be duplicates, and other tasks may be):\n")
		for _, g := range groups {
			ids := slices.DeleteFunc(slices.Clone(g.IDs), func(id string) bool { return !on[id] })
			if len(ids) > 1 {
				fmt.Fprintf(&b, "- %s\n", strings.Join(ids, ", "))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("Tasks (id | bucket | type | content):\n")
	for _, t := range shown {
		typ := t.Type
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(&b, "%s | %s | %s | %s\n", t.ID, t.Kind, typ, t.Title)
	}
	req := llm.UserPrompt(collapseSystem, b.String())
	req.MaxTokens, req.ContextWindow = CollapseMaxTokens, CollapseWindow
	return req
}

// retryPrompt asks again after a malformed reply, naming the problem.
func retryPrompt(req llm.Request, reply string, perr error) llm.Request {
	next := req
	next.Messages = append(slices.Clone(req.Messages),
		llm.Message{Role: "assistant", Content: clip(reply, 4000)},
		llm.Message{Role: "user", Content: fmt.Sprintf("Your reply does not follow the format: %v.\nReply again in exactly the format asked, and nothing else.", perr)})
	return next
}
