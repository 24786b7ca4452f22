package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/user"
	"strconv"
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
	unharden(cfg)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, nil
	}
	conn.Close(ctx)
	return true, nil
}

// PasswordlessSockets returns the Unix-socket directories of the server
// at url (its unix_socket_directories, at its port) where this OS user
// gets in with no password, as url's role or as the role of this OS
// user's name (peer authentication). PostgreSQL listens on its sockets
// whatever address url names, so a database reached at a loopback port
// the sandbox guards may still be open to an agent there. An abstract
// socket is returned as the server names it, '@' and its name. It
// connects with url first, so a database it cannot reach is an error.
func PasswordlessSockets(ctx context.Context, url string) ([]string, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, errors.New("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to read the database's sockets: %w", err)
	}
	res := conn.ExecParams(ctx, "SELECT current_setting('unix_socket_directories'), current_setting('port')", nil, nil, nil, nil).Read()
	conn.Close(ctx)
	if res.Err != nil || len(res.Rows) != 1 || len(res.Rows[0]) != 2 {
		return nil, fmt.Errorf("read the database's unix_socket_directories: %v", res.Err)
	}
	dirs := string(res.Rows[0][0])
	p, err := strconv.ParseUint(string(res.Rows[0][1]), 10, 16)
	if err != nil {
		return nil, fmt.Errorf("the database names its port %q: %w", res.Rows[0][1], err)
	}
	port := uint16(p)
	roles := []string{cfg.User}
	if u, err := user.Current(); err == nil && u.Username != cfg.User {
		roles = append(roles, u.Username)
	}
	var open []string
	for _, dir := range strings.Split(dirs, ",") {
		dir = strings.TrimSpace(dir)
		// A relative directory is the data directory's, which an agent
		// cannot name from here either; '@' names an abstract socket
		// (Linux), which it can.
		if !strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "@") {
			continue
		}
		for _, role := range roles {
			if opensAt(ctx, cfg, dir, port, role) {
				open = append(open, dir)
				break
			}
		}
	}
	return open, nil
}

// opensAt reports whether cfg's database lets role in with no password on
// the Unix socket in dir.
func opensAt(ctx context.Context, cfg *pgconn.Config, dir string, port uint16, role string) bool {
	c := cfg.Copy()
	c.Host, c.Port, c.User, c.Password = dir, port, role, ""
	c.Fallbacks, c.TLSConfig = nil, nil
	unharden(c)
	if strings.HasPrefix(dir, "@") {
		// pgconn dials a socket by its path ("/" makes the host one);
		// the dialer is given the abstract name, which Go's "unix"
		// network takes with its '@', as PostgreSQL names it.
		name := fmt.Sprintf("%s/.s.PGSQL.%d", dir, port)
		c.Host = "/"
		c.DialFunc = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", name)
		}
	}
	conn, err := pgconn.ConnectConfig(ctx, c)
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}

// unharden drops what the URL asks of the server's authentication
// (require_auth, channel_binding, sslcertmode): a probe asks what an
// agent's own client gets, and a URL that insists on SCRAM would refuse
// the very trust answer the probe looks for, and hush the warning.
func unharden(c *pgconn.Config) {
	c.RequireAuth, c.ChannelBinding, c.SSLCertMode = "", "disable", ""
}
