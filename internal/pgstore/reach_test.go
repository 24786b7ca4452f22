package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cra-dev/cra/internal/pgtest"
)

// ReachOf tells loopback ports (guarded) from Unix sockets (not
// fenceable) and other hosts (neither), fallbacks included.
func TestReachOf(t *testing.T) {
	for _, c := range []struct {
		url  string
		want Reach
	}{
		{"postgres://u:p@localhost:5433/db", Reach{LoopbackPorts: []int{5433}}},
		{"postgres://u@127.0.0.1/db", Reach{LoopbackPorts: []int{5432}}},
		{"postgres://u@[::1]:6000/db", Reach{LoopbackPorts: []int{6000}}},
		{"host=/var/run/postgresql dbname=db", Reach{Sockets: []string{"/var/run/postgresql"}}},
		{"postgres://u@db.example.com/db", Reach{}},
		{"postgres://u@10.0.0.5,localhost:5433,127.0.0.1:5433/db", Reach{LoopbackPorts: []int{5433}}},
	} {
		got, err := ReachOf(c.url)
		if err != nil {
			t.Errorf("ReachOf(%q): %v", c.url, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ReachOf(%q) = %+v, want %+v", c.url, got, c.want)
		}
	}
	if _, err := ReachOf("postgres://u:secret@[bad"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a URL that does not parse: %v, want an error without its password", err)
	}
}

// The test cluster trusts every local user: it opens without a password,
// also to a URL that insists on SCRAM (an agent's client would not). A
// server that is not there does not.
func TestOpensWithoutPassword(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	if open, err := OpensWithoutPassword(ctx, url); err != nil || !open {
		t.Errorf("the trust cluster: %v, %v; want it open", open, err)
	}
	for _, hard := range []string{"&require_auth=scram-sha-256", "&channel_binding=require"} {
		if open, err := OpensWithoutPassword(ctx, url+hard); err != nil || !open {
			t.Errorf("the trust cluster, URL with %s: %v, %v; want it open", hard, open, err)
		}
	}
	if open, err := OpensWithoutPassword(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=2"); err != nil || open {
		t.Errorf("no server: %v, %v; want closed", open, err)
	}
}

// The test cluster trusts every local user on its socket: that socket is
// named, whatever way the URL reached it.
func TestPasswordlessSockets(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	got, err := PasswordlessSockets(ctx, c.URL("postgres"))
	if err != nil || len(got) != 1 || got[0] != c.Dir() {
		t.Errorf("the trust cluster: %v, %v; want [%s]", got, err, c.Dir())
	}
	if _, err := PasswordlessSockets(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=2"); err == nil {
		t.Error("no server: no error")
	}
}

// TestProbesTryWriterRoles: the probes look for a way in with no password
// as any role that could write the fleet's tables, not only the URL's
// role and this OS user's: pg_hba.conf trusting a superuser or a role
// granted UPDATE on the world log opens the database to any local
// process, and is named; trust for a role that can only read is not.
func TestProbesTryWriterRoles(t *testing.T) {
	ctx := context.Background()
	c := pgtest.NewTCP(t, "secret")
	admin, err := pgx.Connect(ctx, c.TCPURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{
		`CREATE ROLE daemon LOGIN PASSWORD 'daemon-secret'`,
		`CREATE ROLE boss LOGIN SUPERUSER`,
		`CREATE ROLE editor LOGIN`,
		`CREATE ROLE reader LOGIN`,
		`CREATE ROLE execer LOGIN`,
		`GRANT pg_execute_server_program TO execer`,
		`CREATE DATABASE other`,
		`CREATE TABLE world_log (line text)`,
		`GRANT INSERT, SELECT ON world_log TO daemon`,
		`GRANT UPDATE ON world_log TO editor`,
		`GRANT SELECT ON world_log TO reader`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	url := fmt.Sprintf("postgres://daemon:daemon-secret@/postgres?host=%s&port=%d&sslmode=disable", c.Dir(), c.Port())
	hba := filepath.Join(c.Dir(), "data", "pg_hba.conf")
	orig, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	// local trusts role on db first; every other local login asks a
	// password.
	setTrusted := func(db, role string) {
		t.Helper()
		var lines []string
		for _, l := range strings.Split(string(orig), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "local" {
				continue
			}
			lines = append(lines, l)
		}
		lines = append([]string{"local " + db + " " + role + " trust", "local all all scram-sha-256"}, lines...)
		if err := os.WriteFile(hba, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			t.Fatal(err)
		}
		// The reload is asynchronous: wait until the trusted role gets in.
		cfg, err := pgconn.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if db != "all" {
			cfg.Database = db
		}
		for deadline := time.Now().Add(20 * time.Second); !opensAt(ctx, cfg, c.Dir(), uint16(c.Port()), role); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("role %s not trusted on the socket 20 s after the reload", role)
			}
		}
	}
	for _, tc := range []struct {
		db, trusted string
		open        bool
	}{
		{"all", "reader", false},   // reads only: no way to a verdict
		{"all", "editor", true},    // may rewrite the world log
		{"all", "boss", true},      // a superuser, with no grant at all
		{"other", "editor", false}, // its grant is in another database
		// From any database, COPY ... TO PROGRAM runs outside the
		// sandbox as the server's OS user, who gets in everywhere.
		{"other", "boss", true},
		{"other", "execer", true},
	} {
		setTrusted(tc.db, tc.trusted)
		open, err := OpensWithoutPassword(ctx, url)
		if err != nil || open != tc.open {
			t.Errorf("local trust for %s on %s: OpensWithoutPassword %v, %v; want %v", tc.trusted, tc.db, open, err, tc.open)
		}
		got, err := PasswordlessSockets(ctx, url)
		var want []string
		if tc.open {
			want = []string{c.Dir(), c.AbstractSocket()}
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("local trust for %s on %s: PasswordlessSockets %v, %v; want %v", tc.trusted, tc.db, got, err, want)
		}
	}
	// More writers than the probes try: an error that says so, not a
	// database reported closed.
	setTrusted("all", "reader")
	if _, err := admin.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN FOR i IN 1..%d LOOP
		EXECUTE format('CREATE ROLE w%%s LOGIN', i);
		EXECUTE format('GRANT INSERT ON world_log TO w%%s', i);
	END LOOP; END $$`, maxProbeRoles)); err != nil {
		t.Fatal(err)
	}
	// On a slow machine the probes may run out of time first: an error
	// too, that serve reports.
	notAll := func(err error) bool { return errors.Is(err, errTooMany) || errors.Is(err, context.DeadlineExceeded) }
	if open, err := OpensWithoutPassword(ctx, url); open || !notAll(err) {
		t.Errorf("%d more writers: OpensWithoutPassword %v, %v; want the error saying not all were tried", maxProbeRoles, open, err)
	}
	if got, err := PasswordlessSockets(ctx, url); len(got) > 0 || !notAll(err) {
		t.Errorf("%d more writers: PasswordlessSockets %v, %v; want the error saying not all were tried", maxProbeRoles, got, err)
	}
}

// listeningSockets reads the kernel's socket list: only listening sockets
// of the port, filesystem and abstract, each directory once, sorted; a
// missing list is an error that says so.
func TestListeningSockets(t *testing.T) {
	list := filepath.Join(t.TempDir(), "unix")
	const table = `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 31337 /var/run/postgresql/.s.PGSQL.5432
0000000000000000: 00000002 00000000 00010000 0001 01 31338 @pgabstract/.s.PGSQL.5432
0000000000000000: 00000003 00000000 00000000 0001 03 31339 /var/run/postgresql/.s.PGSQL.5432
0000000000000000: 00000002 00000000 00010000 0001 01 31340 /tmp/.s.PGSQL.5433
0000000000000000: 00000002 00000000 00010000 0001 01 31341 /tmp/.s.PGSQL.5432
0000000000000000: 00000002 00000000 00010000 0001 01 31342 /tmp/.s.PGSQL.54321
0000000000000000: 00000002 00000000 00010000 0001 01 31343
0000000000000000: 00000002 00000000 00010000 0001 01 31345 /srv/pg sockets/.s.PGSQL.5432
0000000000000000: 00000002 00000000 00010000 0001 01 10000 /srv/10000/.s.PGSQL.5432
0000000000000000: 00000002 00000000 zz010000 0001 01 31344 /bad/.s.PGSQL.5432
`
	if err := os.WriteFile(list, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(p string) { procNetUnix = p }(procNetUnix)
	procNetUnix = list
	got, err := listeningSockets(5432)
	if want := []string{"/srv/10000", "/srv/pg sockets", "/tmp", "/var/run/postgresql", "@pgabstract"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("listeningSockets(5432) = %v, %v; want %v", got, err, want)
	}
	procNetUnix = filepath.Join(t.TempDir(), "missing")
	if _, err := listeningSockets(5432); err == nil || !strings.Contains(err.Error(), "not readable") {
		t.Errorf("no socket list: %v, want an error saying it is not readable", err)
	}
}

// TestProbeRolesFindEveryWayToWrite: a role reaches the fleet's tables
// not only through a grant of its own. Each role below could write or
// wipe the world log (checked by hand on PostgreSQL 15), so each is
// tried without a password; a role that only reads is not.
func TestProbeRolesFindEveryWayToWrite(t *testing.T) {
	ctx := context.Background()
	c := pgtest.New(t)
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"noinherit", // a member that does not inherit may still SET ROLE writer
		"member",    // inherits writer's grant
		"truncater", // TRUNCATE wipes the log
		"triggerer", // a trigger runs its function in the daemon's writes
		"shadower",  // CREATE on the database: a schema named after the daemon's role comes first on its search_path
		"hosts",     // the fleet's other tables: who leads the recycler
	}
	setup := []string{
		`CREATE ROLE daemon LOGIN`,
		`CREATE ROLE writer NOLOGIN`,
		`CREATE ROLE noinherit LOGIN NOINHERIT`,
		`CREATE ROLE member LOGIN`,
		`CREATE ROLE truncater LOGIN`,
		`CREATE ROLE triggerer LOGIN`,
		`CREATE ROLE shadower LOGIN`,
		`CREATE ROLE hosts LOGIN`,
		`CREATE ROLE reader LOGIN`,
		`CREATE TABLE world_log (line text)`,
		`CREATE TABLE fleet_leader (duty text)`,
		`GRANT SELECT, INSERT ON world_log TO daemon`,
		`GRANT INSERT ON world_log TO writer`,
		`GRANT writer TO noinherit, member`,
		`GRANT TRUNCATE ON world_log TO truncater`,
		`GRANT TRIGGER ON world_log TO triggerer`,
		`GRANT CREATE ON DATABASE postgres TO shadower`,
		`GRANT UPDATE ON fleet_leader TO hosts`,
		`GRANT SELECT ON world_log TO reader`,
	}
	if version < 160000 {
		// Before 16, CREATEROLE grants itself any role but a superuser.
		setup = append(setup, `CREATE ROLE creator LOGIN CREATEROLE`)
		want = append(want, "creator")
	}
	if version >= 140000 {
		setup = append(setup, `CREATE ROLE allwriter LOGIN`, `GRANT pg_write_all_data TO allwriter`)
		want = append(want, "allwriter")
	}
	for _, q := range setup {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn, err := pgconn.Connect(ctx, strings.Replace(c.URL("postgres"), "user="+pgtest.Superuser, "user=daemon", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	roles, _ := probeRoles(ctx, conn, "daemon")
	for _, r := range want {
		if !slices.Contains(roles, r) {
			t.Errorf("probeRoles = %v: no %s", roles, r)
		}
	}
	if slices.Contains(roles, "reader") {
		t.Errorf("probeRoles = %v: reader only reads", roles)
	}
}

// FuzzParseListening: any text gives directories, each non-empty, without
// the socket's name, sorted and once.
func FuzzParseListening(f *testing.F) {
	f.Add("Num RefCount Protocol Flags Type St Inode Path\n0: 00000002 00000000 00010000 0001 01 31337 /tmp/.s.PGSQL.5432\n")
	f.Add("0: 2 0 10000 1 1 9 @x y/.s.PGSQL.5432\n0: 2 0 zz 1 1 9 /a/.s.PGSQL.5432")
	f.Fuzz(func(t *testing.T, text string) {
		dirs := parseListening(text, 5432)
		if !slices.IsSorted(dirs) || len(slices.Compact(slices.Clone(dirs))) != len(dirs) {
			t.Errorf("dirs %q: not sorted and unique", dirs)
		}
		for _, d := range dirs {
			if d == "" || strings.Contains(d, "\n") {
				t.Errorf("dir %q", d)
			}
		}
	})
}
