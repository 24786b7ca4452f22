// Package run carries out one task run end to end: retrieve, plan or solve
// (seed 001 §8). It is what 'cra retrieve/plan/solve' call and what the
// board's processor will call, so a run is recorded the same way whoever
// starts it:
//
//   - its task id (a new UUID unless the caller gives one, seed 001 §4.4);
//   - the world log's lifecycle (seed 002): plan and solve append start and
//     active before any work, then finish or failed with what a person must
//     do; a standalone retrieval appends one event;
//   - its task_runs row (seed 001 §4.6), finalised whatever happens;
//   - its session database, archived into the raw database and removed at
//     the end (§11.1);
//   - retrieval's model judgments through the workspace's recording
//     gateway, unless the run is deterministic.
//
// Callers pass resolved values (flag > config > error is theirs, seed 001
// §10.2): stages, budget, bounds, the worktree policy. Progress lines go to
// Spec.Progress. An error of the inputs themselves is an *InputError.
package run

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// Spec is what every run takes.
type Spec struct {
	// Task is the task's text; required.
	Task string
	// TaskID names the run; "" makes a new UUID.
	TaskID string
	// Stages are the retrieval stages in order; StageList is how they were
	// written, recorded with the run.
	Stages    []retrieve.Stage
	StageList string
	Budget    retrieve.Budget
	// Deterministic retrieves without the reasoning model's judgments.
	Deterministic bool
	// Progress gets the lines a person watching the run reads (info,
	// notes, warnings); nil discards them.
	Progress io.Writer
	// LeaveOpen ends a run that did its work at finish, for a reviewer to
	// close: the board's runs, which its recycler judges. Without it a
	// run closes itself on its evidence: verified when its plan was
	// written or its validation passed (a run that fails ends failed
	// either way), so no standalone run stays in limbo.
	LeaveOpen bool
	// ExternalLifecycle leaves the world log's lifecycle entries to the
	// caller: the run appends no start, active, finish, failed or
	// verified, while its task_runs row, session archive and records stay.
	// The board's processor sets it for the built-in profile: it logs
	// [agent:active] before it starts the run and [agent:finish] from the
	// run's exit status (issue 13 item 5), under the board task's id, not
	// the run's.
	ExternalLifecycle bool
}

// InputError is a run refused because of its inputs (a flag or config
// value), before anything was recorded.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// NewTaskID returns a random UUID (version 4), the task id of seed 001
// §4.4.
func NewTaskID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// CheckWindow refuses a budget larger than the window configured for the
// model that executes mode (seed 001 §7.2: plan → reasoning, solve →
// coding), before anything is logged or asked.
func CheckWindow(cfg *config.Config, mode string, b retrieve.Budget) error {
	if cfg == nil || cfg.Models == nil {
		return nil
	}
	var w *int
	var role, model, key string
	switch mode {
	case ModePlan:
		w, role, model, key = cfg.Models.ReasoningContextWindow, "reasoning", cfg.Models.Reasoning, "models.reasoning_context_window"
	case ModeSolve:
		w, role, model, key = cfg.Models.CodingContextWindow, "coding", cfg.Models.Coding, "models.coding_context_window"
	}
	if w == nil || *w <= 0 || b.ContextWindow <= *w {
		return nil
	}
	return &InputError{Err: fmt.Errorf("the budget's context window (%d) is larger than the %s model %s reads (%s = %d): "+
		"make it %d or less (--context-window with --reserved-tokens, --budget-config, or [budget] in .clean_room/config.toml), or raise %s",
		b.ContextWindow, role, model, key, *w, *w, key)}
}

// The modes of a run, as the world log and messages name them.
const (
	ModeRetrieve = "retrieve"
	ModePlan     = "plan"
	ModeSolve    = "solve"
)

// DeterministicRetrieval is the line plan and solve print when they
// retrieve without the reasoning model's judgments.
const DeterministicRetrieval = "deterministic retrieval: no model judges the context"

// maxCriteria bounds the task text kept as a run's criteria in the world
// log (DESIGN.md principle 6).
const maxCriteria = 2000

// lifecycle is what the three modes share around their work: the
// workspace's parts, the session, the task_runs row and the world log.
type lifecycle struct {
	ws       *workspace.Workspace
	mode     string
	spec     Spec
	taskID   string
	progress io.Writer
	started  time.Time
	gateway  *llm.Gateway // nil for a deterministic retrieval
	session  *store.SessionDB
	runLog   *agent.RunLog
	judge    *usage // retrieval's model calls; nil when deterministic
	log      *world.Log
	begun    bool // the lifecycle has a start/active entry
	ended    bool // … and its finish or failed entry
}

