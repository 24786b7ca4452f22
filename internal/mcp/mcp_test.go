package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cra-dev/cra/internal/cli"
	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/mcp"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/workspace"
)

// TestMain makes this test binary the cra command too: 'cra' on PATH is
// a copy of it that runs cli.Main, so the tests start the real 'cra mcp'
// as a child process, as an agent does.
func TestMain(m *testing.M) {
	// Under -race a child 'cra' that exits 0 sleeps a second first, to
	// let the detector report (GORACE atexit_sleep_ms, 1000 by default),
	// and the tests wait on their children's exits. The children still
	// report races; they no longer wait a second to.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(m, map[string]func(){
		"cra":       func() { os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"mcp-agent": func() { os.Exit(mcpAgent(os.Args[1:])) },
	})
}

// shop is the fixture repository: a small Python project with history
// and a knowledge store.
var shop = []map[string]string{{
	"shop/__init__.py": "",
	"shop/cart.py": `"""The shopping cart."""
from shop.pricing import apply_coupon


class Cart:
    """A customer's cart."""

    def __init__(self):
        self.items = []

    def total(self, coupon=None):
        """Sum the items, less the coupon."""
        # The coupon applies after tax because the shop's terms say so.
        total = sum(i.price for i in self.items)
        return apply_coupon(total, coupon)
`,
	"shop/pricing.py": `"""Prices and coupons."""


def apply_coupon(total, coupon):
    """Take the coupon's share off total."""
    if coupon is None:
        return total
    return total * (1 - coupon.share)


def round_price(p):
    return round(p, 2)
`,
	"shop/pager.py": `"""Paging long output."""
import os


def resolve_pager():
    """Find the pager command once."""
    return os.environ.get("PAGER", "less")


def _pager_contextmanager(color=None):
    cmd = resolve_pager()
    return cmd
`,
	"tests/test_cart.py": `from shop.cart import Cart


def test_total():
    assert Cart().total() == 0
`,
	"docs/knowledge/conventions/style.md": "# Style\n\n## Rules\n- Prices are rounded with round_price.\n",
	"docs/knowledge/lessons/coupons.md":   "# Coupons\n\n## Rules\n- A coupon applies after tax.\n",
	"README.md":                           "# shop\n\nA tiny shop.\n",
}, {
	"shop/cart.py": `"""The shopping cart."""
from shop.pricing import apply_coupon, round_price


class Cart:
    """A customer's cart."""

    def __init__(self):
        self.items = []

    def total(self, coupon=None):
        """Sum the items, less the coupon."""
        # The coupon applies after tax because the shop's terms say so.
        total = sum(i.price for i in self.items)
        return round_price(apply_coupon(total, coupon))
`,
	"shop/pricing.py": `"""Prices and coupons."""


def apply_coupon(total, coupon):
    """Take the coupon's share off total."""
    if coupon is None:
        return total
    return total * (1 - coupon.share)


def round_price(p):
    """Round a price to cents."""
    return round(p, 2)
`,
}}

