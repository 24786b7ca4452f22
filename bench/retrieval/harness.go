package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/index"
	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/terms"
)

// Variant names: the task text as written, the commit message with its
// scope prefixes stripped.
const (
	variantMessage  = "message"
	variantStripped = "stripped"
	variantIssue    = "issue"
)

// harness runs one invocation.
type harness struct {
	opts           *options
	stdout, stderr io.Writer
	results        []*taskResult
	repoStats      []*repoStat
	// mcp is the 'cra mcp' session of the repository being evaluated,
	// with -mcp.
	mcp *mcpClient
}

// taskResult is one task's outcome, as written to -json.
type taskResult struct {
	Set      string `json:"set"`
	ID       string `json:"id"`
	Repo     string `json:"repo"`
	Checkout string `json:"checkout"`
	// Skipped says why the task was not scored; empty when it was.
	Skipped string `json:"skipped,omitempty"`
	Gold    []gold `json:"gold,omitempty"`
	// GoldAbsent are gold files missing at the checkout, left out.
	GoldAbsent []string `json:"gold_absent,omitempty"`
	// LeftOut are files of the checkout whose blobs the clone lacks, left
	// out of the work tree (see checkouter).
	LeftOut []string `json:"left_out,omitempty"`
	// Index is the indexing run before the task (the repository's first
	// is a full index).
	Index     time.Duration    `json:"index_ns"`
	FullIndex bool             `json:"full_index,omitempty"`
	Files     int              `json:"files"`
	Variants  []*variantResult `json:"variants,omitempty"`
	// RepoFit is the repository's own weights for the task (-weights
	// repo): learned from commits before its checkout only.
	RepoFit *taskFit `json:"repo_fit,omitempty"`

	task  Task
	order int // position in its set
	when  int64
}

// variantResult is both methods on one task text.
type variantResult struct {
	Name string `json:"name"`
	Text string `json:"text"`
	CRA  score  `json:"cra"`
	// BM25All ranks every indexed file, BM25Code the files in a language
	// cra parses (the eval README's baseline: the gold files are code).
	BM25All  score `json:"bm25_all"`
	BM25Code score `json:"bm25_code"`
	// CRAError is a retrieval failure; the task then counts as a miss.
	CRAError string `json:"cra_error,omitempty"`
	// MCP is what 'cra mcp' localize returned for the text, with -mcp.
	MCP *mcpResult `json:"mcp,omitempty"`
	// Alt are cra's scores with the other -weights, by name (CRA is the
	// first's); AltErrors their failures.
	Alt       map[string]score  `json:"cra_weights,omitempty"`
	AltErrors map[string]string `json:"cra_weights_errors,omitempty"`
}

// repoStat is what indexing one repository cost.
type repoStat struct {
	Repo        string          `json:"repo"`
	Path        string          `json:"path"`
	Tasks       int             `json:"tasks"`
	Files       int             `json:"files"` // at the first task
	FullIndex   time.Duration   `json:"full_index_ns"`
	Incremental []time.Duration `json:"incremental_ns"`
	Error       string          `json:"error,omitempty"`
	// LearnExtract is what drawing the examples for the repo weights
	// took (cached ones cost nothing), LearnFit the fits for all tasks;
	// Fits counts them and Kept the tasks whose weights won.
	LearnExtract time.Duration `json:"learn_extract_ns,omitempty"`
	LearnFit     time.Duration `json:"learn_fit_ns,omitempty"`
	LearnTasks   int           `json:"learn_tasks,omitempty"`
	LearnKept    int           `json:"learn_kept,omitempty"`
	LearnError   string        `json:"learn_error,omitempty"`
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.stderr, format+"\n", args...)
}

func (h *harness) run(ctx context.Context) error {
	byRepo := map[string][]*taskResult{}
	for _, s := range h.opts.sets {
		for i, t := range s.Tasks {
			r := &taskResult{Set: s.Name, ID: t.ID, Repo: t.Repo, Checkout: t.Checkout, task: t, order: i}
			h.results = append(h.results, r)
			byRepo[t.Repo] = append(byRepo[t.Repo], r)
		}
	}
	var names []string
	for n := range byRepo {
		names = append(names, n)
	}
	sort.Strings(names)

	root := h.opts.stateDir
	if root == "" {
		tmp, err := os.MkdirTemp("", "cra-bench-retrieval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		root = tmp
	} else if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	for _, name := range names {
		rs := byRepo[name]
		path, ok := h.opts.repos[name]
		if !ok {
			for _, r := range rs {
				r.Skipped = "no clone of " + name + ": pass -repo " + name + "=PATH"
			}
			h.logf("%s: no -repo given, %d tasks skipped", name, len(rs))
			continue
		}
		st := &repoStat{Repo: name, Path: path, Tasks: len(rs)}
		h.repoStats = append(h.repoStats, st)
		dir := filepath.Join(root, strings.ReplaceAll(name, "/", "+"))
		if err := h.runRepo(ctx, st, dir, rs); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			st.Error = err.Error()
			h.logf("%s: %v", name, err)
			for _, r := range rs {
				if r.Skipped == "" && r.Variants == nil {
					r.Skipped = "repository failed: " + err.Error()
				}
			}
		}
	}
	if err := h.report(); err != nil {
		return err
	}
	if h.opts.jsonPath != "" {
		return h.writeJSON()
	}
	return nil
}

