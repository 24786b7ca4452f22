package crashtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/pgtest"
)

// agentScript is every test agent: it appends a line to the shared
// record file when it starts and when it ends (by itself, or by a
// signal it can catch), each a few dozen bytes written with O_APPEND, so
// that lines from agents on every host never interleave. Its mode:
// slow sleeps, fail exits 1, fork leaves a child behind ('sleep 30 &')
// and then works, long runs for a minute on the host FLEETTEST_LONG_ON
// names and 8 s elsewhere (it writes work-ID.txt as it starts, so that
// a stopped copy has work to commit and push). Each writes work-ID.txt
// as it ends, so a run that ends leaves a change on its branch that
// names its host.
const agentScript = `#!/bin/sh
mark() {
	printf '%s %s %s %s %s %s %s\n' "$1" "$CRA_TASK_ID" "$FLEETTEST_HOST" "$CRA_RUN_ID" "$$" "$(date +%s.%N)" "$2" >> "$FLEETTEST_RECORDS"
}
mark start -
trap 'mark signal 143; exit 143' TERM INT HUP
case "$1" in
fail) sleep 0.5; echo "the build failed: $CRA_TASK_ID"; mark end 1; exit 1 ;;
fork) sleep 30 & sleep 1 ;;
long)
	echo "$CRA_TASK_ID run $CRA_RUN_ID started on $FLEETTEST_HOST" > "work-$CRA_TASK_ID.txt"
	if [ "$FLEETTEST_HOST" = "$FLEETTEST_LONG_ON" ]; then
		n=0
		while [ $n -lt 240 ]; do sleep 0.25; n=$((n+1)); done
	fi
	sleep 8 ;;
*) sleep 2 ;;
esac
echo "$CRA_TASK_ID run $CRA_RUN_ID on $FLEETTEST_HOST" > "work-$CRA_TASK_ID.txt"
echo "wrote work-$CRA_TASK_ID.txt: the task is done"
mark end 0
`

// lease is every host's [fleet] lease, the least allowed.
const lease = 10 * time.Second

// The model's replies to the recycler's reviews.
const (
	replyComplete = `classification: full_complete
criteria: met
need: none
note:
What was accomplished: wrote the work file
Current status: the file exists
Remaining issues or limitations: none
Suggested next actions: none
Validation evidence: the file is on the branch`
	replyProgress = `classification: some_progress
criteria: not_met
need: none
note:
What was accomplished: tried
Current status: the run failed
Remaining issues or limitations: it exits 1
Suggested next actions: fix it
Validation evidence: exit 1`
)

// world is one fleet under test: a PostgreSQL database, a bare remote,
// the hosts' clones and daemons, the agents' record file and the model.
type world struct {
	t       *testing.T
	root    string // every file of the test, symlinks resolved
	exe     string // this test binary, run as cra
	dbURL   string // the database, straight to its socket
	remote  string // the bare repository every host pushes to
	records string // the agents' record file
	llm     *llmtest.Server
	hosts   []*host
	extra   []string // more environment for every process

	killMu sync.Mutex
	killed map[int]time.Time // agent pid → when the test SIGKILLed it

	watch *watcher
}