// newRepo writes the fixture as a git repository with one commit per map,
// indexes it and returns its root.
func newRepo(t testing.TB, commits ...map[string]string) string {
	t.Helper()
	root := t.TempDir()
	gittest.Run(t, root, "init", "-q")
	for i, files := range commits {
		for name, content := range files {
			write(t, root, name, content)
		}
		gittest.Run(t, root, "add", "-A")
		gittest.Run(t, root, "commit", "-qm", fmt.Sprintf("commit %d", i))
	}
	state, err := workspace.EnsureStateDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := index.NewBuilderIn(state).Run(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	return root
}

func write(t testing.TB, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// connect starts 'cra mcp --repo root args...' as a child process and
// returns the SDK client's session with it, closed at the test's end.
func connect(t *testing.T, root string, env []string, args ...string) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command("cra", append([]string{"mcp", "--repo", root}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &testLog{t: t}
	c := sdk.NewClient(&sdk.Implementation{Name: "cra-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to cra mcp: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testLog passes the server's standard error to the test's log.
type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Logf("cra mcp: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func call(t *testing.T, s *sdk.ClientSession, tool string, args any) (*sdk.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
}

// ok calls a tool that must succeed and decodes its structured output.
func ok[T any](t *testing.T, s *sdk.ClientSession, tool string, args any) (T, string) {
	t.Helper()
	var out T
	res, err := call(t, s, tool, args)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	text := textOf(res)
	if res.IsError {
		t.Fatalf("%s %v: tool error: %s", tool, args, text)
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, data, err)
	}
	return out, text
}

func textOf(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestListTools: the six tools, each described, read-only, with an
// object input schema that refuses unknown fields.
func TestListTools(t *testing.T) {
	t.Parallel()
	s := connect(t, newRepo(t, shop...), nil)
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 100 {
			t.Errorf("%s: description %q is too thin for a model to choose by", tool.Name, tool.Description)
		}
		if tool.Annotations == nil || tool.Annotations.ReadOnlyHint == (tool.Name == "task_add") {
			t.Errorf("%s: read-only hint %v, want it on every tool but task_add", tool.Name, tool.Annotations)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) || !strings.Contains(string(schema), `"additionalProperties":false`) {
			t.Errorf("%s: input schema %s, want an object without other fields", tool.Name, schema)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"context", "file_context", "knowledge", "localize", "overview", "symbols", "task_add", "task_list", "task_show"}
	if !slices.Equal(names, want) {
		t.Errorf("tools: got %v, want %v", names, want)
	}
}

// TestToolsGoodInput calls each tool as a model would and checks what it
// returns.
func TestToolsGoodInput(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	s := connect(t, root, nil)

	loc, text := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "Resolve the pager command once, in `_pager_contextmanager`", "top": 3})
	if len(loc.Files) == 0 || loc.Files[0].Path != "shop/pager.py" || len(loc.Files) > 3 {
		t.Errorf("localize: got %+v, want shop/pager.py first, at most 3", loc.Files)
	}
	if loc.Index.State != mcp.StateFresh || !strings.HasPrefix(text, "index: fresh\n1. shop/pager.py (seed") {
		t.Errorf("localize: index %+v, text %q", loc.Index, text)
	}
	if len(loc.Files[0].Reasons) == 0 || !strings.Contains(strings.Join(loc.Files[0].Reasons, ";"), "_pager_contextmanager") {
		t.Errorf("localize: reasons %v, want the symbol the task names", loc.Files[0].Reasons)
	}

	ctxOut, text := ok[mcp.ContextOutput](t, s, "context", map[string]any{"task": "the cart total is wrong when a coupon applies", "budget_tokens": 2000})
	if !strings.HasPrefix(text, "# Context for: the cart total is wrong when a coupon applies\n\nstages scope,precision (deterministic) · ") {
		t.Errorf("context: text starts %q", text[:min(len(text), 200)])
	}
	if ctxOut.Budget != 2000 || ctxOut.Tokens > 2000 || ctxOut.Tokens == 0 || !slices.Contains(ctxOut.Files, "shop/cart.py") {
		t.Errorf("context: got %+v, want shop/cart.py within 2000 tokens", ctxOut)
	}
	if !strings.Contains(text, "\n## shop/cart.py\n") || !strings.Contains(text, "def total(self, coupon=None):") {
		t.Errorf("context: the package lacks the cart's code:\n%s", text)
	}

	syms, text := ok[mcp.SymbolsOutput](t, s, "symbols", map[string]any{"pattern": "round_price"})
	if len(syms.Symbols) != 1 || syms.Symbols[0].Path != "shop/pricing.py" || syms.Symbols[0].Doc != "Round a price to cents." ||
		syms.Symbols[0].Signature == "" || syms.More {
		t.Errorf("symbols: got %+v", syms)
	}
	if !strings.Contains(text, "round_price function shop/pricing.py:11-13") {
		t.Errorf("symbols: text %q", text)
	}
	syms, _ = ok[mcp.SymbolsOutput](t, s, "symbols", map[string]any{"pattern": "*", "kind": "class", "limit": 1})
	if len(syms.Symbols) != 1 || syms.Symbols[0].Name != "Cart" || syms.More {
		t.Errorf("symbols of a kind: got %+v", syms)
	}

	fc, _ := ok[mcp.FileContextOutput](t, s, "file_context", map[string]any{"path": "./shop/cart.py"})
	if fc.Path != "shop/cart.py" || !slices.Contains(fc.Imports, "shop/pricing.py") || !slices.Contains(fc.ImportedBy, "tests/test_cart.py") ||
		len(fc.RecentCommits) != 2 || len(fc.RationaleComments) != 1 || !slices.ContainsFunc(fc.Symbols, func(s mcp.FileSymbol) bool { return s.Name == "Cart.total" }) {
		t.Errorf("file_context: got %+v", fc)
	}
	if !slices.ContainsFunc(fc.ChangedWith, func(c mcp.CoChange) bool { return c.Path == "shop/pricing.py" && c.Commits == 2 }) {
		t.Errorf("file_context: changed with %+v, want shop/pricing.py in 2 commits", fc.ChangedWith)
	}
	abs, _ := ok[mcp.FileContextOutput](t, s, "file_context", map[string]any{"path": filepath.Join(root, "shop", "cart.py")})
	if abs.Path != "shop/cart.py" {
		t.Errorf("file_context by absolute path inside the repository: got %q", abs.Path)
	}

	ov, _ := ok[mcp.OverviewOutput](t, s, "overview", nil)
	if ov.Files < 6 || ov.Commits != 2 || ov.Symbols == 0 {
		t.Errorf("overview: got %+v", ov)
	}

	kn, text := ok[mcp.KnowledgeOutput](t, s, "knowledge", map[string]any{"task": "a coupon is taken off before tax"})
	if !slices.Equal(kn.Documents, []string{"conventions/style.md", "lessons/coupons.md"}) || kn.Tokens == 0 {
		t.Errorf("knowledge: got %+v", kn)
	}
	if !strings.HasPrefix(text, "## PROJECT KNOWLEDGE\n\n### conventions/style.md\n") || !strings.Contains(text, "A coupon applies after tax.") {
		t.Errorf("knowledge: text %q", text)
	}
}

// TestToolsBadInput: every malformed call is a JSON-RPC invalid-params
// error that names the field and the fix, and the server answers the
// next call.
func TestToolsBadInput(t *testing.T) {
	t.Parallel()
	s := connect(t, newRepo(t, shop...), nil)
	for _, tc := range []struct {
		tool  string
		args  any
		field string
		fix   string
	}{
		{"localize", map[string]any{}, "task", `pass it, e.g. {"task": "the pager command is resolved twice"}`},
		{"localize", map[string]any{"task": "  "}, "task", "pass text"},
		{"localize", map[string]any{"task": 12}, "task", "pass text"},
		{"localize", map[string]any{"task": "x", "top": 0}, "top", "from 1 to 50"},
		{"localize", map[string]any{"task": "x", "top": 2.5}, "top", "from 1 to 50"},
		{"localize", map[string]any{"task": "x", "top": "ten"}, "top", "from 1 to 50"},
		{"localize", map[string]any{"task": "x", "limit": 3}, "limit", "the fields are task, top"},
		{"localize", map[string]any{"task": strings.Repeat("a", 20001)}, "task", "shorten it"},
		{"localize", []int{1}, "arguments", "pass the arguments as an object"},
		{"context", map[string]any{"task": "x", "budget_tokens": 100}, "budget_tokens", "from 500 to 32000"},
		{"context", map[string]any{"task": "x", "budget_tokens": 1e9}, "budget_tokens", "from 500 to 32000"},
		{"symbols", map[string]any{"pattern": ""}, "pattern", "pass text"},
		{"symbols", map[string]any{"pattern": "x", "kind": "module"}, "kind", "use one of function, class, method"},
		{"symbols", map[string]any{"pattern": "x", "limit": 101}, "limit", "from 1 to 100"},
		{"file_context", map[string]any{"path": "../outside.py"}, "path", "a path relative to the repository root"},
		{"file_context", map[string]any{"path": "/etc/passwd"}, "path", "a path relative to the repository root"},
		{"file_context", map[string]any{"path": "shop/../../x"}, "path", "a path relative to the repository root"},
		{"overview", map[string]any{"verbose": true}, "verbose", "the fields are none"},
		{"knowledge", map[string]any{"task": "x", "max_tokens": 50}, "max_tokens", "from 200 to 8000"},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.tool, tc.args), func(t *testing.T) {
			res, err := call(t, s, tc.tool, tc.args)
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				t.Fatalf("got %v, %v, want a JSON-RPC error", res, err)
			}
			if we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, tc.tool+": "+tc.field+": ") || !strings.Contains(we.Message, tc.fix) {
				t.Errorf("got %d %q, want invalid params naming %q and %q", we.Code, we.Message, tc.field, tc.fix)
			}
			var data struct{ Field, Fix string }
			if err := json.Unmarshal(we.Data, &data); err != nil || data.Field != tc.field || data.Fix == "" {
				t.Errorf("error data %s: want the field %q and the fix", we.Data, tc.field)
			}
		})
	}
	// A call the server cannot answer is a tool error, not a dead server.
	res, err := call(t, s, "file_context", map[string]any{"path": "shop/missing.py"})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), `no indexed file "shop/missing.py": find the file with localize or symbols`) {
		t.Errorf("missing file: got %v, %v", res, err)
	}
	if _, err := call(t, s, "no_such_tool", map[string]any{}); err == nil {
		t.Error("unknown tool: got no error")
	}
	ok[mcp.OverviewOutput](t, s, "overview", map[string]any{})
}

