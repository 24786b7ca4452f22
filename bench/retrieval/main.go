// Command retrieval measures cra's retrieval on the development sets of
// ../shared/eval (issue 4): for each task it checks the task's commit out
// in a scratch worktree of a local clone, indexes it incrementally, ranks
// and assembles with internal/retrieve, and scores the result against the
// files the real change touched, next to a BM25 baseline computed here on
// the same files. See README.md for the metrics.
//
//	go run ./bench/retrieval -set ../shared/eval/commits_click.jsonl -repo /work/bench/click
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/cra-dev/cra/internal/retrieve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the parsed command line.
type options struct {
	sets []setSpec
	// repos maps owner/name to a local clone.
	repos      map[string]string
	limit      int
	rankLimit  int
	stripScope bool
	precision  bool
	jsonPath   string
	stateDir   string
	verbose    bool
	// mcp is a cra binary whose 'cra mcp' localize is compared with the
	// ranking at every task (issue 31); "" skips it.
	mcp string
	// weights are the ranking weights cra is measured with, one row each
	// (the first is the "cra" of the candidate misses and test counts).
	weights []string
	// fileWeights are the weights of the -weights file:FILE rows, by row
	// name.
	fileWeights map[string]retrieve.Weights
	// learnDir caches each repository's examples for per-repository
	// learning ("repo" weights); learnCommits bounds them.
	learnDir     string
	learnCommits int
	// learnOnly, when set, limits per-repository learning to these
	// repositories (owner/name); the others' repo weights are the default.
	learnOnly []string
}

// setSpec is one -set with the tasks read from it.
type setSpec struct {
	Path  string
	Name  string // file name without .jsonl
	Tasks []Task
}

// orderedArgs records -set and -repo in command-line order, so that a bare
// "-repo PATH" can belong to the -set before it.
type orderedArgs struct {
	list *[]orderedArg
	kind string
}

type orderedArg struct{ kind, value string }

func (o orderedArgs) String() string { return "" }

func (o orderedArgs) Set(v string) error {
	*o.list = append(*o.list, orderedArg{o.kind, v})
	return nil
}

