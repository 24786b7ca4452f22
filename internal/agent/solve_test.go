package agent

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/validation"
)

// fakeModel answers with a function and records every request.
type fakeModel struct {
	mu       sync.Mutex
	answer   func(n int, req llm.Request) (string, error)
	requests []llm.Request
}

var _ llm.Client = (*fakeModel)(nil)

func (f *fakeModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	f.mu.Unlock()
	text, err := f.answer(n, req)
	return llm.Response{Text: text, PromptTokens: 100 * n, CompletionTokens: 10, Latency: time.Millisecond}, err
}

// scripted answers the n-th call with the n-th reply, the last repeating.
func scripted(replies ...string) *fakeModel {
	return &fakeModel{answer: func(n int, _ llm.Request) (string, error) {
		return replies[min(n, len(replies))-1], nil
	}}
}

func (f *fakeModel) prompt(i int) string {
	return f.requests[i].Messages[len(f.requests[i].Messages)-1].Content
}

const (
	fixReply   = "calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\n"
	wrongReply = "calc/calc.go\n```go\n<<<<<<< SEARCH\n\treturn a - b\n=======\n\treturn a * b\n>>>>>>> REPLACE\n```\n"
	// missReply's SEARCH is not in the file (a semicolon, spaces).
	missReply = "calc/calc.go\n```go\n<<<<<<< SEARCH\nfunc Add(a, b int) int {\n    return a - b;\n=======\nfunc Add(a, b int) int {\n\treturn a + b\n>>>>>>> REPLACE\n```\n"
	needReply = "```NEED_CONTEXT\n{\"reason\": \"the test is not shown\", \"missing_files\": [\"calc/calc_test.go\"], \"missing_symbols\": [\"TestAdd\"]}\n```\n"
)

// pkgOf is a context package holding the fixture's calc.go.
func pkgOf(paths ...string) *retrieve.Package {
	p := &retrieve.Package{}
	for _, path := range paths {
		p.Files = append(p.Files, retrieve.PackageFile{Path: path, Items: []retrieve.Item{{Kind: "file", StartLine: 1, EndLine: 6, Text: calcGo}}})
	}
	return p
}

type solveEnv struct {
	solver *Solver
	model  *fakeModel
	raw    *sql.DB
	log    *RunLog
	sess   *store.SessionDB
	out    *bytes.Buffer
}

func newSolveEnv(t *testing.T, model *fakeModel, test string, attempts int) *solveEnv {
	t.Helper()
	if runtime.GOOS == "windows" && test != "" {
		t.Skip("the validation commands are sh")
	}
	ctx := context.Background()
	repo, state := newRepo(t)
	w, err := NewWorktree(ctx, repo, state, "task-1")
	if err != nil {
		t.Fatal(err)
	}
	f := store.NewFactory(statedir.At(filepath.Join(t.TempDir(), "state")))
	raw, err := f.Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	sess, err := f.OpenSession(ctx, "task-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	b := retrieve.Budget{ContextWindow: 8192, ReservedTokens: 2048}
	log, err := StartRun(ctx, corpus.New(raw), TaskRun{TaskID: "task-1", Repo: repo, Mode: ModeImplement, ExecuteModel: "coder", Budget: b, Stages: "scope"})
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	s := &Solver{Model: model, Worktree: w, Validator: &validation.Validator{Test: test}, Session: sess, Log: log, Budget: b,
		ReplyTokens: 1024, MaxAttempts: attempts, MaxRefinementLoops: 1, Progress: out}
	return &solveEnv{solver: s, model: model, raw: raw, log: log, sess: sess, out: out}
}

func (e *solveEnv) rows(t *testing.T) (attempts []string, validations []string) {
	t.Helper()
	rows, err := e.raw.Query(`SELECT a.attempt, a.patch_applied, a.prompt_tokens, v.success, v.failing_tests FROM run_attempts a
		LEFT JOIN validation_results v ON v.attempt_id = a.id WHERE a.task_run_id = ? ORDER BY a.attempt`, e.log.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n, applied, tokens int
		var ok sql.NullBool
		var failing sql.NullString
		if err := rows.Scan(&n, &applied, &tokens, &ok, &failing); err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, fmt.Sprintf("%d applied=%d tokens=%d", n, applied, tokens))
		if ok.Valid {
			validations = append(validations, fmt.Sprintf("%d ok=%v %s", n, ok.Bool, failing.String))
		}
	}
	return attempts, validations
}

func classes(r *TaskResult) []string {
	var out []string
	for _, a := range r.Attempts {
		out = append(out, a.Class)
	}
	return out
}

