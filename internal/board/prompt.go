package board

import (
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/world"
)

// Prompt is what an agent is told about its task on one run (issue 13
// item 4): the task's text, the latest note, what the log holds for this
// run (a retry's guidance, a person's answers) and the project knowledge.
type Prompt struct {
	Task *Task
	Run  int
	// Guidance is the output of the latest [agent:retry] entry since the
	// task's previous run: the recycler's or Level 2's advice.
	Guidance string
	// Answers are a person's [event:user] entries since the previous run,
	// oldest first, without the board's own records of edits and moves.
	Answers []string
	// Knowledge is the body of the PROJECT KNOWLEDGE section (seed 003,
	// knowledge.Load); empty leaves the section out.
	Knowledge string
	// Directives are the pending directives, functional first
	// (ActiveDirectives): the ACTIVE DIRECTIVES section, with seed 003's
	// instruction that each must be addressed; none leaves it out.
	Directives []*Task
	// Tools is the body of the TOOLS section: the MCP tools the run's
	// agent has (issue 31); empty leaves it out.
	Tools string
	// Context is the body of the Context section: cra's deterministic
	// context package for the task (issue 30), for an agent that does not
	// retrieve on its own; empty leaves it out.
	Context string
}

// boardEvents start the [event:user] outputs the board writes itself (an
// edit, a move): records, not a person's answer to the agent.
var boardEvents = []string{"edited: ", "moved from "}

// FromLog fills Guidance and Answers from the task's entries, oldest
// first (Board.History), read before the run's own active entry: what
// came after the previous run began.
func (p *Prompt) FromLog(entries []world.Entry) {
	p.Guidance, p.Answers = "", nil
	for _, e := range entries {
		switch {
		case e.Kind == world.KindAgent && e.Status == world.StatusActive:
			p.Guidance, p.Answers = "", nil
		case e.Kind == world.KindAgent && e.Status == world.StatusRetry:
			p.Guidance = guidanceOf(e.Output)
		case e.Kind == world.KindEvent && e.Source == world.SourceUser:
			if !hasAnyPrefix(e.Output, boardEvents) && strings.TrimSpace(e.Output) != "" {
				p.Answers = append(p.Answers, e.Output)
			}
		}
	}
}

// guidanceOf is what a retry entry tells the next run: the recycler's
// and Level 2's advice as written; a person's move or stop as the
// person's reason, without cra's own wording; nothing for a move that
// only says to run it again.
func guidanceOf(output string) string {
	for _, p := range []struct{ prefix, say string }{
		{"moved by a person", "A person sent the task back"},
		{StoppedByPerson, "A person stopped the previous run"},
	} {
		rest, ok := strings.CutPrefix(output, p.prefix)
		if !ok {
			continue
		}
		why := strings.TrimSpace(strings.TrimPrefix(rest, ":"))
		if why == "" || strings.HasPrefix(why, "run again with ") {
			return ""
		}
		return p.say + ": " + why
	}
	return output
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// TaskText is the prompt without its knowledge section: what cra's own
// solve takes as its task, since it selects and injects the knowledge
// itself. The ACTIVE DIRECTIVES section ends it.
func (p *Prompt) TaskText() string {
	var b strings.Builder
	b.WriteString(p.taskPart())
	section(&b, "ACTIVE DIRECTIVES", directivesText(p.Directives))
	section(&b, "TOOLS", p.Tools)
	return b.String()
}

// taskPart is the task's own sections.
func (p *Prompt) taskPart() string {
	var b strings.Builder
	t := p.Task
	fmt.Fprintf(&b, "# %s\n\n", t.Title)
	fmt.Fprintf(&b, "Task %s, run %d.\n", t.ID, p.Run)
	if t.Milestone != "" {
		// Also what knowledge.Load matches design documents by (seed
		// 003: design docs matching the milestone).
		fmt.Fprintf(&b, "Milestone: %s.\n", t.Milestone)
	}
	section(&b, "Description", t.Description)
	section(&b, "Done when", t.Need)
	section(&b, "Latest note", t.Notes)
	section(&b, "Guidance for this run", p.Guidance)
	if len(p.Answers) > 0 {
		var a strings.Builder
		for i, s := range p.Answers {
			if i > 0 {
				a.WriteString("\n\n")
			}
			a.WriteString(s)
		}
		section(&b, "A person's answer", a.String())
	}
	return b.String()
}

// Markdown is the prompt file, runs/<id>/prompt-<N>.md: plain Markdown,
// a title and one ## section per part that has text; PROJECT KNOWLEDGE
// comes before ACTIVE DIRECTIVES, in seed 003's order.
func (p *Prompt) Markdown() string {
	var b strings.Builder
	b.WriteString(p.taskPart())
	section(&b, "PROJECT KNOWLEDGE", p.Knowledge)
	section(&b, "ACTIVE DIRECTIVES", directivesText(p.Directives))
	section(&b, "TOOLS", p.Tools)
	section(&b, "Context", p.Context)
	return b.String()
}

// section writes "## title" and body when body has text.
func section(b *strings.Builder, title, body string) {
	body = strings.TrimSpace(body)
	if body == "" {
		return
	}
	fmt.Fprintf(b, "\n## %s\n\n%s\n", title, body)
}
