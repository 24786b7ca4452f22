// Package cleanup is the cleanup pass (seed 000, issue 16 item 5): after
// each supervisor run and on demand ('cra cleanup', the board's Clean Up
// button) it rewrites the knowledge index, adds the todos it finds
// missing, and collapses near-duplicate pending tasks.
//
// A pass is three steps, each failing alone (seed 000, "Error Handling"):
//
//  1. The deterministic pre-pass (Groups): pending tasks and directives
//     whose normalised, stemmed word sets are similar are proposed as
//     duplicate groups. It never acts on them; it orders and narrows what
//     Call 2 sees, and 'cra cleanup --dry-run' prints it.
//  2. Call 1, the knowledge rewrite: docs/knowledge/_index.md, the
//     documents' summaries, the pending tasks as -PRIORITY: text lines and
//     today's date go in; <WORLD_MODEL>…</WORLD_MODEL><TODOS>…</TODOS>
//     comes out (ParseRewrite). WORLD_MODEL replaces _index.md; a TODOS
//     line that matches no task becomes a pending task with source
//     cleanup.
//  3. Call 2, the collapse: the pending tasks as id | bucket | type |
//     content go in; canonical text | keep_id | drop_id1,drop_id2 lines
//     come out (ParseCollapse). A line is carried out by board.Collapse,
//     which keeps every dropped task's text in the world log, only when
//     the pre-pass finds its tasks alike (alikeGroup: each dropped task in
//     the kept one's pre-pass group, or alike it above the stated floor,
//     Threshold or Containment); any other line is a suggestion for a
//     person (Report.Suggested, a log line), never applied. The model
//     refines what the pre-pass found; it cannot merge what the pre-pass
//     finds unrelated (DESIGN.md principle 2).
//
// Each call goes through the llm gateway with the supervisor role, so it
// is recorded in raw.sqlite, and is asked once more after a malformed
// reply; a reply malformed twice changes nothing. Only one pass runs at a
// time in a repository: .clean_room/cleanup.lock (Running).
package cleanup

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// The call types of the two calls in raw.sqlite.
const (
	CallRewrite  = "cleanup_world_model"
	CallCollapse = "cleanup_collapse"
)

// The replies' token caps (seed 000's numPredict).
const (
	RewriteMaxTokens  = 2048
	CollapseMaxTokens = 1024
)

// KnowledgeDir is the knowledge store in the repository, knowledge.Dir
// (which cannot be imported: the supervisors in package knowledge call
// Run after each of their runs).
const KnowledgeDir = "docs/knowledge"

// IndexFile is the knowledge store's index, which Call 1 rewrites (seed
// 000's world-model.md, DESIGN.md).
const IndexFile = "_index.md"

// LockFile is the lock a pass holds in the state directory.
const LockFile = statedir.CleanupLock

// Source is the source of the tasks a pass adds, and the identifier of
// its own world-log events.
const Source = "cleanup"

// MaxNewTasks bounds the tasks one pass adds from TODOS lines (DESIGN.md
// principle 6): a model that rewords every todo must not double the
// board.
const MaxNewTasks = 10

// RecentDays is how long a verified or blocked task still counts as
// existing when a TODOS line is matched against the board.
const RecentDays = 30

// ErrRunning is returned by Run while another pass holds the lock.
var ErrRunning = verdict.ErrCleanupRunning

// Deps are what a pass works on.
type Deps struct {
	// Board is the repository's board; required.
	Board *board.Board
	// Root is the repository, whose docs/knowledge/ Call 1 rewrites;
	// StateDir its .clean_room/, which holds the lock. Both required.
	Root, StateDir string
	// Gateway makes the model calls; nil skips both calls, each reported
	// as failed.
	Gateway *llm.Gateway
	// Now is the clock (today's date, the run id); nil is time.Now.
	Now func() time.Time
	// Logger gets diagnostics; nil discards.
	Logger *slog.Logger
}

// Options change what a pass does.
type Options struct {
	// DryRun runs the pre-pass alone: no model call, no write, no lock.
	DryRun bool
	// Threshold is the pre-pass's similarity; 0 is Threshold.
	Threshold float64
}