// runRepo evaluates the tasks of one repository in a scratch worktree of
// its clone, oldest checkout first, so each index run is incremental and
// the history the index mines only grows (moving HEAD backwards makes the
// indexer re-mine history from scratch, which is correct but slower).
func (h *harness) runRepo(ctx context.Context, st *repoStat, dir string, rs []*taskResult) error {
	clone := st.Path
	if _, err := gitOut(ctx, clone, "rev-parse", "--git-dir"); err != nil {
		return fmt.Errorf("%s is not a git clone: %w", clone, err)
	}
	var live []*taskResult
	for _, r := range rs {
		out, err := gitOut(ctx, clone, "show", "-s", "--format=%ct", r.Checkout+"^{commit}")
		if err != nil {
			r.Skipped = "commit " + short(r.Checkout) + " is not in " + clone
			continue
		}
		r.when, _ = strconv.ParseInt(strings.TrimSpace(out), 10, 64)
		if c := r.task.Commit; c != "" {
			if _, err := gitOut(ctx, clone, "rev-parse", "-q", "--verify", c+"^{commit}"); err != nil {
				r.Skipped = "commit " + short(c) + " is not in " + clone
				continue
			}
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return nil
	}
	sort.SliceStable(live, func(i, j int) bool { return live[i].when < live[j].when })

	wt := filepath.Join(dir, "worktree")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(wt); err == nil {
		// Left by an interrupted run with the same -state.
		gitOut(context.WithoutCancel(ctx), clone, "worktree", "remove", "--force", wt)
		if err := os.RemoveAll(wt); err != nil {
			return err
		}
	}
	if _, err := gitOut(ctx, clone, "worktree", "add", "-f", "--detach", "--no-checkout", wt, live[0].Checkout); err != nil {
		return fmt.Errorf("scratch worktree: %w", err)
	}
	defer func() {
		if _, err := gitOut(context.WithoutCancel(ctx), clone, "worktree", "remove", "--force", wt); err != nil {
			h.logf("remove scratch worktree: %v", err)
		}
	}()

	var learner *repoLearner
	if slices.Contains(h.opts.weights, weightsRepo) {
		var progress io.Writer
		if h.opts.verbose {
			progress = h.stderr
		}
		var l *repoLearner
		err := fmt.Errorf("left out by -learn-only")
		if len(h.opts.learnOnly) == 0 || slices.Contains(h.opts.learnOnly, st.Repo) {
			l, err = newRepoLearner(ctx, h.opts, st.Repo, clone, live[len(live)-1].Checkout, progress)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The repository is still measured; its repo weights are the
			// default ones, and the report says why.
			st.LearnError = err.Error()
			h.logf("%s: no repo weights: %v", st.Repo, err)
			l = &repoLearner{clone: clone, fits: map[string]fitResult{}}
		}
		learner, st.LearnExtract = l, l.Extract
		defer func() { st.LearnFit = learner.Fit }()
		h.logf("%s: %d examples for the repo weights (drawn in %s)", st.Repo, len(l.examples), l.Extract.Round(time.Second))
	}

	co := &checkouter{wt: wt}
	factory := store.NewFactory(statedir.At(filepath.Join(dir, "state")))
	if h.opts.mcp != "" {
		c, err := startMCP(ctx, h.opts.mcp, wt, factory.Dir())
		if err != nil {
			return err
		}
		defer c.close()
		h.mcp = c
		defer func() { h.mcp = nil }()
	}
	b := index.NewBuilder(factory)
	var (
		db     *sql.DB
		corpus = map[string]*bm25Doc{}
		first  = true
	)
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	for i, r := range live {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := co.checkout(ctx, r.Checkout); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Skipped = "checkout failed: " + firstLine(err.Error())
			continue
		}
		r.LeftOut = co.Left
		if _, err := gitOut(ctx, wt, "clean", "-fdq", "-e", "/"+mcpStateLink); err != nil {
			return err
		}
		if err := h.goldOf(ctx, wt, r); err != nil {
			return err
		}
		if len(r.Gold) == 0 {
			r.Skipped = "no gold file exists at the checkout"
			continue
		}
		res, err := b.Run(ctx, wt)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Skipped = "index failed: " + err.Error()
			continue
		}
		r.Index, r.FullIndex, r.Files = res.Duration, first, res.Indexed
		if first {
			st.FullIndex, st.Files = res.Duration, res.Indexed
			h.logf("%s: indexed %d files in %s (full)", st.Repo, res.Indexed, res.Duration.Round(time.Millisecond))
			first = false
		} else {
			st.Incremental = append(st.Incremental, res.Duration)
		}
		if db == nil {
			if db, err = factory.Open(ctx, store.Curated, "", true); err != nil {
				return err
			}
		}
		if err := historyHonest(ctx, db, res.RepoID, wt, r.Checkout); err != nil {
			return err
		}
		docs, err := loadCorpus(ctx, db, res.RepoID, wt, corpus)
		if err != nil {
			return err
		}
		weights := map[string]retrieve.Weights{}
		for _, n := range h.opts.weights {
			weights[n] = fixedWeights(n, h.opts.fileWeights)
		}
		if learner != nil {
			w, fit, err := learner.weightsFor(ctx, r.Checkout)
			if err != nil {
				return err
			}
			weights[weightsRepo], r.RepoFit = w, &fit
			st.LearnTasks++
			if fit.Use {
				st.LearnKept++
			}
		}
		if err := h.evalTask(ctx, db, res.RepoID, wt, docs, r, weights); err != nil {
			return err
		}
		if h.opts.verbose {
			h.logf("[%d/%d] %s", i+1, len(live), r.line())
		}
	}
	return nil
}

