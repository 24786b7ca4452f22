package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/world"
)

// The bounds of the board tools.
const (
	defaultTasks    = 50
	maxTasks        = 200
	maxTitleChars   = 200
	maxNeedChars    = 2000
	maxDescChars    = 8000
	maxShownEntries = 30
	maxShownRuns    = 10
	maxShownText    = 300
	maxShownLong    = 2000
)

// SourceMCP is the Source of a task a person's agent added through the
// MCP server: the board says who made each task (board.Task.Source).
const SourceMCP = "mcp"

func (s *Server) boardSpecs() []spec {
	var folders []string
	for _, f := range board.Folders() {
		folders = append(folders, string(f))
	}
	return []spec{
		{tool: "task_list", fields: []field{
			{name: "folder", kind: kindString, enum: append([]string{""}, folders...), desc: "Only the tasks in this folder (pending, in-progress, completed, failed, completed-finalized, failed-blocked)."},
			{name: "limit", kind: kindInt, min: 1, max: maxTasks, def: defaultTasks, desc: "How many tasks to return."}}},
		{tool: "task_show", fields: []field{
			{name: "id", kind: kindString, required: true, max: 64, desc: "The task's id, as task_list shows it.", example: "t-1a2b3c4d",
				check: board.CheckID, what: "a task id"}}},
		{tool: "task_add", fields: []field{
			{name: "title", kind: kindString, required: true, max: maxTitleChars, desc: "What to do, in one line.", example: "retry the upload when the network drops"},
			{name: "need", kind: kindString, max: maxNeedChars, desc: "The success criteria: what must be true when the task is done."},
			{name: "description", kind: kindString, max: maxDescChars, desc: "What to do, in as many lines as it takes."},
			{name: "priority", kind: kindString, enum: []string{"", string(board.Critical), string(board.High), string(board.Normal), string(board.Low)}, desc: "The task's priority (default normal)."}}},
	}
}

// addBoard registers the board's tools over Options.Board: task_list and
// task_show, and task_add for a person's agent (not in a board run, not
// read-only).
func (s *Server) addBoard() {
	sp := map[string]spec{}
	for _, x := range s.boardSpecs() {
		sp[x.tool] = x
	}
	addTool(s, toolDef{name: "task_list", title: "The task board",
		desc: `List the tasks of this repository's cra board: id, title, folder (pending, in-progress, completed, failed, completed-finalized = verified, failed-blocked = waiting for a person), priority, runs and success criteria. Use it to see what work is planned or in flight before starting or adding any.`},
		sp["task_list"], s.taskList)
	addTool(s, toolDef{name: "task_show", title: "One task with its history",
		desc: `Show one task of the board: its description and success criteria, its latest world-log lines (starts, runs, finishes, reviews, a person's answers), its runs with their outcomes, and the latest review's verdict and note.`},
		sp["task_show"], s.taskShow)
	if s.opts.TaskID != "" || s.opts.ReadOnly {
		// A board run writes only through its token, and only about its
		// own task (report, ask_person): its agent adds no tasks. A
		// read-only server writes nothing.
		return
	}
	addTool(s, toolDef{name: "task_add", title: "Add a task to the board", writes: true,
		desc: `Add a task to the board's pending folder, for cra's processor to run with an agent: a one-line title, the success criteria, and a description. Use it when the person you work for asks you to queue work, or for follow-up work found on the way that is out of the current task's scope. The task is logged as added by an agent over MCP.`},
		sp["task_add"], s.taskAdd)
}

type taskListInput struct {
	Folder string `json:"folder"`
	Limit  int    `json:"limit"`
}

// TaskLine is one task of a list.
type TaskLine struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Folder   string `json:"folder"`
	Priority string `json:"priority"`
	Kind     string `json:"kind"`
	Runs     int    `json:"runs"`
	Need     string `json:"need,omitempty"`
	Source   string `json:"source,omitempty"`
}

// TaskListOutput is the result of task_list.
type TaskListOutput struct {
	Tasks []TaskLine `json:"tasks"`
	// More counts the tasks past the limit.
	More int `json:"more"`
	// Problems are task files the board could not read.
	Problems []string `json:"problems,omitempty"`
}

func (s *Server) taskList(ctx context.Context, in taskListInput, _ call) (reply[TaskListOutput], error) {
	var r reply[TaskListOutput]
	l, err := s.opts.Board.List(ctx, board.Folder(in.Folder))
	if err != nil {
		return r, err
	}
	out := TaskListOutput{Tasks: []TaskLine{}, More: max(0, len(l.Tasks)-in.Limit), Problems: l.Problems[:min(len(l.Problems), 20)]}
	var b strings.Builder
	for _, t := range l.Tasks[:min(len(l.Tasks), in.Limit)] {
		line := TaskLine{ID: t.ID, Title: clipText(t.Title, maxTitleChars), Folder: string(t.Folder), Priority: string(t.Priority),
			Kind: string(t.Kind), Runs: t.Runs, Need: clipText(firstLine(t.Need), maxShownText), Source: t.Source}
		out.Tasks = append(out.Tasks, line)
		fmt.Fprintf(&b, "%s [%s] %s (%s, %d runs)", line.ID, line.Folder, line.Title, line.Priority, line.Runs)
		if line.Need != "" {
			fmt.Fprintf(&b, " | need: %s", line.Need)
		}
		b.WriteByte('\n')
	}
	if len(l.Tasks) == 0 {
		b.WriteString("no tasks\n")
	}
	if out.More > 0 {
		fmt.Fprintf(&b, "(%d more: pass a folder or a larger limit)\n", out.More)
	}
	r.out, r.text = out, b.String()
	r.summary = fmt.Sprintf("%s listed", plural(len(out.Tasks), "task"))
	return r, nil
}

