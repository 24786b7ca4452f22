// Command learn fits cra's global ranking weights (retrieve.LearnedWeights)
// to the histories of public repositories that no evaluation set draws
// from (issue 33). For each repository of the manifest below it replays
// the commits before the pinned one at their parents (internal/learn,
// Extract), caching the examples in -data, then fits the fusion on them
// and writes the weights as Go source:
//
//	go run ./bench/learn -clones /work/wt/learn-data/train -data /work/wt/learn-data/global \
//	    -write internal/retrieve/weights_learned.go
//
// See bench/learn/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// source is a training repository pinned at a commit.
type source struct {
	Name   string // owner/name
	Dir    string // the clone's directory under -clones
	Commit string // the history read ends here
	Lang   string
}

// manifest is the training repositories: Python, Go and TypeScript/
// JavaScript projects disjoint from every evaluation set (the eval
// README's click, gin and SWE-bench Lite repositories, heldout.sh's
// astroid, marshmallow, pydicom, hono and express, and the Python
// projects of SWE-bench).
var manifest = []source{
	{"encode/httpx", "httpx", "ae1b9f66238f75ced3ced5e4485408435de10768", "Python"},
	{"labstack/echo", "echo", "05489dc1730161df26b72d1ae2a3ba6fb8178fc7", "Go"},
	{"koajs/koa", "koa", "e0ba8ef39d27fe5dae5492f9fe753d155124f994", "TS/JS"},
	{"python-attrs/attrs", "attrs", "c1dc5dcba16ed827aa6dcad896b41a3afedb4e32", "Python"},
	{"spf13/cobra", "cobra", "adbc8813901bba65827259daa8e22ff94ec1f30e", "Go"},
	{"colinhacks/zod", "zod", "e516c3baf22615e20934116abebfed6c000222c2", "TS/JS"},
	{"Textualize/rich", "rich", "42899d8a0a96b121a514516f4be9db44ff7aeaf3", "Python"},
	{"go-chi/chi", "chi", "735ae2b87f8c733d616e809ae86e0985c1bc3350", "Go"},
	{"axios/axios", "axios", "23a25af0688d1db2c396deb09229d2271cc24f6c", "TS/JS"},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	clones, data, write string
	maxCommits          int
	only                string
	extractOnly         bool
	fitOnly             bool
	validShare          float64
	testsChanged        bool
	jsonOut             string
	markDecl            string
	markHistory         string
	free                string
	historyVariants     bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("learn", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.clones, "clones", "", "a `dir` holding a clone of each training repository, named as the manifest says")
	fs.StringVar(&o.data, "data", "", "the `dir` caching the extracted examples (one JSONL per repository) and the replays' scratch state")
	fs.StringVar(&o.write, "write", "", "write the learned weights as Go source to this `file`")
	fs.IntVar(&o.maxCommits, "max-commits", 250, "the newest qualifying commits to learn from, per repository")
	fs.StringVar(&o.only, "only", "", "extract only the repository of this owner/name")
	fs.BoolVar(&o.extractOnly, "extract-only", false, "extract the examples and stop")
	fs.BoolVar(&o.fitOnly, "fit-only", false, "fit on the examples cached in -data, extracting nothing")
	fs.Float64Var(&o.validShare, "valid", 0.25, "the newest share of each repository's commits that selects the learner's settings")
	fs.BoolVar(&o.testsChanged, "tests-changed", false, "a changed test file the message does not speak of is no answer: left out of the loss and of the validation that selects (learn.FitConfig.TestsChanged)")
	fs.StringVar(&o.jsonOut, "json", "", "write the learned weights as JSON to this `file` (the retrieval harness measures it with -weights file:FILE)")
	fs.StringVar(&o.markDecl, "mark-decl", "", "read the examples cached in -data, mark their declaration-only candidates at each parent from the clones (learn.Row.Decl, for examples extracted before it existed), write them to this `dir` and stop")
	fs.StringVar(&o.markHistory, "mark-history", "", "read the examples cached in -data, set their candidates' history signal at each parent from the clones (the commits before the example's, for examples extracted before it existed), write them to this `dir` and stop")
	fs.StringVar(&o.free, "free", "", "comma-separated `list` of the only weights the fit moves (say decl_demotion,test_demotion); the others stay at the hand-set weights")
	fs.BoolVar(&o.historyVariants, "history-variants", false, "recompute the history signal of the examples in -data under several settings from the clones, report the hand-set weights' figures under each and stop")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.clones == "" && !o.fitOnly || o.data == "" {
		fmt.Fprintln(stderr, "learn: -clones and -data are required (-data alone with -fit-only)")
		return 2
	}
	if o.historyVariants {
		if _, err := historyVariants(ctx, o, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "learn:", err)
			return 1
		}
		return 0
	}
	if err := learnAll(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "learn:", err)
		return 1
	}
	return 0
}