// checkouter checks commits out in a scratch worktree. A clone whose
// largest blobs are absent (a size-capped mirror) cannot check out a commit
// that has them; the worktree then switches to a sparse checkout leaving
// out the missing files, set through the worktree's own info/sparse-checkout
// and -c flags, so the clone's configuration is never touched. The indexer
// treats a tracked file absent from the work tree as absent.
type checkouter struct {
	wt     string
	sparse bool
	// Left lists the files left out at the last checkout.
	Left []string
}

func (c *checkouter) checkout(ctx context.Context, commit string) error {
	if !c.sparse {
		_, err := gitOut(ctx, c.wt, "checkout", "-q", "--force", commit)
		if err == nil || !strings.Contains(err.Error(), "unable to read") {
			return err
		}
		c.sparse = true
	}
	missing, err := missingBlobs(ctx, c.wt, commit)
	if err != nil {
		return err
	}
	c.Left = missing
	var b strings.Builder
	b.WriteString("/*\n")
	for _, p := range missing {
		b.WriteString("!/" + escapePattern(p) + "\n")
	}
	file, err := gitOut(ctx, c.wt, "rev-parse", "--git-path", "info/sparse-checkout")
	if err != nil {
		return err
	}
	file = strings.TrimSpace(file)
	if !filepath.IsAbs(file) {
		file = filepath.Join(c.wt, file)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return err
	}
	_, err = gitOut(ctx, c.wt, "-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=false", "checkout", "-q", "--force", commit)
	return err
}

