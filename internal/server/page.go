package server

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// web holds the board's page: plain HTML, CSS and JavaScript, no build
// step (issue 15).
//
//go:embed web
var web embed.FS

// page serves the embedded board: index.html at /, its assets beside.
func (s *Server) page() http.Handler {
	sub, _ := fs.Sub(web, "web")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/"):
			writeError(w, http.StatusNotFound, "no such API endpoint: "+r.Method+" "+r.URL.Path)
			return
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": the page is read with GET")
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
