// Package pgtest runs a real PostgreSQL for tests: a cluster made with
// initdb in a temporary directory, its server listening on a Unix socket
// in that directory (and on 127.0.0.1 only when made by StartTCP or
// NewTCP), stopped by its pid at the end. Tests
// never use a server of the machine's own (the postgresql package's
// service), and never a mock.
//
// One cluster serves a test package: its TestMain calls Main, and each
// test takes a database of its own with DB. Where PostgreSQL is missing
// the test fails naming how to install it; it never skips.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Install is how a machine gets PostgreSQL; the failure of a test that
// needs it names this.
const Install = "install PostgreSQL: apt-get install -y postgresql"

// Superuser is the role initdb makes; tests connect as it.
const Superuser = "cra"

// port only names the socket file (.s.PGSQL.port) of a cluster with no
// TCP listener.
const port = 5432

// Cluster is a running PostgreSQL server made for tests.
type Cluster struct {
	dir  string // holds data/, the socket and server.log
	bin  string // the directory of initdb and postgres
	port int    // the socket's name, and the TCP port of a TCP cluster
	// password is the superuser's on TCP, where a TCP cluster asks for
	// it (scram-sha-256); its Unix socket still trusts every local user.
	password string
	cmd      *exec.Cmd
	done     chan error // the server's exit, once
	next     atomic.Int64
}

// Binaries returns the directory holding initdb and postgres: initdb's
// on PATH (through symlinks), else the newest /usr/lib/postgresql/*/bin
// (Debian's package puts neither on PATH).
func Binaries() (string, error) { return binaries(exec.LookPath, "/usr/lib/postgresql/*/bin") }

