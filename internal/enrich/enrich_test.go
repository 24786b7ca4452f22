package enrich

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// fixture is a small repository indexed for real, with a fake model
// server.
type fixture struct {
	root    string
	factory *store.Factory
	kb      *kb.KnowledgeBase
	repo    kb.Repo
	raw     *sql.DB
	server  *llmtest.Server
	model   llm.ModelConfig
}

var files = map[string]string{
	"app/db.py": `"""Database access for the shop."""


class Session:
    """A unit of work."""

    def query(self, sql):
        return []


def connect(url):
    """Open a connection pool."""
    return Session()
`,
	"app/api.py": `from app.db import connect


def get_user(user_id):
    """Return a user by id."""
    return connect("db://").query("select")
`,
	"app/util.py":     "def slugify(text):\n    return text.lower()\n",
	"app/__init__.py": "",
}

func validReply(path string) string {
	return fmt.Sprintf(`{"purpose": "Handles %s.", "module": "app", "domain": "shop", "concepts": ["users", "storage"],
		"public_api_surface": ["thing"], "complexity_notes": ""}`, path)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := store.NewFactory(statedir.At(filepath.Join(root, ".clean_room")))
	b := index.NewBuilder(f)
	b.HistoryDepth = 0
	if _, err := b.Run(ctx, root); err != nil {
		t.Fatal(err)
	}
	curated, err := f.Open(ctx, store.Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { curated.Close() })
	raw, err := f.Open(ctx, store.Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	k := kb.New(curated)
	repo, err := k.Repo(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	s := llmtest.NewServer(t)
	return &fixture{root: root, factory: f, kb: k, repo: repo, raw: raw, server: s,
		model: llm.ModelConfig{Role: llm.RoleReasoning, Stage: Stage, Provider: llm.ProviderOllama, Model: "thinker:4b",
			BaseURL: s.OllamaURL(), MaxTokens: 4096, ContextWindow: 8192, Timeout: 5 * time.Second, MaxRetries: 1}}
}

func (fx *fixture) enricher(t *testing.T) *Enricher {
	t.Helper()
	c, err := llm.NewOllama(fx.model)
	if err != nil {
		t.Fatal(err)
	}
	c.Retry.BaseDelay, c.Retry.MaxDelay = time.Millisecond, time.Millisecond
	return New(fx.kb, corpus.New(fx.raw), c, fx.model)
}

func (fx *fixture) replyPerFile() {
	for p := range files {
		fx.server.On(llmtest.Contains("Path: "+p+"\n"), llmtest.Text(validReply(p)))
	}
}

func TestRunEnrichesResumesAndRecords(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	fx.server.On(llmtest.Contains("Path: app/util.py\n"), llmtest.Text("Sorry, I can only describe it in words."))
	fx.replyPerFile()
	e := fx.enricher(t)
	var progress []string
	e.Progress = func(p Progress) { progress = append(progress, fmt.Sprintf("%d/%d", p.Done, p.Total)) }
	res, err := e.Run(ctx, fx.repo)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 4 || res.Enriched != 2 || res.Malformed != 1 || res.Empty != 1 || res.Skipped != 0 || res.Calls != 4 || res.MalformedReplies != 2 {
		t.Errorf("first run: got %+v, want 4 files: 2 enriched, 1 malformed (2 replies), 1 empty; 4 calls", res)
	}
	if diff := cmp.Diff([]string{"1/4", "2/4", "3/4", "4/4"}, progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if len(res.Problems) != 1 || res.Problems[0].Path != "app/util.py" || !strings.Contains(res.Problems[0].Error, "no JSON object") {
		t.Errorf("problems: got %+v", res.Problems)
	}
	// Every call is an enrichment output; the malformed ones keep their error.
	var valid, invalid int
	fx.raw.QueryRow(`SELECT COUNT(*) FILTER (WHERE d.error IS NULL), COUNT(*) FILTER (WHERE d.error IS NOT NULL)
		FROM enrichment_outputs o JOIN enrichment_output_details d ON d.output_id = o.id`).Scan(&valid, &invalid)
	if valid != 2 || invalid != 2 {
		t.Errorf("outputs: got %d valid, %d invalid, want 2 and 2", valid, invalid)
	}

	// A re-run skips the enriched files and retries the malformed one.
	before := len(fx.server.ChatRequests())
	res, err = fx.enricher(t).Run(ctx, fx.repo)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 2 || res.Enriched != 0 || res.Malformed != 1 || res.Calls != 2 {
		t.Errorf("re-run: got %+v, want 2 skipped, util.py malformed again in 2 calls", res)
	}
	for _, r := range fx.server.ChatRequests()[before:] {
		if !strings.Contains(r.Prompt(), "Path: app/util.py\n") {
			t.Errorf("re-run asked about an enriched file:\n%s", r.Prompt())
		}
	}
	// Another model does not reuse this one's outputs.
	fx.model.Model = "other:1b"
	res, err = fx.enricher(t).Run(ctx, fx.repo)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 0 || res.Enriched != 2 {
		t.Errorf("another model: got %+v, want the files enriched again", res)
	}
}

func TestRequest(t *testing.T) {
	fx := newFixture(t)
	fx.replyPerFile()
	if _, err := fx.enricher(t).Run(context.Background(), fx.repo); err != nil {
		t.Fatal(err)
	}
	var db llmtest.Request
	for _, r := range fx.server.ChatRequests() {
		if strings.Contains(r.Prompt(), "Path: app/db.py\n") {
			db = r
		}
	}
	if db.Model != "thinker:4b" || db.NumCtx() != 8192 || db.MaxTokens != DefaultMaxReplyTokens || !db.JSON || db.Temperature == nil || *db.Temperature != 0 {
		t.Errorf("request: got %s", db.Summary())
	}
	if len(db.Messages) != 2 || db.Messages[0].Content != SystemPrompt {
		t.Fatalf("messages: got %+v, want the system prompt and the file's prompt", db.Messages)
	}
	prompt := db.Messages[1].Content
	for _, want := range []string{
		`"public_api_surface"`,
		"Language: python",
		"- class Session (lines 4-8)",
		"- method Session.query (lines 7-8): def query(self, sql):",
		"- function connect (lines 11-13)",
		"- (module): Database access for the shop.",
		"- connect: Open a connection pool.",
		"Content (the whole file, 13 lines):\n```\n\"\"\"Database access for the shop.\"\"\"",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
}

func TestPromptBoundedByWindow(t *testing.T) {
	fx := newFixture(t)
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, "def f%d(x):\n    return x + %d\n", i, i)
	}
	e := fx.enricher(t)
	e.model.ContextWindow = 4096
	f := kb.File{Path: "big.py", Language: "python", Lines: 10000}
	var syms []kb.Symbol
	for i := range 2000 {
		syms = append(syms, kb.Symbol{Name: fmt.Sprintf("f%d", i), Kind: "function", StartLine: 2*i + 1, EndLine: 2*i + 2, Signature: fmt.Sprintf("def f%d(x):", i)})
	}
	p := e.prompt(f, syms, nil, []byte(big.String()))
	if tokens := len(p) / charsPerToken; tokens+2*e.MaxReplyTokens > 4096 {
		t.Errorf("prompt of ~%d tokens does not fit a 4096 window with %d reply tokens", tokens, 2*e.MaxReplyTokens)
	}
	if !strings.Contains(p, "more\n") || !strings.Contains(p, "Content (the first ") {
		t.Errorf("a cut prompt says what it left out:\n%s", p)
	}
	e.HeadLines = 3
	if p := e.prompt(f, nil, nil, []byte("a\nb\nc\nd\n")); !strings.Contains(p, "Content (the first 3 lines):\n```\na\nb\nc\n```") {
		t.Errorf("head lines: got\n%s", p)
	}
}

func TestFormatRetry(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	fx.server.On(llmtest.Contains("Path: app/db.py\n"), llmtest.Text(`{"purpose": "x"}`), llmtest.Text("```json\n"+validReply("db")+"\n```"))
	fx.replyPerFile()
	res, err := fx.enricher(t).Run(ctx, fx.repo)
	if err != nil {
		t.Fatal(err)
	}
	if res.Enriched != 3 || res.Malformed != 0 || res.MalformedReplies != 1 || res.Calls != 4 {
		t.Errorf("got %+v, want 3 enriched after one format retry", res)
	}
	var retry llmtest.Request
	for _, r := range fx.server.ChatRequests() {
		if len(r.Messages) > 2 {
			retry = r
		}
	}
	if len(retry.Messages) != 4 || retry.Messages[2].Content != `{"purpose": "x"}` ||
		!strings.Contains(retry.Messages[3].Content, "missing key complexity_notes; missing key concepts") {
		t.Errorf("retry conversation: got %+v", retry.Messages)
	}
	var errText sql.NullString
	var prompt string
	fx.raw.QueryRow(`SELECT d.error, o.raw_prompt FROM enrichment_outputs o JOIN enrichment_output_details d ON d.output_id = o.id
		WHERE d.path = 'app/db.py' ORDER BY o.id`).Scan(&errText, &prompt)
	if !strings.Contains(errText.String, "invalid enrichment: missing key") {
		t.Errorf("first db.py output: got error %q", errText.String)
	}
}

func TestChangedSinceIndex(t *testing.T) {
	fx := newFixture(t)
	fx.replyPerFile()
	os.WriteFile(filepath.Join(fx.root, "app", "api.py"), []byte("changed = True\n"), 0o644)
	os.Remove(filepath.Join(fx.root, "app", "util.py"))
	res, err := fx.enricher(t).Run(context.Background(), fx.repo)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 2 || res.Enriched != 1 || res.Calls != 1 {
		t.Errorf("got %+v, want api.py and util.py reported changed, db.py enriched", res)
	}
	for _, p := range res.Problems {
		if !strings.Contains(p.Error, "run 'cra index' first") {
			t.Errorf("problem %+v does not say what to do", p)
		}
	}
}

func TestServerDownStopsAndRecords(t *testing.T) {
	fx := newFixture(t)
	fx.server.Close()
	e := fx.enricher(t)
	e.Concurrency = 2
	res, err := e.Run(context.Background(), fx.repo)
	if !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "cra doctor") {
		t.Fatalf("got %v, want ErrUnavailable naming cra doctor", err)
	}
	if res.Enriched != 0 || res.Calls == 0 {
		t.Errorf("got %+v", res)
	}
	// Every call is recorded with its error: the one that found the
	// server down, and any the stop cancelled.
	var failed, refused int
	fx.raw.QueryRow(`SELECT COUNT(*) FILTER (WHERE error IS NOT NULL), COUNT(*) FILTER (WHERE error LIKE '%connection refused%')
		FROM enrichment_output_details`).Scan(&failed, &refused)
	if failed != res.Calls || refused == 0 {
		t.Errorf("got %d recorded failed calls (%d refused), want every one of the %d calls", failed, refused, res.Calls)
	}
}

func TestNoWindow(t *testing.T) {
	fx := newFixture(t)
	fx.model.ContextWindow = 0
	if _, err := fx.enricher(t).Run(context.Background(), fx.repo); !errors.Is(err, ErrNoWindow) {
		t.Errorf("got %v, want ErrNoWindow", err)
	}
}

func TestConcurrentRun(t *testing.T) {
	fx := newFixture(t)
	fx.replyPerFile()
	var mu sync.Mutex
	seen := map[string]bool{}
	e := fx.enricher(t)
	e.Concurrency = 3
	e.Progress = func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if seen[p.Path] {
			t.Errorf("%s reported twice", p.Path)
		}
		seen[p.Path] = true
	}
	res, err := e.Run(context.Background(), fx.repo)
	if err != nil {
		t.Fatal(err)
	}
	if res.Enriched != 3 || len(seen) != 4 {
		t.Errorf("got %+v, progress for %d files", res, len(seen))
	}
}