// The records of a pass live in verdict, where the fleet's operations
// and the front ends read them without importing cleanup; these are
// their names here.
type (
	// Report is what a pass did.
	Report = verdict.CleanupReport
	// Suggestion is a group Call 2 named that the pass did not apply.
	Suggestion = verdict.Suggestion
	// CallResult is how a call went.
	CallResult = verdict.CallResult
	// Added is a task a TODOS line added.
	Added = verdict.AddedTask
	// Ignored is a TODOS line that added nothing, and why.
	Ignored = verdict.IgnoredLine
	// Merged is a group Call 2 collapsed.
	Merged = verdict.MergedGroup
	// Skipped is a line of Call 2's reply that was not carried out.
	Skipped = verdict.SkippedLine
	// Group is a group of alike tasks the pre-pass found.
	Group = verdict.DuplicateGroup
)

// Running reports whether a pass holds the lock of the repository whose
// state directory is stateDir (the board disables its Clean Up button
// while one does, and polls this). It probes with a shared lock
// (probeHeld), which another probe never conflicts with; the probe still
// keeps out a pass's exclusive lock for a few microseconds, so Run waits
// up to LockWait for the lock rather than fail on a poll.
func Running(stateDir string) bool {
	if _, err := os.Stat(stateDir); err != nil {
		return false
	}
	held, err := probeHeld(statedir.At(stateDir).CleanupLock())
	return err == nil && held
}

// LockWait is how long Run waits for the cleanup lock before it returns
// ErrRunning: long enough for any number of Running probes to let go,
// far shorter than a pass.
const LockWait = 2 * time.Second