// missingBlobs lists the files of commit whose blobs the object store
// lacks.
func missingBlobs(ctx context.Context, dir, commit string) ([]string, error) {
	out, err := gitOut(ctx, dir, "ls-tree", "-r", "-z", commit)
	if err != nil {
		return nil, err
	}
	var (
		paths  = map[string][]string{}
		hashes strings.Builder
	)
	for _, e := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(e, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" {
			continue
		}
		if paths[f[2]] == nil {
			hashes.WriteString(f[2] + "\n")
		}
		paths[f[2]] = append(paths[f[2]], path)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	cmd.Stdin = strings.NewReader(hashes.String())
	res, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git cat-file: %w", err)
	}
	var missing []string
	for _, l := range strings.Split(string(res), "\n") {
		if h, ok := strings.CutSuffix(l, " missing"); ok {
			missing = append(missing, paths[h]...)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// escapePattern makes a path a literal sparse-checkout (gitignore) pattern.
func escapePattern(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`\*?[]!# `, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// goldOf sets the task's scorable gold files, each with the old-side lines
// its change touched: from git's -U0 diff of the commit, or from the
// SWE-bench patch.
func (h *harness) goldOf(ctx context.Context, wt string, r *taskResult) error {
	var diffText string
	if r.task.Commit != "" {
		args := []string{"diff", "-U0", "--no-renames", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", r.Checkout, r.task.Commit, "--"}
		for _, g := range r.task.Gold {
			args = append(args, ":(literal)"+g)
		}
		out, err := gitOut(ctx, wt, args...)
		if err != nil {
			return err
		}
		diffText = out
	} else {
		diffText = r.task.Patch
	}
	diffs := parseDiff(diffText)
	ranges := changedRanges(diffs)
	paths := r.task.Gold
	if len(paths) == 0 {
		for _, d := range diffs {
			if d.OldPath != "" {
				paths = append(paths, d.OldPath)
			}
		}
	}
	r.Gold, r.GoldAbsent = nil, nil
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		if fi, err := os.Stat(filepath.Join(wt, filepath.FromSlash(p))); err != nil || !fi.Mode().IsRegular() {
			r.GoldAbsent = append(r.GoldAbsent, p)
			continue
		}
		r.Gold = append(r.Gold, gold{Path: p, Ranges: ranges[p]})
	}
	return nil
}

// loadCorpus returns the BM25 documents of the files the index holds,
// reusing cached documents of unchanged files (by path and content hash)
// and dropping the cache entries of files gone.
func loadCorpus(ctx context.Context, db *sql.DB, repoID int64, wt string, cache map[string]*bm25Doc) ([]*bm25Doc, error) {
	rows, err := db.QueryContext(ctx, `SELECT path, content_hash, language FROM files WHERE repo_id = ? ORDER BY path`, repoID)
	if err != nil {
		return nil, fmt.Errorf("list indexed files: %w", err)
	}
	type row struct{ path, hash, lang string }
	var list []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.path, &r.hash, &r.lang); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list indexed files: %w", err)
		}
		list = append(list, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list indexed files: %w", err)
	}
	keep := map[string]bool{}
	docs := make([]*bm25Doc, 0, len(list))
	for _, r := range list {
		key := r.path + "\x00" + r.hash
		keep[key] = true
		d := cache[key]
		if d == nil {
			data, err := os.ReadFile(filepath.Join(wt, filepath.FromSlash(r.path)))
			if err != nil {
				return nil, fmt.Errorf("bm25 corpus: %w", err)
			}
			d = newBM25Doc(r.path, string(data))
			d.Code = codeLanguages[r.lang]
			cache[key] = d
		}
		docs = append(docs, d)
	}
	for k := range cache {
		if !keep[k] {
			delete(cache, k)
		}
	}
	return docs, nil
}

// codeLanguages are the languages cra parses; the code-only baseline
// ranks the files in them.
var codeLanguages = func() map[string]bool {
	m := map[string]bool{}
	for _, l := range lang.Languages {
		m[string(l)] = true
	}
	return m
}()

// codeOnly returns the documents in a language cra parses.
func codeOnly(docs []*bm25Doc) []*bm25Doc {
	var out []*bm25Doc
	for _, d := range docs {
		if d.Code {
			out = append(out, d)
		}
	}
	return out
}

// evalTask runs both methods on each of the task's texts, cra once for
// each of the -weights (weights holds them by name).
func (h *harness) evalTask(ctx context.Context, db *sql.DB, repoID int64, wt string, docs []*bm25Doc, r *taskResult, weights map[string]retrieve.Weights) error {
	texts := []struct{ name, text string }{{variantMessage, r.task.Text}}
	if r.task.Kind == kindSWEBench {
		texts[0].name = variantIssue
	} else if h.opts.stripScope {
		texts = append(texts, struct{ name, text string }{variantStripped, stripScope(r.task.Text)})
	}
	r.Variants = nil
	for i, t := range texts {
		if i > 0 && t.text == texts[0].text {
			// Nothing to strip: the same query gives the same result.
			v := *r.Variants[0]
			v.Name = t.name
			r.Variants = append(r.Variants, &v)
			continue
		}
		v := &variantResult{Name: t.name, Text: t.text}
		for j, name := range h.opts.weights {
			s, ranked, errText, err := h.craScore(ctx, db, repoID, wt, t.text, r, weights[name])
			if err != nil {
				return err
			}
			if j == 0 {
				v.CRA, v.CRAError = s, errText
				if h.mcp != nil && errText == "" {
					v.MCP = h.mcp.compare(ctx, t.text, ranked)
				}
				continue
			}
			if v.Alt == nil {
				v.Alt = map[string]score{}
			}
			v.Alt[name] = s
			if errText != "" {
				if v.AltErrors == nil {
					v.AltErrors = map[string]string{}
				}
				v.AltErrors[name] = errText
			}
		}
		query := terms.List(t.text)
		v.BM25All = baseline(r.Gold, docs, query)
		v.BM25Code = baseline(r.Gold, codeOnly(docs), query)
		r.Variants = append(r.Variants, v)
	}
	return nil
}

// craScore scores cra's retrieval of text with the weights w, and returns
// its ranking; a retrieval failure is a miss, its message returned as
// errText.
func (h *harness) craScore(ctx context.Context, db *sql.DB, repoID int64, wt, text string, r *taskResult, w retrieve.Weights) (s score, ranked []string, errText string, err error) {
	c, err := runCRA(ctx, db, repoID, wt, text, h.opts.rankLimit, h.opts.precision, w)
	switch {
	case ctx.Err() != nil:
		return score{}, nil, "", ctx.Err()
	case err != nil:
		return evaluate(r.Gold, nil, pack{}, pack{}), nil, err.Error(), nil
	}
	if c.budgetSeen != budgets[0] {
		return score{}, nil, "", fmt.Errorf("the assembler budgeted %d tokens for a %d-token budget", c.budgetSeen, budgets[0])
	}
	s = evaluate(r.Gold, c.ranked, c.p8k, c.p32k)
	s.Latency, s.Packed8k = c.latency, c.files8k
	s.Signals = map[string]map[string]float64{}
	for _, p := range s.Top {
		s.Signals[p] = c.signals[p]
	}
	for _, g := range r.Gold {
		if sig, ok := c.signals[g.Path]; ok {
			s.Signals[g.Path] = sig
		}
	}
	return s, c.ranked, "", nil
}

// baseline ranks docs by BM25 and packs whole files.
func baseline(golds []gold, docs []*bm25Doc, query []string) score {
	start := time.Now()
	hits := bm25Rank(docs, query)
	p8, p32 := packWhole(hits, budgets[0]), packWhole(hits, budgets[1])
	lat := time.Since(start)
	s := evaluate(golds, hitPaths(hits), p8, p32)
	s.Latency = lat
	for _, h := range hits {
		if _, ok := p8[h.Doc.Path]; ok {
			s.Packed8k = append(s.Packed8k, h.Doc.Path)
		}
	}
	return s
}

// line is the task's -v line.
func (r *taskResult) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s gold=%d idx=%s", r.Set, short(r.ID), len(r.Gold), r.Index.Round(time.Millisecond))
	for _, v := range r.Variants {
		fmt.Fprintf(&b, " | %s: cra ranks %v 8k %s 32k %s in %s; bm25-code ranks %v 8k %s 32k %s",
			v.Name, v.CRA.Ranks, bools(v.CRA.Covered8k), bools(v.CRA.Covered32k), v.CRA.Latency.Round(time.Millisecond),
			v.BM25Code.Ranks, bools(v.BM25Code.Covered8k), bools(v.BM25Code.Covered32k))
		if v.CRAError != "" {
			fmt.Fprintf(&b, " cra error: %s", v.CRAError)
		}
	}
	return b.String()
}

