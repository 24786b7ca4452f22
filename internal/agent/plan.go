package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/llm"
)

// Plan is the plan artifact (seed 001 §8.1, §18 PlanArtifact): which files
// to change, what to change in each, in what order, and why. cra plan
// writes it; cra solve --plan follows it, its files the tier-0 seeds of
// retrieval (§5.6).
type Plan struct {
	TaskID  string     `json:"task_id,omitempty"`
	Task    string     `json:"task"`
	Summary string     `json:"summary"`
	Steps   []PlanStep `json:"steps"`
}

// PlanStep is one change, in the order the plan gives.
type PlanStep struct {
	File   string `json:"file"`
	Change string `json:"change"`
	Why    string `json:"why"`
}

// maxPlanSteps bounds a plan: a small model's plan longer than this is
// not a plan one solve run can follow.
const maxPlanSteps = 30

// Validate checks a plan: a task, at least one step, and every step a
// repository path, a change and a reason.
func (p *Plan) Validate() error {
	var problems []string
	if strings.TrimSpace(p.Task) == "" {
		problems = append(problems, "no task")
	}
	if len(p.Steps) == 0 {
		problems = append(problems, "no steps: name at least one file to change")
	}
	if len(p.Steps) > maxPlanSteps {
		problems = append(problems, fmt.Sprintf("%d steps: at most %d", len(p.Steps), maxPlanSteps))
	}
	for i, s := range p.Steps {
		n := i + 1
		if err := edit.ValidPath(s.File); err != nil {
			problems = append(problems, fmt.Sprintf("step %d: %v", n, err))
		}
		if strings.TrimSpace(s.Change) == "" {
			problems = append(problems, fmt.Sprintf("step %d (%s): no change", n, s.File))
		}
		if strings.TrimSpace(s.Why) == "" {
			problems = append(problems, fmt.Sprintf("step %d (%s): no why", n, s.File))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid plan: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Files returns the plan's files in step order, once each.
func (p *Plan) Files() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.Steps {
		if !seen[s.File] {
			seen[s.File] = true
			out = append(out, s.File)
		}
	}
	return out
}

// ParsePlanReply reads the reasoning model's plan, a JSON object
// {"summary": …, "steps": [{"file", "change", "why"}]}, for task, and
// validates it. Paths are normalised the way edit paths are.
func ParsePlanReply(reply, task string) (*Plan, error) {
	raw, err := llm.ExtractJSON(reply)
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("plan JSON: %w", err)
	}
	p.Task = task
	p.TaskID = ""
	p.normalize()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *Plan) normalize() {
	p.Task = strings.TrimSpace(p.Task)
	p.Summary = trimLines(p.Summary)
	for i := range p.Steps {
		s := &p.Steps[i]
		s.File = strings.TrimSpace(strings.Trim(strings.TrimSpace(s.File), "`"))
		s.File = strings.ReplaceAll(s.File, "\\", "/")
		for strings.HasPrefix(s.File, "./") {
			s.File = s.File[2:]
		}
		s.Change = trimLines(s.Change)
		s.Why = trimLines(s.Why)
	}
}

// trimLines trims a field and the trailing blanks of its lines, which
// Markdown does not keep.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// Markdown renders the plan as the file a person reads and edits;
// ParsePlanMarkdown reads it back.
func (p *Plan) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Plan: %s\n\n", FirstLine(p.Task, 80))
	id := ""
	if p.TaskID != "" {
		id = " · task " + p.TaskID
	}
	fmt.Fprintf(&b, "<!-- cra plan%s · Edit freely: 'cra solve --plan FILE' reads the Task, the Summary and the numbered steps, each with its **Change:** and **Why:**. -->\n\n", id)
	fence := "```"
	for strings.Contains(p.Task, fence) {
		fence += "`"
	}
	fmt.Fprintf(&b, "## Task\n\n%stext\n%s\n%s\n\n", fence, p.Task, fence)
	fmt.Fprintf(&b, "## Summary\n\n%s\n\n## Steps\n", escapeMarkdown(p.Summary))
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "\n### %d. `%s`\n\n**Change:** %s\n\n**Why:** %s\n", i+1, s.File, escapeMarkdown(s.Change), escapeMarkdown(s.Why))
	}
	return b.String()
}

// escapeMarkdown keeps field text from opening a heading or a field of
// its own: such lines get a backslash, which ParsePlanMarkdown removes.
func escapeMarkdown(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		t := strings.TrimLeft(l, " \t")
		_, change := cutField(t, "Change")
		_, why := cutField(t, "Why")
		if change || why || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "\\") || strings.HasPrefix(t, "<!--") {
			lines[i] = l[:len(l)-len(t)] + "\\" + t
		}
	}
	return strings.Join(lines, "\n")
}

func unescapeMarkdown(l string) string {
	t := strings.TrimLeft(l, " \t")
	if strings.HasPrefix(t, "\\") {
		return l[:len(l)-len(t)] + t[1:]
	}
	return l
}

var (
	stepHeading = lazyre.New(`^###\s+(\d+)[.)]?\s+(.*?)\s*$`)
	taskIDNote  = lazyre.New(`cra plan · task ([A-Za-z0-9._-]+) ·`)
)

// PlanFormatError is a plan file that cannot be read, with its line.
type PlanFormatError struct {
	Line int
	Msg  string
}

