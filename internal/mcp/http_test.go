package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cra-dev/cra/internal/mcp"
)

// serve starts 'cra serve' on a free loopback port as a child process,
// with env added to its environment, and returns its /mcp URL; the
// daemon is stopped at the test's end.
func serve(t *testing.T, root string, env []string) string {
	t.Helper()
	cmd := exec.Command("cra", "serve", "--repo", root, "--addr", "127.0.0.1:0", "--no-processor", "--no-recycler", "--no-supervisors")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &testLog{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	var info struct{ Addr string }
	deadline := time.Now().Add(30 * time.Second)
	for info.Addr == "" {
		if data, err := os.ReadFile(filepath.Join(root, ".clean_room", "serve.json")); err == nil {
			json.Unmarshal(data, &info)
		}
		if time.Now().After(deadline) {
			t.Fatal("cra serve wrote no serve.json in 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + info.Addr + "/mcp"
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTP: 'cra serve' serves the tools at /mcp over streamable HTTP to
// the SDK's client, the board's through the daemon, under the API's token
// rule; the run tools are not there (no run's token reaches a daemon's
// client), and a bad call is refused naming its field.
func TestHTTP(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	const token = "0123456789abcdef0123"
	url := serve(t, root, []string{"CRA_SERVE_TOKEN=" + token})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(client *http.Client) (*sdk.ClientSession, error) {
		return sdk.NewClient(&sdk.Implementation{Name: "http-test", Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1}, nil)
	}
	if s, err := connect(nil); err == nil {
		s.Close()
		t.Fatal("without the token: connected")
	}
	if s, err := connect(&http.Client{Transport: bearer{"wrong-token-wrong-token"}}); err == nil {
		s.Close()
		t.Fatal("with a wrong token: connected")
	}
	s, err := connect(&http.Client{Transport: bearer{token}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"context", "file_context", "knowledge", "localize", "overview", "symbols", "task_add", "task_list", "task_show"}; !slices.Equal(names, want) {
		t.Errorf("tools: got %v, want %v", names, want)
	}
	loc := okHTTP[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "Resolve the pager command once, in _pager_contextmanager", "top": 2})
	if len(loc.Files) == 0 || loc.Files[0].Path != "shop/pager.py" || len(loc.Files) > 2 {
		t.Errorf("localize: got %+v, want shop/pager.py first, at most 2", loc.Files)
	}
	added := okHTTP[mcp.TaskAddOutput](t, s, "task_add", map[string]any{"title": "page long output"})
	list := okHTTP[mcp.TaskListOutput](t, s, "task_list", map[string]any{})
	if len(list.Tasks) != 1 || list.Tasks[0].ID != added.ID {
		t.Errorf("task_list: got %+v, want %s", list.Tasks, added.ID)
	}
	if !strings.Contains(worldLog(t, root), "][event:mcp]["+added.ID+"] added by a person's agent (http-test) through MCP") {
		t.Errorf("the world log does not say who added %s:\n%s", added.ID, worldLog(t, root))
	}
	_, err = s.CallTool(ctx, &sdk.CallToolParams{Name: "localize", Arguments: map[string]any{"task": "x", "top": 0}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "localize: top: ") {
		t.Errorf("top 0: got %v, want an error naming top", err)
	}
	_, err = s.CallTool(ctx, &sdk.CallToolParams{Name: "report", Arguments: map[string]any{"status": "finish"}})
	if err == nil || !strings.Contains(err.Error(), "report") {
		t.Errorf("report over HTTP: got %v, want an unknown tool", err)
	}
}

// okHTTP is ok without the text.
func okHTTP[T any](t *testing.T, s *sdk.ClientSession, tool string, args any) T {
	t.Helper()
	out, _ := ok[T](t, s, tool, args)
	return out
}