func bools(bs []bool) string {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(bs))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// gitOut runs git in dir with hooks off and paths unquoted, returning its
// standard output.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{"-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=false", "-c", "advice.detachedHead=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return "", fmt.Errorf("git %s: %s", args[0], msg)
		}
		return "", fmt.Errorf("git %s: %w", args[0], err)
	}
	return string(out), nil
}

// historyHonest checks that every commit the index mined is the checkout
// or one of its ancestors: the history signal (and co-change, churn)
// reads those commits' messages and files, and a later one, the task's
// own above all, would tell the ranker the answer. The indexer re-mines
// from scratch whenever HEAD does not descend from the head it mined
// before; this checks it on every task, at one git rev-list each.
func historyHonest(ctx context.Context, db *sql.DB, repoID int64, dir, checkout string) error {
	out, err := gitOut(ctx, dir, "rev-list", checkout)
	if err != nil {
		return fmt.Errorf("history check: %w", err)
	}
	past := make(map[string]bool, strings.Count(out, "\n"))
	for _, h := range strings.Fields(out) {
		past[h] = true
	}
	rows, err := db.QueryContext(ctx, `SELECT hash FROM commits WHERE repo_id = ? ORDER BY id`, repoID)
	if err != nil {
		return fmt.Errorf("history check: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return fmt.Errorf("history check: %w", err)
		}
		if !past[h] {
			return fmt.Errorf("history check: the index at %s holds commit %s, which is not in its history: a ranking would see the future", short(checkout), short(h))
		}
	}
	return rows.Err()
}