func (e *PlanFormatError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ParsePlanMarkdown reads the Markdown form of a plan, as Markdown writes
// it and as a person may have edited it: "## Task" (fenced or not),
// "## Summary", "## Steps" with "### N. path" headings, each followed by
// "**Change:**" and "**Why:**" fields (text before the first field is
// the change). Other sections are ignored. The plan is validated.
func ParsePlanMarkdown(text string) (*Plan, error) {
	p := &Plan{}
	if m := taskIDNote().FindStringSubmatch(text); m != nil {
		p.TaskID = m[1]
	}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var (
		section string
		task    []string
		summary []string
		field   *string
		inFence string
		comment bool
	)
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if inFence != "" {
			if t == inFence {
				inFence = ""
				continue
			}
		} else {
			if comment {
				if strings.Contains(t, "-->") {
					comment = false
				}
				continue
			}
			if strings.HasPrefix(t, "<!--") {
				comment = !strings.Contains(t, "-->")
				continue
			}
			if section == "task" && strings.HasPrefix(t, "```") {
				inFence = strings.TrimRight(t, "abcdefghijklmnopqrstuvwxyz")
				continue
			}
			if h, ok := strings.CutPrefix(t, "## "); ok {
				section, field = strings.ToLower(strings.TrimSpace(h)), nil
				continue
			}
			if strings.HasPrefix(t, "# ") {
				section, field = "", nil
				continue
			}
		}
		switch section {
		case "task":
			task = append(task, l)
			continue
		case "summary":
			summary = append(summary, unescapeMarkdown(l))
			continue
		case "steps":
		default:
			continue
		}
		if inFence == "" {
			if m := stepHeading().FindStringSubmatch(t); m != nil {
				p.Steps = append(p.Steps, PlanStep{File: headingPath(m[2])})
				field = &p.Steps[len(p.Steps)-1].Change
				continue
			}
			if strings.HasPrefix(t, "#") {
				return nil, &PlanFormatError{i + 1, fmt.Sprintf("%q: a step heading is '### N. path/to/file'", t)}
			}
		}
		if len(p.Steps) == 0 {
			if t != "" {
				return nil, &PlanFormatError{i + 1, "text under ## Steps before the first '### 1. path' heading"}
			}
			continue
		}
		s := &p.Steps[len(p.Steps)-1]
		if inFence == "" {
			if rest, ok := cutField(t, "Change"); ok {
				field = &s.Change
				l = rest
			} else if rest, ok := cutField(t, "Why"); ok {
				field = &s.Why
				l = rest
			}
		}
		*field += unescapeMarkdown(l) + "\n"
	}
	p.Task = strings.Join(task, "\n")
	p.Summary = strings.Join(summary, "\n")
	p.normalize()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// headingPath is the path of a step heading: `path` and what follows, or
// its first word.
func headingPath(h string) string {
	h = strings.TrimLeft(h, "*")
	if rest, ok := strings.CutPrefix(h, "`"); ok {
		if i := strings.IndexByte(rest, '`'); i >= 0 {
			return rest[:i]
		}
		return rest
	}
	if f := strings.Fields(h); len(f) > 0 {
		return strings.Trim(f[0], "*`")
	}
	return ""
}

// cutField recognises "**Name:** text" (also "Name: text", "**Name**: text").
func cutField(t, name string) (string, bool) {
	for _, prefix := range []string{"**" + name + ":**", "**" + name + "**:", name + ":"} {
		if rest, ok := strings.CutPrefix(t, prefix); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// LoadPlan reads a plan file: JSON when its name ends in .json, the
// Markdown form otherwise.
func LoadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("plan %s does not exist: write one with 'cra plan \"<task>\"' (it says where it saved it), or check the path", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	var p *Plan
	if strings.EqualFold(filepath.Ext(path), ".json") {
		p = &Plan{}
		if err := json.Unmarshal(data, p); err != nil {
			line := 1
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line += bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			}
			return nil, fmt.Errorf("plan %s:%d: not valid plan JSON (%v): fix it, or pass the plan's Markdown file instead, which 'cra plan' writes beside it", path, line, err)
		}
		p.normalize()
		err = p.Validate()
	} else {
		p, err = ParsePlanMarkdown(string(data))
	}
	if err != nil {
		var fe *PlanFormatError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("plan %s:%d: %s", path, fe.Line, fe.Msg)
		}
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// SavePlan writes the plan's Markdown to path and its JSON beside it
// (the same name with .json), each atomically, and returns the JSON
// file's path.
func SavePlan(path string, p *Plan) (string, error) {
	if err := CheckPlanPath(path); err != nil {
		return "", err
	}
	jsonPath := PlanJSONPath(path)
	if err := atomicfile.Write(path, []byte(p.Markdown()), 0o644); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", err
	}
	if err := atomicfile.Write(jsonPath, append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	return jsonPath, nil
}

// PlanJSONPath is where SavePlan puts the JSON of a plan saved at path.
func PlanJSONPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".json"
}

// CheckPlanPath reports, before a plan is made, whether SavePlan can
// write path and its JSON: neither is a directory, and their directory
// exists or can be made, and takes a file. It creates that directory.
func CheckPlanPath(path string) error {
	jsonPath := PlanJSONPath(path)
	if jsonPath == path {
		return fmt.Errorf("plan file %s: the Markdown form needs a name not ending in .json", path)
	}
	for _, f := range []string{path, jsonPath} {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			return fmt.Errorf("plan file %s is a directory: name a file, or move the directory", f)
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("plan file %s: cannot make its directory: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".cra-plan-check*")
	if err != nil {
		return fmt.Errorf("plan file %s: its directory takes no file: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// FirstLine is s's first line, trimmed and cut to at most n bytes on a
// UTF-8 boundary, with "…" when cut.
func FirstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
