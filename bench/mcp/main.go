// Command mcp measures 'cra mcp' (issue 31) against the command line on
// an indexed repository: the latency of the localize and context tools
// through MCP (one server, a call after another, as an agent makes them)
// next to 'cra retrieve --deterministic' (a process per task, as a person
// or a script runs it), p50 and p95, and the server's memory at rest.
//
//	go build -o /tmp/cra ./cmd/cra
//	go run ./bench/mcp -cra /tmp/cra -repo /path/to/django -tasks 30
//	go run ./bench/mcp -cra /tmp/cra -repo /path/to/django -files /path/to/clone -edit django/db/models/query.py
//
// The tasks are the subjects of the repository's newest commits (merges
// left out), a stand-in for what people ask; the repository must be
// indexed ('cra index'). A third call per task, symbols with limit 1,
// shows the fixed cost of a call: the check of the files against the
// index (index.Watch), the world-log line, and one name lookup.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench/mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	cra := fs.String("cra", "", "the cra binary to measure (required)")
	repo := fs.String("repo", "", "an indexed repository (required)")
	n := fs.Int("tasks", 30, "how many tasks (newest commit subjects)")
	budget := fs.Int("budget", 8000, "the context tool's budget_tokens, and the retrieve command's package size")
	files := fs.String("files", "", "serve with --files DIR: a copy of the repository (a board run's working copy) read against its index")
	edit := fs.String("edit", "", "with -files: append a line to this file of the copy before each task, as an agent's edit, so that every localize compares the copy in full")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cra == "" || *repo == "" {
		fs.Usage()
		return errors.New("-cra and -repo are required")
	}
	abs, err := filepath.Abs(*repo)
	if err != nil {
		return err
	}
	tasks, err := commitSubjects(ctx, abs, *n)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%d tasks from %s\n", len(tasks), abs)

	// The command line: a process per task, as 'cra retrieve' is run.
	var cli []time.Duration
	var cliCPU time.Duration
	for i, task := range tasks {
		cmd := exec.CommandContext(ctx, *cra, "retrieve", task, "--repo", abs, "--deterministic", "--stages", "scope,precision",
			"--context-window", strconv.Itoa(*budget+2048), "--reserved-tokens", "2048", "--safety-margin", "0")
		var errOut strings.Builder
		cmd.Stdout, cmd.Stderr = io.Discard, &errOut
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("cra retrieve (task %d): %v\n%s", i, err, errOut.String())
		}
		cli = append(cli, time.Since(start))
		cliCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}

	// MCP: one server, the calls one after another.
	serverArgs := []string{"mcp", "--repo", abs}
	if *files != "" {
		serverArgs = append(serverArgs, "--files", *files)
	}
	cmd := exec.Command(*cra, serverArgs...)
	cmd.Stderr = stderr
	startServer := time.Now()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	initialized := time.Since(startServer)
	pid := cmd.Process.Pid
	rssInit := rssKiB(pid)
	cpu := map[string]time.Duration{}
	callTool := func(name string, args map[string]any) (time.Duration, error) {
		before := cpuTime(pid)
		start := time.Now()
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		d := time.Since(start)
		cpu[name] += cpuTime(pid) - before
		if err == nil && res.IsError {
			err = fmt.Errorf("%s: tool error: %v", name, res.Content)
		}
		return d, err
	}
	var first time.Duration
	var loc, pkg, floor []time.Duration
	for i, task := range tasks {
		if *files != "" && *edit != "" {
			f, err := os.OpenFile(filepath.Join(*files, *edit), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return fmt.Errorf("-edit: %w", err)
			}
			fmt.Fprintf(f, "# edit %d\n", i)
			f.Close()
		}
		d, err := callTool("localize", map[string]any{"task": task, "top": 10})
		if err != nil {
			return err
		}
		if i == 0 {
			first = d // opens the index: not at rest
		} else {
			loc = append(loc, d)
		}
		if d, err = callTool("context", map[string]any{"task": task, "budget_tokens": *budget}); err != nil {
			return err
		}
		pkg = append(pkg, d)
		if d, err = callTool("symbols", map[string]any{"pattern": "QuerySet", "limit": 1}); err != nil {
			return err
		}
		floor = append(floor, d)
	}
	rssAfter := rssKiB(pid)
	time.Sleep(2 * time.Second)
	rssRest := rssKiB(pid)

	fmt.Fprintf(stdout, "repository %s, %d tasks, budget %d tokens\n", abs, len(tasks), *budget)
	if *files != "" {
		fmt.Fprintf(stdout, "files of %s (--files)", *files)
		if *edit != "" {
			fmt.Fprintf(stdout, ", %s edited before each task", *edit)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "| what | p50 | p95 | CPU per call | n |\n|---|---|---|---|---|\n")
	row := func(name string, ds []time.Duration, cpu time.Duration, calls int) {
		fmt.Fprintf(stdout, "| %s | %s | %s | %s | %d |\n", name, pct(ds, 50), pct(ds, 95), (cpu / time.Duration(calls)).Round(time.Millisecond), len(ds))
	}
	row("`cra retrieve --deterministic` (a process per task)", cli, cliCPU, len(cli))
	row("MCP `localize` top 10 (after the first call)", loc, cpu["localize"], len(tasks))
	row("MCP `context` "+strconv.Itoa(*budget)+" tokens", pkg, cpu["context"], len(pkg))
	row("MCP `symbols` limit 1 (the fixed cost of a call and a name lookup)", floor, cpu["symbols"], len(floor))
	fmt.Fprintf(stdout, "\nCPU per call is the server's user and system time (the command's, for cra retrieve); the localize CPU includes the first call. The wall times depend on the machine's load; the CPU times much less.\n")
	fmt.Fprintf(stdout, "\nserver start and initialize: %s; first localize (opens the index): %s\n", initialized.Round(time.Millisecond), first.Round(time.Millisecond))
	fmt.Fprintf(stdout, "server memory (RSS): %s after initialize, %s after %d calls, %s at rest 2 s later\n",
		kib(rssInit), kib(rssAfter), 3*len(tasks), kib(rssRest))
	return nil
}