// host is one machine of the fleet: a clone, its config and its daemon,
// started again after each kill (an incarnation).
type host struct {
	w     *world
	name  string
	dir   string // its clone
	state string // dir/.clean_room
	dbURL string // what its daemon connects to (a proxy, in the cut-off test)
	log   string // every incarnation's output

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	lives int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{
		t: t, root: root, exe: exe, dbURL: pgtest.DB(t),
		remote:  filepath.Join(root, "remote.git"),
		records: filepath.Join(root, "records", "agents.txt"),
		llm:     llmtest.NewServer(t),
		killed:  map[int]time.Time{},
	}
	w.llm.SetModels("thinker:4b")
	w.llm.On(llmtest.Contains("TASK: fail"), llmtest.Text(replyProgress))
	w.llm.SetDefault(llmtest.Text(replyComplete))
	if err := os.MkdirAll(filepath.Dir(w.records), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "agent.sh"), []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	seed := filepath.Join(root, "seed")
	w.git(root, "init", "-q", "--bare", "-b", "main", w.remote)
	w.git(root, "init", "-q", "-b", "main", seed)
	if err := os.WriteFile(filepath.Join(seed, ".gitignore"), []byte(".clean_room/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("a repository the fleet works on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.git(seed, "add", "-A")
	w.git(seed, "commit", "-qm", "first")
	w.git(seed, "push", "-q", w.remote, "main")
	w.watch = newWatcher(w.records)
	t.Cleanup(func() {
		for _, h := range w.hosts {
			h.stop()
		}
		w.watch.close()
		w.killStrays()
		if t.Failed() {
			w.dumpLogs()
		}
	})
	return w
}

// environ is the environment of every process the test starts.
func (w *world) environ() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return strings.HasPrefix(name, "CRA_") || strings.HasPrefix(name, "GIT_") || name == "HOME"
	})
	env = append(env, w.extra...)
	return append(env,
		envAsCra+"=1",
		"GIT_AUTHOR_NAME=cra test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=cra test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"HOME="+w.root,
		// Under -race a process sleeps at exit for the detector's report.
		"GORACE=atexit_sleep_ms=0",
		"FLEETTEST_RECORDS="+w.records,
		// Every process of the test carries it: killStrays finds them.
		"FLEETTEST_MARK="+w.root,
	)
}

func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = w.environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// hostConfig is a host's .clean_room/config.toml.
func (w *world) hostConfig(name, extra string) string {
	caches := filepath.Dir(w.records)
	agent := func(mode string) string {
		return fmt.Sprintf("[agents.%s]\ncommand = 'exec sh %s %s'\ntimeout = \"2m\"\ncaches = [%q]\n\n",
			mode, filepath.Join(w.root, "agent.sh"), mode, caches)
	}
	return fmt.Sprintf(`[board]
max_parallel = 2

[fleet]
database_url_env = "CRA_DATABASE_URL"
host = %q
remote = "origin"
lease = "10s"
push = true

[models]
reasoning = "thinker:4b"
base_url = %q
max_retries = 0

[recycler]
enabled_for = "none"
failure_threshold = 2
allow_unvalidated = true

`, name, w.llm.URL) + agent("slow") + agent("fail") + agent("fork") + agent("long") + extra
}

// addHost clones the remote for a new host whose daemon reaches the
// database at dbURL.
func (w *world) addHost(name, dbURL string) *host {
	w.t.Helper()
	h := &host{w: w, name: name, dir: filepath.Join(w.root, name), dbURL: dbURL, log: filepath.Join(w.root, name+".log")}
	h.state = filepath.Join(h.dir, ".clean_room")
	w.git(w.root, "clone", "-q", w.remote, h.dir)
	if err := os.MkdirAll(h.state, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.state, "config.toml"), []byte(w.hostConfig(name, "")), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.hosts = append(w.hosts, h)
	return h
}

func (h *host) environ() []string {
	return append(h.w.environ(), "CRA_DATABASE_URL="+h.dbURL, "FLEETTEST_HOST="+h.name)
}

// cra runs cra in the host's clone and returns its standard output.
func (h *host) cra(args ...string) (string, error) {
	cmd := exec.Command(h.w.exe, args...)
	cmd.Dir = h.dir
	cmd.Env = h.environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("cra %s on %s: %v\n%s", strings.Join(args, " "), h.name, err, stderr.String())
	}
	return stdout.String(), nil
}

func (h *host) mustCra(args ...string) string {
	h.w.t.Helper()
	out, err := h.cra(args...)
	if err != nil {
		h.w.t.Fatal(err)
	}
	return out
}

