package pgstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Reach says how an agent on this host could reach the database at a
// URL without its credentials (DESIGN.md, "Trust": an agent that
// connects could write its own verdict into the world log). The daemon
// drops the URL and libpq's variables from the agent's environment;
// what is left is the database's own address.
type Reach struct {
	// LoopbackPorts are the TCP ports it listens on at this host's
	// loopback, which the sandbox keeps confined agents off.
	LoopbackPorts []int
	// Sockets are the Unix-socket directories it is reached by, which no
	// sandbox rule of this kernel fences.
	Sockets []string
}

// ReachOf reads the hosts of url (and its fallbacks).
func ReachOf(url string) (Reach, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return Reach{}, errors.New("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	var r Reach
	add := func(host string, port uint16) {
		switch {
		case strings.HasPrefix(host, "/"):
			r.Sockets = append(r.Sockets, host)
		case isLoopback(host):
			for _, p := range r.LoopbackPorts {
				if p == int(port) {
					return
				}
			}
			r.LoopbackPorts = append(r.LoopbackPorts, int(port))
		}
	}
	add(cfg.Host, cfg.Port)
	for _, fb := range cfg.Fallbacks {
		add(fb.Host, fb.Port)
	}
	return r, nil
}

// isLoopback reports whether host names this machine's loopback.
func isLoopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// OpensWithoutPassword reports whether the database at url lets this OS
// user in with no password at all (trust or peer authentication): then
// any process of this user that reaches it, an agent included, connects
// as the daemon does. It tries once, with the URL's password, PGPASSWORD
// and the password file left out; call it once the URL is known to
// connect, so that a refusal means a password is asked for.
func OpensWithoutPassword(ctx context.Context, url string) (bool, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return false, errors.New("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	cfg.Password = ""
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, nil
	}
	conn.Close(ctx)
	return true, nil
}