func binaries(lookPath func(string) (string, error), libGlob string) (string, error) {
	if p, err := lookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(libGlob)
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no initdb and postgres on PATH or under /usr/lib/postgresql/*/bin: %s", Install)
}

// version reads the major version out of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// credential returns who runs PostgreSQL: nil (this process's user)
// unless this process is root, which PostgreSQL refuses; then the
// postgres user the Debian package makes.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to run as root: no 'postgres' user to run it as (%v): %s", err, Install)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user postgres has uid %q gid %q: not numbers", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Start makes a cluster in a new temporary directory and starts its
// server; Stop ends it and removes the directory.
func Start(ctx context.Context) (*Cluster, error) {
	return startCluster(ctx, "")
}

// StartTCP makes a cluster that also listens on 127.0.0.1, at a free
// port, where the superuser logs in only with password (scram-sha-256),
// as a fleet's database would be set up; its Unix sockets, the one in
// its directory and an abstract one (AbstractSocket), still trust every
// local user, as Debian's peer authentication lets the owner in.
func StartTCP(ctx context.Context, password string) (*Cluster, error) {
	if password == "" {
		return nil, errors.New("pgtest: a TCP cluster needs a password")
	}
	return startCluster(ctx, password)
}

func startCluster(ctx context.Context, password string) (*Cluster, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	// Short: a socket's path must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "crapg")
	if err != nil {
		return nil, fmt.Errorf("make cluster dir: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin, port: port, password: password}
	if password != "" {
		if c.port, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("give the cluster dir to postgres: %w", err)
		}
	}
	if err := c.initdb(ctx, cred); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.start(ctx, cred); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (c *Cluster) initdb(ctx context.Context, cred *syscall.Credential) error {
	args := []string{"-D", filepath.Join(c.dir, "data"), "-U", Superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync"}
	if c.password != "" {
		pw := filepath.Join(c.dir, "pwfile")
		if err := os.WriteFile(pw, []byte(c.password+"\n"), 0o644); err != nil {
			return fmt.Errorf("write the superuser's password for initdb: %w", err)
		}
		defer os.Remove(pw)
		args = append(args, "--auth-host=scram-sha-256", "--pwfile="+pw)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "initdb"), args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// start runs postgres on a socket in the cluster's dir, with durability
// off (a test's data dies with it), and waits until it takes connections.
func (c *Cluster) start(ctx context.Context, cred *syscall.Credential) error {
	logf, err := os.Create(filepath.Join(c.dir, "server.log"))
	if err != nil {
		return fmt.Errorf("create server log: %w", err)
	}
	defer logf.Close()
	if cred != nil {
		if err := logf.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("give the server log to postgres: %w", err)
		}
	}
	listen, sockets := "", c.dir
	if c.password != "" {
		listen, sockets = "127.0.0.1", c.dir+","+c.AbstractSocket()
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"),
		"-D", filepath.Join(c.dir, "data"), "-k", sockets, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses="+listen, "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a terminal's ^C goes to the test, which then
	// stops the server in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd = cmd
	c.done = make(chan error, 1)
	go func() { c.done <- cmd.Wait() }()

	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case werr := <-c.done:
			c.done <- werr
			return fmt.Errorf("postgres exited before taking connections (%v):\n%s", werr, c.serverLog())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres takes no connections after 60s: %v\n%s", err, c.serverLog())
		}
	}
}

func (c *Cluster) serverLog() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
	return string(b)
}

// URL returns the connection URL of database db on the cluster's socket.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=%s&sslmode=disable", db, c.dir, c.port, Superuser)
}

// TCPURL returns the URL of database db at 127.0.0.1, with the password,
// on a cluster made by StartTCP.
func (c *Cluster) TCPURL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.password, c.port, db)
}

// NewDatabase creates an empty database and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.next.Add(1))
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect to the test cluster: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.URL(name), nil
}

// Stop ends the server (SIGINT, PostgreSQL's fast shutdown; SIGQUIT then
// SIGKILL if it lingers), waits for it, and removes the cluster's dir.
func (c *Cluster) Stop() error {
	var err error
	if c.cmd != nil && c.cmd.Process != nil {
		err = c.signalWait(syscall.SIGINT, 20*time.Second)
		if err != nil {
			if err = c.signalWait(syscall.SIGQUIT, 5*time.Second); err != nil {
				err = c.signalWait(syscall.SIGKILL, 5*time.Second)
			}
		}
	}
	if rerr := os.RemoveAll(c.dir); rerr != nil && err == nil {
		err = fmt.Errorf("remove cluster dir: %w", rerr)
	}
	return err
}

// signalWait sends sig to the server and waits up to d for it to exit.
func (c *Cluster) signalWait(sig syscall.Signal, d time.Duration) error {
	select {
	case werr := <-c.done:
		c.done <- werr
		return nil
	default:
	}
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal postgres: %w", err)
	}
	select {
	case werr := <-c.done:
		c.done <- werr
		return nil
	case <-time.After(d):
		return fmt.Errorf("postgres (pid %d) still runs %v after %v", c.cmd.Process.Pid, d, sig)
	}
}

// The cluster a test package shares: Main stops it, DB starts it on first
// use (a package whose tests skip it by -run pays nothing).
var shared struct {
	mu   sync.Mutex
	main bool
	c    *Cluster
	err  error
}

// Main runs the package's tests and stops the shared cluster after them.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.c != nil {
		if err := shared.c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop cluster: %v\n", err)
			code = max(code, 1)
		}
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// Shared returns the package's cluster, starting it on first use; a
// missing PostgreSQL fails the test with how to install it.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		t.Fatal("pgtest: the shared cluster needs TestMain to call pgtest.Main(m), which stops it")
	}
	if shared.c == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		shared.c, shared.err = Start(ctx)
		cancel()
	}
	if shared.err != nil {
		t.Fatalf("pgtest: %v", shared.err)
	}
	return shared.c
}

// DB returns the URL of a new, empty database on the package's shared
// cluster.
func DB(t testing.TB) string {
	t.Helper()
	c := Shared(t)
	url, err := c.NewDatabase(context.Background())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return url
}

// New starts a cluster of the test's own, stopped when it ends: for a
// test that stops or breaks its server.
func New(t testing.TB) *Cluster {
	t.Helper()
	return newCluster(t, "")
}

// NewTCP is New for a cluster made by StartTCP.
func NewTCP(t testing.TB, password string) *Cluster {
	t.Helper()
	return newCluster(t, password)
}

func newCluster(t testing.TB, password string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := startCluster(ctx, password)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// Port returns the cluster's port: its socket's name, and its TCP port
// on 127.0.0.1 when made by StartTCP.
func (c *Cluster) Port() int { return c.port }

// AbstractSocket returns the abstract Unix socket "directory" ('@' and
// a name, Linux's abstract namespace) a cluster made by StartTCP also
// listens on, as unix_socket_directories names it; "" for another.
func (c *Cluster) AbstractSocket() string {
	if c.password == "" {
		return ""
	}
	return "@" + filepath.Base(c.dir)
}

// Dir returns the cluster's directory (the socket's, and server.log's).
func (c *Cluster) Dir() string { return c.dir }