func TestPromote(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t)
	fx.server.On(llmtest.Contains("Path: app/util.py\n"), llmtest.Text("no"))
	fx.replyPerFile()
	if _, err := fx.enricher(t).Run(ctx, fx.repo); err != nil {
		t.Fatal(err)
	}
	curated, err := fx.factory.Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer curated.Close()
	res, err := Promote(ctx, corpus.New(fx.raw), curated, fx.repo.ID)
	if err != nil {
		t.Fatal(err)
	}
	if res.Promoted != 2 || res.Missing != 1 {
		t.Errorf("got %+v, want 2 promoted, 1 missing (util.py malformed; the empty __init__.py does not count)", res)
	}
	got, err := fx.kb.SearchFilesByMetadata(ctx, fx.repo.ID, "shop", "", []string{"storage"})
	if err != nil {
		t.Fatal(err)
	}
	want := []kb.FileMetadata{
		{Path: "app/api.py", Purpose: "Handles app/api.py.", Module: "app", Domain: "shop", Concepts: []string{"users", "storage"}, PublicAPISurface: []string{"thing"}},
		{Path: "app/db.py", Purpose: "Handles app/db.py.", Module: "app", Domain: "shop", Concepts: []string{"users", "storage"}, PublicAPISurface: []string{"thing"}},
	}
	if diff := cmp.Diff(want, got, cmpIgnoreFileID); diff != "" {
		t.Errorf("file_metadata (-want +got):\n%s", diff)
	}
	var promoted int
	fx.raw.QueryRow(`SELECT COUNT(*) FROM enrichment_outputs WHERE promoted = 1`).Scan(&promoted)
	if promoted != 2 {
		t.Errorf("got %d outputs marked promoted, want 2", promoted)
	}
	// A newer valid output of the current content wins, from any model.
	db, err := fx.kb.FileByPath(ctx, fx.repo.ID, "app/db.py")
	if err != nil {
		t.Fatal(err)
	}
	call := llm.Call{CallInfo: llm.CallInfo{Type: llm.CallEnrichment, Role: llm.RoleReasoning}, Model: llm.ModelConfig{Provider: llm.ProviderOllama, Model: "newer:4b"}}
	if _, err := llm.NewRecorder(corpus.New(fx.raw)).RecordEnrichment(ctx, call, llm.EnrichmentOutput{FileID: db.ID, Path: db.Path, ContentHash: db.ContentHash,
		Purpose: "Newer.", Module: "app", Domain: "storage"}); err != nil {
		t.Fatal(err)
	}
	if res, err = Promote(ctx, corpus.New(fx.raw), curated, fx.repo.ID); err != nil || res.Promoted != 2 {
		t.Fatalf("got %+v, %v", res, err)
	}
	if got, _ := fx.kb.SearchFilesByMetadata(ctx, fx.repo.ID, "storage", "", nil); len(got) != 1 || got[0].Path != "app/db.py" || got[0].Purpose != "Newer." {
		t.Errorf("after a newer output: got %+v, want db.py's newer description", got)
	}
	// Content changed since: its output is not promoted.
	os.WriteFile(filepath.Join(fx.root, "app", "api.py"), []byte("x = 1\n"), 0o644)
	b := index.NewBuilder(fx.factory)
	b.HistoryDepth = 0
	if _, err := b.Run(ctx, fx.root); err != nil {
		t.Fatal(err)
	}
	if res, err = Promote(ctx, corpus.New(fx.raw), curated, fx.repo.ID); err != nil || res.Promoted != 1 || res.Missing != 2 {
		t.Errorf("after api.py changed: got %+v, %v, want 1 promoted, 2 missing", res, err)
	}
}