// TestLocalizeMatchesHarness: localize over MCP ranks as the retrieval
// harness does (bench/retrieval's runCRA: Analyze, then Rank for 100 files
// with the repository as root), for tasks of each kind and any top.
func TestLocalizeMatchesHarness(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	s := connect(t, root, nil)
	db, err := store.NewFactory(statedir.Of(root)).Open(context.Background(), store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	k := kb.New(db)
	repo, err := k.Repo(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{
		"Resolve the pager command once, in `_pager_contextmanager`",
		"fix(cart): the total is wrong when a coupon applies",
		"round prices to cents",
		"Traceback (most recent call last):\n  File \"shop/cart.py\", line 15, in total\nAttributeError: 'NoneType' object has no attribute 'share'",
		"update the README",
	} {
		rk := retrieve.NewRanker(k, repo.ID)
		rk.Root = root
		ranked, err := rk.Rank(context.Background(), retrieve.Analyze(task), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, top := range []int{1, 5, 50} {
			loc, _ := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": task, "top": top})
			var got, want []string
			for _, f := range loc.Files {
				got = append(got, f.Path)
			}
			for _, c := range ranked[:min(top, len(ranked))] {
				want = append(want, c.Path)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%q top %d: localize %v, harness %v", task, top, got, want)
			}
		}
	}
}

// TestBounds: outputs stay within their bounds on a file too large for
// them.
func TestBounds(t *testing.T) {
	t.Parallel()
	var big strings.Builder
	for i := range 400 {
		fmt.Fprintf(&big, "def handler_%03d(request):\n    \"\"\"Handle request %d of the coupon flow.\"\"\"\n    # why: the coupon flow needs a handler per step\n    return request\n\n\n", i, i)
	}
	root := newRepo(t, append(slices.Clone(shop), map[string]string{"shop/handlers.py": "from shop.cart import Cart\n\n\n" + big.String()})...)
	s := connect(t, root, nil)

	loc, _ := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "coupon handler request flow", "top": 50})
	if len(loc.Files) > 50 || len(loc.Files) == 0 {
		t.Errorf("localize top 50: got %d files", len(loc.Files))
	}
	for _, f := range loc.Files {
		if len(f.Reasons) > 5 {
			t.Errorf("localize: %s has %d reasons, want at most 5", f.Path, len(f.Reasons))
		}
	}
	out, text := ok[mcp.ContextOutput](t, s, "context", map[string]any{"task": "every coupon handler of the request flow", "budget_tokens": 500})
	if out.Tokens > 500 || out.Budget != 500 || out.Trimmed == 0 {
		t.Errorf("context at 500 tokens: got %+v, want at most 500 tokens and items left out", out)
	}
	if len(text) > 4*500+2000 {
		t.Errorf("context at 500 tokens: %d bytes of text", len(text))
	}
	syms, _ := ok[mcp.SymbolsOutput](t, s, "symbols", map[string]any{"pattern": "handler_*", "limit": 100})
	if len(syms.Symbols) != 100 || !syms.More {
		t.Errorf("symbols limit 100: got %d, more %v", len(syms.Symbols), syms.More)
	}
	fc, text := ok[mcp.FileContextOutput](t, s, "file_context", map[string]any{"path": "shop/handlers.py"})
	if len(fc.Symbols) != 300 || fc.Omitted["symbols"] != 100 || len(fc.Docstrings) != 100 || fc.Omitted["docstrings"] != 300 ||
		len(fc.RationaleComments) != 100 || fc.Omitted["rationale_comments"] != 300 {
		t.Errorf("file_context: %d symbols, %d docstrings, %d comments, omitted %v", len(fc.Symbols), len(fc.Docstrings), len(fc.RationaleComments), fc.Omitted)
	}
	if len(text) > mcp.MaxText {
		t.Errorf("file_context: %d bytes of text, over %d", len(text), mcp.MaxText)
	}
	_, text = ok[mcp.ContextOutput](t, s, "context", map[string]any{"task": "every coupon handler of the request flow", "budget_tokens": 32000})
	if len(text) > mcp.MaxText {
		t.Errorf("context at the largest budget: %d bytes, over %d", len(text), mcp.MaxText)
	}
}

// TestRefresh: a call after files changed re-indexes them first and says
// so; the next call finds the index fresh; more changes than a call
// re-indexes leave it stale, naming 'cra index'.
func TestRefresh(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	s := connect(t, root, nil)
	write(t, root, "shop/refunds.py", "def refund_order(order):\n    \"\"\"Give the money back.\"\"\"\n    return order\n")
	syms, text := ok[mcp.SymbolsOutput](t, s, "symbols", map[string]any{"pattern": "refund_order"})
	if syms.Index.State != mcp.StateRefreshed || syms.Index.ChangedFiles != 1 || len(syms.Symbols) != 1 {
		t.Errorf("after adding a file: got %+v", syms)
	}
	if !strings.HasPrefix(text, "index: refreshed (1 changed file re-indexed first)\n") {
		t.Errorf("text %q", text)
	}
	syms, _ = ok[mcp.SymbolsOutput](t, s, "symbols", map[string]any{"pattern": "refund_order"})
	if syms.Index.State != mcp.StateFresh {
		t.Errorf("second call: got %+v, want fresh", syms.Index)
	}

	for i := range mcp.DefaultRefreshFiles + 1 {
		write(t, root, fmt.Sprintf("gen/mod%03d.py", i), fmt.Sprintf("def gen_%03d():\n    return %d\n", i, i))
	}
	ov, text := ok[mcp.OverviewOutput](t, s, "overview", nil)
	if ov.Index.State != mcp.StateStale || ov.Index.ChangedFiles != mcp.DefaultRefreshFiles+1 || len(ov.Index.Changed) != 20 ||
		!strings.Contains(ov.Index.Note, "run 'cra index "+root+"'") {
		t.Errorf("after %d new files: got %+v", mcp.DefaultRefreshFiles+1, ov.Index)
	}
	if !strings.HasPrefix(text, fmt.Sprintf("index: stale, %d files changed since it was built (gen/mod000.py, ", mcp.DefaultRefreshFiles+1)) ||
		!strings.Contains(text, " and 181 more): more than the 200 files a call re-indexes") {
		t.Errorf("stale text starts %q", text[:min(len(text), 300)])
	}
}

// TestReadOnly: where the state directory may not be written (a
// sandboxed run; --read-only here, as the tests run as any user), the
// index is read as it stands, the changed files are named, and nothing is
// written.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	logBefore, _ := os.ReadFile(filepath.Join(root, ".clean_room", "world.log"))
	s := connect(t, root, nil, "--read-only")
	write(t, root, "shop/pager.py", "def resolve_pager():\n    return 'more'\n")
	loc, text := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "resolve_pager"})
	if loc.Index.State != mcp.StateStale || !slices.Equal(loc.Index.Changed, []string{"shop/pager.py"}) || !strings.Contains(loc.Index.Note, "read-only") {
		t.Errorf("got %+v", loc.Index)
	}
	if !strings.HasPrefix(text, "index: stale, 1 file changed since it was built (shop/pager.py): the state directory is read-only here") {
		t.Errorf("text %q", text)
	}
	if len(loc.Files) == 0 || loc.Files[0].Path != "shop/pager.py" {
		t.Errorf("the stale index still answers: got %+v", loc.Files)
	}
	again, _ := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "resolve_pager"})
	if again.Index.State != mcp.StateStale {
		t.Errorf("read-only never refreshes: got %+v", again.Index)
	}
	logAfter, _ := os.ReadFile(filepath.Join(root, ".clean_room", "world.log"))
	if string(logAfter) != string(logBefore) {
		t.Errorf("read-only wrote the world log: %q", strings.TrimPrefix(string(logAfter), string(logBefore)))
	}
}

