package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMCPMount: /mcp reaches the daemon's MCP handler for the methods of
// streamable HTTP, behind the API's token, host and origin rules; a
// daemon without one has no /mcp.
func TestMCPMount(t *testing.T) {
	f := newFixture(t)
	var got []string
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method)
		w.WriteHeader(http.StatusAccepted)
	})
	const token = "0123456789abcdef0123"
	for _, tc := range []struct {
		name   string
		s      *Server
		method string
		header map[string]string
		want   int
	}{
		{"post with the token", &Server{Fleet: f.fleet, Token: token, MCP: mcp}, http.MethodPost, map[string]string{"Authorization": "Bearer " + token}, http.StatusAccepted},
		{"get with the token", &Server{Fleet: f.fleet, Token: token, MCP: mcp}, http.MethodGet, map[string]string{"Authorization": "Bearer " + token}, http.StatusAccepted},
		{"delete with the token", &Server{Fleet: f.fleet, Token: token, MCP: mcp}, http.MethodDelete, map[string]string{"Authorization": "Bearer " + token}, http.StatusAccepted},
		{"no token", &Server{Fleet: f.fleet, Token: token, MCP: mcp}, http.MethodPost, nil, http.StatusUnauthorized},
		{"wrong token", &Server{Fleet: f.fleet, Token: token, MCP: mcp}, http.MethodPost, map[string]string{"Authorization": "Bearer " + strings.Repeat("x", len(token))}, http.StatusUnauthorized},
		{"another origin", &Server{Fleet: f.fleet, MCP: mcp}, http.MethodPost, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"put", &Server{Fleet: f.fleet, MCP: mcp}, http.MethodPut, nil, http.StatusMethodNotAllowed},
		{"no MCP handler", &Server{Fleet: f.fleet}, http.MethodPost, nil, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			r := httptest.NewRequest(tc.method, "http://127.0.0.1:7777/mcp", strings.NewReader(`{}`))
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			tc.s.Handler().ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Errorf("status: got %d, want %d (%s)", w.Code, tc.want, w.Body)
			}
			if reached := len(got) == 1; reached != (tc.want == http.StatusAccepted) {
				t.Errorf("the MCP handler got %v, want it reached only when allowed", got)
			}
		})
	}
}
