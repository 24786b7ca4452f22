package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/pgboard"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/supervise"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
	"github.com/jackc/pgx/v5"
)

// sweepWorker is host name's worker over a new database's board.
func sweepWorker(t *testing.T, name string) *worker {
	t.Helper()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	db, err := pgstore.OpenFleet(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &worker{db: db, host: name, lease: time.Minute, board: board.New(pgboard.New(l), l), now: time.Now,
		held: map[string]pgstore.Lease{}, gone: map[string]bool{}, unleased: map[string]time.Time{}}
}

// runOn starts run n of task id on host as its processor does (a lease,
// the active entry, the file in in-progress), with a lease of lease.
func runOn(t *testing.T, w *worker, host, id string, n int, lease time.Duration) {
	t.Helper()
	ctx := context.Background()
	got, err := w.db.ClaimPending(ctx, host, []string{id}, 1, lease)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim of %s by %s: %v %v", id, host, got, err)
	}
	if _, err := w.board.Log.Agent(ctx, world.StatusActive, id, fmt.Sprintf("run %d: script", n), ""); err != nil {
		t.Fatal(err)
	}
	if err := w.board.Store.Move(ctx, id, board.Pending, board.InProgress); err != nil {
		t.Fatal(err)
	}
}

func folderOf(t *testing.T, w *worker, id string) board.Folder {
	t.Helper()
	_, f, err := w.board.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The leader's sweep restarts the run of a host that stopped renewing
// its lease, logged as a restart with the reason (which Level 1's start
// limit counts: at the limit the task is blocked), and a task active
// with no lease at all, once two sweeps saw it so.
func TestLeaderSweepRestartsDeadHostsRuns(t *testing.T) {
	ctx := context.Background()
	w := sweepWorker(t, "h2")
	a, err := w.board.Add(ctx, board.NewTask("run on a host that dies"))
	if err != nil {
		t.Fatal(err)
	}
	policy := supervise.Policy{Limit: 1, Window: time.Hour}

	runOn(t, w, "h1", a.ID, 1, 20*time.Millisecond)
	time.Sleep(60 * time.Millisecond) // h1 is dead: its lease runs out
	if err := w.sweep(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if f := folderOf(t, w, a.ID); f != board.Pending {
		t.Fatalf("after the sweep %s is in %s, want pending", a.ID, f)
	}
	lines := logText(t, w, a.ID)
	if !strings.Contains(lines, "]["+a.ID+"] restarted | reason: host h1 stopped renewing its lease on run r-") ||
		!strings.Contains(lines, "[agent:retry]["+a.ID+"] restarted by the fleet's leader: host h1 stopped renewing") {
		t.Errorf("the restart and its reason are not logged:\n%s", lines)
	}
	ls, err := w.db.Leases(ctx)
	if err != nil || len(ls) != 0 {
		t.Errorf("leases after the sweep: %v %v", ls, err)
	}

	// The second death in the window: its restart would pass the start limit of 1.
	runOn(t, w, "h3", a.ID, 2, 20*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if err := w.sweep(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if f := folderOf(t, w, a.ID); f != board.FailedBlocked {
		t.Errorf("at the start limit %s is in %s, want failed-blocked:\n%s", a.ID, f, logText(t, w, a.ID))
	}

	// Active in the log, no lease anywhere: restarted on the second sweep.
	b, err := w.board.Add(ctx, board.NewTask("a leader died between sweep and restart"))
	if err != nil {
		t.Fatal(err)
	}
	runOn(t, w, "h1", b.ID, 1, time.Minute)
	if _, err := w.db.Release(ctx, "h1", mustLease(t, w, b.ID).RunID); err != nil {
		t.Fatal(err)
	}
	if err := w.sweep(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if f := folderOf(t, w, b.ID); f != board.InProgress {
		t.Errorf("after one sweep %s is in %s: one sighting must not restart it", b.ID, f)
	}
	if err := w.sweep(ctx, policy); err != nil {
		t.Fatal(err)
	}
	if f := folderOf(t, w, b.ID); f != board.Pending {
		t.Errorf("after two sweeps %s is in %s, want pending", b.ID, f)
	}
	if text := logText(t, w, b.ID); !strings.Contains(text, "no host has held its lease since") {
		t.Errorf("no reason logged:\n%s", text)
	}

	// A live lease is left alone.
	c, err := w.board.Add(ctx, board.NewTask("alive elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	runOn(t, w, "h1", c.ID, 1, time.Minute)
	for range 2 {
		if err := w.sweep(ctx, policy); err != nil {
			t.Fatal(err)
		}
	}
	if f := folderOf(t, w, c.ID); f != board.InProgress {
		t.Errorf("a run under a live lease was moved to %s", f)
	}
}

func mustLease(t *testing.T, w *worker, id string) pgstore.Lease {
	t.Helper()
	ls, err := w.db.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.TaskID == id {
			return l
		}
	}
	t.Fatalf("no lease of %s", id)
	return pgstore.Lease{}
}

func logText(t *testing.T, w *worker, id string) string {
	t.Helper()
	h, err := w.board.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range h {
		line, err := world.Format(e)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestGuardDatabase: a database on this host's loopback has its port
// guarded, so that confined agents cannot connect to it, until the worker
// lets go; one that lets this OS user in without a password on a Unix
// socket, which no sandbox rule fences, is reported.
func TestGuardDatabase(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing answers: no password-less way in either
	port := ln.Addr().(*net.TCPAddr).Port
	var out bytes.Buffer
	unguard, err := guardDatabase(ctx, fmt.Sprintf("postgres://cra@localhost:%d/fleet?connect_timeout=2", port), &out, sandbox.KernelFences())
	if err != nil {
		t.Fatal(err)
	}
	if ports, err := sandbox.Guarded(); err != nil || !slices.Contains(ports, port) {
		t.Errorf("a database on localhost:%d: guarded ports %v, %v; want it among them", port, ports, err)
	}
	if out.Len() > 0 {
		t.Errorf("a guarded database that asks nothing of us: told %q", out.String())
	}
	unguard()
	if ports, _ := sandbox.Guarded(); slices.Contains(ports, port) {
		t.Errorf("after the worker let go: port %d still guarded", port)
	}

	// The test cluster listens on a Unix socket only, with trust
	// authentication: a way in where the sandbox does not fence a
	// socket's path (Landlock before ABI 9), none where it does.
	url := pgtest.DB(t)
	if got := guardOnce(t, url, sandbox.Fences{Ports: true, AbstractSockets: true}); !strings.Contains(got, "without a password") || !strings.Contains(got, "Unix socket") {
		t.Errorf("a password-less database on a socket: told %q, want a warning naming both", got)
	}
	if got := guardOnce(t, url, sandbox.Fences{Ports: true, AbstractSockets: true, PathSockets: true}); got != "" {
		t.Errorf("a password-less database on a socket the sandbox fences: told %q", got)
	}
}

// TestGuardDatabaseSandboxOff: a database whose loopback port lets this
// OS user in without a password is no way in while the sandbox guards
// the port; with [board] sandbox = "off" (no fences) it is, and the
// warning names the port and says why.
func TestGuardDatabaseSandboxOff(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c := pgtest.NewTCP(t, "fleet-secret")
	url := c.TCPURL("postgres")
	setAuth(t, c, url, "host", "trust")
	nopass := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?connect_timeout=5", superuser(t, url), c.Port())
	deadline := time.Now().Add(20 * time.Second)
	for {
		if open, _ := pgstore.OpensWithoutPassword(context.Background(), nopass); open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the port still asks a password 20 s after the reload")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := guardOnce(t, nopass, sandbox.Fences{Ports: true, AbstractSockets: true, PathSockets: true}); got != "" {
		t.Errorf("a password-less port the sandbox guards: told %q", got)
	}
	got := guardOnce(t, nopass, sandbox.Fences{})
	for _, want := range []string{"without a password", fmt.Sprintf("its port %d", c.Port()), `sandbox = "off"`} {
		if !strings.Contains(got, want) {
			t.Errorf("agents unconfined, a password-less port: told %q, want %q in it", got, want)
		}
	}
}

// TestWorkerSaysAgentsRunUnconfined: a worker whose board runs agents
// with [board] sandbox = "off" weighs the database's ways in with no
// fence, whatever the kernel could fence, and says why; with the
// sandbox on, it says nothing of the kind, and names the trusted socket
// only where the kernel does not fence it.
func TestWorkerSaysAgentsRunUnconfined(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg, getenv := pgConfig(t) // a trusted Unix socket
	for _, off := range []bool{false, true} {
		cfg.Board = nil
		if off {
			cfg.Board = &config.Board{Sandbox: "off"}
		}
		var out bytes.Buffer
		root := t.TempDir()
		f := &Fleet{ws: &workspace.Workspace{Root: root, StateDir: statedir.Of(root).Path(), Config: cfg}, getenv: getenv, out: &out, now: time.Now}
		w, err := f.openWorker(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		w.close()
		got := out.String()
		// The sandbox on a kernel that fences a socket's path (Landlock
		// ABI 9) keeps agents off the socket: it is named only where
		// agents could reach it.
		if named := off || !sandbox.FencesPathSockets(); strings.Contains(got, "Unix socket") != named {
			t.Errorf("sandbox off %v, a trusted socket, Landlock ABI %d (fences path sockets: %v): told %q, want the socket named: %v", off, sandbox.ABI(), sandbox.FencesPathSockets(), got, named)
		}
		if strings.Contains(got, `sandbox = "off"`) != off {
			t.Errorf("sandbox off %v: told %q", off, got)
		}
	}
}

// setAuth sets the method of every pg_hba.conf line of kind (local,
// host) of cluster c, and has the server at url reload it.
func setAuth(t *testing.T, c *pgtest.Cluster, url, kind, method string) {
	t.Helper()
	hba := filepath.Join(c.Dir(), "data", "pg_hba.conf")
	b, err := os.ReadFile(hba)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == kind {
			l = strings.Join(append(f[:len(f)-1], method), " ")
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(hba, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
}

// superuser is the role the URL logs in as.
func superuser(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.User
}

// guardOnce guards the database at url as a worker would on a kernel
// with the fences given, lets go, and returns what it was told.
func guardOnce(t *testing.T, url string, fenced sandbox.Fences) string {
	t.Helper()
	var out bytes.Buffer
	unguard, err := guardDatabase(context.Background(), url, &out, fenced)
	if err != nil {
		t.Fatal(err)
	}
	unguard()
	return out.String()
}

// TestGuardDatabaseSocketBehindTCP: a fleet's database named at a
// loopback port that asks a password is still open on the server's Unix
// socket when that trusts local users, and an agent is not fenced off a
// socket: the worker guards the port and names the socket. Once the
// socket asks a password too, nothing is said.
func TestGuardDatabaseSocketBehindTCP(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	c := pgtest.NewTCP(t, "fleet-secret")
	url := c.TCPURL("postgres")
	if open, err := pgstore.OpensWithoutPassword(ctx, url); err != nil || open {
		t.Fatalf("the cluster's TCP address: opens without a password %v, %v; want a password asked", open, err)
	}
	abstract := c.AbstractSocket()
	// A URL that insists on SCRAM does not hush the probes: an agent's
	// own client asks for nothing.
	for _, u := range []string{url, url + "&require_auth=scram-sha-256"} {
		if got, err := pgstore.PasswordlessSockets(ctx, u); err != nil || !slices.Equal(got, []string{c.Dir(), abstract}) {
			t.Errorf("PasswordlessSockets(%s): %v, %v; want [%s %s], the abstract socket too", u, got, err, c.Dir(), abstract)
		}
	}
	var out bytes.Buffer
	unguard, err := guardDatabase(ctx, url, &out, sandbox.Fences{Ports: true, AbstractSockets: sandbox.ScopesAbstractSockets()})
	if err != nil {
		t.Fatal(err)
	}
	port := c.Port()
	if ports, err := sandbox.Guarded(); err != nil || !slices.Contains(ports, port) {
		t.Errorf("a database on 127.0.0.1:%d: guarded ports %v, %v; want it among them", port, ports, err)
	}
	unguard()
	if got := out.String(); !strings.Contains(got, "without a password") || !strings.Contains(got, "Unix socket in "+c.Dir()) {
		t.Errorf("a password on TCP, trust on the socket: told %q, want a warning naming the socket in %s", got, c.Dir())
	}
	// The abstract socket is named where the sandbox cannot fence it
	// (Landlock before ABI 6), and not where it does (sandbox's
	// TestAbstractSocketOutOfReach shows an agent kept off one).
	if got := out.String(); strings.Contains(got, abstract) != !sandbox.ScopesAbstractSockets() {
		t.Errorf("this kernel (scopes abstract sockets: %v): told %q", sandbox.ScopesAbstractSockets(), got)
	}
	if got := guardOnce(t, url, sandbox.Fences{Ports: true}); !strings.Contains(got, abstract) || !strings.Contains(got, c.Dir()) {
		t.Errorf("a kernel that does not scope abstract sockets: told %q, want both sockets named (%s, %s)", got, c.Dir(), abstract)
	}
	// A kernel that fences both kinds of socket (Landlock ABI 9) leaves
	// no way in: the port is guarded.
	if got := guardOnce(t, url, sandbox.Fences{Ports: true, AbstractSockets: true, PathSockets: true}); got != "" {
		t.Errorf("a kernel that fences both sockets: told %q", got)
	}

	// The socket asks a password too: pg_hba.conf's local lines changed
	// and the server told to reload.
	setAuth(t, c, url, "local", "scram-sha-256")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if open, _ := pgstore.OpensWithoutPassword(ctx, c.URL("postgres")); !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket still lets us in without a password 20 s after the reload")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := guardOnce(t, url, sandbox.Fences{Ports: true}); got != "" {
		t.Errorf("a database that asks a password everywhere: told %q", got)
	}
}
