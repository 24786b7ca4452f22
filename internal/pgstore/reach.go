package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
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
	// Sockets are the Unix-socket directories it is reached by, which
	// the sandbox fences only on Landlock ABI 9 and later
	// (sandbox.FencesPathSockets).
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
// user in with no password at all (trust or peer authentication), as any
// role that could write the fleet's tables (logins): then any process
// of this user that reaches it, an agent included, can write as the
// daemon does. Each try leaves out the URL's password, PGPASSWORD and the
// password file; call it once the URL is known to connect, so that a
// refusal means a password is asked for.
func OpensWithoutPassword(ctx context.Context, url string) (bool, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return false, errors.New("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tries, more := []login{{cfg.User, cfg.Database}}, false
	if conn, err := pgconn.ConnectConfig(ctx, cfg); err == nil {
		tries, more = logins(ctx, conn, cfg.User, cfg.Database)
		conn.Close(ctx)
	}
	for _, l := range tries {
		if opensAs(ctx, cfg, l.role, l.db) {
			return true, nil
		}
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("try the database's roles without a password: %w", ctx.Err())
	}
	if more {
		return false, errTooMany
	}
	return false, nil
}

// ErrUnreachable is PasswordlessSockets' error when the database at the
// URL does not answer at all: nothing to check then.
var ErrUnreachable = errors.New("the database does not answer")

// PasswordlessSockets returns the Unix-socket directories of the server
// at url (its unix_socket_directories, at its port) where this OS user
// gets in with no password as any role that could write the fleet's
// tables (logins). PostgreSQL listens on its sockets whatever address
// url names, so a database reached at a loopback port the sandbox guards
// may still be open to an agent there. An abstract socket is returned as
// the server names it, '@' and its name. It connects with url first, so
// a database it cannot reach is an error.
func PasswordlessSockets(ctx context.Context, url string) ([]string, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, errors.New("the database URL does not parse: give a postgres:// URL or key=value string")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to read the database's sockets: %w: %w", ErrUnreachable, err)
	}
	res := conn.ExecParams(ctx, "SELECT current_setting('port')", nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		conn.Close(ctx)
		return nil, fmt.Errorf("read the database's port: %v", res.Err)
	}
	p, err := strconv.ParseUint(string(res.Rows[0][0]), 10, 16)
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("the database names its port %q: %w", res.Rows[0][0], err)
	}
	port := uint16(p)
	// unix_socket_directories is for superusers and pg_read_all_settings
	// only; a daemon's own role, rightly, is often neither. The kernel's
	// list of listening sockets names them as well.
	var dirs []string
	res = conn.ExecParams(ctx, "SELECT current_setting('unix_socket_directories')", nil, nil, nil, nil).Read()
	if res.Err == nil && len(res.Rows) == 1 && len(res.Rows[0]) == 1 {
		dirs = strings.Split(string(res.Rows[0][0]), ",")
	} else if dirs, err = listeningSockets(port); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("find the database's Unix sockets: unix_socket_directories is not readable by the URL's role (%v), and %w", res.Err, err)
	}
	tries, more := logins(ctx, conn, cfg.User, cfg.Database)
	conn.Close(ctx)
	var open []string
	for _, dir := range dirs {
		dir = strings.TrimSpace(dir)
		// A relative directory is the data directory's, which an agent
		// cannot name from here either; '@' names an abstract socket
		// (Linux), which it can.
		if !strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "@") {
			continue
		}
		for _, l := range tries {
			c := cfg.Copy()
			c.Database = l.db
			if opensAt(ctx, c, dir, port, l.role) {
				open = append(open, dir)
				break
			}
		}
	}
	if ctx.Err() != nil {
		return open, fmt.Errorf("try the database's roles without a password on its sockets: %w", ctx.Err())
	}
	if more {
		return open, errTooMany
	}
	return open, nil
}

// procNetUnix lists the kernel's Unix sockets (Linux).
var procNetUnix = "/proc/net/unix"

