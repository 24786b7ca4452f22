package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cra-dev/cra/internal/fleet/runner"
	"github.com/cra-dev/cra/internal/world"
)

// maxReportChars bounds a report's output and need.
const maxReportChars = 2000

// The statuses of the report tool: an agent's own steps (DESIGN.md,
// "Trust"), and event for a line of what it did.
const reportEvent = "event"

var reportStatuses = []string{string(world.StatusActive), string(world.StatusFinish), string(world.StatusFailed), reportEvent}

func (s *Server) runSpecs() []spec {
	return []spec{
		{tool: "report", fields: []field{
			{name: "status", kind: kindString, required: true, enum: reportStatuses, example: "finish", what: "active, finish, failed or event",
				desc:  "active: you started; finish: you are done (the recycler then reviews the run); failed: you cannot go on without a person (give need); event: a line of what you did.",
				check: checkStatus},
			{name: "output", kind: kindString, max: maxReportChars, desc: "One line: what you did, or the outcome."},
			{name: "need", kind: kindString, max: maxReportChars, desc: "With failed: what a person must do for the task to go on."},
			{name: "source", kind: kindString, enum: []string{"", string(world.SourceBash), string(world.SourceFile), string(world.SourceChrome), string(world.SourceAPI)},
				desc: "With event: where the event comes from (default bash)."}}},
		{tool: "ask_person", fields: []field{
			{name: "question", kind: kindString, required: true, max: maxReportChars, example: "which of the two APIs should stay?",
				desc: "What a person must answer or do for you to go on, self-contained: they read it without your context."},
			{name: "output", kind: kindString, max: maxReportChars, desc: "One line: what you did and found so far."}}},
	}
}

// checkStatus refuses, with its own reason, the steps no agent gives.
func checkStatus(v string) error {
	switch world.Status(v) {
	case world.StatusVerified, world.StatusRetry:
		return fmt.Errorf("%s is not an agent's to give: only the recycler, Level 1 and 2 and a person verify or retry a task; report finish (or failed with a need) and the review decides", v)
	}
	return nil
}

// addRun registers the tools of a board run: they report on the run's
// own task, through the processor's endpoint, with the run's token.
func (s *Server) addRun() {
	sp := map[string]spec{}
	for _, x := range s.runSpecs() {
		sp[x.tool] = x
	}
	addTool(s, toolDef{name: "report", title: "Report on your task to cra", writes: true,
		desc: `Tell cra, which started you on this task, where you are: active when you start, finish when the task is done (a review of your work follows), failed with a need when you cannot go on without a person, or an event line for something worth recording (tests run, a file changed). It acts on your own task only; cra's reviewer, not you, decides whether the task is verified or retried.`},
		sp["report"], s.report)
	addTool(s, toolDef{name: "ask_person", title: "Ask a person and stop", writes: true,
		desc: `Stop work on your task and ask a person a question or for an action you cannot take yourself (a decision, a credential, access). The task is blocked with your question as its need and a person is notified; the task is run again with their answer. Use it rather than guessing when the task cannot be done right without them.`},
		sp["ask_person"], s.askPerson)
}

type reportInput struct {
	Status string `json:"status"`
	Output string `json:"output"`
	Need   string `json:"need"`
	Source string `json:"source"`
}

// ReportOutput is the world-log line a report wrote.
type ReportOutput struct {
	Line string `json:"line"`
}

func (s *Server) report(ctx context.Context, in reportInput, _ call) (reply[ReportOutput], error) {
	rep := runner.Report{ID: s.opts.TaskID, Output: strings.TrimSpace(in.Output)}
	switch in.Status {
	case reportEvent:
		if rep.Output == "" {
			return reply[ReportOutput]{}, (&argError{tool: "report", field: "output", problem: "empty with event", fix: "say in one line what happened"}).rpc()
		}
		rep.Kind, rep.Source = world.KindEvent, world.Source(in.Source)
		if rep.Source == "" {
			rep.Source = world.SourceBash
		}
	default:
		rep.Kind, rep.Status, rep.Need = world.KindAgent, world.Status(in.Status), strings.TrimSpace(in.Need)
		if rep.Status == world.StatusFailed && rep.Need == "" {
			return reply[ReportOutput]{}, (&argError{tool: "report", field: "need", problem: "empty with failed", fix: "say what a person must do for the task to go on (or ask with ask_person)"}).rpc()
		}
	}
	return s.send(ctx, rep)
}

type askInput struct {
	Question string `json:"question"`
	Output   string `json:"output"`
}

func (s *Server) askPerson(ctx context.Context, in askInput, _ call) (reply[ReportOutput], error) {
	out := strings.TrimSpace(in.Output)
	if out == "" {
		out = "asked a person: " + clipText(firstLine(in.Question), 200)
	}
	return s.send(ctx, runner.Report{Kind: world.KindAgent, Status: world.StatusFailed, ID: s.opts.TaskID, Output: out, Need: strings.TrimSpace(in.Question)})
}

// send sends rep to the run's starter, as 'cra log agent' does inside a
// run: the endpoint refuses a wrong token, another task, and any step
// the lifecycle forbids.
func (s *Server) send(ctx context.Context, rep runner.Report) (reply[ReportOutput], error) {
	var r reply[ReportOutput]
	if s.opts.RunToken == "" || s.opts.ReportURL == "" {
		return r, fmt.Errorf("no run token ($%s and $%s are not set): reports go through the run cra started, so this server must be started by the agent of a board run", runner.EnvRunToken, runner.EnvReportURL)
	}
	e, err := runner.Send(ctx, s.opts.ReportURL, s.opts.RunToken, rep)
	var re *runner.ReportError
	if errors.As(err, &re) {
		return r, fmt.Errorf("cra refused the report: %s", re.Message)
	}
	if err != nil {
		return r, err
	}
	line, err := world.Format(*e)
	if err != nil {
		return r, err
	}
	r.out, r.text = ReportOutput{Line: line}, "logged: "+line+"\n"
	r.summary = "sent " + string(e.Kind) + ":" + string(e.Status) + string(e.Source) + " " + clipText(e.Output, 80)
	return r, nil
}