// commitSubjects are the subjects of the newest n commits that are not
// merges, without duplicates.
func commitSubjects(ctx context.Context, repo string, n int) ([]string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", repo, "log", "--no-merges", "--format=%s", "-n", strconv.Itoa(3*n)).Output()
	if err != nil {
		return nil, fmt.Errorf("git log: %w", err)
	}
	var tasks []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() && len(tasks) < n {
		if t := strings.TrimSpace(sc.Text()); t != "" && !slices.Contains(tasks, t) {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s has no commits to take tasks from", repo)
	}
	return tasks, nil
}

// pct is the nearest-rank percentile p of ds.
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))].Round(time.Millisecond).String()
}

// cpuTime is a process's user and system time from /proc (Linux), in
// clock ticks of 10 ms; 0 elsewhere. The server's git children are
// not counted: they are reaped by the server, so their time shows in
// cutime, which is added.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 15 {
		return 0
	}
	var ticks int
	for _, k := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
		n, _ := strconv.Atoi(f[k])
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// rss is a process's resident set from /proc (Linux): its own memory
// (RssAnon) and the pages of files it maps (RssFile: the index, which
// SQLite reads through a memory map, and the binary), in KiB.
type rss struct{ anon, file int }

func rssKiB(pid int) rss {
	var r rss
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return r
	}
	for _, line := range strings.Split(string(data), "\n") {
		for _, f := range []struct {
			key string
			dst *int
		}{{"RssAnon:", &r.anon}, {"RssFile:", &r.file}} {
			if v, ok := strings.CutPrefix(line, f.key); ok {
				if fs := strings.Fields(v); len(fs) > 0 {
					*f.dst, _ = strconv.Atoi(fs[0])
				}
			}
		}
	}
	return r
}

func kib(r rss) string {
	if r.anon == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB (%.1f own, %.1f mapped files)", float64(r.anon+r.file)/1024, float64(r.anon)/1024, float64(r.file)/1024)
}
