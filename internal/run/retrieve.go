package run

import (
	"context"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// Retrieval is the result of a standalone retrieval.
type Retrieval struct {
	TaskID string
	*retrieve.Result
}

// Retrieve runs the retrieval pipeline for a task on its own (seed 001
// §5): a task_runs row of mode "retrieve", the session archived whatever
// happened, and one world-log event with the outcome.
func Retrieve(ctx context.Context, ws *workspace.Workspace, spec Spec) (*Retrieval, error) {
	l, err := open(ctx, ws, ModeRetrieve, spec, !spec.Deterministic)
	if err != nil {
		return nil, err
	}
	defer l.close()
	model := l.model(func(m *config.Models) string { return m.Coding })
	if err := l.startRun(ctx, ModeRetrieve, model, ""); err != nil {
		return nil, err
	}
	if spec.Deterministic {
		fmt.Fprintln(l.progress, "deterministic: no model is called")
	}
	_, res, runErr := l.retrieve(ctx, ws.Root, nil)
	// The session is archived and removed whatever happened (seed 001 §11.1).
	if err := l.archive(ctx); err != nil && runErr == nil {
		runErr = err
	}
	outcome := agent.RunOutcome{Success: runErr == nil, Tokens: l.judgeTokens(), Latency: time.Since(l.started)}
	if err := l.runLog.Finish(ctx, outcome); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		world.NoteEvent(ctx, l.progress, ws.StateDir, world.SourceRetrieve, l.taskID, "retrieve failed: "+runErr.Error())
		return nil, runErr
	}
	stale := res.Package.Stale
	if stale > 0 {
		fmt.Fprintf(l.progress, "warning: %d file(s) changed, moved or deleted since they were indexed, and the package lacks or cuts them: run 'cra index' first\n", stale)
	}
	if len(res.Package.Files) == 0 && len(res.Package.Trimmed) > stale {
		fmt.Fprintf(l.progress, "warning: a budget of %d tokens holds none of the %d items found: raise --context-window or lower --reserved-tokens\n",
			res.Package.Budget, len(res.Package.Trimmed)-stale)
	}
	summary := fmt.Sprintf("%d files, %d of %d tokens, stages %s", len(res.Package.Files), res.Package.Tokens, res.Package.Budget, spec.StageList)
	world.NoteEvent(ctx, l.progress, ws.StateDir, world.SourceRetrieve, l.taskID, summary)
	return &Retrieval{TaskID: l.taskID, Result: res}, nil
}
