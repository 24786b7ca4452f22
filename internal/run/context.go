package run

import (
	"context"
	"fmt"

	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/workspace"
)

// contextStages are the stages of an agent prompt's context package when
// [stages] default names none: deterministic, no model is called.
const contextStages = "scope,precision"

// contextReserved is what a prompt's budget keeps back beyond the
// package (retrieve.Budget's reserve).
const contextReserved = 1024

// AgentContext is the Context section of a board agent's prompt (issue
// 30): cra's deterministic context package for task, within tokens,
// its files' headings under the section's, and a line saying how to get
// more. No model is called and nothing is recorded. An index that is
// missing says so in the section instead of failing the run.
func AgentContext(ctx context.Context, ws *workspace.Workspace, task string, tokens int) (string, error) {
	if tokens <= 0 {
		return "", nil
	}
	more := "Ask for more with cra's MCP tools (`cra mcp`: localize, context, symbols) or `cra retrieve --deterministic \"<task>\"`."
	k, repo, err := ws.Index(ctx)
	if err != nil {
		return fmt.Sprintf("No context package: %v. Run `cra index` in the repository, then the next run gets one.\n\n%s\n", err, more), nil
	}
	list := contextStages
	if c := ws.Config; c != nil && c.Stages != nil && c.Stages.Default != "" {
		list = c.Stages.Default
	}
	stages, err := retrieve.ParseStages(list)
	if err != nil {
		return "", fmt.Errorf("[stages] default in .clean_room/config.toml: %w", err)
	}
	p := &retrieve.Pipeline{KB: k, RepoID: repo.ID, Root: ws.Root}
	res, err := p.Run(ctx, "", task, stages, retrieve.Budget{ContextWindow: tokens + contextReserved, ReservedTokens: contextReserved})
	if err != nil {
		return "", fmt.Errorf("the context package: %w", err)
	}
	pkg := res.Package
	head := fmt.Sprintf("cra's context for this task, ranked by its index with no model: %d files, %d of %d tokens (stages %s). %s\n",
		len(pkg.Files), pkg.Tokens, pkg.Budget, list, more)
	if len(pkg.Files) == 0 {
		return head + "\nNo file fits: the task names no file, symbol or error the index knows.\n", nil
	}
	return head + pkg.RenderAt(3), nil
}
