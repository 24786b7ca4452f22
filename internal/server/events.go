package server

import (
	"errors"
	"net/http"

	"github.com/coder/websocket"
)

// serveEvents upgrades to a WebSocket and streams the log from since. The
// upgrade refuses a page of another origin (websocket.Accept compares
// Origin with Host), so no other site reads the stream.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, since Position) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	err = s.Hub.Stream(ctx, wsSender{c}, since)
	switch {
	case errors.Is(err, errDropped):
		c.Close(websocket.StatusTryAgainLater, "too far behind: reconnect with since=<end of the last message>")
	case errors.Is(err, errReset):
		c.Close(websocket.StatusNormalClosure, "reset: reload the snapshot")
	default:
		c.Close(websocket.StatusGoingAway, "")
	}
}