type taskShowInput struct {
	ID string `json:"id"`
}

// TaskShowOutput is the result of task_show.
type TaskShowOutput struct {
	TaskLine
	Description    string      `json:"description,omitempty"`
	Notes          string      `json:"notes,omitempty"`
	WaitsForPerson bool        `json:"waits_for_person"`
	Log            []LogLine   `json:"log"`
	RunsDone       []RunLine   `json:"runs_done"`
	Review         *ReviewLine `json:"review,omitempty"`
	// Omitted counts the log lines and runs left out, oldest first.
	Omitted map[string]int `json:"omitted,omitempty"`
}

// LogLine is a world-log entry of a task.
type LogLine struct {
	Time  string `json:"time"`
	Kind  string `json:"kind"` // agent:STATUS or event:SOURCE
	Text  string `json:"text"`
	Need  string `json:"need,omitempty"`
	Entry string `json:"-"`
}

// RunLine is a run of a task.
type RunLine struct {
	N       int    `json:"n"`
	Profile string `json:"profile,omitempty"`
	Outcome string `json:"outcome,omitempty"`
}

// ReviewLine is the recycler's latest verdict on a task.
type ReviewLine struct {
	Run            int    `json:"run"`
	Classification string `json:"classification"`
	Need           string `json:"need,omitempty"`
	Note           string `json:"note,omitempty"`
}

func (s *Server) taskShow(ctx context.Context, in taskShowInput, _ call) (reply[TaskShowOutput], error) {
	var r reply[TaskShowOutput]
	d, err := s.opts.Board.Show(ctx, in.ID)
	if err != nil {
		return r, err
	}
	t := d.Task
	out := TaskShowOutput{
		TaskLine: TaskLine{ID: t.ID, Title: clipText(t.Title, maxTitleChars), Folder: string(d.Folder), Priority: string(t.Priority),
			Kind: string(t.Kind), Runs: t.Runs, Need: clipText(t.Need, maxShownLong), Source: t.Source},
		Description: clipText(t.Description, maxShownLong), Notes: clipText(t.Notes, maxShownLong), WaitsForPerson: d.WaitsForPerson,
		Log: []LogLine{}, RunsDone: []RunLine{}, Omitted: map[string]int{},
	}
	entries := d.Entries
	if n := len(entries) - maxShownEntries; n > 0 {
		out.Omitted["log"], entries = n, entries[n:]
	}
	for _, e := range entries {
		kind := "event:" + string(e.Source)
		if e.Kind == world.KindAgent {
			kind = "agent:" + string(e.Status)
		}
		out.Log = append(out.Log, LogLine{Time: e.Time.UTC().Format(time.RFC3339), Kind: kind, Text: clipText(e.Output, maxShownText), Need: clipText(e.Need, maxShownText)})
	}
	runs := d.Runs
	if n := len(runs) - maxShownRuns; n > 0 {
		out.Omitted["runs"], runs = n, runs[n:]
	}
	for _, run := range runs {
		out.RunsDone = append(out.RunsDone, RunLine{N: run.N, Profile: run.Profile, Outcome: clipText(run.Outcome, maxShownText)})
	}
	if len(d.Reviews) > 0 {
		rv := d.Reviews[len(d.Reviews)-1]
		out.Review = &ReviewLine{Run: rv.Run, Classification: string(rv.Classification), Need: clipText(rv.Need, maxShownText),
			Note: clipText(jsonText(rv.Note), maxShownLong)}
	}
	if len(out.Omitted) == 0 {
		out.Omitted = nil
	}
	r.out, r.text = out, jsonText(out)
	r.summary = in.ID + " shown"
	return r, nil
}

type taskAddInput struct {
	Title       string `json:"title"`
	Need        string `json:"need"`
	Description string `json:"description"`
	Priority    string `json:"priority"`
}

// TaskAddOutput is the result of task_add.
type TaskAddOutput struct {
	ID     string `json:"id"`
	Folder string `json:"folder"`
}

func (s *Server) taskAdd(ctx context.Context, in taskAddInput, c call) (reply[TaskAddOutput], error) {
	var r reply[TaskAddOutput]
	t := &board.Task{Title: strings.TrimSpace(in.Title), Need: strings.TrimSpace(in.Need), Description: in.Description,
		Priority: board.Priority(in.Priority), Source: SourceMCP}
	added, err := s.opts.Board.Add(ctx, t)
	var fe *board.FieldError
	if errors.As(err, &fe) {
		// The board's own check (a line break in the title): a malformed
		// call, named as the decoder names its refusals.
		return r, (&argError{tool: "task_add", field: fe.Field, problem: fe.Err, fix: fe.Fix}).rpc()
	}
	if err != nil {
		return r, err
	}
	// The task's own log says who added it (a daemon's API keeps no
	// Source): 'cra task show' lists the line.
	s.logEvent(ctx, added.ID, "added by "+s.caller(c)+" through MCP")
	r.out = TaskAddOutput{ID: added.ID, Folder: string(board.Pending)}
	r.text = fmt.Sprintf("added %s to pending: %s\n", added.ID, added.Title)
	r.summary = fmt.Sprintf("added %s %q by %s", added.ID, clipText(added.Title, 80), s.caller(c))
	return r, nil
}

// caller names who called, for the world log: the board run the server
// serves, or the client's name (a person's agent).
func (s *Server) caller(c call) string {
	if s.opts.TaskID != "" {
		return "the agent of run " + s.opts.Run + " of " + s.opts.TaskID
	}
	name := "an MCP client"
	if c.client != "" {
		name = c.client
	}
	return "a person's agent (" + name + ")"
}