// TestSandboxed: 'cra mcp' started inside an agent's sandbox (Landlock:
// it may write its temp directory only, as the processor confines a run)
// finds .clean_room/ not writable by itself, reads the index as it stands
// and names what changed; nothing is written. The index may be closed
// (no -wal, no -shm: SQLite cannot make them, and the file is read as it
// stands) or held open by another process, as a daemon holds it.
func TestSandboxed(t *testing.T) {
	t.Parallel()
	if sandbox.ABI() == 0 {
		t.Fatalf("Landlock is missing on this kernel, so agent runs cannot be confined: boot a Linux 5.13+ kernel with CONFIG_SECURITY_LANDLOCK=y and landlock in lsm= (cat /sys/kernel/security/lsm)")
	}
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held open %v", held), func(t *testing.T) {
			t.Parallel()
			root := newRepo(t, shop...)
			state := filepath.Join(root, ".clean_room")
			if held {
				db, err := store.NewFactory(statedir.At(state)).Open(context.Background(), store.Curated, "", false)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`UPDATE repos SET indexed_at = indexed_at`); err != nil {
					t.Fatal(err)
				}
			}
			before := listDir(t, state)
			tmp := t.TempDir()
			cmd := exec.Command("cra", "sandbox-exec", "--write", tmp, "--", "cra", "mcp", "--repo", root)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			cmd.Stderr = &testLog{t: t}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := sdk.NewClient(&sdk.Implementation{Name: "cra-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			write(t, root, "shop/pricing.py", "def apply_coupon(total, coupon):\n    return total\n")
			loc, _ := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "apply_coupon"})
			if loc.Index.State != mcp.StateStale || !slices.Equal(loc.Index.Changed, []string{"shop/pricing.py"}) ||
				!strings.Contains(loc.Index.Note, "read-only here (a sandboxed run)") {
				t.Errorf("got %+v", loc.Index)
			}
			if len(loc.Files) == 0 || loc.Files[0].Path != "shop/pricing.py" {
				t.Errorf("files: got %+v", loc.Files)
			}
			ok[mcp.ContextOutput](t, s, "context", map[string]any{"task": "apply_coupon", "budget_tokens": 1000})
			s.Close()
			if after := listDir(t, state); !slices.Equal(after, before) {
				t.Errorf(".clean_room/ changed under the sandbox:\n before %v\n after  %v", before, after)
			}
		})
	}
}