// TestSolveFixes runs real go test in the worktree.
func TestSolveFixes(t *testing.T) {
	e := newSolveEnv(t, scripted(fixReply), "GOFLAGS=-mod=mod go test ./...", 3)
	res, err := e.solver.Solve(context.Background(), Input{Task: "Add subtracts; make TestAdd pass", Package: pkgOf("calc/calc.go"), Knowledge: "### conventions/x.md\nUse tabs."})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || len(res.Attempts) != 1 || !res.Validated || res.Class != "" {
		t.Fatalf("got %+v\n%s", res, e.out)
	}
	if !strings.Contains(res.Diff, "-\treturn a - b\n+\treturn a + b") || !cmp.Equal(res.Files, []string{"calc/calc.go"}) {
		t.Errorf("diff %q files %v", res.Diff, res.Files)
	}
	req := e.model.requests[0]
	if req.System != CodeSystem || req.MaxTokens != 1024 || req.ContextWindow != 8192 {
		t.Errorf("request: system %.20q max %d window %d", req.System, req.MaxTokens, req.ContextWindow)
	}
	p := e.model.prompt(0)
	for _, want := range []string{"## TASK\nAdd subtracts", "## PROJECT KNOWLEDGE\n", "Use tabs.", "## CONTEXT\n", "## calc/calc.go", "## YOUR ANSWER"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "PREVIOUS ATTEMPTS") || strings.Contains(p, "## PLAN") {
		t.Error("a first prompt without plan has no retry or plan section")
	}
	// CodePrompt, which bootstrapped pairs use, builds exactly this prompt.
	in := Input{Task: "Add subtracts; make TestAdd pass", Package: pkgOf("calc/calc.go"), Knowledge: "### conventions/x.md\nUse tabs."}
	if sys, user, _, err := CodePrompt(in, 8192, 1024); err != nil || sys != req.System || user != p {
		t.Errorf("CodePrompt differs from the first attempt's prompt (%v):\n%s", err, user)
	}
	attempts, validations := e.rows(t)
	if diff := cmp.Diff([]string{"1 applied=1 tokens=100"}, attempts); diff != "" {
		t.Errorf("run_attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"1 ok=true []"}, validations); diff != "" {
		t.Errorf("validation_results (-want +got):\n%s", diff)
	}
	if !strings.Contains(e.out.String(), "attempt 1/3: 1 edit block(s) applied; test pass") {
		t.Errorf("progress: %s", e.out)
	}
}

// TestSolveRetries walks every failure class before the fix, and checks
// what each retry prompt says.
func TestSolveRetries(t *testing.T) {
	model := scripted("I would flip the sign.", missReply, wrongReply, "calc/calc.go\n<<<<<<< SEARCH\n\treturn a * b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n")
	e := newSolveEnv(t, model, "sh test.sh", 4)
	res, err := e.solver.Solve(context.Background(), Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ClassUnparseable, ClassApply, ClassTest, ""}, classes(res)); diff != "" {
		t.Fatalf("classes (-want +got):\n%s\n%s", diff, e.out)
	}
	if !res.Success {
		t.Fatal("not solved")
	}
	for i, wants := range [][]string{
		{"### Attempt 1: unparseable_reply\nYour reply could not be used: the reply has no edit blocks", "Your reply began:\n```\nI would flip the sign.\n```"},
		{"### Attempt 2: apply_failure\n0 of 1 edit blocks applied; 1 failed. Send again only the blocks that failed",
			"- block 1 (calc/calc.go): FAILED. SEARCH matches nothing in calc/calc.go. Did you mean lines 4-5?\n```\nfunc Add(a, b int) int {\n\treturn a - b\n```"},
		{"### Attempt 3: test_failure\nThe edits applied, but test failed. Failing tests: TestAdd.", "Output of test (`sh test.sh`, exit status 1)",
			"## CURRENT CHANGES\n", "+\treturn a * b"},
	} {
		p := model.prompt(i + 1)
		for _, want := range wants {
			if !strings.Contains(p, want) {
				t.Errorf("prompt %d lacks %q:\n%s", i+2, want, p)
			}
		}
	}
	attempts, validations := e.rows(t)
	if diff := cmp.Diff([]string{"1 applied=0 tokens=100", "2 applied=0 tokens=200", "3 applied=1 tokens=300", "4 applied=1 tokens=400"}, attempts); diff != "" {
		t.Errorf("run_attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`3 ok=false ["TestAdd"]`, "4 ok=true []"}, validations); diff != "" {
		t.Errorf("validation_results (-want +got):\n%s", diff)
	}
	var notes []map[string]any
	if ok, err := e.sess.Load(context.Background(), "retry_context", &notes); !ok || err != nil || len(notes) != 3 {
		t.Errorf("session retry_context: %v %v %v", ok, err, notes)
	}
}

func TestSolveGivesUp(t *testing.T) {
	e := newSolveEnv(t, scripted(wrongReply), "sh test.sh", 2)
	res, err := e.solver.Solve(context.Background(), Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || len(res.Attempts) != 2 || res.Class != ClassTest || !strings.Contains(res.Evidence, "Failing tests: TestAdd") {
		t.Fatalf("got %+v", res)
	}
	if !strings.Contains(res.Evidence, "Your edits were already in the files, and test failed.") {
		t.Errorf("the last evidence does not say the edits were already there:\n%s", res.Evidence)
	}
	if !strings.Contains(res.Diff, "+\treturn a * b") {
		t.Errorf("the diff of a failed run keeps the last state:\n%s", res.Diff)
	}
}

func TestSolveRefines(t *testing.T) {
	model := scripted(needReply, needReply, fixReply)
	e := newSolveEnv(t, model, "sh test.sh", 3)
	var got []retrieve.RefinementRequest
	// Retrieval reads the request from the session, where the solver
	// wrote it (seed 001 §13).
	e.solver.Refine = func(ctx context.Context) (*retrieve.Package, error) {
		var req retrieve.RefinementRequest
		if ok, err := e.sess.Load(ctx, "refinement_request", &req); !ok || err != nil {
			t.Fatalf("no refinement_request in the session: %v", err)
		}
		got = append(got, req)
		return pkgOf("calc/calc.go", "calc/calc_test.go"), nil
	}
	res, err := e.solver.Solve(context.Background(), Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ClassInsufficientContext, ClassInsufficientContext, ""}, classes(res)); diff != "" {
		t.Fatalf("classes (-want +got):\n%s", diff)
	}
	if res.Refinements != 1 || len(got) != 1 || !res.Attempts[0].Refined || res.Attempts[1].Refined {
		t.Errorf("refinements %d, requests %v", res.Refinements, got)
	}
	if diff := cmp.Diff([]string{"calc/calc_test.go"}, got[0].MissingFiles); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if p := model.prompt(1); !strings.Contains(p, "## calc/calc_test.go") || !strings.Contains(p, "You asked for more context (files: calc/calc_test.go; symbols: TestAdd)") {
		t.Errorf("the prompt after refinement:\n%s", p)
	}
	if p := model.prompt(2); !strings.Contains(p, "You asked for the same context again") {
		t.Errorf("a repeated request is not refused:\n%s", p)
	}
	if !strings.Contains(e.out.String(), "the model needs context (files: calc/calc_test.go; symbols: TestAdd): refining retrieval") {
		t.Errorf("progress: %s", e.out)
	}
	if ok, _ := e.sess.Load(context.Background(), "attempt_summary", &map[string]any{}); !ok {
		t.Error("no attempt_summary in the session")
	}

	// With no refinement left, the model is told to go on.
	e = newSolveEnv(t, scripted(needReply, fixReply), "sh test.sh", 2)
	e.solver.MaxRefinementLoops = 0
	e.solver.Refine = func(context.Context) (*retrieve.Package, error) {
		t.Error("refined past the limit")
		return nil, nil
	}
	if res, err := e.solver.Solve(context.Background(), Input{Task: "fix Add", Package: pkgOf("calc/calc.go")}); err != nil || !res.Success {
		t.Fatalf("%v %+v", err, res)
	}
	if p := e.model.prompt(1); !strings.Contains(p, "the limit of 0 refinement(s) is reached") {
		t.Errorf("prompt:\n%s", p)
	}
}

// TestSolveImpossiblePath: a reply with a block no file can have (a path
// through a file, a symlink to the worktree's .git) beside a valid block
// is an apply failure: the valid block applies, the next prompt says why
// the others were refused, and the run goes on (issue 19, defect 1).
func TestSolveImpossiblePath(t *testing.T) {
	first := "calc/calc.go/helper.go\n```go\n<<<<<<< SEARCH\n=======\npackage calc\n>>>>>>> REPLACE\n```\n" +
		fixReply +
		"link/config\n```\n<<<<<<< SEARCH\n=======\n[core]\n>>>>>>> REPLACE\n```\n"
	second := "calc/helper.go\n```go\n<<<<<<< SEARCH\n=======\npackage calc\n>>>>>>> REPLACE\n```\n"
	model := scripted(first, second)
	e := newSolveEnv(t, model, "sh test.sh", 3)
	// In a worktree .git is a file: a path through it fails with ENOTDIR.
	if err := os.Symlink(".git", filepath.Join(e.solver.Worktree.Root, "link")); err != nil {
		t.Skip("no symlinks:", err)
	}
	res, err := e.solver.Solve(context.Background(), Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
	if err != nil {
		t.Fatalf("got error %v, want the blocks refused and the run going on\n%s", err, e.out)
	}
	if diff := cmp.Diff([]string{ClassApply, ""}, classes(res)); diff != "" {
		t.Fatalf("classes (-want +got):\n%s\n%s", diff, e.out)
	}
	if !res.Success {
		t.Fatal("not solved")
	}
	p := model.prompt(1)
	for _, want := range []string{
		"### Attempt 1: apply_failure\n1 of 3 edit blocks applied; 2 failed.",
		"- block 1 (calc/calc.go/helper.go): FAILED. refused path \"calc/calc.go/helper.go\": calc/calc.go is a file, not a directory",
		"- block 2 (calc/calc.go): applied; do not send it again",
		"- block 3 (link/config): FAILED. refused path \"link/config\": link is a symlink into .git",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt 2 lacks %q:\n%s", want, p)
		}
	}
	if diff := cmp.Diff([]string{"calc/calc.go", "calc/helper.go"}, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if fi, err := os.Lstat(filepath.Join(e.solver.Worktree.Root, ".git")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the worktree's .git file: %v %v", fi, err)
	}
}

func TestSolveStops(t *testing.T) {
	ctx := context.Background()
	// Each case has its own repository and model: they run at once.
	t.Run("a failed call", func(t *testing.T) {
		t.Parallel()
		// A failed call ends the run, recorded.
		down := &fakeModel{answer: func(int, llm.Request) (string, error) { return "", llm.ErrUnavailable }}
		e := newSolveEnv(t, down, "sh test.sh", 3)
		res, err := e.solver.Solve(ctx, Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
		if !errors.Is(err, llm.ErrUnavailable) || len(res.Attempts) != 1 || res.Class != ClassModelError {
			t.Errorf("got %v, %+v", err, res)
		}
		if attempts, _ := e.rows(t); len(attempts) != 1 {
			t.Errorf("the failed call is not recorded: %v", attempts)
		}
	})

	t.Run("the budget gate", func(t *testing.T) {
		t.Parallel()
		// The budget gate: a window too small for the task alone.
		e := newSolveEnv(t, scripted(fixReply), "", 3)
		e.solver.Budget = retrieve.Budget{ContextWindow: 1100, ReservedTokens: 100}
		e.solver.ReplyTokens = 400
		_, err := e.solver.Solve(ctx, Input{Task: strings.Repeat("long task ", 400), Package: pkgOf("calc/calc.go")})
		if !errors.Is(err, ErrPromptTooLarge) || !strings.Contains(err.Error(), "raise --context-window") || len(e.model.requests) != 0 {
			t.Errorf("got %v after %d calls", err, len(e.model.requests))
		}
	})

	t.Run("the worktree gone", func(t *testing.T) {
		t.Parallel()
		// A worktree gone from under the run stops it: no other path would
		// do. The reply is recorded.
		e := newSolveEnv(t, scripted(fixReply), "sh test.sh", 3)
		if err := os.RemoveAll(e.solver.Worktree.Root); err != nil {
			t.Fatal(err)
		}
		res, err := e.solver.Solve(ctx, Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
		if err == nil || !strings.Contains(err.Error(), "attempt 1: apply edits") || len(res.Attempts) != 1 || len(e.model.requests) != 1 {
			t.Errorf("got %v after %d calls, %+v", err, len(e.model.requests), res)
		}
		if attempts, _ := e.rows(t); len(attempts) != 1 {
			t.Errorf("the attempt is not recorded: %v", attempts)
		}
	})

	t.Run("no validation", func(t *testing.T) {
		t.Parallel()
		// Without validation commands, applied edits end the run, unvalidated.
		e := newSolveEnv(t, scripted(fixReply), "", 3)
		res, err := e.solver.Solve(ctx, Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
		if err != nil || !res.Success || res.Validated || res.Attempts[0].Validation != nil {
			t.Errorf("got %v %+v", err, res)
		}
		if !strings.Contains(e.out.String(), "(not validated)") {
			t.Errorf("progress: %s", e.out)
		}
	})
}

// The package is trimmed by priority: type context, then supporting code,
// then the primary symbols; the lowest-ranked file first within a tier.
func TestTrimPackageOrder(t *testing.T) {
	item := func(detail string, line int) retrieve.Item {
		return retrieve.Item{Kind: "symbol", Detail: detail, StartLine: line, EndLine: line}
	}
	pkg := &retrieve.Package{Files: []retrieve.PackageFile{
		{Path: "a.go", Items: []retrieve.Item{item(retrieve.DetailPrimary, 1), item(retrieve.DetailTypeContext, 2), item(retrieve.DetailSupporting, 3)}},
		{Path: "b.go", Items: []retrieve.Item{item(retrieve.DetailSupporting, 4), item(retrieve.DetailPrimary, 5), item(retrieve.DetailTypeContext, 6)}},
	}}
	var trimmed []string
	for trimPackage(pkg, &trimmed) {
	}
	want := []string{"context b.go lines 6-6", "context a.go lines 2-2", "context b.go lines 4-4", "context a.go lines 3-3", "context b.go lines 5-5", "context a.go lines 1-1"}
	if diff := cmp.Diff(want, trimmed); diff != "" {
		t.Errorf("trim order (-want +got):\n%s", diff)
	}
	if len(pkg.Files) != 0 {
		t.Errorf("files left: %v", pkg.Files)
	}
}

func TestSolvePromptFit(t *testing.T) {
	pkg := pkgOf("a.go", "b.go")
	p := &solvePrompt{task: "fix", knowledge: "rules", pkg: copyPackage(pkg), changes: strings.Repeat("+x\n", 100), notes: []retryNote{
		{attempt: 1, class: ClassTest, summary: "one", evidence: strings.Repeat("old evidence\n", 50)},
		{attempt: 2, class: ClassTest, summary: "two", evidence: strings.Repeat("new evidence\n", 50)},
	}}
	full := promptTokens(CodeSystem, p.render())
	order := []string{"retry details of attempt 1", "current changes", "retry details of attempt 2",
		"context b.go lines 1-6", "context a.go lines 1-6", "project knowledge"}
	prev := 0
	for room := 0; prev < len(order); room += 10 {
		q := *p
		q.pkg = copyPackage(pkg)
		q.notes = append([]retryNote(nil), p.notes...)
		_, tokens, err := q.fit(CodeSystem, full-room+100, 100)
		if err != nil {
			if prev < len(order)-1 {
				t.Fatalf("room %d: %v after trimming %v", room, err, q.trimmed)
			}
			break
		}
		if len(q.trimmed) < prev || !cmp.Equal(q.trimmed, order[:len(q.trimmed)], cmpopts.EquateEmpty()) {
			t.Fatalf("room %d: trimmed %v, want a prefix of %v no shorter than %d", room, q.trimmed, order, prev)
		}
		if tokens > full-room {
			t.Errorf("room %d: %d tokens left", room, tokens)
		}
		prev = len(q.trimmed)
	}
	if len(pkg.Files) != 2 || len(pkg.Files[1].Items) != 1 {
		t.Error("fit trimmed the caller's package")
	}
	q := *p
	q.pkg = copyPackage(pkg)
	q.notes = append([]retryNote(nil), p.notes...)
	if _, _, err := q.fit(CodeSystem, 50, 10); !errors.Is(err, ErrPromptTooLarge) || q.knowledge != "" {
		t.Errorf("got %v; knowledge %q", err, q.knowledge)
	}
}

// TestSolveReplyTooLarge: a reply past the bound is cut unread by the
// real provider client, counted as a malformed attempt the model is told
// about, and the loop goes on to a fix (issue 19, defect 6).
func TestSolveReplyTooLarge(t *testing.T) {
	s := llmtest.NewServer(t)
	s.Enqueue(llmtest.Text(strings.Repeat("calc/calc.go is fine. ", 100_000)), llmtest.Text(fixReply))
	e := newSolveEnv(t, scripted(""), "sh test.sh", 3)
	c, err := llm.New(llm.ModelConfig{Role: llm.RoleCoding, Provider: llm.ProviderOllama, Model: "coder", BaseURL: s.OllamaURL(),
		ContextWindow: 8192, MaxTokens: 1024, MaxReplyBytes: 64 << 10, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.solver.Model = c
	res, err := e.solver.Solve(context.Background(), Input{Task: "fix Add", Package: pkgOf("calc/calc.go")})
	if err != nil || !res.Success {
		t.Fatalf("got %v, success %v; want the cut reply retried and the fix applied\n%s", err, res.Success, e.out)
	}
	if diff := cmp.Diff([]string{ClassUnparseable, ""}, classes(res)); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	reqs := s.ChatRequests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Prompt(), "was cut unread") {
		t.Errorf("%d requests; the second prompt should say the reply was cut", len(reqs))
	}
}
