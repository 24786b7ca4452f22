package server

import "net/http"

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "settings are not built yet")
}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "settings are not built yet")
}