// listeningSockets returns the directories of the listening Unix sockets
// named .s.PGSQL.<port>, an abstract one as '@' and its name, sorted: the
// sockets of the server at port, read from procNetUnix.
func listeningSockets(port uint16) ([]string, error) {
	b, err := os.ReadFile(procNetUnix)
	if err != nil {
		return nil, fmt.Errorf("the kernel's socket list is not readable either: %w", err)
	}
	return parseListening(string(b), port), nil
}

// parseListening reads /proc/net/unix's text for listeningSockets.
func parseListening(text string, port uint16) []string {
	suffix := fmt.Sprintf("/.s.PGSQL.%d", port)
	var dirs []string
	for _, line := range strings.Split(text, "\n") {
		// Num RefCount Protocol Flags Type St Inode Path; the path is the
		// rest of the line, spaces and all.
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		path := afterFields(line, 7)
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&soAcceptCon == 0 || !strings.HasSuffix(path, suffix) {
			continue
		}
		if dir := strings.TrimSuffix(path, suffix); dir != "" && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// afterFields returns what follows the first n space-separated fields of
// line and the one space after them.
func afterFields(line string, n int) string {
	rest := line
	for range n {
		rest = strings.TrimLeft(rest, " ")
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			return ""
		}
		rest = rest[i:]
	}
	return strings.TrimPrefix(rest, " ")
}

// soAcceptCon is /proc/net/unix's flag of a listening socket.
const soAcceptCon = 0x10000

// maxProbeRoles bounds the roles probeRoles returns, and serverRolesSQL
// the roles tried on each other database: each is a login try per
// socket. More than that is an error the probes return (errTooMany),
// which serve reports, not a silent pass.
const maxProbeRoles = 32

// errTooMany is the probes' error when more roles could write than they
// try.
var errTooMany = fmt.Errorf("more than %d roles could write the fleet's tables, and only the first %d were tried without a password: give fewer roles those rights", maxProbeRoles, maxProbeRoles)

// writerRolesSQL lists the roles that can log in and could write what
// decides a verdict: superusers; the members of a role (itself, one it
// inherits, or one it may SET ROLE to, NOINHERIT or not) that holds
// INSERT, UPDATE, DELETE, TRUNCATE or TRIGGER (a trigger's function runs
// in the daemon's own writes) on a fleet table (to_regclass skips those
// not made yet), pg_write_all_data's among them; before PostgreSQL 16,
// CREATEROLE, which grants itself any such role; and whoever may CREATE
// in the database (a schema named after the daemon's role comes first on
// its search_path, with a world_log of its own) or in a schema of that
// path other than world_log's.
const writerRolesSQL = `WITH writers AS (
  SELECT w.oid FROM pg_roles w WHERE EXISTS (
    SELECT 1 FROM unnest(ARRAY['world_log', 'world_agents', 'world_markers', 'board_tasks',
      'run_leases', 'review_history', 'fleet_settings', 'fleet_hosts', 'fleet_leader',
      'notify_queue', 'cra_schema']) AS t(name)
    WHERE to_regclass(t.name) IS NOT NULL
      AND has_table_privilege(w.oid, to_regclass(t.name), 'INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER')))
SELECT rolname FROM pg_roles r
WHERE rolcanlogin AND (rolsuper
  OR (rolcreaterole AND current_setting('server_version_num')::int < 160000)
  OR has_database_privilege(r.oid, current_database(), 'CREATE')
  OR EXISTS (
    SELECT 1 FROM unnest(current_schemas(false)) AS s(name)
    WHERE has_schema_privilege(r.oid, s.name, 'CREATE')
      AND s.name IS DISTINCT FROM (SELECT n.nspname FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('world_log')))
  OR EXISTS (SELECT 1 FROM writers WHERE pg_has_role(r.oid, writers.oid, 'MEMBER')))
ORDER BY rolsuper DESC, rolname LIMIT 33`

// probeRoles are the roles a probe tries without a password: the URL's,
// this OS user's name (peer authentication), then every login role that
// could write the fleet's tables, a superuser such as postgres among
// them (a pg_hba.conf line 'local all postgres trust' lets any local
// process in as it). conn is the daemon's own connection; where the
// catalogue cannot be read, the first two stand alone.
func probeRoles(ctx context.Context, conn *pgconn.PgConn, urlRole string) (roles []string, more bool) {
	roles = []string{urlRole}
	add := func(r string) {
		if r == "" || slices.Contains(roles, r) {
			return
		}
		if len(roles) >= maxProbeRoles {
			more = true
			return
		}
		roles = append(roles, r)
	}
	if u, err := user.Current(); err == nil {
		add(u.Username)
	}
	res := conn.ExecParams(ctx, writerRolesSQL, nil, nil, nil, nil).Read()
	if res.Err == nil {
		for _, row := range res.Rows {
			if len(row) == 1 {
				add(string(row[0]))
			}
		}
	}
	return roles, more
}

// serverRolesSQL lists the login roles that reach the fleet's tables
// from any database of the server: a superuser, or a member of
// pg_execute_server_program or pg_write_server_files, runs a program or
// writes a file as the server's OS user (COPY ... TO PROGRAM), outside
// every sandbox, and so gets into the fleet's database as the server's
// own user does (peer). A line such as 'local postgres postgres trust'
// is as open as one naming the fleet's database.
const serverRolesSQL = `SELECT rolname FROM pg_roles r
WHERE rolcanlogin AND (rolsuper
  OR coalesce(pg_has_role(r.oid, to_regrole('pg_execute_server_program'), 'MEMBER'), false)
  OR coalesce(pg_has_role(r.oid, to_regrole('pg_write_server_files'), 'MEMBER'), false))
ORDER BY rolsuper DESC, rolname LIMIT 33`

// databasesSQL lists the databases of the server that take connections.
const databasesSQL = `SELECT datname FROM pg_database WHERE datallowconn ORDER BY datname LIMIT 64`

// login is a role on a database, as a probe tries it.
type login struct{ role, db string }

// logins are the logins a probe tries without a password: probeRoles on
// the URL's database db, then the roles of serverRolesSQL on every other
// database. conn is the daemon's own connection.
func logins(ctx context.Context, conn *pgconn.PgConn, urlRole, db string) (out []login, more bool) {
	roles, more := probeRoles(ctx, conn, urlRole)
	for _, r := range roles {
		out = append(out, login{r, db})
	}
	read := func(sql string) []string {
		var names []string
		res := conn.ExecParams(ctx, sql, nil, nil, nil, nil).Read()
		if res.Err == nil {
			for _, row := range res.Rows {
				if len(row) == 1 {
					names = append(names, string(row[0]))
				}
			}
		}
		return names
	}
	server, dbs := read(serverRolesSQL), read(databasesSQL)
	if len(server) > maxProbeRoles {
		server, more = server[:maxProbeRoles], true
	}
	for _, d := range dbs {
		for _, r := range server {
			if l := (login{r, d}); !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out, more
}

// opensAt reports whether cfg's database lets role in with no password on
// the Unix socket in dir.
func opensAt(ctx context.Context, cfg *pgconn.Config, dir string, port uint16, role string) bool {
	c := cfg.Copy()
	c.Host, c.Port = dir, port
	c.Fallbacks, c.TLSConfig = nil, nil
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
	return opensAs(ctx, c, role, c.Database)
}

// opensAs reports whether the server cfg names lets role into database db
// with no password: the URL's password, PGPASSWORD and the password file
// left out, and what the URL asks of the server's authentication too
// (unharden).
func opensAs(ctx context.Context, cfg *pgconn.Config, role, db string) bool {
	c := cfg.Copy()
	c.User, c.Database, c.Password = role, db, ""
	unharden(c)
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