func learnAll(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(o.data, 0o755); err != nil {
		return err
	}
	var all []learn.Example
	for _, s := range manifest {
		if o.only != "" && s.Name != o.only {
			continue
		}
		var ex []learn.Example
		var err error
		if o.markDecl != "" {
			if err := markFile(ctx, o, s, o.markDecl, "declaration-only", markDecl, stderr); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			continue
		}
		if o.markHistory != "" {
			if err := markFile(ctx, o, s, o.markHistory, "history", markHistory, stderr); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			continue
		}
		if o.fitOnly {
			ex, err = learn.ReadExamplesFile(filepath.Join(o.data, strings.ReplaceAll(s.Name, "/", "+")+".jsonl"))
		} else {
			ex, err = extract(ctx, o, s, stderr)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		all = append(all, ex...)
	}
	if o.extractOnly || o.markDecl != "" || o.markHistory != "" {
		return nil
	}
	return fitAll(all, o, stdout)
}

// evaluator measures weights on examples as the labels of the fit say.
func evaluator(testsChanged bool) func([]learn.Example, retrieve.Weights) learn.Metrics {
	if testsChanged {
		return learn.EvaluateSources
	}
	return learn.Evaluate
}

// extract brings the cache of one repository up to date and returns its
// examples (the newest -max-commits).
func extract(ctx context.Context, o options, s source, stderr io.Writer) ([]learn.Example, error) {
	key := strings.ReplaceAll(s.Name, "/", "+")
	file := filepath.Join(o.data, key+".jsonl")
	have, err := learn.ReadExamplesFile(file)
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, e := range have {
		skip[e.Commit] = true
	}
	clone := filepath.Join(o.clones, s.Dir)
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rep, err := learn.Extract(ctx, learn.ExtractOptions{
		Repo: clone, ScratchDir: filepath.Join(o.data, key+".scratch"), Name: s.Name, Until: s.Commit,
		MaxCommits: o.maxCommits, Skip: skip, Weights: retrieve.HandSetWeights, Progress: stderr,
	}, func(e learn.Example) error {
		have = append(have, e)
		return learn.WriteExample(f, e)
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s: %d new example(s) in %s (index %s), %d failed, %d without gold at the parent\n",
		s.Name, rep.Examples, rep.Duration.Round(time.Second), rep.Index.Round(time.Second), rep.Failed, rep.NoGold)
	for _, e := range rep.Errors {
		fmt.Fprintln(stderr, "  ", e)
	}
	return have, nil
}

// markFile rewrites one repository's cached examples into dir with a
// feature set by mark (markDecl: learn.Row.Decl; markHistory: the
// history signal), what as the report names it.
func markFile(ctx context.Context, o options, s source, dir, what string, mark func(context.Context, string, []learn.Example) (int, error), stderr io.Writer) error {
	key := strings.ReplaceAll(s.Name, "/", "+")
	ex, err := learn.ReadExamplesFile(filepath.Join(o.data, key+".jsonl"))
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := mark(ctx, filepath.Join(o.clones, s.Dir), ex)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, key+".jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	for _, e := range ex {
		if err := learn.WriteExample(f, e); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "%s: %d examples, %d %s candidate rows, in %s\n", s.Name, len(ex), n, what, time.Since(start).Round(time.Second))
	return f.Close()
}

// grid is the learner settings tried; the one with the best validation
// Acc@5 (macro over repositories, then MRR) is refitted on everything.
// With free set, every weight not in it stays fixed.
func grid(testsChanged bool, free string) []learn.FitConfig {
	fixed := fixedSignals
	if free != "" {
		fixed = nil
		moves := strings.Split(free, ",")
		for _, n := range append(retrieve.Signals[:len(retrieve.Signals):len(retrieve.Signals)], "prose", "test_demotion", "decl_demotion") {
			if !slices.Contains(moves, n) {
				fixed = append(fixed, n)
			}
		}
	}
	var out []learn.FitConfig
	for _, loss := range []string{learn.LossSoftmax, learn.LossPairwise, learn.LossCutoff} {
		for _, l2 := range []float64{0.0003, 0.003, 0.03} {
			out = append(out, learn.FitConfig{Loss: loss, L2: l2, Prior: retrieve.HandSetWeights, Fixed: fixed, TestsChanged: testsChanged})
		}
	}
	return out
}

// fixedSignals never show in replayed commits: the task analysis model's
// implications and promoted enrichment are absent there, so nothing can
// be learned of them.
var fixedSignals = []string{"implied", "metadata"}

func fitAll(all []learn.Example, o options, stdout io.Writer) error {
	if len(all) == 0 {
		return errors.New("no examples: extract first")
	}
	train, valid := learn.SplitByTime(all, o.validShare)
	labels := "every changed code file is an answer, tests included"
	if o.testsChanged {
		labels = "a changed test file the message does not speak of is no answer (-tests-changed)"
	}
	fmt.Fprintf(stdout, "%d examples of %d repositories: %d to train, %d (the newest %.0f%% of each) to validate\nlabels: %s; the settings are chosen by the macro Acc@5 of these labels\n\n",
		len(all), len(repos(all)), len(train), len(valid), 100*o.validShare, labels)
	eval := evaluator(o.testsChanged)
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "weights\tvalid Acc@1\tAcc@5\tAcc@10\tMRR\tmacro Acc@5\tsources Acc@1\tAcc@5\tMRR\tmacro Acc@5\ttest demotion\tdecl demotion\t")
	row := func(name string, wt retrieve.Weights) (float64, float64) {
		m, sm := learn.Evaluate(valid, wt), learn.EvaluateSources(valid, wt)
		macro, smacro := macroAcc5(valid, wt, learn.Evaluate), macroAcc5(valid, wt, learn.EvaluateSources)
		fmt.Fprintf(w, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, m.Acc1, m.Acc5, m.Acc10, m.MRR, macro, sm.Acc1, sm.Acc5, sm.MRR, smacro, wt.TestDemotion, wt.DeclDemotion)
		if o.testsChanged {
			return smacro, sm.MRR
		}
		return macro, m.MRR
	}
	row("hand-set", retrieve.HandSetWeights)
	row("learned (shipped)", retrieve.LearnedWeights)
	best, bestScore, bestMRR := -1, -1.0, -1.0
	g := grid(o.testsChanged, o.free)
	for i, cfg := range g {
		wt, err := learn.Fit(train, cfg)
		if err != nil {
			return err
		}
		score, mrr := row(fmt.Sprintf("%s l2=%g", cfg.Loss, cfg.L2), wt)
		if score > bestScore || score == bestScore && mrr > bestMRR {
			best, bestScore, bestMRR = i, score, mrr
		}
	}
	w.Flush()
	fmt.Fprintln(stdout, "(\"sources\": a changed test file the message does not speak of is no answer; commits that changed only such tests left out)")
	cfg := g[best]
	final, err := learn.Fit(all, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nchosen: %s l2=%g, refitted on all %d examples:\n", cfg.Loss, cfg.L2, len(all))
	data, _ := json.Marshal(final)
	fmt.Fprintf(stdout, "%s\n", data)
	fmt.Fprintln(stdout, "\nper repository, all examples (in-sample for the learned weights):")
	w = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "repository\texamples\thand-set Acc@5\tlearned Acc@5\thand-set MRR\tlearned MRR\t")
	for _, r := range repos(all) {
		ex := only(all, r)
		h, l := eval(ex, retrieve.HandSetWeights), eval(ex, final)
		fmt.Fprintf(w, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", r, len(ex), h.Acc5, l.Acc5, h.MRR, l.MRR)
	}
	w.Flush()
	if o.jsonOut != "" {
		if err := os.WriteFile(o.jsonOut, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.write == "" {
		return nil
	}
	return writeGo(o.write, final, cfg, all)
}

func repos(ex []learn.Example) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range ex {
		if !seen[e.Repo] {
			seen[e.Repo] = true
			out = append(out, e.Repo)
		}
	}
	sort.Strings(out)
	return out
}

func only(ex []learn.Example, repo string) []learn.Example {
	var out []learn.Example
	for _, e := range ex {
		if e.Repo == repo {
			out = append(out, e)
		}
	}
	return out
}

// macroAcc5 is Acc@5 averaged over repositories, each weighing the same.
func macroAcc5(ex []learn.Example, w retrieve.Weights, eval func([]learn.Example, retrieve.Weights) learn.Metrics) float64 {
	rs := repos(ex)
	sum := 0.0
	for _, r := range rs {
		sum += eval(only(ex, r), w).Acc5
	}
	return sum / float64(len(rs))
}

// writeGo writes the weights as the source of retrieve.LearnedWeights.
func writeGo(path string, w retrieve.Weights, cfg learn.FitConfig, all []learn.Example) error {
	labels := "every changed code file an answer"
	if cfg.TestsChanged {
		labels = "a changed test file the message does not speak of no answer"
	}
	doc := fmt.Sprintf("LearnedWeights are the fusion weights bench/learn fitted (%s loss, L2 %g towards HandSetWeights, %s) to %d commits of %d public repositories no evaluation set draws from (bench/learn/README.md): %s.",
		cfg.Loss, cfg.L2, labels, len(all), len(repos(all)), strings.Join(repos(all), ", "))
	var b strings.Builder
	b.WriteString("// Code generated by go run ./bench/learn; DO NOT EDIT.\n\npackage retrieve\n\n")
	line := "//"
	for _, word := range strings.Fields(doc) {
		if len(line)+1+len(word) > 76 {
			b.WriteString(line + "\n")
			line = "//"
		}
		line += " " + word
	}
	b.WriteString(line + "\nvar LearnedWeights = Weights{")
	for i, n := range append(retrieve.Signals[:len(retrieve.Signals):len(retrieve.Signals)], "prose", "test_demotion", "decl_demotion", "pair_history", "history_damping", "pair_match") {
		v, _ := w.Get(n)
		if (n == "decl_demotion" || n == "history" || n == "pair_history" || n == "history_damping" || n == "pair_match") && v == 0 {
			continue // the zero value: weights fitted without the feature read the same
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %g", fieldName(n), v)
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return err
	}
	return os.WriteFile(path, src, 0o644)
}

// fieldName is a signal's field in retrieve.Weights.
func fieldName(signal string) string {
	switch signal {
	case "cochange":
		return "CoChange"
	case "test_demotion":
		return "TestDemotion"
	case "decl_demotion":
		return "DeclDemotion"
	case "pair_history":
		return "PairHistory"
	case "history_damping":
		return "HistoryDamping"
	case "pair_match":
		return "PairMatch"
	}
	return strings.ToUpper(signal[:1]) + signal[1:]
}