const usage = `usage: go run ./bench/retrieval -set FILE.jsonl -repo PATH [-set ... -repo ...] [flags]

  -repo PATH             a local clone for the tasks of the -set before it
  -repo owner/name=PATH  a local clone for every task of that repository

Tasks whose repository has no clone are skipped and reported.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "retrieval:", err)
		return 2
	}
	h := &harness{opts: opts, stdout: stdout, stderr: stderr}
	if err := h.run(ctx); err != nil {
		fmt.Fprintln(stderr, "retrieval:", err)
		return 1
	}
	return 0
}

func parseArgs(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("retrieval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage, "\nflags:\n")
		fs.PrintDefaults()
	}
	var ordered []orderedArg
	opts := &options{repos: map[string]string{}}
	fs.Var(orderedArgs{&ordered, "set"}, "set", "a JSONL `file` of tasks (repeatable)")
	fs.Var(orderedArgs{&ordered, "repo"}, "repo", "a local clone: `PATH` for the -set before it, or owner/name=PATH (repeatable)")
	fs.IntVar(&opts.limit, "limit", 0, "evaluate only the first `N` tasks of each set (0: all)")
	fs.IntVar(&opts.rankLimit, "rank", 100, "candidates cra ranks and hands to the assembler")
	fs.BoolVar(&opts.stripScope, "strip-scope", true, "also score commit sets with the subject's scope prefix stripped")
	fs.BoolVar(&opts.precision, "precision", true, "run the precision stage's deterministic step, as --stages scope,precision does")
	fs.StringVar(&opts.jsonPath, "json", "", "write per-task details to this `file`")
	fs.StringVar(&opts.stateDir, "state", "", "keep the curated DBs in this `dir` (one per repository; default: a temp dir, removed)")
	fs.BoolVar(&opts.verbose, "v", false, "print a line per task")
	fs.StringVar(&opts.mcp, "mcp", "", "a cra `binary`: also call its 'cra mcp' localize at every task and report how often its top 10 is cra's ranking's")
	weights := fs.String("weights", weightsDefault, "comma-separated `list` of the weights to measure cra with, a row each: "+strings.Join(weightNames, ", ")+" (JSON weights, as bench/learn -json writes them)")
	fs.StringVar(&opts.learnDir, "learn", "", "a `dir` caching each repository's examples for the repo weights (needed by -weights repo)")
	fs.IntVar(&opts.learnCommits, "learn-commits", 300, "qualifying commits per repository the repo weights learn from, the newest before its newest task")
	learnOnly := fs.String("learn-only", "", "comma-separated owner/name `list`: learn repo weights for these repositories only (the others rank with the default weights in the repo row)")
	var err error
	if err = fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: sets and repositories go in -set and -repo", fs.Arg(0))
	}
	if opts.weights, opts.fileWeights, err = parseWeights(*weights); err != nil {
		return nil, err
	}
	if *learnOnly != "" {
		opts.learnOnly = strings.Split(*learnOnly, ",")
	}
	if slices.Contains(opts.weights, weightsRepo) && opts.learnDir == "" {
		return nil, fmt.Errorf("-weights %s learns from each repository's history: give -learn DIR to cache it in", weightsRepo)
	}
	if opts.rankLimit < 10 {
		return nil, fmt.Errorf("-rank must be at least 10 (Acc@10 needs ten files), got %d", opts.rankLimit)
	}
	for _, a := range ordered {
		switch a.kind {
		case "set":
			tasks, err := readTasksFile(a.value)
			if err != nil {
				return nil, err
			}
			if opts.limit > 0 && len(tasks) > opts.limit {
				tasks = tasks[:opts.limit]
			}
			name := strings.TrimSuffix(filepath.Base(a.value), ".jsonl")
			for _, s := range opts.sets {
				if s.Name == name {
					return nil, fmt.Errorf("-set %s: a set named %s is already given", a.value, name)
				}
			}
			opts.sets = append(opts.sets, setSpec{Path: a.value, Name: name, Tasks: tasks})
		case "repo":
			name, path, err := repoArg(a.value, opts.sets)
			if err != nil {
				return nil, err
			}
			if old, ok := opts.repos[name]; ok && old != path {
				return nil, fmt.Errorf("-repo: %s is mapped twice (%s, %s)", name, old, path)
			}
			opts.repos[name] = path
		}
	}
	if len(opts.sets) == 0 {
		fs.Usage()
		return nil, errors.New("no -set given")
	}
	return opts, nil
}

// repoArg reads a -repo value: "owner/name=PATH", or a bare PATH standing
// for the repository of the -set before it.
func repoArg(v string, sets []setSpec) (name, path string, err error) {
	if k, p, ok := strings.Cut(v, "="); ok && k != "" && !strings.HasPrefix(k, "/") && !strings.HasPrefix(k, ".") && strings.Count(k, "/") == 1 {
		name, path = k, p
	} else {
		if len(sets) == 0 {
			return "", "", fmt.Errorf("-repo %s: a bare path follows the -set it serves; or write owner/name=%s", v, v)
		}
		last := sets[len(sets)-1]
		names := map[string]bool{}
		for _, t := range last.Tasks {
			names[t.Repo] = true
		}
		if len(names) != 1 {
			return "", "", fmt.Errorf("-repo %s: %s spans %d repositories: map each as owner/name=PATH", v, last.Path, len(names))
		}
		for n := range names {
			name = n
		}
		path = v
	}
	if path == "" {
		return "", "", fmt.Errorf("-repo %s: empty path", v)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", fmt.Errorf("-repo %s: %w", v, err)
	}
	return name, abs, nil
}