// listDir lists dir's files with their sizes.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d", e.Name(), info.Size()))
	}
	return out
}

// TestWorldLog: each call is an [event:mcp] line, under the run's task id
// when the server runs inside a board run.
func TestWorldLog(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	s := connect(t, root, []string{"CRA_TASK_ID=T-7", "CRA_RUN_ID=2"})
	ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "fix the pager", "top": 2})
	call(t, s, "localize", map[string]any{"top": 2})
	s.Close()
	p := connect(t, root, []string{"CRA_TASK_ID="})
	ok[mcp.OverviewOutput](t, p, "overview", nil)
	p.Close()
	data, err := os.ReadFile(filepath.Join(root, ".clean_room", "world.log"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if _, rest, found := strings.Cut(l, "][event:mcp]"); found {
			lines = append(lines, rest)
		}
	}
	want := []string{
		`[T-7] run 2 localize: "fix the pager" → 1 file, first shop/pager.py; fresh`,
		`[T-7] run 2 localize: refused: task: missing: it is required: pass it, e.g. {"task": "the pager command is resolved twice"}`,
		`[mcp] overview: 8 files, 8 symbols; fresh`,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("world log mcp lines:\n got %q\nwant %q", lines, want)
	}
}

// TestResources: the knowledge documents are resources, listed as the
// store has them now, and read whole.
func TestResources(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	s := connect(t, root, nil)
	ctx := context.Background()
	uris := func() []string {
		t.Helper()
		res, err := s.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res.Resources {
			out = append(out, r.URI)
		}
		return out
	}
	if got := uris(); !slices.Equal(got, []string{"cra://knowledge/conventions/style.md", "cra://knowledge/lessons/coupons.md"}) {
		t.Errorf("resources: got %v", got)
	}
	res, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "cra://knowledge/lessons/coupons.md"})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != shop[0]["docs/knowledge/lessons/coupons.md"] {
		t.Errorf("read: got %+v, %v", res, err)
	}
	write(t, root, "docs/knowledge/design/api.md", "# API\n\n## Rules\n- Versioned.\n")
	if got := uris(); len(got) != 3 || got[0] != "cra://knowledge/conventions/style.md" || !slices.Contains(got, "cra://knowledge/design/api.md") {
		t.Errorf("after a new document: got %v", got)
	}
	os.Remove(filepath.Join(root, "docs/knowledge/lessons/coupons.md"))
	if got := uris(); slices.Contains(got, "cra://knowledge/lessons/coupons.md") {
		t.Errorf("after a removed document: got %v", got)
	}
	for _, uri := range []string{"cra://knowledge/lessons/coupons.md", "cra://knowledge/../../.clean_room/config.toml", "file:///etc/passwd"} {
		if res, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s: got %+v, want an error", uri, res)
		}
	}
}

