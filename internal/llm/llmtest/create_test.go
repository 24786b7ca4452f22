package llmtest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// TestBlobs uploads a blob with the real client after a HEAD that misses,
// and checks what Ollama checks: the digest's form and the body's digest.
func TestBlobs(t *testing.T) {
	s := NewServer(t)
	ctx := context.Background()
	content := []byte("GGUF adapter bytes")
	d := Digest(content)
	head := func(digest string) int {
		req, _ := http.NewRequest(http.MethodHead, s.URL+"/api/blobs/"+digest, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := head(d); got != http.StatusNotFound {
		t.Errorf("HEAD before upload: got %d, want 404", got)
	}
	c := ollamaClient(t, s)
	err := c.CreateBlob(ctx, d, bytes.NewReader([]byte("other bytes")))
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.ErrorMessage, "digest mismatch") {
		t.Errorf("upload of other bytes: got %v, want a 400 digest mismatch", err)
	}
	if err := c.CreateBlob(ctx, "sha256:abc", bytes.NewReader(content)); !errors.As(err, &se) || se.ErrorMessage != "invalid digest format" {
		t.Errorf("upload with a short digest: got %v, want invalid digest format", err)
	}
	if err := c.CreateBlob(ctx, d, bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	if got := head(d); got != http.StatusOK {
		t.Errorf("HEAD after upload: got %d, want 200", got)
	}
	if got, ok := s.Blob(d); !ok || !bytes.Equal(got, content) {
		t.Errorf("stored blob: got %q, %v", got, ok)
	}
	var statuses []int
	for _, r := range s.Requests() {
		statuses = append(statuses, r.Status)
	}
	if want := []int{404, 400, 400, 201, 200}; !slices.Equal(statuses, want) {
		t.Errorf("recorded statuses: got %v, want %v", statuses, want)
	}
}

// TestCreate creates a model FROM a listed base with an uploaded adapter,
// streamed and not, and checks the refusals Ollama makes.
func TestCreate(t *testing.T) {
	s := NewServer(t)
	s.SetModels("qwen3:4b")
	ctx := context.Background()
	c := ollamaClient(t, s)
	d := s.PutBlob([]byte("GGUF\x03\x00\x00\x00"))
	notGGUF := s.PutBlob([]byte("PK\x03\x04 zip"))
	var got []string
	err := c.Create(ctx, &api.CreateRequest{Model: "qwen3:4b-scope-v1", From: "qwen3:4b", Adapters: map[string]string{"adapter.gguf": d}},
		func(p api.ProgressResponse) error { got = append(got, p.Status); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[len(got)-1] != "success" || !slices.Contains(got, "creating new layer "+d) {
		t.Errorf("streamed statuses: got %q", got)
	}
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if !slices.Contains(names, "qwen3:4b-scope-v1") {
		t.Errorf("/api/tags after create: got %v, want the new model", names)
	}
	if cr := s.Created(); len(cr) != 1 || cr[0].From != "qwen3:4b" || cr[0].Adapters["adapter.gguf"] != d {
		t.Errorf("recorded creates: got %+v", cr)
	}

	noStream := false
	if err := c.Create(ctx, &api.CreateRequest{Model: "plain", From: "qwen3:4b", Stream: &noStream}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Errorf("create without stream: %v", err)
	}
	if list, _ := c.List(ctx); !slices.ContainsFunc(list.Models, func(m api.ListModelResponse) bool { return m.Name == "plain:latest" }) {
		t.Errorf("a name without a tag is listed as :latest")
	}

	for _, tc := range []struct {
		name string
		req  api.CreateRequest
		want string
	}{
		{"unknown base", api.CreateRequest{Model: "x", From: "nope:1b"}, "pull model manifest"},
		{"no from", api.CreateRequest{Model: "x"}, "neither 'from' or 'files'"},
		{"bad name", api.CreateRequest{Model: "a b", From: "qwen3:4b"}, "invalid model name"},
		{"missing blob", api.CreateRequest{Model: "x", From: "qwen3:4b", Adapters: map[string]string{"a.gguf": Digest([]byte("absent"))}}, "no such file"},
		{"not gguf", api.CreateRequest{Model: "x", From: "qwen3:4b", Adapters: map[string]string{"a.gguf": notGGUF}}, "not in GGUF format"},
		{"unknown type", api.CreateRequest{Model: "x", From: "qwen3:4b", Adapters: map[string]string{"adapter": notGGUF}}, "unknown type"},
		{"two adapters", api.CreateRequest{Model: "x", From: "qwen3:4b", Adapters: map[string]string{"a.gguf": d, "b.gguf": d}}, "only one adapter"},
		{"safetensors", api.CreateRequest{Model: "x", From: "qwen3:4b", Adapters: map[string]string{"adapters.safetensors": d}}, "safetensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Create(ctx, &tc.req, func(api.ProgressResponse) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if n := len(s.Created()); n != 2 {
		t.Errorf("failed creates were recorded as created: %d", n)
	}
}

// TestCreatePullsBase: a create FROM a pullable base the server lacks
// streams the pull first, then creates, and lists both models; a client
// that goes away during the pull leaves the base unpulled.
func TestCreatePullsBase(t *testing.T) {
	s := NewServer(t)
	s.SetPullable(10*time.Millisecond, "qwen3:4b")
	s.SetPullable(time.Hour, "big:70b")
	c := ollamaClient(t, s)
	var got []string
	err := c.Create(context.Background(), &api.CreateRequest{Model: "plain:1", From: "qwen3:4b"},
		func(p api.ProgressResponse) error { got = append(got, p.Status); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[0] != "pulling manifest" || got[len(got)-1] != "success" {
		t.Errorf("streamed statuses: got %q, want the pull's first and success last", got)
	}
	list, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if !slices.Contains(names, "qwen3:4b") || !slices.Contains(names, "plain:1") {
		t.Errorf("/api/tags after the pull: got %v, want the base and the new model", names)
	}

	ctx, cancel := context.WithCancel(context.Background())
	err = c.Create(ctx, &api.CreateRequest{Model: "huge:1", From: "big:70b"},
		func(p api.ProgressResponse) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("create given up during the pull: got %v, want context.Canceled", err)
	}
	if len(s.Created()) != 1 {
		t.Errorf("recorded creates: got %+v, want only the first", s.Created())
	}
}

// TestStrictModels: a strict server answers a created model's chat, and
// 404s it before the create, as Ollama does.
func TestStrictModels(t *testing.T) {
	s := NewServer(t)
	s.SetModels("qwen3:4b")
	s.SetStrict(true)
	s.SetDefault(Text("ok"))
	ctx := context.Background()
	c := ollamaClient(t, s)
	chat := func(model string) error {
		return c.Chat(ctx, &api.ChatRequest{Model: model, Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	}
	if err := chat("qwen3:4b"); err != nil {
		t.Errorf("listed model: %v", err)
	}
	var se api.StatusError
	if err := chat("qwen3:4b-scope-v1"); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !strings.Contains(se.ErrorMessage, "try pulling it first") {
		t.Errorf("before create: got %v, want Ollama's 404", err)
	}
	d := s.PutBlob([]byte("GGUF lora"))
	if err := c.Create(ctx, &api.CreateRequest{Model: "qwen3:4b-scope-v1", From: "qwen3:4b", Adapters: map[string]string{"a.gguf": d}}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := chat("qwen3:4b-scope-v1"); err != nil {
		t.Errorf("after create: %v", err)
	}
}