// start starts the host's daemon: a new incarnation.
func (h *host) start() {
	h.w.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		h.w.t.Fatalf("host %s: its daemon runs already", h.name)
	}
	logf, err := os.OpenFile(h.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.w.t.Fatal(err)
	}
	h.lives++
	fmt.Fprintf(logf, "=== %s: incarnation %d starts at %s\n", h.name, h.lives, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(h.w.exe, "serve", "--addr", "127.0.0.1:0", "--pass-every", "1s", "--no-supervisors")
	cmd.Dir = h.dir
	cmd.Env = h.environ()
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own group: the test's ^C reaches the test, which stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		h.w.t.Fatalf("start the daemon of %s: %v", h.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	h.cmd, h.done = cmd, done
}

// kill ends the host as a lost machine ends: its daemon and every agent
// it started (whatever carries CRA_STATE_DIR of its clone) get SIGKILL,
// with no chance to log or release anything. It returns when they are
// gone, with the agents' pids it killed.
func (h *host) kill() []int {
	h.w.t.Helper()
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd, h.done = nil, nil
	h.mu.Unlock()
	if cmd == nil {
		h.w.t.Fatalf("host %s: no daemon to kill", h.name)
	}
	select {
	case <-done:
		h.w.t.Fatalf("the daemon of %s exited on its own before it was killed", h.name)
	default:
	}
	// The host is lost with its agents. They are frozen first, so that
	// none ends, and is finished by the daemon, between the daemon's
	// death and theirs; each run's reaper would also end them once the
	// daemon is gone, before this could count them.
	var pids []int
	for _, pid := range agentsOf(h.state) {
		syscall.Kill(pid, syscall.SIGSTOP)
		pids = append(pids, pid)
	}
	// The whole group: the daemon and what it runs in its own group (its
	// git commands); the agents have groups of their own.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	at := time.Now()
	for round := 0; round < 50; round++ {
		found := agentsOf(h.state)
		if len(found) == 0 {
			break
		}
		for _, pid := range found {
			syscall.Kill(pid, syscall.SIGKILL)
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if left := agentsOf(h.state); len(left) > 0 {
		h.w.t.Fatalf("host %s: agents %v outlive SIGKILL", h.name, left)
	}
	h.w.killMu.Lock()
	for _, pid := range pids {
		h.w.killed[pid] = at
	}
	h.w.killMu.Unlock()
	return pids
}

// api returns the base URL of the host's running daemon, from its
// serve.json once the current incarnation has written it.
func (h *host) api(t *testing.T) string {
	t.Helper()
	h.mu.Lock()
	pid := h.cmd.Process.Pid
	h.mu.Unlock()
	var info struct {
		PID  int    `json:"pid"`
		Addr string `json:"addr"`
	}
	waitFor(t, time.Minute, "the daemon of "+h.name+" writes serve.json", func() bool {
		b, err := os.ReadFile(filepath.Join(h.state, "serve.json"))
		return err == nil && json.Unmarshal(b, &info) == nil && info.PID == pid && info.Addr != ""
	})
	if strings.HasPrefix(info.Addr, "http://") {
		return info.Addr
	}
	return "http://" + info.Addr
}

// addTask adds a task through the daemon's API (POST /api/tasks), as the
// web board does, and returns its id.
func (h *host) addTask(base, title, agent string) (string, error) {
	body, _ := json.Marshal(map[string]string{"title": title, "agent": agent})
	resp, err := http.Post(base+"/api/tasks", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("add %q on %s: %w", title, h.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		ID string `json:"id"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &out) != nil || out.ID == "" {
		return "", fmt.Errorf("add %q on %s: %s: %s", title, h.name, resp.Status, b)
	}
	return out.ID, nil
}

// stop ends the daemon as a person does (SIGINT), SIGKILL after a minute.
func (h *host) stop() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd, h.done = nil, nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(time.Minute):
		h.w.t.Errorf("host %s: its daemon still runs a minute after SIGINT: killed", h.name)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// exited reports whether the daemon's current incarnation has exited.
func (h *host) exited() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		return true
	}
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// agentsOf returns the live processes whose environment names stateDir
// as CRA_STATE_DIR: the agents one host's daemon started, their
// children, and the sandbox's helper.
func agentsOf(stateDir string) []int {
	return procsWith("CRA_STATE_DIR=" + stateDir)
}

// procsWith returns the live processes whose environment holds kv.
func procsWith(kv string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || len(env) == 0 {
			continue // gone, a zombie, or not ours
		}
		for _, v := range bytes.Split(env, []byte{0}) {
			if string(v) == kv {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// killStrays kills what the test started and left running: the fork
// agents' children, the agents of a daemon that failed to stop them.
func (w *world) killStrays() {
	for range 10 {
		pids := procsWith("FLEETTEST_MARK=" + w.root)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dumpLogs prints the tail of each daemon's output for a failed test.
func (w *world) dumpLogs() {
	for _, h := range w.hosts {
		b, _ := os.ReadFile(h.log)
		// Each line once: a daemon cut off repeats its warnings every pass.
		seen := map[string]int{}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if seen[l]++; seen[l] == 1 {
				out = append(out, l)
			}
		}
		text := strings.Join(out, "\n")
		if len(text) > 12000 {
			text = "…\n" + text[len(text)-12000:]
		}
		w.t.Logf("output of %s's daemons (each line once):\n%s", h.name, text)
	}
}

// explain logs what the world log and the daemons' output say of task
// id, for a failure about it.
func (w *world) explain(id string, lines []string) {
	var b strings.Builder
	for _, l := range lines {
		if strings.Contains(l, "]["+id+"]") {
			b.WriteString("  log: " + l + "\n")
		}
	}
	for _, h := range w.hosts {
		out, _ := os.ReadFile(h.log)
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, id) {
				b.WriteString("  " + h.name + ": " + l + "\n")
			}
		}
	}
	w.t.Logf("task %s:\n%s", id, b.String())
}

// checkDaemonLogs fails on a data race or a panic in any daemon.
func (w *world) checkDaemonLogs() {
	w.t.Helper()
	for _, h := range w.hosts {
		b, _ := os.ReadFile(h.log)
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
			if i := bytes.Index(b, []byte(bad)); i >= 0 {
				w.t.Errorf("daemon of %s: %s\n%s", h.name, bad, b[i:min(len(b), i+4000)])
			}
		}
	}
}

// conn opens the database for the test's own reading.
func (w *world) conn() *pgx.Conn {
	w.t.Helper()
	c, err := pgx.Connect(context.Background(), w.dbURL)
	if err != nil {
		w.t.Fatalf("connect to the test database: %v", err)
	}
	w.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// boardState is the board and the leases as the database holds them.
type boardState struct {
	folders map[string]string // task → folder
	leases  map[string]string // task → host holding its lease
}

func (s boardState) count(folders ...string) int {
	n := 0
	for _, f := range s.folders {
		if slices.Contains(folders, f) {
			n++
		}
	}
	return n
}

func (s boardState) String() string {
	by := map[string]int{}
	for _, f := range s.folders {
		by[f]++
	}
	return fmt.Sprintf("folders %v, leases %v", by, s.leases)
}

func readBoard(ctx context.Context, c *pgx.Conn) (boardState, error) {
	s := boardState{folders: map[string]string{}, leases: map[string]string{}}
	rows, err := c.Query(ctx, "SELECT id, folder FROM board_tasks")
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var id, folder string
		if err := rows.Scan(&id, &folder); err != nil {
			rows.Close()
			return s, err
		}
		s.folders[id] = folder
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s, err
	}
	rows, err = c.Query(ctx, "SELECT task_id, host FROM run_leases")
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var id, h string
		if err := rows.Scan(&id, &h); err != nil {
			rows.Close()
			return s, err
		}
		s.leases[id] = h
	}
	rows.Close()
	return s, rows.Err()
}

// waitQuiet waits until no task is pending or in progress and no lease
// is held, and then until every task is closed (verified or blocked) or
// the board stays the same for settle (the recycler reviews one run at a
// time); at most limit. It returns the board it saw last.
func (w *world) waitQuiet(c *pgx.Conn, settle, limit time.Duration) boardState {
	w.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	var last string
	var since time.Time
	told := time.Now()
	for {
		s, err := readBoard(ctx, c)
		if err != nil {
			w.t.Fatalf("read the board: %v", err)
		}
		busy := s.count("pending", "in-progress") > 0 || len(s.leases) > 0
		if !busy {
			if s.count("completed-finalized", "failed-blocked") == len(s.folders) {
				return s
			}
			if str := s.String(); str != last {
				last, since = str, time.Now()
			} else if time.Since(since) >= settle {
				return s
			}
		} else {
			last = ""
		}
		for _, h := range w.hosts {
			if h.exited() {
				w.t.Fatalf("the daemon of %s exited on its own", h.name)
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the board is not quiet after %v: %v", limit, s)
		}
		if time.Since(told) >= 20*time.Second {
			w.t.Logf("waiting for a quiet board: %v", s)
			told = time.Now()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// midRun reports whether an agent of h recorded its start, has recorded
// no end, and lives: a kill of h now catches a run.
func (h *host) midRun() bool {
	b, err := os.ReadFile(h.w.records)
	if err != nil {
		return false
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1] // a line being appended is left out
	recs, err := parseRecords(b)
	if err != nil {
		return false
	}
	open := map[int]bool{}
	for _, r := range recs {
		if r.host != h.name {
			continue
		}
		if r.kind == "start" {
			open[r.pid] = true
		} else {
			delete(open, r.pid)
		}
	}
	for _, pid := range agentsOf(h.state) {
		if open[pid] {
			return true
		}
	}
	return false
}

// record is one line of the agents' record file.
type record struct {
	kind string // start, end, signal
	task string
	host string
	run  int
	pid  int
	at   time.Time
	code string
}

func parseRecords(b []byte) ([]record, error) {
	var out []record
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 7 {
			return nil, fmt.Errorf("record %q: want 7 fields", sc.Text())
		}
		run, err1 := strconv.Atoi(f[3])
		pid, err2 := strconv.Atoi(f[4])
		secs, err3 := strconv.ParseFloat(f[5], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("record %q: %w", sc.Text(), err)
		}
		at := time.Unix(0, int64(secs*1e9))
		out = append(out, record{kind: f[0], task: f[1], host: f[2], run: run, pid: pid, at: at, code: f[6]})
	}
	return out, sc.Err()
}

func (w *world) readRecords() []record {
	w.t.Helper()
	b, err := os.ReadFile(w.records)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		w.t.Fatal(err)
	}
	recs, err := parseRecords(b)
	if err != nil {
		w.t.Fatal(err)
	}
	return recs
}

// watcher notes when each agent that recorded its start is seen gone
// (its pid no longer a live process with the start time it had): an
// upper bound of its end where it recorded none (SIGKILL from its own
// daemon).
type watcher struct {
	path string
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	start map[int]string    // pid → its /proc start time, first seen
	gone  map[int]time.Time // pid → when it was first seen gone
}

func newWatcher(path string) *watcher {
	wt := &watcher{path: path, stop: make(chan struct{}), done: make(chan struct{}),
		start: map[int]string{}, gone: map[int]time.Time{}}
	go wt.loop()
	return wt
}

func (wt *watcher) close() {
	close(wt.stop)
	<-wt.done
}

func (wt *watcher) loop() {
	defer close(wt.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(wt.path)
		recs, _ := parseRecords(b)
		now := time.Now()
		wt.mu.Lock()
		for _, r := range recs {
			if r.kind != "start" {
				continue
			}
			if _, ok := wt.gone[r.pid]; ok {
				continue
			}
			st, alive := procStart(r.pid)
			first, seen := wt.start[r.pid]
			switch {
			case !alive, seen && st != first:
				wt.gone[r.pid] = now
			case !seen:
				wt.start[r.pid] = st
			}
		}
		wt.mu.Unlock()
		select {
		case <-wt.stop:
			return
		case <-tick.C:
		}
	}
}

// goneAt returns when pid was first seen gone.
func (wt *watcher) goneAt(pid int) (time.Time, bool) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	t, ok := wt.gone[pid]
	return t, ok
}

// procStart returns pid's start time (/proc/PID/stat field 22) and
// whether it is alive (a zombie is not).
func procStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}

// span is one run of a task's agent, from its start to its end.
type span struct {
	task, host string
	run, pid   int
	start, end time.Time
	how        string // end, signal, killed (by the test), gone (seen by the watcher), open
}

func (s span) String() string {
	return fmt.Sprintf("run %d on %s (pid %d) %s → %s (%s)", s.run, s.host, s.pid,
		s.start.Format("15:04:05.000"), s.end.Format("15:04:05.000"), s.how)
}

// spans pairs the records into runs; an agent with no end of its own
// ends when the test killed it, else when the watcher saw it gone, else
// it is still open at now.
func (w *world) spans(recs []record, now time.Time) []span {
	ends := map[int]record{}
	for _, r := range recs {
		if r.kind == "end" || r.kind == "signal" {
			ends[r.pid] = r
		}
	}
	w.killMu.Lock()
	defer w.killMu.Unlock()
	var out []span
	for _, r := range recs {
		if r.kind != "start" {
			continue
		}
		s := span{task: r.task, host: r.host, run: r.run, pid: r.pid, start: r.at, end: now, how: "open"}
		if e, ok := ends[r.pid]; ok && !e.at.Before(r.at) {
			s.end, s.how = e.at, e.kind
		} else if k, ok := w.killed[r.pid]; ok {
			s.end, s.how = k, "killed"
		} else if g, ok := w.watch.goneAt(r.pid); ok {
			s.end, s.how = g, "gone"
		}
		out = append(out, s)
	}
	return out
}

// checkNoOverlap fails where two runs of one task were alive at once.
func (w *world) checkNoOverlap(spans []span) {
	w.t.Helper()
	by := map[string][]span{}
	for _, s := range spans {
		by[s.task] = append(by[s.task], s)
	}
	for task, ss := range by {
		for i := range ss {
			for j := i + 1; j < len(ss); j++ {
				a, b := ss[i], ss[j]
				if a.start.Before(b.end) && b.start.Before(a.end) {
					w.t.Errorf("task %s ran twice at once: %v and %v", task, a, b)
				}
			}
		}
	}
}

// entry is one line of the world log, as far as these tests read it.
type entry struct {
	kind   string // agent or event
	status string // the agent's status, or the event's source
	id     string
	text   string
}

func parseEntry(line string) (entry, bool) {
	// [time][kind:status][id] text
	if !strings.HasPrefix(line, "[") {
		return entry{}, false
	}
	rest := line[1:]
	i := strings.Index(rest, "][")
	if i < 0 {
		return entry{}, false
	}
	rest = rest[i+2:]
	j := strings.Index(rest, "][")
	if j < 0 {
		return entry{}, false
	}
	kind, status, ok := strings.Cut(rest[:j], ":")
	if !ok {
		return entry{}, false
	}
	rest = rest[j+2:]
	k := strings.Index(rest, "]")
	if k < 0 {
		return entry{}, false
	}
	return entry{kind: kind, status: status, id: rest[:k], text: strings.TrimPrefix(rest[k+1:], " ")}, true
}

// runLog is what the world log says of one run of a task.
type runLog struct {
	host     string // the host its active line names ("run N: profile on host H")
	finishes int
	restarts []string // the reasons of the restarts logged while it was the task's run
}

// runsOf reads each task's runs out of the log: an [agent:active] "run
// N: …" line begins run N, and the finishes and restarts until the next
// one are its.
func runsOf(lines []string) (map[string]map[int]*runLog, []string) {
	out := map[string]map[int]*runLog{}
	cur := map[string]int{}
	var problems []string
	for _, line := range lines {
		e, ok := parseEntry(line)
		if !ok {
			continue
		}
		switch {
		case e.kind == "agent" && e.status == "active":
			var n int
			if _, err := fmt.Sscanf(e.text, "run %d:", &n); err != nil {
				continue // a resume without a run
			}
			if out[e.id] == nil {
				out[e.id] = map[int]*runLog{}
			}
			if out[e.id][n] != nil {
				problems = append(problems, fmt.Sprintf("run %d of %s began twice: %s", n, e.id, line))
			}
			rl := &runLog{}
			if i := strings.LastIndex(e.text, " on host "); i >= 0 {
				rl.host = e.text[i+len(" on host "):]
			}
			out[e.id][n] = rl
			cur[e.id] = n
		case e.kind == "agent" && e.status == "finish":
			if r := out[e.id][cur[e.id]]; r != nil {
				r.finishes++
			} else {
				problems = append(problems, "a finish of no run: "+line)
			}
		case e.kind == "event" && e.status == "system" && strings.HasPrefix(e.text, "restarted"):
			reason, ok := strings.CutPrefix(e.text, "restarted | reason: ")
			if !ok || strings.TrimSpace(reason) == "" {
				problems = append(problems, "a restart with no reason: "+line)
			}
			if r := out[e.id][cur[e.id]]; r != nil {
				r.restarts = append(r.restarts, reason)
			}
		}
	}
	return out, problems
}

// exported returns 'cra log export' and checks it against the database's
// world_log, line for line in id order.
func (w *world) checkExport(c *pgx.Conn, h *host) []string {
	w.t.Helper()
	out := h.mustCra("log", "export")
	rows, err := c.Query(context.Background(), "SELECT id, raw FROM world_log ORDER BY id")
	if err != nil {
		w.t.Fatal(err)
	}
	var want strings.Builder
	var next int64 = 1
	for rows.Next() {
		var id int64
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			w.t.Fatal(err)
		}
		if id != next {
			w.t.Errorf("world_log: id %d follows %d: a gap", id, next-1)
		}
		next = id + 1
		want.Write(raw)
		want.WriteByte('\n')
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	if out != want.String() {
		gl, wl := strings.Split(out, "\n"), strings.Split(want.String(), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				w.t.Errorf("cra log export differs from world_log at line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
				break
			}
		}
		w.t.Errorf("cra log export: %d lines, world_log %d", len(gl)-1, len(wl)-1)
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// logOverhead reports how long the runs took around their agents: from
// the [agent:active] line to the agent's start, and from the agent's end
// to the finish line (medians and maxima), for the report of a slow run.
func (w *world) logOverhead(lines []string, recs []record) {
	type key struct {
		id  string
		run int
	}
	active, finish := map[key]time.Time{}, map[key]time.Time{}
	cur := map[string]int{}
	for _, l := range lines {
		e, ok := parseEntry(l)
		if !ok || len(l) < 26 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, l[1:25])
		if err != nil {
			continue
		}
		switch {
		case e.kind == "agent" && e.status == "active":
			var n int
			if _, err := fmt.Sscanf(e.text, "run %d:", &n); err == nil {
				cur[e.id] = n
				active[key{e.id, n}] = at
			}
		case e.kind == "agent" && e.status == "finish":
			finish[key{e.id, cur[e.id]}] = at
		}
	}
	var before, after []time.Duration
	for _, r := range recs {
		k := key{r.task, r.run}
		switch r.kind {
		case "start":
			if a, ok := active[k]; ok {
				before = append(before, r.at.Sub(a))
			}
		case "end":
			if f, ok := finish[k]; ok {
				after = append(after, f.Sub(r.at))
			}
		}
	}
	stat := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "none"
		}
		slices.Sort(ds)
		return fmt.Sprintf("median %v, max %v (%d runs)", ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond), len(ds))
	}
	w.t.Logf("from a run's active line to its agent's start: %s; from the agent's end to the finish line: %s", stat(before), stat(after))
}
