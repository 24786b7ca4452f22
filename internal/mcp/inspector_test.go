package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// inspectorDir holds the MCP inspector's CLI, pinned by package.json and
// its lock file; .ci/run installs it.
const inspectorDir = "testdata/inspector"

// inspector runs the MCP inspector's CLI (npm @modelcontextprotocol/
// inspector-cli, a client written on the TypeScript SDK, nothing of cra's)
// against 'cra mcp --repo root' and returns its standard output. A
// missing client fails the test, naming the install.
func inspector(t *testing.T, root string, args ...string) (string, error) {
	t.Helper()
	return inspectorTarget(t, []string{"cra", "mcp", "--repo", root}, args...)
}

// inspectorTarget runs the inspector against target: a command line
// (stdio) or a URL and its transport.
func inspectorTarget(t *testing.T, target []string, args ...string) (string, error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: the MCP inspector runs on it (apt-get install -y nodejs npm; .ci/run does)")
	}
	cli, err := filepath.Abs(filepath.Join(inspectorDir, "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "cli.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("the MCP inspector is not installed: run 'npm ci --prefix internal/mcp/testdata/inspector' (.ci/run does): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(append([]string{cli, "--cli"}, target...), args...)...)
	// inspector-cli 1.0.3 finds its own package.json by testing
	// "../package.json" against the working directory but importing it
	// against its module: it works only from a directory whose parent
	// holds a package.json, such as its own build directory.
	cmd.Dir = filepath.Dir(cli)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// TestInspector: a third-party client lists cra's tools and calls
// localize and context over stdio, and a malformed call gets the field
// and the fix back.
func TestInspector(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	out, err := inspector(t, root, "--method", "tools/list")
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var list struct {
		Tools []struct {
			Name        string
			InputSchema struct{ Required []string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"context", "file_context", "knowledge", "localize", "overview", "symbols", "task_add", "task_list", "task_show"}; !slices.Equal(names, want) {
		t.Errorf("tools/list: got %v, want %v", names, want)
	}

	out, err = inspector(t, root, "--method", "tools/call", "--tool-name", "localize",
		"--tool-arg", "task=Resolve the pager command once, in _pager_contextmanager", "--tool-arg", "top=3")
	if err != nil {
		t.Fatalf("localize: %v\n%s", err, out)
	}
	var loc struct {
		Content []struct{ Type, Text string }
		// The inspector validates structuredContent against the tool's
		// output schema before it prints it.
		StructuredContent struct {
			Files []struct{ Path string }
			Index struct{ State string }
		}
		IsError bool
	}
	if err := json.Unmarshal([]byte(out), &loc); err != nil {
		t.Fatalf("localize: %v\n%s", err, out)
	}
	if loc.IsError || len(loc.StructuredContent.Files) == 0 || len(loc.StructuredContent.Files) > 3 ||
		loc.StructuredContent.Files[0].Path != "shop/pager.py" || loc.StructuredContent.Index.State != "fresh" ||
		len(loc.Content) != 1 || !strings.HasPrefix(loc.Content[0].Text, "index: fresh\n1. shop/pager.py") {
		t.Errorf("localize: got %s", out)
	}

	out, err = inspector(t, root, "--method", "tools/call", "--tool-name", "context",
		"--tool-arg", "task=the cart total is wrong when a coupon applies", "--tool-arg", "budget_tokens=1000")
	if err != nil {
		t.Fatalf("context: %v\n%s", err, out)
	}
	var pkg struct {
		Content           []struct{ Text string }
		StructuredContent struct {
			Files          []string
			Tokens, Budget int
		}
	}
	if err := json.Unmarshal([]byte(out), &pkg); err != nil {
		t.Fatalf("context: %v\n%s", err, out)
	}
	if pkg.StructuredContent.Budget != 1000 || pkg.StructuredContent.Tokens > 1000 || !slices.Contains(pkg.StructuredContent.Files, "shop/cart.py") ||
		len(pkg.Content) != 1 || !strings.HasPrefix(pkg.Content[0].Text, "# Context for: the cart total is wrong when a coupon applies\n") ||
		!strings.Contains(pkg.Content[0].Text, "\n## shop/cart.py\n") {
		t.Errorf("context: got %s", out)
	}

	out, err = inspector(t, root, "--method", "tools/call", "--tool-name", "localize", "--tool-arg", "task=x", "--tool-arg", "top=0")
	if err == nil || !strings.Contains(out, "localize: top: 0 is out of range: pass an integer from 1 to 50") {
		t.Errorf("a malformed call: got %v\n%s", err, out)
	}
}

// TestInspectorHTTP: the same client calls localize and context on 'cra
// serve' at /mcp over streamable HTTP.
func TestInspectorHTTP(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	url := serve(t, root, nil)
	out, err := inspectorTarget(t, []string{url, "--transport", "http"}, "--method", "tools/call", "--tool-name", "localize",
		"--tool-arg", "task=Resolve the pager command once, in _pager_contextmanager", "--tool-arg", "top=2")
	if err != nil {
		t.Fatalf("localize over HTTP: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"path": "shop/pager.py"`) || !strings.Contains(out, "index: fresh\\n1. shop/pager.py") {
		t.Errorf("localize over HTTP: %s", out)
	}
	out, err = inspectorTarget(t, []string{url, "--transport", "http"}, "--method", "tools/call", "--tool-name", "context",
		"--tool-arg", "task=the cart total is wrong when a coupon applies", "--tool-arg", "budget_tokens=1000")
	if err != nil {
		t.Fatalf("context over HTTP: %v\n%s", err, out)
	}
	if !strings.Contains(out, "# Context for: the cart total is wrong when a coupon applies") || !strings.Contains(out, `"budget": 1000`) {
		t.Errorf("context over HTTP: %s", out)
	}
}
