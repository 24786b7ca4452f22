package server

import (
	"errors"
	"net/http"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/fleetapi"
)

// getSettings answers GET /api/settings: the fleet's settings, their
// bounds and what verifies a task (fleetapi.SettingsView).
func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	if s.Fleet == nil {
		writeError(w, http.StatusServiceUnavailable, "this server has no repository root, so no settings")
		return
	}
	v, err := s.Fleet.Settings(r.Context())
	if err != nil {
		s.settingsError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// putSettings answers PUT /api/settings: the fleet validates the
// settings, logs the change and writes config.toml (fleet.SetSettings).
// A bad value is a 400 naming its key and range, and nothing is written.
func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	if s.Fleet == nil {
		writeError(w, http.StatusServiceUnavailable, "this server has no repository root, so no settings")
		return
	}
	var in fleetapi.Settings
	if !decode(w, r, &in) {
		return
	}
	v, err := s.Fleet.SetSettings(r.Context(), in)
	if err != nil {
		s.settingsError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// settingsError answers a refused value with 400 and its key, and a
// config.toml that does not parse with 409: a person fixes the file.
func (s *Server) settingsError(w http.ResponseWriter, r *http.Request, err error) {
	var fe *fleetapi.SettingError
	var se *config.SyntaxError
	switch {
	case errors.As(err, &fe):
		writeJSON(w, http.StatusBadRequest, apiError{Error: fe.Msg, Field: fe.Field, Fix: fe.Fix})
	case errors.As(err, &se):
		writeError(w, http.StatusConflict, err.Error())
	default:
		s.fail(w, r, err)
	}
}