// FuzzToolCall: whatever arguments a client sends to whichever tool (the
// board's over a real board, a run's to an endpoint that refuses), the
// server answers with a result or an invalid-params error, and answers
// the next call.
func FuzzToolCall(f *testing.F) {
	for _, seed := range []string{
		`{"task": "fix the pager", "top": 5}`, `{"task": "x", "budget_tokens": 500}`, `{"pattern": "%_\\*", "kind": "class"}`,
		`{"path": "shop/cart.py"}`, `{"path": "shop/../../../etc/passwd"}`, `{}`, `{"task": "\u0000\u2028` + "`" + `"}`,
		`{"pattern": "*"}`, `{"path": "docs/knowledge"}`, `{"task": "File \"/x/shop/cart.py\", line 99999999999"}`,
		`{"title": "a\u0000b", "priority": "high"}`, `{"id": "t-00000000"}`, `{"folder": "pending", "limit": 1}`,
		`{"status": "finish", "output": "done"}`, `{"status": "verified"}`, `{"question": "which one?"}`,
	} {
		for i := range 11 {
			f.Add(byte(i), seed)
		}
	}
	root := newRepo(f, shop...)
	ctx := context.Background()
	// The board's tools over a real board; the run's tools against an
	// endpoint that refuses every report, as one does a forged token.
	ws, err := workspace.Open(ctx, root, workspace.Options{})
	if err != nil {
		f.Fatal(err)
	}
	fl, err := fleet.Open(ctx, ws, fleet.Options{Create: true})
	if err != nil {
		f.Fatal(err)
	}
	defer fl.Close()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error": "no run holds this token"}`))
	}))
	defer refuse.Close()
	srv, err := mcp.New(ctx, root, mcp.Options{Board: fl})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	run, err := mcp.New(ctx, root, mcp.Options{TaskID: "t-00000001", Run: "1", RunToken: "forged", ReportURL: refuse.URL})
	if err != nil {
		f.Fatal(err)
	}
	defer run.Close()
	connect := func(srv *mcp.Server) *sdk.ClientSession {
		st, ct := sdk.NewInMemoryTransports()
		go srv.Run(ctx, st)
		s, err := sdk.NewClient(&sdk.Implementation{Name: "fuzz", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	board, runSession := connect(srv), connect(run)
	defer board.Close()
	defer runSession.Close()
	names := []string{"localize", "context", "symbols", "file_context", "overview", "knowledge", "task_list", "task_show", "task_add", "report", "ask_person"}
	f.Fuzz(func(t *testing.T, which byte, raw string) {
		if !json.Valid([]byte(raw)) {
			return // no client sends it
		}
		name := names[int(which)%len(names)]
		s := board
		if name == "report" || name == "ask_person" {
			s = runSession
		}
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(raw)})
		var we *jsonrpc.Error
		switch {
		case errors.As(err, &we):
			if we.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("%s: JSON-RPC error %d %q, want invalid params", raw, we.Code, we.Message)
			}
		case err != nil:
			t.Fatalf("%s: %v", raw, err)
		case len(textOf(res)) > mcp.MaxText:
			t.Fatalf("%s: %d bytes of text", raw, len(textOf(res)))
		}
		if err := s.Ping(ctx, nil); err != nil {
			t.Fatalf("after %s: the server is gone: %v", raw, err)
		}
	})
}

