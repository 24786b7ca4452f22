package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Task kinds: the two shapes of ../shared/eval.
const (
	kindCommit   = "commit"   // a real commit: task text = message, checkout = parent
	kindSWEBench = "swebench" // a SWE-bench instance: problem_statement at base_commit
)

// Task is one line of an evaluation set, normalised over its shape.
type Task struct {
	Kind string
	// ID is the commit hash or the SWE-bench instance_id.
	ID   string
	Repo string // owner/name
	// Checkout is the commit indexed and searched: the parent of a commit
	// task, a SWE-bench base_commit.
	Checkout string
	// Commit is the change itself (commit tasks); its diff against
	// Checkout gives the gold files' changed lines.
	Commit string
	// Text is the task as a user would type it. SWE-bench hints_text is
	// never read.
	Text string
	// Gold lists the files to find: gold_existing_at_parent for commit
	// tasks (gold_files when absent), gold_files for SWE-bench.
	Gold []string
	// Patch is the SWE-bench gold patch, the source of the changed lines.
	Patch string
}

// taskLine holds every field of either shape that the harness reads.
// Deliberately no HintsText: hints are not part of the task.
type taskLine struct {
	Repo string `json:"repo"`
	// commit sets
	Commit           string    `json:"commit"`
	Parent           string    `json:"parent"`
	Message          string    `json:"message"`
	GoldExisting     *[]string `json:"gold_existing_at_parent"`
	GoldFiles        []string  `json:"gold_files"`
	InstanceID       string    `json:"instance_id"`
	BaseCommit       string    `json:"base_commit"`
	ProblemStatement string    `json:"problem_statement"`
	Patch            string    `json:"patch"`
}

// readTasksFile reads a JSONL set from a file.
func readTasksFile(path string) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tasks, err := readTasks(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tasks, nil
}

// readTasks reads JSONL tasks of either shape, one object a line; blank
// lines are skipped.
func readTasks(r io.Reader) ([]Task, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var out []Task
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l taskLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		t, err := l.task()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (l *taskLine) task() (Task, error) {
	if l.Repo == "" {
		return Task{}, fmt.Errorf("no repo field")
	}
	switch {
	case l.BaseCommit != "" || l.InstanceID != "":
		if l.BaseCommit == "" || l.ProblemStatement == "" {
			return Task{}, fmt.Errorf("swebench task %s: base_commit and problem_statement are required", l.InstanceID)
		}
		id := l.InstanceID
		if id == "" {
			id = l.Repo + "@" + short(l.BaseCommit)
		}
		return Task{Kind: kindSWEBench, ID: id, Repo: l.Repo, Checkout: l.BaseCommit,
			Text: l.ProblemStatement, Gold: l.GoldFiles, Patch: l.Patch}, nil
	case l.Parent != "":
		if l.Commit == "" || l.Message == "" {
			return Task{}, fmt.Errorf("commit task: commit, parent and message are required")
		}
		gold := l.GoldFiles
		if l.GoldExisting != nil {
			gold = *l.GoldExisting
		}
		return Task{Kind: kindCommit, ID: l.Commit, Repo: l.Repo, Checkout: l.Parent, Commit: l.Commit,
			Text: l.Message, Gold: gold}, nil
	}
	return Task{}, fmt.Errorf("unknown shape: want parent+message (a commit) or base_commit+problem_statement (SWE-bench)")
}

func short(hash string) string {
	if len(hash) > 10 {
		return hash[:10]
	}
	return hash
}

// Scope prefixes. A subject loses its first "type(scope)!: ", "scope: " or
// "`scope`: " prefix; body lines lose a "type(scope): " prefix after an
// optional bullet, the form squash merges copy the branch's commit subjects
// in ("* feat(context): add Scheme method"). Body lines without a
// parenthesised scope ("Refs: #12", "Co-authored-by: …") are left alone.
var (
	subjectScope = regexp.MustCompile("^\\s*(?:`[^`\\n]+`|[\\w./-]+(?:\\([^)\\n]*\\))?!?)\\s*:\\s+")
	bodyScope    = regexp.MustCompile(`^(\s*(?:[*-]\s+)?)[\w-]+\([^)\n]*\)!?:\s+`)
)

// stripScope removes the scope prefixes of a commit message, which often
// name the file the commit touches ("fix(context): …" in gin names
// context.go): the eval README asks for the score without them too.
func stripScope(msg string) string {
	subject, body, hasBody := strings.Cut(msg, "\n")
	if loc := subjectScope.FindStringIndex(subject); loc != nil && strings.TrimSpace(subject[loc[1]:]) != "" {
		subject = subject[loc[1]:]
	}
	if !hasBody {
		return subject
	}
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		if m := bodyScope.FindStringSubmatchIndex(l); m != nil && strings.TrimSpace(l[m[1]:]) != "" {
			lines[i] = l[:m[3]] + l[m[1]:]
		}
	}
	return subject + "\n" + strings.Join(lines, "\n")
}
