package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cra-dev/cra/internal/knowledge"
)

// knowledgeURI is the URI prefix of the knowledge store's documents:
// cra://knowledge/conventions/go.md is docs/knowledge/conventions/go.md.
const knowledgeURI = "cra://knowledge/"

// maxResources bounds the documents a resources/list names.
const maxResources = 500

// addKnowledge makes the knowledge store's documents resources. The store
// changes under the server (people and supervisors write it), so the list
// is read again on each resources/list, and the template serves a
// document written since.
func (s *Server) addKnowledge() {
	store := &knowledge.Store{Root: s.root}
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (res *sdk.ReadResourceResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("internal error (a bug in cra, please report it): %v", p)
			}
		}()
		uri := req.Params.URI
		rel, ok := strings.CutPrefix(uri, knowledgeURI)
		if !ok {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		if u, err := url.PathUnescape(rel); err == nil {
			rel = u
		}
		_, text, err := store.Read(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, sdk.ResourceNotFoundError(uri)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", uri, err)
		}
		s.logCall(ctx, "resources/read", rel)
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: bound(text, MaxText)}}}, nil
	}
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: knowledgeURI + "{+path}", Name: "knowledge",
		Title: "A knowledge document", MIMEType: "text/markdown",
		Description: "A document of the project's knowledge store (docs/knowledge/): conventions, design notes, lessons, domain."}, read)
	s.sdk.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "resources/list" {
				s.syncKnowledge(store, read)
			}
			return next(ctx, method, req)
		}
	})
	s.syncKnowledge(store, read)
}

// syncKnowledge makes the server's resources the store's documents,
// adding and removing only what changed: each change notifies the
// clients, which list again. A store that cannot be read keeps the last
// list (the logger says why).
func (s *Server) syncKnowledge(store *knowledge.Store, read sdk.ResourceHandler) {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	docs, err := store.List()
	if err != nil {
		s.opts.Logger.Warn("knowledge store not listed", "err", err)
		return
	}
	docs = docs[:min(len(docs), maxResources)]
	want := make(map[string]string, len(docs))
	for _, d := range docs {
		r := &sdk.Resource{URI: knowledgeURI + d.Path, Name: d.Path, Title: d.Title, MIMEType: "text/markdown",
			Description: fmt.Sprintf("%s, %s", d.Status, d.Path)}
		if d.By != "" {
			r.Description += ", last updated by " + d.By
		}
		key := r.Title + "\x00" + r.Description
		want[r.URI] = key
		if s.resources[r.URI] != key {
			s.sdk.AddResource(r, read)
		}
	}
	var gone []string
	for uri := range s.resources {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.sdk.RemoveResources(gone...)
	}
	s.resources = want
}