// TestFiles: 'cra mcp --files DIR' reads a copy of the repository (a board
// run's working copy, a clone) against the repository's index: the copy's
// edits are named and never indexed, its files are what the tools read,
// and a path may be given in the copy or in the repository.
func TestFiles(t *testing.T) {
	t.Parallel()
	root := newRepo(t, shop...)
	work := filepath.Join(t.TempDir(), "work")
	gittest.Run(t, filepath.Dir(work), "clone", "-q", root, work)
	write(t, work, "shop/pager.py", "def resolve_pager():\n    return 'more'\n\n\ndef pager_width():\n    return 80\n")
	s := connect(t, root, nil, "--files", work)
	for range 2 {
		loc, text := ok[mcp.LocalizeOutput](t, s, "localize", map[string]any{"task": "resolve_pager"})
		if loc.Index.State != mcp.StateStale || !slices.Equal(loc.Index.Changed, []string{"shop/pager.py"}) || !strings.Contains(loc.Index.Note, work) {
			t.Errorf("got %+v", loc.Index)
		}
		if !strings.HasPrefix(text, "index: stale, 1 file changed since it was built (shop/pager.py): these files of "+work) {
			t.Errorf("text %q", text)
		}
	}
	if d, err := index.NewBuilderIn(filepath.Join(root, ".clean_room")).Changes(context.Background(), root); err != nil || d.Stale() {
		t.Errorf("the repository's own index: got %+v, %v, want it untouched and fresh", d, err)
	}
	for _, p := range []string{filepath.Join(work, "shop", "cart.py"), filepath.Join(root, "shop", "cart.py"), "shop/cart.py"} {
		fc, _ := ok[mcp.FileContextOutput](t, s, "file_context", map[string]any{"path": p})
		if fc.Path != "shop/cart.py" {
			t.Errorf("file_context %s: got %q", p, fc.Path)
		}
	}
	_, err := call(t, s, "file_context", map[string]any{"path": filepath.Join(filepath.Dir(work), "elsewhere.py")})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "file_context: path: ") {
		t.Errorf("a path outside both: got %v", err)
	}
	if out, err := exec.Command("cra", "mcp", "--repo", root, "--files", filepath.Join(work, "missing")).CombinedOutput(); err == nil {
		t.Errorf("--files of a missing directory: got success\n%s", out)
	}
}
