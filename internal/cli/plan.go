package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/preflight"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/world"
)

type planOptions struct {
	task          string
	repo          string
	stages        string
	budget        budgetFlags
	output        string
	deterministic bool // retrieval only; the plan always comes from the reasoning model
	json          bool
	taskID        string // tests set it; a new UUID otherwise
}

func newPlanCmd(d *deps, runF func(context.Context, *deps, *planOptions) error) *cobra.Command {
	opts := &planOptions{}
	var finishBudget func()
	cmd := &cobra.Command{
		Use:   "plan <task>",
		Short: "Write a plan for a task: files to change, what, in what order, why",
		Long: `Retrieve the context of the task, then ask the reasoning model for a
structured plan: which files to change, what to change in each, in what
order and why (seed 001 §8.1). The plan is validated and saved twice, as
Markdown you can read and edit and as JSON, under .clean_room/plans/ or at
--output; 'cra solve --plan FILE' follows either.

When docs/knowledge/ exists, its conventions and the documents closest to
the task go into the prompt as PROJECT KNOWLEDGE.

Budget: --context-window and --reserved-tokens, or --budget-config FILE, or
[budget] in .clean_room/config.toml. Stages: --stages or [stages] default.`,
		Example: `  cra plan "Resolve the pager command once" --stages scope,precision
  cra plan "$(cat issue.md)" --output plan.md && $EDITOR plan.md
  cra solve --plan plan.md --max-attempts 3 --max-refinement-loops 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.task = args[0]
			finishBudget()
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return planRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.stages, "stages", "", "retrieval stages in order, comma-separated: "+strings.Join(retrieve.StageNames(), ", "))
	f.StringVarP(&opts.output, "output", "o", "", "write the plan's Markdown here (and its JSON beside it, .json); default .clean_room/plans/<task_id>.md")
	f.BoolVar(&opts.deterministic, "deterministic-retrieval", false, "retrieve without the reasoning model's judgments (the plan still comes from it)")
	f.BoolVar(&opts.json, "json", false, "print the plan as JSON")
	finishBudget = addBudgetFlags(cmd, &opts.budget)
	return cmd
}

// savePlan saves p at out or, should that fail after the model was asked
// (the path went bad meanwhile), at fallback with a warning on w: a plan
// the user waited for is not lost. It returns where the Markdown and the
// JSON went.
func savePlan(w io.Writer, repo, out, fallback string, p *agent.Plan) (string, string, error) {
	jsonPath, err := agent.SavePlan(out, p)
	if err == nil || out == fallback {
		return out, jsonPath, err
	}
	jp, ferr := agent.SavePlan(fallback, p)
	if ferr != nil {
		return out, "", err
	}
	fmt.Fprintf(w, "warning: could not save the plan to %s (%v); saved it to %s instead\n", relPath(repo, out), err, relPath(repo, fallback))
	return fallback, jp, nil
}

// execRun is what plan and solve share around their execute stage: the
// repository and its config, budget and stages, the databases, the task's
// session, the world log lifecycle, retrieval and the model gateway.
type execRun struct {
	d         *deps
	mode      string // world log and messages: "plan" or "solve"
	repo      string
	stateDir  string
	cfg       *config.Config
	stages    []retrieve.Stage
	stageList string
	budget    retrieve.Budget
	factory   *store.Factory
	curated   *sql.DB
	raw       *sql.DB
	repoID    int64
	taskID    string
	session   *store.SessionDB
	log       *world.Log
	runLog    *agent.RunLog
	judge     *llmUsage // retrieval's model calls; nil when deterministic
	gateway   *llm.Gateway
	started   time.Time
	begun     bool // the lifecycle has a start/active entry
	ended     bool // … and its finish or failed entry
}

// openExec resolves the shared inputs and opens what the run needs, up
// to (not including) the lifecycle entry. Its errors are the command's;
// close releases what it opened.
func openExec(ctx context.Context, d *deps, mode, repoFlag, stageFlag string, bf budgetFlags, taskID string) (*execRun, error) {
	repo, err := findRepo(repoFlag)
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(d, repo)
	if err != nil {
		return nil, err
	}
	stages, stageList, err := resolveStages(stageFlag, cfg)
	if err != nil {
		return nil, err
	}
	budget, err := resolveBudget(bf, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkExecuteWindow(cfg, mode, budget); err != nil {
		return nil, err
	}
	if taskID == "" {
		taskID = newTaskID()
	}
	return &execRun{d: d, mode: mode, repo: repo, stateDir: config.StateDir(repo), cfg: cfg, stages: stages, stageList: stageList,
		budget: budget, taskID: taskID, started: time.Now()}, nil
}

// openStores runs the preflight checks (seed 001 §14) and opens the
// databases and the gateway. needModels is false only for a retrieval
// that calls no model.
func (r *execRun) openStores(ctx context.Context, needModels bool) error {
	if needModels {
		if err := preflight.CheckModels(r.cfg); err != nil {
			return err
		}
	}
	r.factory = store.NewFactory(r.stateDir)
	if err := preflight.CheckCurated(ctx, r.factory, r.repo); err != nil {
		return err
	}
	var err error
	if r.curated, err = r.factory.Open(ctx, store.Curated, "", true); err != nil {
		return err
	}
	k := kb.New(r.curated)
	repo, err := k.Repo(ctx, r.repo)
	if err != nil {
		return err
	}
	r.repoID = repo.ID
	if r.raw, err = r.factory.Open(ctx, store.Raw, "", false); err != nil {
		return err
	}
	r.gateway = llm.NewGateway(llm.NewRouter(r.cfg, k), llm.NewRecorder(r.raw))
	r.gateway.Logger = r.d.logger
	return nil
}

func (r *execRun) close() {
	if r.session != nil {
		r.session.Close()
	}
	if r.raw != nil {
		r.raw.Close()
	}
	if r.curated != nil {
		r.curated.Close()
	}
}

// begin records the run's start in the world log (seed 002): start with
// the task as its criteria, then active. A failure fails the command.
func (r *execRun) begin(ctx context.Context, task string) error {
	l, err := world.Open(r.stateDir)
	if err != nil {
		return err
	}
	if err := l.Begin(ctx, r.taskID, fmt.Sprintf("cra %s: %s", r.mode, agent.FirstLine(task, 120)), clip(task, maxCriteria)); err != nil {
		return fmt.Errorf("record the run in the world log: %w", err)
	}
	r.log, r.begun = l, true
	return nil
}

// maxCriteria bounds the task text kept as a run's criteria in the world
// log (DESIGN.md principle 6).
const maxCriteria = 2000

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
func (r *execRun) end(ctx context.Context, ok bool, summary, need string) error {
	if !r.begun || r.ended {
		return nil
	}
	r.ended = true
	status := world.StatusFinish
	if !ok {
		status = world.StatusFailed
	} else {
		need = ""
	}
	if _, err := r.log.Agent(context.WithoutCancel(ctx), status, r.taskID, summary, need); err != nil {
		return fmt.Errorf("record the run's end in the world log: %w", err)
	}
	return nil
}

// fail ends a run that stopped on err: the session archived, the
// task_runs row finalised, the failed lifecycle entry written. It returns
// err with whatever of that failed.
func (r *execRun) fail(ctx context.Context, err error, need string) error {
	errs := []error{err}
	if r.session != nil {
		if aerr := r.session.Archive(context.WithoutCancel(ctx), r.factory, r.raw, r.taskID); aerr != nil {
			errs = append(errs, aerr)
		}
		r.session = nil
	}
	if r.runLog != nil {
		if ferr := r.runLog.Finish(ctx, agent.RunOutcome{Success: false, Tokens: r.judgeTokens(), Latency: time.Since(r.started)}); ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if need == "" {
		need = "fix the cause and run again: " + agent.FirstLine(err.Error(), 200)
	}
	if lerr := r.end(ctx, false, fmt.Sprintf("cra %s stopped: %s", r.mode, agent.FirstLine(err.Error(), 200)), need); lerr != nil {
		errs = append(errs, lerr)
	}
	return errors.Join(errs...)
}

func (r *execRun) judgeTokens() int {
	if r.judge == nil {
		return 0
	}
	return r.judge.tokens
}

// retrieve opens the task's session and runs the retrieval pipeline, with
// the reasoning model's judgments unless deterministic. File text is read
// under root: the repository, or for solve its worktree, whose HEAD
// content is what edit blocks must match.
func (r *execRun) retrieve(ctx context.Context, task, root string, stages []retrieve.Stage, planFiles []string, deterministic bool) (*retrieve.Pipeline, *retrieve.Result, error) {
	session, err := r.factory.OpenSession(ctx, r.taskID)
	if err != nil {
		return nil, nil, err
	}
	r.session = session
	p := &retrieve.Pipeline{KB: kb.New(r.curated), Corpus: corpus.New(r.raw), RepoID: r.repoID, Root: root, Session: session, PlanFiles: planFiles}
	if !deterministic {
		j, u, err := newJudge(ctx, r.gateway, r.taskID, r.budget)
		if err != nil {
			return nil, nil, err
		}
		p.Judge, p.PromptTokens, r.judge = j, u.promptTokens, u
	}
	res, err := p.Run(ctx, r.taskID, task, stages, r.budget)
	if err != nil {
		return nil, nil, err
	}
	for _, info := range res.Info {
		fmt.Fprintf(r.d.errOut, "info: %s\n", info)
	}
	return p, res, nil
}

// deterministicRetrieval says that plan or solve retrieves without the
// reasoning model's judgments.
const deterministicRetrieval = "deterministic retrieval: no model judges the context"

// knowledge loads the PROJECT KNOWLEDGE section (seed 003) and says what
// went in.
func (r *execRun) knowledge(task string) (string, error) {
	k, err := agent.LoadKnowledge(r.repo, task, agent.KnowledgeTokens)
	if err != nil || k == nil {
		return "", err
	}
	fmt.Fprintf(r.d.errOut, "knowledge: %d document(s) from %s (%d tokens)", len(k.Docs), agent.KnowledgeDir, k.Tokens)
	if len(k.Skipped) > 0 {
		fmt.Fprintf(r.d.errOut, "; %d left out for the ~%d-token cap", len(k.Skipped), agent.KnowledgeTokens)
	}
	fmt.Fprintln(r.d.errOut)
	return k.Text, nil
}

// client returns the recorded client of the execute call and the reply
// cap: the model's max_tokens, at most half of reserved_tokens, whose
// other half holds the system prompt, task, plan and retry context (seed
// 001 §7.1).
func (r *execRun) client(ctx context.Context, info llm.CallInfo) (llm.Client, llm.ModelConfig, int, error) {
	info.TaskID = r.taskID
	c, m, err := r.gateway.Client(ctx, info)
	if err != nil {
		return nil, m, 0, err
	}
	reply := min(m.MaxTokens, r.budget.ReservedTokens/2)
	if reply <= 0 {
		return nil, m, 0, usageError{err: fmt.Errorf("--reserved-tokens %d leaves no room for the model's reply: reserve at least the reply's tokens and the prompt around the context", r.budget.ReservedTokens)}
	}
	return c, m, reply, nil
}

// checkExecuteWindow refuses a budget larger than the window configured
// for the model that executes the mode (seed 001 §7.2: plan → reasoning,
// solve → coding), before anything is logged or asked.
func checkExecuteWindow(cfg *config.Config, mode string, b retrieve.Budget) error {
	if cfg == nil || cfg.Models == nil {
		return nil
	}
	var w *int
	var role, model, key string
	switch mode {
	case "plan":
		w, role, model, key = cfg.Models.ReasoningContextWindow, "reasoning", cfg.Models.Reasoning, "models.reasoning_context_window"
	case "solve":
		w, role, model, key = cfg.Models.CodingContextWindow, "coding", cfg.Models.Coding, "models.coding_context_window"
	}
	if w == nil || *w <= 0 || b.ContextWindow <= *w {
		return nil
	}
	return usageError{err: fmt.Errorf("the budget's context window (%d) is larger than the %s model %s reads (%s = %d): "+
		"make it %d or less (--context-window with --reserved-tokens, --budget-config, or [budget] in .clean_room/config.toml), or raise %s",
		b.ContextWindow, role, model, key, *w, *w, key)}
}

func planRun(ctx context.Context, d *deps, opts *planOptions) error {
	if strings.TrimSpace(opts.task) == "" {
		return usageError{err: retrieve.ErrEmptyTask}
	}
	r, err := openExec(ctx, d, "plan", opts.repo, opts.stages, opts.budget, opts.taskID)
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.openStores(ctx, true); err != nil {
		return err
	}
	defaultOut := filepath.Join(r.stateDir, "plans", r.taskID+".md")
	out := opts.output
	if out == "" {
		out = defaultOut
	} else if strings.EqualFold(filepath.Ext(out), ".json") {
		return usageError{err: fmt.Errorf("--output %s: name the Markdown file; its JSON goes beside it", out)}
	} else if out, err = filepath.Abs(out); err != nil {
		return err
	}
	// Before the model is asked: a plan that cannot be saved is wasted.
	if opts.output != "" {
		if err := agent.CheckPlanPath(out); err != nil {
			return usageError{err: fmt.Errorf("--output: %w", err)}
		}
	}
	model := "none"
	if r.cfg.Models != nil {
		model = r.cfg.Models.Reasoning
	}
	if err := r.begin(ctx, opts.task); err != nil {
		return err
	}
	if r.runLog, err = agent.StartRun(ctx, r.raw, agent.TaskRun{TaskID: r.taskID, Repo: r.repo, Mode: agent.ModePlan, ExecuteModel: model, Budget: r.budget, Stages: r.stageList}); err != nil {
		return r.fail(ctx, err, "")
	}
	if opts.deterministic {
		fmt.Fprintln(d.errOut, deterministicRetrieval)
	}
	_, res, err := r.retrieve(ctx, opts.task, r.repo, r.stages, nil, opts.deterministic)
	if err != nil {
		return r.fail(ctx, err, "")
	}
	knowledge, err := r.knowledge(opts.task)
	if err != nil {
		return r.fail(ctx, err, "")
	}
	c, _, reply, err := r.client(ctx, llm.CallInfo{Type: "plan", Role: llm.RoleReasoning, Stage: "execute_plan"})
	if err != nil {
		return r.fail(ctx, err, "")
	}
	planner := &agent.Planner{Model: c, Budget: r.budget, ReplyTokens: reply}
	pr, err := planner.Plan(ctx, opts.task, res.Package, knowledge)
	if err != nil {
		return r.fail(ctx, err, "")
	}
	if len(pr.Trimmed) > 0 {
		fmt.Fprintf(d.errOut, "budget gate left out: %s\n", strings.Join(pr.Trimmed, ", "))
	}
	plan := pr.Plan
	plan.TaskID = r.taskID
	if err := r.session.Set(ctx, "plan_artifact", plan); err != nil {
		return r.fail(ctx, err, "")
	}
	out, jsonPath, err := savePlan(d.errOut, r.repo, out, defaultOut, plan)
	if err != nil {
		return r.fail(ctx, err, "")
	}
	planJSON, _ := json.Marshal(plan) // strings only: cannot fail

	// The session is archived and removed (seed 001 §11.1), the run
	// finalised, then its end logged.
	var errs []error
	if err := r.session.Archive(ctx, r.factory, r.raw, r.taskID); err != nil {
		errs = append(errs, err)
	}
	r.session = nil
	tokens := r.judgeTokens() + pr.PromptTokens + pr.CompletionTokens
	if err := r.runLog.Finish(ctx, agent.RunOutcome{Success: len(errs) == 0, Tokens: tokens, Latency: time.Since(r.started), FinalPlan: string(planJSON)}); err != nil {
		errs = append(errs, err)
	}
	summary := fmt.Sprintf("plan of %d step(s) saved to %s", len(plan.Steps), relPath(r.repo, out))
	if err := r.end(ctx, len(errs) == 0, summary, "fix the recording error and run again"); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(d.errOut, "plan saved to %s and %s (edit it, then: cra solve --plan %s)\n", relPath(r.repo, out), relPath(r.repo, jsonPath), relPath(r.repo, out))
	if opts.json {
		enc := json.NewEncoder(d.out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*agent.Plan
			Markdown string `json:"markdown_file"`
			JSONFile string `json:"json_file"`
		}{plan, out, jsonPath})
	}
	fmt.Fprint(d.out, plan.Markdown())
	return nil
}