// open checks the spec and opens what the run needs, up to (not
// including) the lifecycle entry: the models when needModels (seed 001
// §14.1), then the index (§14.2) and the raw database.
func open(ctx context.Context, ws *workspace.Workspace, mode string, spec Spec, needModels bool) (*lifecycle, error) {
	if strings.TrimSpace(spec.Task) == "" {
		return nil, &InputError{Err: retrieve.ErrEmptyTask}
	}
	l := &lifecycle{ws: ws, mode: mode, spec: spec, taskID: spec.TaskID, progress: spec.Progress, started: time.Now()}
	if l.taskID == "" {
		l.taskID = NewTaskID()
	}
	if l.progress == nil {
		l.progress = io.Discard
	}
	if needModels {
		g, err := ws.Gateway(ctx)
		if err != nil {
			return nil, err
		}
		l.gateway = g
	} else if _, _, err := ws.Index(ctx); err != nil {
		return nil, err
	}
	if _, err := ws.Corpus(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// close releases the session of a run that stopped before archiving it.
func (l *lifecycle) close() {
	if l.session != nil {
		l.session.Close()
	}
}

// startRun inserts the run's task_runs row.
func (l *lifecycle) startRun(ctx context.Context, mode, model, planArtifact string) error {
	c, err := l.ws.Corpus(ctx)
	if err != nil {
		return err
	}
	l.runLog, err = agent.StartRun(ctx, c, agent.TaskRun{TaskID: l.taskID, Repo: l.ws.Root, Mode: mode, ExecuteModel: model,
		Budget: l.spec.Budget, Stages: l.spec.StageList, PlanArtifact: planArtifact})
	return err
}

// begin records the run's start in the world log (seed 002): start with
// the task as its criteria, then active. A failure fails the run. With
// Spec.ExternalLifecycle it records nothing, and end and verify follow.
func (l *lifecycle) begin(ctx context.Context) error {
	if l.spec.ExternalLifecycle {
		return nil
	}
	wl, err := l.ws.Log()
	if err != nil {
		return err
	}
	task := l.spec.Task
	if err := wl.Begin(ctx, l.taskID, fmt.Sprintf("cra %s: %s", l.mode, agent.FirstLine(task, 120)), clip(task, maxCriteria)); err != nil {
		return fmt.Errorf("record the run in the world log: %w", err)
	}
	l.log, l.begun = wl, true
	return nil
}

// clip cuts s to about n bytes, saying so.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// end records the run's end: finish with a summary, or failed with what a
// person must do.
func (l *lifecycle) end(ctx context.Context, ok bool, summary, need string) error {
	if !l.begun || l.ended {
		return nil
	}
	l.ended = true
	status := world.StatusFinish
	if !ok {
		status = world.StatusFailed
	} else {
		need = ""
	}
	if _, err := l.log.Agent(context.WithoutCancel(ctx), status, l.taskID, summary, need); err != nil {
		return fmt.Errorf("record the run's end in the world log: %w", err)
	}
	return nil
}

// verify closes a finished run as verified with its evidence, unless the
// spec leaves it open for a reviewer: the harness's evidence is the
// review the verified needs (world.Log.Verify).
func (l *lifecycle) verify(ctx context.Context, evidence string) error {
	if l.spec.LeaveOpen || !l.ended {
		return nil
	}
	if _, err := l.log.Verify(context.WithoutCancel(ctx), l.taskID, fmt.Sprintf("cra %s, the harness: %s", l.mode, evidence), evidence); err != nil {
		return fmt.Errorf("record the run's verification in the world log: %w", err)
	}
	return nil
}

// archive archives and removes the run's session (seed 001 §11.1), once,
// also when ctx was cancelled: a stopped run leaves no session file behind.
func (l *lifecycle) archive(ctx context.Context) error {
	if l.session == nil {
		return nil
	}
	s := l.session
	l.session = nil
	return l.ws.ArchiveSession(context.WithoutCancel(ctx), s, l.taskID)
}

// fail ends a run that stopped on err: the session archived, the
// task_runs row finalised, the failed lifecycle entry written. It returns
// err with whatever of that failed.
func (l *lifecycle) fail(ctx context.Context, err error, need string) error {
	errs := []error{err}
	if aerr := l.archive(context.WithoutCancel(ctx)); aerr != nil {
		errs = append(errs, aerr)
	}
	if l.runLog != nil {
		if ferr := l.runLog.Finish(ctx, agent.RunOutcome{Success: false, Tokens: l.judgeTokens(), Latency: time.Since(l.started)}); ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if need == "" {
		need = "fix the cause and run again: " + agent.FirstLine(err.Error(), 200)
	}
	if lerr := l.end(ctx, false, fmt.Sprintf("cra %s stopped: %s", l.mode, agent.FirstLine(err.Error(), 200)), need); lerr != nil {
		errs = append(errs, lerr)
	}
	return errors.Join(errs...)
}

func (l *lifecycle) judgeTokens() int {
	if l.judge == nil {
		return 0
	}
	return l.judge.tokens
}

// retrieve opens the task's session and runs the retrieval pipeline, with
// the reasoning model's judgments unless the spec is deterministic. File
// text is read under root: the repository, or for solve its worktree,
// whose HEAD content is what edit blocks must match.
func (l *lifecycle) retrieve(ctx context.Context, root string, planFiles []string) (*retrieve.Pipeline, *retrieve.Result, error) {
	k, repo, err := l.ws.Index(ctx)
	if err != nil {
		return nil, nil, err
	}
	c, err := l.ws.Corpus(ctx)
	if err != nil {
		return nil, nil, err
	}
	session, err := l.ws.OpenSession(ctx, l.taskID)
	if err != nil {
		return nil, nil, err
	}
	l.session = session
	p := &retrieve.Pipeline{KB: k, Corpus: c, RepoID: repo.ID, Root: root, Session: session, PlanFiles: planFiles}
	if !l.spec.Deterministic {
		j, malformed, u, err := newJudge(ctx, l.gateway, l.taskID, l.spec.Budget)
		if err != nil {
			return nil, nil, err
		}
		p.Judge, p.Malformed, p.PromptTokens, l.judge = j, malformed, u.promptTokens, u
	}
	res, err := p.Run(ctx, l.taskID, l.spec.Task, l.spec.Stages, l.spec.Budget)
	if err != nil {
		return nil, nil, err
	}
	for _, info := range res.Info {
		fmt.Fprintf(l.progress, "info: %s\n", info)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(l.progress, "warning: %s\n", w)
	}
	return p, res, nil
}

// knowledge loads the PROJECT KNOWLEDGE section (seed 003) and says what
// went in.
func (l *lifecycle) loadKnowledge() (string, error) {
	k, err := knowledge.Load(l.ws.Root, l.spec.Task, knowledge.MaxTokens)
	if err != nil || k == nil {
		return "", err
	}
	fmt.Fprintf(l.progress, "knowledge: %d document(s) from %s (%d tokens)", len(k.Docs), knowledge.Dir, k.Tokens)
	if len(k.Skipped) > 0 {
		fmt.Fprintf(l.progress, "; %d left out for the ~%d-token cap", len(k.Skipped), knowledge.MaxTokens)
	}
	fmt.Fprintln(l.progress)
	return k.Text, nil
}

// client returns the recorded client of the execute call and the reply
// cap: the model's max_tokens, at most half of reserved_tokens, whose
// other half holds the system prompt, task, plan and retry context (seed
// 001 §7.1).
func (l *lifecycle) client(ctx context.Context, info llm.CallInfo) (llm.Client, llm.ModelConfig, int, error) {
	info.TaskID = l.taskID
	c, m, err := l.gateway.Client(ctx, info)
	if err != nil {
		return nil, m, 0, err
	}
	reply := min(m.MaxTokens, l.spec.Budget.ReservedTokens/2)
	if reply <= 0 {
		return nil, m, 0, &InputError{Err: fmt.Errorf("--reserved-tokens %d leaves no room for the model's reply: reserve at least the reply's tokens and the prompt around the context", l.spec.Budget.ReservedTokens)}
	}
	return c, m, reply, nil
}

// model is the configured model of a role's config value, "none" without.
func (l *lifecycle) model(pick func(*config.Models) string) string {
	if cfg := l.ws.Config; cfg != nil && cfg.Models != nil {
		if m := pick(cfg.Models); m != "" {
			return m
		}
	}
	return "none"
}
