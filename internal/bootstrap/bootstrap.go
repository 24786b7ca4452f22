// Package bootstrap draws training data from a repository's history
// before cra has logged any run of its own (seed 001 §1 "Bootstrapping",
// §8.6, §16.4): it keeps the commits worth learning from (Filter), and
// for each, at its parent, derives one training pair per pipeline stage —
// task analysis, scope, precision, execute_plan and execute_code — built
// with the prompt builders and reply formats cra uses at inference
// (internal/retrieve, internal/agent), so that training matches use.
//
// The bootstrapped repository is only read. Its commits are checked out,
// detached, in a scratch worktree (git worktree add --detach) under the
// state directory, removed at the end whatever happened, a cancellation
// included; its index is a scratch curated DB beside it, kept so that a
// rerun indexes incrementally. Kept commits are visited oldest first, so
// each index run is incremental and the history it mines only grows.
//
// An execute_code pair is kept only when its edit blocks, applied to the
// parent with internal/edit as cra applies a model's reply, give the
// commit's files byte for byte.
//
// The datasets go to a new directory of their own per run (internal/
// dataset: one directory per stage, separated by base model,
// deduplicated, split by commit date), written in a temporary directory
// beside it and renamed into place once complete, and are recorded in
// the raw DB's training_datasets, source synthetic, under one
// training_plans row that records the repository and the filter. A rerun
// never rewrites an earlier run's files, which an adapter may have been
// trained on. One run of a repository at a time holds the scratch
// directory's lock, from its look for an earlier run to its record.
package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/replay"
	"github.com/cra-dev/cra/internal/retrieve"
)

// Options are a bootstrap's inputs.
type Options struct {
	// Repo is the repository whose history is read, any directory of its
	// work tree; it is never written.
	Repo string
	// ScratchDir holds the scratch worktree (removed at the end) and the
	// scratch index (kept for reruns). Required.
	ScratchDir string
	// DatasetsDir is where each run's dataset directory is made. Required.
	DatasetsDir string
	// Corpus records the plan and the datasets; nil records nothing (the
	// files are still written).
	Corpus *corpus.Corpus
	// TaskID names the run in training_plans.task_id.
	TaskID string
	// Force derives the pairs even when an earlier run with the same
	// criteria (repository, HEAD, bounds, filter, budget) left its
	// datasets: by default that run's are reported and nothing is written.
	Force bool
	// MaxCommits bounds the commits examined, newest first; 0 is all.
	MaxCommits int
	// Since, when set, examines only commits made at or after it.
	Since time.Time
	// Filter keeps the commits; the zero Filter is DefaultFilter().
	Filter replay.Filter
	// Budget is the execute model's budget (seed 001 §7): it sizes the
	// context packages and the execute prompts, as at inference.
	Budget retrieve.Budget
	// PromptTokens bounds a stage prompt: the reasoning model's window
	// (0: Budget.ContextWindow).
	PromptTokens int
	// ReplyTokens is what an execute prompt keeps free for the reply
	// (0: half of Budget.ReservedTokens, as a run takes it).
	ReplyTokens int
	// Candidates is how many ranked files scope judges (0: 60, as a run).
	Candidates int
	// Progress gets a line per commit; nil is silent.
	Progress io.Writer
}