var cmpIgnoreFileID = cmp.Transformer("noID", func(m kb.FileMetadata) kb.FileMetadata { m.FileID = 0; return m })

func TestParseReply(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    Metadata
		wantErr string
	}{
		{"valid", validReply("x"), Metadata{Purpose: "Handles x.", Module: "app", Domain: "shop", Concepts: []string{"users", "storage"}, PublicAPISurface: []string{"thing"}}, ""},
		{"fenced with prose and trailing commas", "Here you go:\n```json\n{\"purpose\": \" Parses  config.\\n\", \"module\": \"config\", \"domain\": \"settings\", \"concepts\": [\"toml\", \"TOML\", \"\", \"defaults\",], \"public_api_surface\": \"Load, Parse\", \"complexity_notes\": null,}\n```\nHope this helps!",
			Metadata{Purpose: "Parses config.", Module: "config", Domain: "settings", Concepts: []string{"toml", "defaults"}, PublicAPISurface: []string{"Load", "Parse"}}, ""},
		{"null lists", `{"purpose": "p", "module": "m", "domain": "d", "concepts": null, "public_api_surface": [], "complexity_notes": "subtle"}`,
			Metadata{Purpose: "p", Module: "m", Domain: "d", Concepts: []string{}, PublicAPISurface: []string{}, ComplexityNotes: "subtle"}, ""},
		{"missing keys", `{"purpose": "p"}`, Metadata{}, "invalid enrichment: missing key complexity_notes; missing key concepts; missing key domain; missing key module; missing key public_api_surface"},
		{"wrong types", `{"purpose": 1, "module": "m", "domain": "", "concepts": [1], "public_api_surface": {}, "complexity_notes": 2}`, Metadata{},
			"complexity_notes is not a string; concepts is not a list of strings; domain is empty; public_api_surface is not a list of strings; purpose is not a string"},
		{"prose only", "This file handles users.", Metadata{}, "no JSON object in the reply"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.reply)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseReply: any reply is a valid Metadata within bounds, or an error.
func FuzzParseReply(f *testing.F) {
	f.Add(validReply("x"))
	f.Add(`{"purpose": "p", "module": "m", "domain": "d", "concepts": "a,b,,a", "public_api_surface": null, "complexity_notes": null,}`)
	f.Add("```json\n{\"purpose\": \"\"}\n```")
	f.Fuzz(func(t *testing.T, reply string) {
		m, err := ParseReply(reply)
		if err != nil {
			return
		}
		if m.Purpose == "" || m.Module == "" || m.Domain == "" || m.Concepts == nil || m.PublicAPISurface == nil {
			t.Fatalf("accepted an incomplete reply %q: %+v", reply, m)
		}
		for _, l := range [][]string{m.Concepts, m.PublicAPISurface} {
			if len(l) > maxListItems {
				t.Fatalf("list of %d items", len(l))
			}
			for _, it := range l {
				if it == "" || len(it) > maxItemLen+len("…") || strings.ContainsAny(it, "\n\t") {
					t.Fatalf("bad item %q", it)
				}
			}
		}
	})
}
