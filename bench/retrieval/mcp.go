package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpStateLink is where the scratch worktree finds its index for 'cra
// mcp': a symbolic link to the harness's state directory, which git
// clean leaves alone.
const mcpStateLink = ".clean_room"

// mcpClient is a 'cra mcp' server of the scratch worktree (-mcp).
type mcpClient struct {
	s *sdk.ClientSession
}

// mcpResult is what localize returned for one text, next to cra's
// ranking.
type mcpResult struct {
	Top  []string `json:"top"`
	Same bool     `json:"same"` // the first 10 of cra's ranking, in order
	// Refused is the error of a call the server refused (a text over its
	// 20,000 characters); Failed one it could not answer.
	Refused string `json:"refused,omitempty"`
	Failed  string `json:"failed,omitempty"`
}

// startMCP links the worktree to the state directory and starts 'cra
// mcp' on it; the server reads the index the harness writes.
func startMCP(ctx context.Context, cra, wt, stateDir string) (*mcpClient, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(wt, mcpStateLink)
	os.Remove(link)
	if err := os.Symlink(stateDir, link); err != nil {
		return nil, fmt.Errorf("-mcp: %w", err)
	}
	cmd := exec.Command(cra, "mcp", "--repo", wt)
	cmd.Stderr = os.Stderr
	s, err := sdk.NewClient(&sdk.Implementation{Name: "bench-retrieval", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("-mcp: start %s mcp: %w", cra, err)
	}
	return &mcpClient{s: s}, nil
}

func (c *mcpClient) close() { c.s.Close() }

// compare asks localize for text's top 10 and compares it with ranked.
func (c *mcpClient) compare(ctx context.Context, text string, ranked []string) *mcpResult {
	r := &mcpResult{}
	res, err := c.s.CallTool(ctx, &sdk.CallToolParams{Name: "localize", Arguments: map[string]any{"task": text, "top": 10}})
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		r.Refused = we.Message
		return r
	case err != nil:
		r.Failed = err.Error()
		return r
	case res.IsError:
		r.Failed = fmt.Sprint(res.Content)
		return r
	}
	var out struct {
		Files []struct{ Path string }
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		r.Failed = err.Error()
		return r
	}
	for _, f := range out.Files {
		r.Top = append(r.Top, f.Path)
	}
	r.Same = slices.Equal(r.Top, ranked[:min(10, len(ranked))])
	return r
}
