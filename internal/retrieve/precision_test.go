package retrieve

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func candidatesFor(t *testing.T, f *fixture, task string) []SymbolCandidate {
	t.Helper()
	ctx := context.Background()
	q := Analyze(task)
	rk := NewRanker(f.kb, f.repoID)
	rk.Root = f.root
	cands, err := rk.Rank(ctx, q, 20)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := symbolCandidates(ctx, rk, q, cands, precisionFiles)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func findSymbol(cs []SymbolCandidate, path, name string) (SymbolCandidate, int) {
	for i, c := range cs {
		if c.Path == path && c.Name == name {
			return c, i
		}
	}
	return SymbolCandidate{}, -1
}

// Python: the named definition first, its callers through
// symbol_references, the test that exercises them, and its rationale.
func TestSymbolCandidatesPython(t *testing.T) {
	f := newFixture(t, map[string]string{
		"shop/__init__.py": "",
		"shop/pager.py": `import os


def _fallback():
    return "less"


def resolve_pager():
    # Read once because the environment may change under a running pager.
    return os.environ.get("PAGER") or _fallback()


def echo_via_pager(text):
    cmd = resolve_pager()
    return cmd + text


def unrelated():
    return 1
`,
		"tests/test_pager.py": `from shop.pager import echo_via_pager


def test_echo():
    assert echo_via_pager("x")
`,
	})
	cs := candidatesFor(t, f, "`resolve_pager` reads the environment twice")
	first, _ := findSymbol(cs, "shop/pager.py", "resolve_pager")
	if len(cs) == 0 || cs[0].Name != "resolve_pager" || !contains(first.Reasons, "named in the task") {
		t.Fatalf("got %+v, want resolve_pager first, named in the task", cs)
	}
	if first.Rationale != "Read once because the environment may change under a running pager." {
		t.Errorf("rationale: got %q", first.Rationale)
	}
	// A caller holds the seed's name anyway; the link says why.
	caller, ci := findSymbol(cs, "shop/pager.py", "echo_via_pager")
	if ci < 0 || !contains(caller.Reasons, "calls resolve_pager") || contains(caller.Reasons, "uses resolve_pager") {
		t.Errorf("echo_via_pager: got %+v, want the reason calls resolve_pager, once", caller)
	}
	// A callee shares none of the task's words: only the link finds it.
	callee, fi := findSymbol(cs, "shop/pager.py", "_fallback")
	if fi < 0 || !contains(callee.Reasons, "called by resolve_pager") || !callee.Linked || callee.Score != first.Score/2 {
		t.Errorf("_fallback: got %+v, want linked at half of resolve_pager's %v", callee, first.Score)
	}
	_, ui := findSymbol(cs, "shop/pager.py", "unrelated")
	if ui >= 0 && (ui < ci || ui < fi) {
		t.Errorf("unrelated (%d) ranks above the caller (%d) or the callee (%d)", ui, ci, fi)
	}
}

// Every language: name signals link the definitions that use a seed's
// name, tests first; a name used everywhere links nothing.
func TestSymbolCandidatesGoNames(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod": "module example.com/m\n",
		"parse.go": `package m

// ParseHeader splits a header line.
func ParseHeader(line string) (string, string) { return line, "" }
`,
		"serve.go": `package m

func Serve(line string) string {
	k, _ := ParseHeader(line)
	return k
}
`,
		"parse_test.go": `package m

import "testing"

func TestParseHeader(t *testing.T) {
	if k, _ := ParseHeader("a: b"); k == "" {
		t.Fail()
	}
}
`,
	})
	cs := candidatesFor(t, f, "`ParseHeader` drops the value")
	test, ti := findSymbol(cs, "parse_test.go", "TestParseHeader")
	if ti < 0 || !contains(test.Reasons, "exercises ParseHeader") {
		t.Errorf("TestParseHeader: got %+v, want the reason exercises ParseHeader", test)
	}
	user, ui := findSymbol(cs, "serve.go", "Serve")
	if ui < 0 || !contains(user.Reasons, "uses ParseHeader") {
		t.Errorf("Serve: got %+v, want linked: uses ParseHeader", user)
	}
}

// The stage marks linked definitions supporting, and the assembler
// includes a supporting body the task's words alone would not.
func TestPrecisionStageDeterministic(t *testing.T) {
	f := newFixture(t, shop...)
	p, _ := newPipeline(t, f, nil)
	p.Judge = nil
	stages, _ := ParseStages("scope,precision")
	res, err := p.Run(context.Background(), "task-1", "`_pager_contextmanager` leaks a process", stages, budget)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Context.Linked["shop/cli.py"]["main"] {
		t.Errorf("cli.py main, which calls echo_via_pager: not linked (%v)", res.Context.Linked)
	}
	if len(res.Context.Symbols) == 0 || res.Context.Symbols[0].Name != "_pager_contextmanager" {
		t.Errorf("symbols: got %+v, want _pager_contextmanager first", res.Context.Symbols)
	}
}

func TestReplyErrorQuotesALongReplyInPart(t *testing.T) {
	raw := strings.Repeat("x", 5000)
	msg := (&ReplyError{CallType: "scope_judgment", Raw: raw, Err: errors.New("no JSON object")}).Error()
	if strings.Contains(msg, raw) || !strings.Contains(msg, strings.Repeat("x", maxRawInError)+"…") ||
		!strings.Contains(msg, "(2000 of 5000 bytes shown: the whole reply is recorded in .clean_room/raw.sqlite, retrieval_llm_calls)") {
		t.Errorf("message:\n%s", msg[len(msg)-200:])
	}
	if short := (&ReplyError{CallType: "x", Raw: "hi", Err: errors.New("e")}).Error(); !strings.HasSuffix(short, "--- raw response ---\nhi") {
		t.Errorf("short reply: %q", short)
	}
}