// Report is what a bootstrap did.
type Report struct {
	Repo string `json:"repo"`
	Head string `json:"head"`
	// Name is the run's dataset directory's name, Dir its path ("" when
	// no commit was kept: nothing is written).
	Name string `json:"name,omitempty"`
	Dir  string `json:"dir,omitempty"`
	// Seen counts the commits examined, Kept those the filter kept,
	// Skipped the others by reason.
	Seen    int            `json:"commits_seen"`
	Kept    int            `json:"commits_kept"`
	Skipped map[string]int `json:"commits_skipped"`
	// Pairs counts the pairs derived per stage (before deduplication);
	// Missing why a kept commit gave no pair of a stage, by stage and
	// reason.
	Pairs   map[string]int            `json:"pairs"`
	Missing map[string]map[string]int `json:"missing,omitempty"`
	// Code counts the execute_code derivations: commits whose change
	// edit blocks can express, those whose blocks reproduced the commit
	// exactly, and of those the pairs whose prompt shows every line the
	// blocks' SEARCH copies: only these are kept.
	Code CodeStats `json:"execute_code"`
	// Failed counts the kept commits whose pairs could not be derived (a
	// checkout or an index run that failed); Errors quotes the first. When
	// every kept commit fails, Run fails and writes nothing. A reused run
	// reports its own failures, with its first error only.
	Failed int      `json:"commits_failed"`
	Errors []string `json:"errors,omitempty"`
	// Datasets are the stages' files and rows.
	Datasets []DatasetReport `json:"datasets,omitempty"`
	// Reused: an earlier run with the same criteria left these datasets,
	// whose example counts Pairs then holds; nothing was derived or
	// written (Options.Force derives anew).
	Reused   bool          `json:"reused,omitempty"`
	PlanID   int64         `json:"training_plan_id,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	// IndexDuration is the part spent indexing the parents.
	IndexDuration time.Duration `json:"index_ns"`
}

// CodeStats are Report.Code.
type CodeStats struct {
	Tried      int `json:"tried"`
	Reproduced int `json:"reproduced"`
	InContext  int `json:"search_in_context"`
}

// CommitsPerSecond is the pace over the kept commits.
func (r *Report) CommitsPerSecond() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.Kept) / r.Duration.Seconds()
}

// DatasetReport is one stage's dataset.
type DatasetReport struct {
	Stage      string `json:"stage"`
	BaseModel  string `json:"base_model"`
	Path       string `json:"path"`
	ID         int64  `json:"id,omitempty"`
	Train      int    `json:"train"`
	Valid      int    `json:"valid"`
	Duplicates int    `json:"duplicates"`
}

// Errors of Run.
var (
	// ErrNoCommits is a repository with no commit to learn from.
	ErrNoCommits = errors.New("the repository has no commits")
	// ErrBusy is another bootstrap of the same repository into the same
	// scratch directory, running.
	ErrBusy = errors.New("bootstrap busy")
)

// SkipReasons lists why a commit is skipped, in the order they are
// tried (replay.SkipReasons).
func SkipReasons() []string { return slices.Clone(replay.SkipReasons) }

// Run bootstraps the datasets of opts.Repo (see the package doc).
func Run(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	if opts.ScratchDir == "" || opts.DatasetsDir == "" {
		return nil, errors.New("bootstrap: a scratch directory and a datasets directory are required")
	}
	if err := opts.Budget.Validate(); err != nil {
		return nil, err
	}
	if opts.Filter.MaxFiles == 0 {
		opts.Filter = replay.DefaultFilter()
	}
	if opts.PromptTokens <= 0 {
		opts.PromptTokens = opts.Budget.ContextWindow
	}
	if opts.ReplyTokens <= 0 {
		opts.ReplyTokens = opts.Budget.ReservedTokens / 2
	}
	if opts.ReplyTokens <= 0 {
		return nil, fmt.Errorf("reserved tokens %d leave no room for the reply: reserve at least the reply's tokens", opts.Budget.ReservedTokens)
	}
	if opts.Candidates <= 0 {
		opts.Candidates = 60
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if ok, err := gitx.IsRepo(ctx, opts.Repo); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%s is not a git repository: bootstrap reads a repository's history (clone one first)", opts.Repo)
	}
	top, _, err := gitx.TopLevel(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	head, err := gitx.Head(ctx, top)
	if err != nil {
		return nil, err
	}
	if head == "" {
		// The caller names the repository: its path once is enough.
		return nil, fmt.Errorf("%w: bootstrap reads a repository's history (bootstrap one with commits)", ErrNoCommits)
	}
	rep := &Report{Repo: top, Head: head, Skipped: map[string]int{}, Pairs: map[string]int{}, Missing: map[string]map[string]int{}}
	for _, s := range dataset.Stages {
		rep.Pairs[s] = 0
	}

	// The commits, newest first as git gives them; kept ones visited
	// oldest first.
	var kept []gitx.Commit
	err = gitx.Log(ctx, top, gitx.LogOptions{Max: opts.MaxCommits, LineStats: true, Merges: true, After: opts.Since}, func(c gitx.Commit) error {
		rep.Seen++
		if why := opts.Filter.Check(c); why != "" {
			rep.Skipped[why]++
			return nil
		}
		kept = append(kept, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(kept)
	rep.Kept = len(kept)
	fmt.Fprintf(opts.Progress, "%d commit(s) examined, %d kept\n", rep.Seen, rep.Kept)
	// One bootstrap of a repository at a time, from the look for an
	// earlier run to the record of this one: a second would take the
	// first's worktree away, or, finding no run recorded yet, derive and
	// record the same pairs again. A killed run's leftovers go even when
	// this run keeps no commit.
	lk, err := opts.lock(top)
	if err != nil {
		return nil, err
	}
	defer lk.Close()
	if err := opts.removeLeftovers(ctx); err != nil {
		return nil, err
	}
	if len(kept) == 0 {
		rep.Duration = time.Since(start)
		return rep, nil
	}
	if !opts.Force {
		if found, err := opts.reuse(ctx, rep); err != nil || found {
			rep.Duration = time.Since(start)
			return rep, err
		}
	}

	records := map[string][]dataset.Record{}
	if err := opts.visit(ctx, top, kept, rep, records); err != nil {
		return nil, err
	}
	if rep.Failed == rep.Kept {
		// Empty datasets, recorded, would be reused by the rerun that
		// follows the fix, and offered to training as the newest.
		return nil, fmt.Errorf("every kept commit (%d) failed, nothing written; the first: %s (fix it and run again)", rep.Failed, rep.Errors[0])
	}
	if err := opts.save(ctx, rep, records, start); err != nil {
		return nil, err
	}
	return rep, nil
}

// lock takes the scratch directory's lock, which the caller closes, or
// fails with ErrBusy when another bootstrap of top holds it.
func (o *Options) lock(top string) (*os.File, error) {
	if err := os.MkdirAll(o.ScratchDir, 0o755); err != nil {
		return nil, err
	}
	lk, ok, err := flock.TryLock(filepath.Join(o.ScratchDir, "bootstrap.lock"))
	if err != nil {
		return nil, fmt.Errorf("lock the scratch directory: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: another cra bootstrap of %s is running (%s); wait for it", ErrBusy, top, o.ScratchDir)
	}
	return lk, nil
}

// visit derives the pairs of the kept commits, oldest first, each at its
// parent in the scratch worktree (Replay). The caller holds the lock.
func (o *Options) visit(ctx context.Context, top string, kept []gitx.Commit, rep *Report, records map[string][]dataset.Record) error {
	d := &deriver{Repo: top, Budget: o.Budget, PromptTokens: o.PromptTokens, ReplyTokens: o.ReplyTokens, Candidates: o.Candidates}
	defer func() {
		if d.parser != nil {
			d.parser.Close()
		}
	}()
	i := 0
	return replay.Replay(ctx, top, o.ScratchDir, kept, func(ctx context.Context, s *replay.Step, err error) error {
		i++
		c := s.Commit
		rep.IndexDuration += s.Index
		var got *derived
		if err == nil {
			d.KB, d.RepoID, d.Root = s.KB, s.RepoID, s.Root
			got, err = o.one(ctx, top, d, c)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// One commit's failure (a checkout git refuses, a file the
			// indexer cannot read) costs that commit, not the run.
			rep.Failed++
			if len(rep.Errors) < maxErrors {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%.12s: %v", c.Hash, err))
			}
			fmt.Fprintf(o.Progress, "[%d/%d] %.12s failed: %v\n", i, len(kept), c.Hash, err)
			return nil
		}
		for _, r := range got.Records {
			records[r.Meta.Stage] = append(records[r.Meta.Stage], r)
			rep.Pairs[r.Meta.Stage]++
		}
		for stage, why := range got.Missing {
			if rep.Missing[stage] == nil {
				rep.Missing[stage] = map[string]int{}
			}
			rep.Missing[stage][missingKind(why)]++
		}
		if got.CodeTried {
			rep.Code.Tried++
		}
		if got.CodeReproduced {
			rep.Code.Reproduced++
		}
		if got.CodeInContext {
			rep.Code.InContext++
		}
		var missing []string
		for _, stage := range dataset.Stages {
			if why := got.Missing[stage]; why != "" {
				missing = append(missing, "no "+stage+": "+agent.FirstLine(why, 120))
			}
		}
		note := ""
		if len(missing) > 0 {
			note = " (" + strings.Join(missing, "; ") + ")"
		}
		fmt.Fprintf(o.Progress, "[%d/%d] %.12s %s: %d pair(s)%s\n", i, len(kept), c.Hash, agent.FirstLine(c.Message, 60), len(got.Records), note)
		return nil
	})
}

// maxErrors bounds the commit failures a report quotes.
const maxErrors = 20

// one derives the pairs of c at its parent, indexed in d's worktree.
func (o *Options) one(ctx context.Context, top string, d *deriver, c gitx.Commit) (*derived, error) {
	cm, err := loadCommit(ctx, top, c)
	if err != nil {
		return nil, err
	}
	return d.derive(ctx, cm)
}

// missingKind is a Missing reason without its details (paths, counts).
func missingKind(why string) string {
	for _, k := range []string{"not reproduced", "not in the context", "is deleted", "binary or mode change", "is created empty", "no SEARCH within", "out of range", "do not make"} {
		if strings.Contains(why, k) {
			return k
		}
	}
	return why
}

// loadCommit reads what the pairs need of c: its diff with both sides of
// every file, and its message as a task.
func loadCommit(ctx context.Context, top string, c gitx.Commit) (commit, error) {
	parent := c.Parents[0]
	files, err := gitx.DiffHunks(ctx, top, parent, c.Hash)
	if err != nil {
		return commit{}, err
	}
	date, err := time.Parse(time.RFC3339, c.Timestamp)
	if err != nil {
		return commit{}, fmt.Errorf("commit %.12s: date %q: %w", c.Hash, c.Timestamp, err)
	}
	cm := commit{Hash: c.Hash, Parent: parent, Date: date.UTC(), Task: replay.TaskText(c.Message)}
	for _, f := range files {
		ch := change{FileHunks: f}
		if f.OldPath != "" && !f.Binary {
			if ch.Old, err = gitx.ShowFile(ctx, top, parent, f.OldPath); err != nil {
				return commit{}, err
			}
		}
		if f.NewPath != "" && !f.Binary {
			if ch.New, err = gitx.ShowFile(ctx, top, c.Hash, f.NewPath); err != nil {
				return commit{}, err
			}
		}
		cm.Changes = append(cm.Changes, ch)
	}
	return cm, nil
}

// save writes the stages' datasets to a new directory and records them
// with their plan in one transaction. The files are written in a
// temporary directory beside the runs' directories, renamed into place
// once complete: a run killed in the middle leaves no partial directory a
// reader could take for a run's, only a temporary one the next run of
// the repository removes (removeLeftovers).
func (o *Options) save(ctx context.Context, rep *Report, records map[string][]dataset.Record, start time.Time) error {
	fmt.Fprintf(o.Progress, "writing the datasets in %s\n", o.DatasetsDir)
	if err := os.MkdirAll(o.DatasetsDir, 0o755); err != nil {
		return fmt.Errorf("datasets directory: %w", err)
	}
	// The lock held, and the leftovers removed, the name is free.
	tmp := filepath.Join(o.DatasetsDir, o.tempPrefix()+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("datasets directory: %w", err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	var sums []dataset.Summary
	for _, stage := range dataset.Stages {
		sum, err := dataset.Write(tmp, stage, records[stage], 0)
		if err != nil {
			return fmt.Errorf("write the %s dataset: %w", stage, err)
		}
		sums = append(sums, sum)
	}
	if err := dataset.MarkPending(tmp, o.tempPrefix()); err != nil {
		return err
	}
	name, dir, err := dataset.Place(o.DatasetsDir, "bootstrap-"+safeName(filepath.Base(rep.Repo))+"-"+start.UTC().Format("20060102T150405Z"), tmp)
	if err != nil {
		return err
	}
	rep.Name, rep.Dir = name, dir
	var rows []corpus.Dataset
	for i, stage := range dataset.Stages {
		sum, path := sums[i], dataset.Dir(dir, stage)
		rep.Datasets = append(rep.Datasets, DatasetReport{Stage: stage, BaseModel: dataset.BaseModel(stage), Path: path,
			Train: sum.Train, Valid: sum.Valid, Duplicates: sum.Duplicates})
		rows = append(rows, corpus.Dataset{Stage: stage, BaseModel: dataset.BaseModel(stage), Source: corpus.SourceSynthetic,
			Path: path, Examples: sum.Examples(), Positive: sum.Positive, Negative: sum.Negative})
	}
	rep.Duration = time.Since(start)
	if o.Corpus == nil {
		dataset.Settle(dir) // nothing to record it in
		return nil
	}
	plan := corpus.Plan{TaskID: o.TaskID, TargetStage: "all", BaseModel: "all", Source: corpus.SourceSynthetic,
		DataCriteria: o.criteria(rep), RawPlan: planText(rep)}
	planID, ids, err := o.Corpus.RecordPlanDatasets(ctx, plan, rows)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("record the datasets: %w", err)
	}
	dataset.Settle(dir)
	rep.PlanID = planID
	for i := range rep.Datasets {
		rep.Datasets[i].ID = ids[i]
	}
	return nil
}

// removeLeftovers removes what runs of the same repository killed in the
// middle of their save left (dataset.RemoveLeftovers, by the temporary
// directories' prefix, which names the repository's scratch directory).
// The caller holds the lock, so no run of the repository is writing one.
// Other directories, another repository's included, stay.
func (o *Options) removeLeftovers(ctx context.Context) error {
	var recorded []string // without a corpus no run is recorded
	if o.Corpus != nil {
		rows, err := o.Corpus.Datasets(ctx, "")
		if err != nil {
			return fmt.Errorf("read the earlier datasets: %w", err)
		}
		for _, d := range rows {
			recorded = append(recorded, d.Path)
		}
	}
	return dataset.RemoveLeftovers(o.DatasetsDir, o.tempPrefix(), "cra bootstrap", recorded)
}

// tempPrefix begins the name of the temporary directory, beside the
// runs' directories, in which a run writes its datasets before it renames
// it into place: a dot (no run's directory has one), and a hash of the
// scratch directory, whose lock the run holds. A run that finds one with
// its own prefix while it holds the lock knows the run that made it was
// killed, and removes it; another repository's may be a live run's.
func (o *Options) tempPrefix() string {
	dir, err := filepath.Abs(o.ScratchDir)
	if err != nil {
		dir = o.ScratchDir
	}
	h := sha256.Sum256([]byte(dir))
	return ".bootstrap-" + hex.EncodeToString(h[:4]) + ".tmp-"
}

func sinceText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// criteria is the plan row's data_criteria: what the run drew its data
// from and how. Two runs with the same criteria derive the same pairs.
func (o *Options) criteria(rep *Report) string {
	data, _ := json.Marshal(map[string]any{ // plain values: cannot fail
		"repo": rep.Repo, "head": rep.Head, "max_commits": o.MaxCommits, "since": sinceText(o.Since),
		"filter": o.Filter, "budget": o.Budget, "candidates": o.Candidates,
		"prompt_tokens": o.PromptTokens, "reply_tokens": o.ReplyTokens,
	})
	return string(data)
}

// reuse finds the newest earlier run with the same criteria whose files
// are all still there, and fills rep with it: a rerun of the same history
// adds no second copy of the same pairs (which would count twice as
// evidence and in a mix). Options.Force derives them anew.
func (o *Options) reuse(ctx context.Context, rep *Report) (bool, error) {
	if o.Corpus == nil {
		return false, nil
	}
	ds, err := o.Corpus.Datasets(ctx, "")
	if err != nil {
		return false, fmt.Errorf("read the earlier datasets: %w", err)
	}
	byPlan := map[int64][]corpus.Dataset{}
	var plans []int64
	for _, d := range ds { // newest first
		if d.Source != corpus.SourceSynthetic {
			continue
		}
		if byPlan[d.PlanID] == nil {
			plans = append(plans, d.PlanID)
		}
		byPlan[d.PlanID] = append(byPlan[d.PlanID], d)
	}
	want := o.criteria(rep)
	for _, id := range plans {
		p, err := o.Corpus.Plan(ctx, id)
		if err != nil {
			return false, fmt.Errorf("read training plan %d: %w", id, err)
		}
		rows := byPlan[id]
		if p.DataCriteria != want || len(rows) != len(dataset.Stages) {
			continue
		}
		slices.SortFunc(rows, func(a, b corpus.Dataset) int {
			return slices.Index(dataset.Stages, a.Stage) - slices.Index(dataset.Stages, b.Stage)
		})
		var found []DatasetReport
		for _, d := range rows {
			train, err1 := dataset.Read(d.Path, dataset.Train)
			valid, err2 := dataset.Read(d.Path, dataset.Valid)
			if err1 != nil || err2 != nil {
				break // gone or damaged: not reused
			}
			found = append(found, DatasetReport{Stage: d.Stage, BaseModel: d.BaseModel, Path: d.Path, ID: d.ID, Train: len(train), Valid: len(valid)})
		}
		if len(found) != len(rows) {
			continue
		}
		rep.Reused, rep.PlanID, rep.Datasets = true, id, found
		rep.Dir = filepath.Dir(filepath.Dir(rows[0].Path))
		rep.Name = filepath.Base(rep.Dir)
		for _, d := range rows {
			rep.Pairs[d.Stage] = d.Examples
		}
		if n, first := planFailures(p.RawPlan); n > 0 {
			rep.Failed, rep.Errors = n, []string{first}
		}
		return true, nil
	}
	return false, nil
}

// planText is the plan row's raw_plan: what the run drew, in words, and
// the kept commits that failed with the first error, which a rerun that
// reuses the run reads back (planFailures) to say whose pairs are missing.
func planText(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cra bootstrap %s at %.12s: %d commit(s) examined, %d kept; pairs:", rep.Repo, rep.Head, rep.Seen, rep.Kept)
	for _, s := range dataset.Stages {
		fmt.Fprintf(&b, " %s %d", s, rep.Pairs[s])
	}
	fmt.Fprintf(&b, "; execute_code reproduced %d of %d", rep.Code.Reproduced, rep.Code.Tried)
	if rep.Failed > 0 {
		fmt.Fprintf(&b, "; %d kept commit(s) failed, the first: %s", rep.Failed, rep.Errors[0])
	}
	return b.String()
}

var planFailuresRe = lazyre.New(`; execute_code reproduced \d+ of \d+; (\d+) kept commit\(s\) failed, the first: ((?s).*)$`)

// planFailures reads back from a raw_plan planText wrote the kept commits
// that failed and the first error; 0 when none did (or the run predates
// their record).
func planFailures(raw string) (int, string) {
	m := planFailuresRe().FindStringSubmatch(raw)
	if m == nil {
		return 0, ""
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, ""
	}
	return n, m[2]
}

// safeName keeps letters, digits, '-', '_' and '.' of a name.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
	if s == "" || s == "." || s == ".." {
		return "repo"
	}
	return s
}