// lockPass takes the cleanup lock at path, trying again every few
// milliseconds for up to LockWait; ok is false when a pass held it all
// that time. It polls rather than block in flock(2), so no waiter is
// left behind when it gives up.
func lockPass(ctx context.Context, path string) (f *os.File, ok bool, err error) {
	deadline := time.Now().Add(LockWait)
	for {
		f, ok, err := flock.TryLock(path)
		if err != nil || ok || time.Now().After(deadline) {
			return f, ok, err
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Run makes one pass: the pre-pass, Call 1, Call 2. A call that fails, or
// whose reply is malformed twice, is reported in its CallResult, logged
// as an [event:system][cleanup] line, and changes nothing; the other call
// still runs. Run's error is what it could not work around: ErrRunning,
// an unreadable board.
func Run(ctx context.Context, d Deps, opts Options) (*Report, error) {
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	logger := d.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	threshold := opts.Threshold
	if threshold <= 0 {
		threshold = Threshold
	}
	rep := &Report{DryRun: opts.DryRun, Groups: []Group{}, Added: []Added{}, Merged: []Merged{}}
	if !opts.DryRun {
		f, ok, err := lockPass(ctx, statedir.At(d.StateDir).CleanupLock())
		if err != nil {
			return nil, fmt.Errorf("lock cleanup: %w", err)
		}
		if !ok {
			return nil, ErrRunning
		}
		defer f.Close()
	}
	pending, err := pendingTasks(ctx, d.Board)
	if err != nil {
		return nil, err
	}
	rep.Pending = len(pending)
	if g := Groups(items(pending), threshold); g != nil {
		rep.Groups = g
	}
	if opts.DryRun {
		return rep, nil
	}
	t := now().UTC()
	rep.RunID = "cleanup-" + t.Format("20060102T150405.000Z")
	p := &pass{d: d, rep: rep, logger: logger, now: t}

	p.rewrite(ctx, pending)
	if pending, err = pendingTasks(ctx, d.Board); err != nil {
		return rep, err
	}
	p.collapse(ctx, pending, Groups(items(pending), threshold))
	p.event(ctx, p.summary())
	return rep, nil
}

// pass is one Run's state.
type pass struct {
	d      Deps
	rep    *Report
	logger *slog.Logger
	now    time.Time
}

func pendingTasks(ctx context.Context, b *board.Board) ([]*board.Task, error) {
	listed, err := b.Store.List(ctx, board.Pending)
	if err != nil {
		return nil, fmt.Errorf("list pending tasks: %w", err)
	}
	var out []*board.Task
	for _, l := range listed {
		if l.Err == nil {
			out = append(out, l.Task)
		}
	}
	return out, nil
}

func items(tasks []*board.Task) []Item {
	out := make([]Item, len(tasks))
	for i, t := range tasks {
		out[i] = Item{ID: t.ID, Text: t.Title}
	}
	return out
}

// event logs an [event:system][cleanup] line; a log that cannot be
// written is a diagnostic, since the pass's own changes are logged by the
// board.
func (p *pass) event(ctx context.Context, text string) {
	if _, err := p.d.Board.Log.Event(ctx, world.SourceSystem, Source, text); err != nil {
		p.logger.Warn("cleanup: log event", "err", err)
	}
}

func (p *pass) summary() string { return p.rep.Summary() }

// ask makes one call with one bounded retry after a malformed reply.
func ask[T any](ctx context.Context, p *pass, callType string, req llm.Request, parse func(string) (T, error)) (T, CallResult) {
	var zero T
	var res CallResult
	if p.d.Gateway == nil {
		res.Err = "no model gateway: configure [models] in .clean_room/config.toml"
		return zero, res
	}
	client, _, err := p.d.Gateway.Client(ctx, llm.CallInfo{Kind: llm.KindGeneral, TaskID: p.rep.RunID, Type: callType, Role: llm.RoleSupervisor})
	if err != nil {
		res.Err = fmt.Sprintf("the model could not be reached: %v", err)
		return zero, res
	}
	resp, err := client.Complete(ctx, req)
	res.Requests++
	if err != nil {
		res.Err = fmt.Sprintf("the model failed: %v", err)
		return zero, res
	}
	v, perr := parse(resp.Text)
	if perr == nil {
		return v, res
	}
	if err := llm.MarkMalformed(ctx, client, perr); err != nil {
		res.Err = err.Error()
		return zero, res
	}
	resp, err = client.Complete(ctx, retryPrompt(req, resp.Text, perr))
	res.Requests++
	if err != nil {
		res.Err = fmt.Sprintf("the model failed on the retry after a malformed reply (%v): %v", perr, err)
		return zero, res
	}
	if v, err = parse(resp.Text); err != nil {
		res.Err = fmt.Sprintf("the reply was malformed twice: %v", err)
		if merr := llm.MarkMalformed(ctx, client, err); merr != nil {
			res.Err += "; " + merr.Error()
		}
		return zero, res
	}
	return v, res
}

// rewrite is Call 1 and its write-back.
func (p *pass) rewrite(ctx context.Context, pending []*board.Task) {
	dir := filepath.Join(p.d.Root, filepath.FromSlash(KnowledgeDir))
	index, docs, err := readKnowledge(p.d.Root, dir)
	if err != nil {
		p.rep.Rewrite.Err = fmt.Sprintf("read %s: %v", KnowledgeDir, err)
		p.event(ctx, "knowledge rewrite failed: "+p.rep.Rewrite.Err+"; nothing changed")
		return
	}
	today := p.now.Format("2006-01-02")
	rw, res := ask(ctx, p, CallRewrite, rewritePrompt(index, docs, pending, today), ParseRewrite)
	p.rep.Rewrite = res
	if res.Failed() {
		p.event(ctx, "knowledge rewrite failed: "+res.Err+"; nothing changed")
		return
	}
	text := indexText(rw.WorldModel, today)
	rel := KnowledgeDir + "/" + IndexFile
	if strings.TrimSpace(text) != strings.TrimSpace(index) {
		if err := atomicfile.Write(filepath.Join(dir, IndexFile), []byte(text), 0o644); err != nil {
			p.rep.Rewrite.Err = fmt.Sprintf("write %s: %v", rel, err)
			p.event(ctx, "knowledge rewrite failed: "+p.rep.Rewrite.Err)
			return
		}
		p.rep.Index, p.rep.Removed = rel, rw.Duplicates
		p.event(ctx, fmt.Sprintf("rewrote %s: %d lines, %d duplicate line(s) removed", rel, strings.Count(text, "\n"), rw.Duplicates))
	}
	p.addTodos(ctx, rw.Todos)
	p.rep.Rewrite.Done = !p.rep.Rewrite.Failed()
}

// indexText is the file Call 1's world model becomes: a # title when it
// has none, and seed 003's _Last updated by_ line under it.
func indexText(wm, today string) string {
	lines := strings.Split(wm, "\n")
	out := make([]string, 0, len(lines)+3)
	stamp := "_Last updated by: cleanup, " + today + "_"
	titled := false
	for _, l := range lines {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "_last updated by:") {
			continue
		}
		out = append(out, l)
		if !titled && strings.HasPrefix(l, "# ") {
			titled = true
			out = append(out, "", stamp)
		}
	}
	if !titled {
		out = append([]string{"# Knowledge index", "", stamp, ""}, out...)
	}
	text, _ := CleanWorldModel(strings.Join(out, "\n"))
	return text + "\n"
}

// addTodos adds a pending task for each TODOS line that matches no task
// (pending, in progress, finished, or verified or blocked within
// RecentDays) and no line before it, at most MaxNewTasks. A task is
// matched by one line, the one most like it.
func (p *pass) addTodos(ctx context.Context, todos []Todo) {
	listed, err := p.d.Board.Store.List(ctx, "")
	if err != nil {
		p.rep.Rewrite.Err = fmt.Sprintf("list the board: %v", err)
		return
	}
	type known struct{ id, title string }
	var existing []known
	cutoff := p.now.AddDate(0, 0, -RecentDays)
	for _, l := range listed {
		if l.Err != nil || l.Folder.Terminal() && l.Task.UpdatedAt.Before(cutoff) {
			continue
		}
		existing = append(existing, known{l.ID, l.Task.Title})
	}
	// Each task is the match of one line, its most similar: the rewrite
	// gives every task back, so a line near a task that another line
	// gives back better ("signup" beside "login") is work of its own.
	type pair struct {
		line, task int
		score      float64
	}
	var pairs []pair
	for i, td := range todos {
		for j, k := range existing {
			if Matches(td.Text, k.title) {
				pairs = append(pairs, pair{i, j, Similarity(td.Text, k.title)})
			}
		}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(b.score, a.score) })
	matched := make([]string, len(todos))
	taken := make([]bool, len(existing))
	for _, pr := range pairs {
		if matched[pr.line] == "" && !taken[pr.task] {
			matched[pr.line], taken[pr.task] = existing[pr.task].id, true
		}
	}
	var added []known
	for i, td := range todos {
		line := "-" + td.Priority + ": " + td.Text
		if td.Priority == PriorityDone {
			p.rep.Ignored = append(p.rep.Ignored, Ignored{Line: line, Reason: "done"})
			continue
		}
		match := matched[i]
		for _, k := range added {
			if match == "" && Matches(td.Text, k.title) {
				match = k.id // a line again, of a task this pass added
			}
		}
		if match != "" {
			p.rep.Ignored = append(p.rep.Ignored, Ignored{Line: line, Reason: "matches " + match})
			continue
		}
		if len(p.rep.Added) == MaxNewTasks {
			p.rep.Ignored = append(p.rep.Ignored, Ignored{Line: line, Reason: fmt.Sprintf("over the cap of %d new tasks per pass", MaxNewTasks)})
			continue
		}
		t := board.NewTask(titleOf(td.Text))
		if t.Title != td.Text {
			t.Description = td.Text
		}
		t.Priority = boardPriority(td.Priority)
		t.Source = Source
		a, err := p.d.Board.Add(ctx, t)
		if err != nil {
			p.rep.Ignored = append(p.rep.Ignored, Ignored{Line: line, Reason: err.Error()})
			continue
		}
		added = append(added, known{a.ID, a.Title})
		p.rep.Added = append(p.rep.Added, Added{ID: a.ID, Priority: string(a.Priority), Title: a.Title})
	}
}

// titleOf fits text into a task title: one line of at most
// board.MaxTitle bytes.
func titleOf(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= board.MaxTitle {
		return text
	}
	cut := strings.ToValidUTF8(text[:board.MaxTitle-len("…")], "")
	return cut + "…"
}

// collapse is Call 2 and its write-back, line by line.
func (p *pass) collapse(ctx context.Context, pending []*board.Task, groups []Group) {
	if len(pending) < 2 {
		p.rep.Collapse.Done = true
		return
	}
	shown := collapseLines(pending, groups)
	merges, res := ask(ctx, p, CallCollapse, collapsePrompt(shown, groups), ParseCollapse)
	p.rep.Collapse = res
	if res.Failed() {
		p.event(ctx, "collapse failed: "+res.Err+"; nothing changed")
		return
	}
	on := map[string]bool{}
	read := map[string]board.Shown{}
	title := map[string]string{}
	for _, t := range shown {
		on[t.ID] = true
		read[t.ID] = board.ShownOf(t)
		title[t.ID] = t.Title
	}
	kept := map[string]bool{}
	for _, m := range merges {
		line := m.Canonical + " | " + m.Keep + " | " + strings.Join(m.Drops, ",")
		if id := firstNotShown(m, on); id != "" {
			p.rep.Skipped = append(p.rep.Skipped, Skipped{Line: line, Reason: "task " + id + " was not among the tasks shown"})
			continue
		}
		// A group's kept task is not dropped by a later line: the model
		// put it in two groups, and the first one stands.
		if i := slices.IndexFunc(m.Drops, func(id string) bool { return kept[id] }); i >= 0 {
			p.rep.Skipped = append(p.rep.Skipped, Skipped{Line: line, Reason: "task " + m.Drops[i] + " keeps an earlier group"})
			continue
		}
		if why, ok := alikeGroup(m.Keep, m.Drops, groups, func(id string) string { return title[id] }); !ok {
			p.rep.Suggested = append(p.rep.Suggested, Suggestion{Keep: m.Keep, Canonical: m.Canonical, Drops: m.Drops, Reason: why})
			p.event(ctx, fmt.Sprintf("suggested for a person, not applied: merge into %s as %q the tasks %s: %s",
				m.Keep, titleOf(m.Canonical), strings.Join(m.Drops, ", "), why))
			continue
		}
		// The texts were read before the call; a task that ran, came
		// back or was edited meanwhile is refused (board.ErrChanged) and
		// its line skipped, as for an id the model made up.
		c, err := p.d.Board.Collapse(ctx, m.Keep, titleOf(m.Canonical), m.Drops, read)
		if err != nil {
			p.rep.Skipped = append(p.rep.Skipped, Skipped{Line: line, Reason: err.Error()})
			continue
		}
		kept[c.Keep.ID] = true
		var dropped []string
		for _, t := range c.Dropped {
			dropped = append(dropped, t.ID)
		}
		p.rep.Merged = append(p.rep.Merged, Merged{Keep: c.Keep.ID, Canonical: c.Keep.Title, Dropped: dropped, Relinked: c.Relinked})
	}
	p.rep.Collapse.Done = true
}

func firstNotShown(m Merge, on map[string]bool) string {
	for _, id := range append([]string{m.Keep}, m.Drops...) {
		if !on[id] {
			return id
		}
	}
	return ""
}

// alikeGroup reports whether Call 2's group of keep and drops may be
// applied: each dropped task is in keep's pre-pass group, or alike keep
// by itself (Matches either way: a Jaccard similarity of Threshold or
// more, or Containment of one's words in the other's). Otherwise it says
// which tasks are not alike. text gives a task's text as the pre-pass
// read it.
func alikeGroup(keep string, drops []string, groups []Group, text func(string) string) (string, bool) {
	var mates []string
	for _, g := range groups {
		if slices.Contains(g.IDs, keep) {
			mates = g.IDs
			break
		}
	}
	var unlike []string
	for _, id := range drops {
		a, b := text(keep), text(id)
		if !slices.Contains(mates, id) && !Matches(a, b) && !Matches(b, a) {
			unlike = append(unlike, id)
		}
	}
	if len(unlike) == 0 {
		return "", true
	}
	return fmt.Sprintf("the pre-pass finds %s not alike %s (not in its group, under %.1f similar, under %.0f%% of words shared)",
		strings.Join(unlike, ", "), keep, Threshold, Containment*100), false
}
