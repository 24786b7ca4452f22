package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// CallType is the call_type of supervisor calls in raw.sqlite.
const CallType = "supervisor"

// Runner runs the supervisors of one repository (seed 003): on demand
// (Run, 'cra supervisors run'), and when their triggers or the urgency
// say so (Check, after each recycler verdict; Loop, for 'cra serve'). It
// writes the knowledge store, adds directives to the board, drops aged
// directives and promotes used documents. Its state is the world log,
// the reviews and the run log (supervisors.jsonl): nothing is only in
// memory.
type Runner struct {
	// Board is the repository's board; required.
	Board *board.Board
	// Root is the repository, StateDir its .clean_room; required.
	Root, StateDir string
	// History is where the recycler keeps its reviews, which the
	// supervisors read; nil is the files under StateDir (on a fleet, the
	// database: verdict.HistoryStore).
	History verdict.HistoryStore
	// Config loads config.toml; called on every Check and Run.
	Config func() (*config.Config, error)
	// Recorder records every model call in raw.sqlite; required for runs.
	Recorder *llm.Recorder
	// NewClient builds a model client; nil is llm.New.
	NewClient func(llm.ModelConfig) (llm.Client, error)
	// Out gets a line per thing a person should see; nil discards.
	Out io.Writer
	// Logger gets diagnostics; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// After is called once a Check or Run in which a supervisor ran is
	// done: the cleanup pass, which seed 000 runs after every synthesis.
	// Its error is a warning in the report; nil calls nothing.
	After func(ctx context.Context) error

	mu sync.Mutex // one Check or Run at a time in this process

	memoMu sync.Mutex
	memo   readMemo
}

// readMemo is what read last read of the board and the log, kept while
// the board's Stamp stays the same: an idle daemon's checks then read
// neither its tasks nor its log again, however many it holds.
type readMemo struct {
	ok    bool
	stamp board.Stamp
	view  *boardView
	// since and signals are logSignals' answer for since.
	since   time.Time
	signals []Signal
}

// LockName is the lock file in the state directory that keeps one Check
// or Run at a time across processes (the daemon and a person's 'cra
// supervisors run').
const LockName = statedir.SupervisorsLock

// lock takes the in-process and the cross-process lock.
func (r *Runner) lock(ctx context.Context) (func(), error) {
	r.mu.Lock()
	f, err := flock.Lock(ctx, statedir.At(r.StateDir).SupervisorsLock(), true)
	if err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("lock the supervisors: %w", err)
	}
	return func() { f.Close(); r.mu.Unlock() }, nil
}

// Report is what a Check or a Run did.
type Report struct {
	// Urgency is the urgency before the run, and Due why each
	// supervisor was due.
	Urgency float64                           `json:"urgency"`
	Due     map[knowledge.Supervisor][]string `json:"due,omitempty"`
	Runs    []Record                          `json:"runs,omitempty"`
	// Dropped are the directives dropped, with why.
	Dropped map[string]string `json:"dropped,omitempty"`
	// Promoted are the documents that became established.
	Promoted []string `json:"promoted,omitempty"`
	// Polished are the milestones whose polish phase ended.
	Polished []string `json:"polished,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) say(format string, args ...any) {
	if r.Out != nil {
		fmt.Fprintf(r.Out, format+"\n", args...)
	}
}

func (r *Runner) warn(rep *Report, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	rep.Warnings = append(rep.Warnings, msg)
	r.say("warning: %s", msg)
}

// event writes an [event:supervisor] line; a failure is a warning.
func (r *Runner) event(ctx context.Context, rep *Report, id, output string) {
	if _, err := r.Board.Log.Event(context.WithoutCancel(ctx), world.SourceSupervisor, id, oneLine(output, 2000)); err != nil {
		r.warn(rep, "log %s: %v", id, err)
	}
}

func (r *Runner) config() (*config.Config, error) {
	if r.Config == nil {
		return nil, nil
	}
	return r.Config()
}

// state is everything a decision reads, read once.
type state struct {
	cfg     *config.Config
	set     config.SupervisorSettings
	recs    []Record
	last    map[knowledge.Supervisor]Last
	lastRec map[knowledge.Supervisor]*Record
	batch   time.Time
	signals []Signal
	view    *boardView
	store   *knowledge.Store
}

func (r *Runner) read(ctx context.Context) (*state, error) {
	cfg, err := r.config()
	if err != nil {
		return nil, err
	}
	st := &state{cfg: cfg, set: cfg.SupervisorSettings(), store: &knowledge.Store{Root: r.Root, Now: r.Now}}
	if st.recs, _, err = ReadRunLog(r.StateDir); err != nil {
		return nil, err
	}
	st.last, st.lastRec, st.batch = lastRuns(st.recs)
	// The board and the log as the last read found them are read from
	// memory (readMemo): tasks and lines are never changed in place by
	// what reads them here.
	stamp, stamped := r.Board.Stamp()
	r.memoMu.Lock()
	m := r.memo
	r.memoMu.Unlock()
	same := stamped && m.ok && m.stamp == stamp
	if same {
		st.view = m.view
	} else if st.view, err = readBoard(ctx, r.Board); err != nil {
		return nil, err
	}
	since := st.window()
	signals := m.signals
	if !same || !m.since.Equal(since) {
		if signals, err = logSignals(ctx, r.Board, r.history(), since); err != nil {
			return nil, err
		}
	}
	st.signals = withDrift(signals, st.recs)
	if stamped {
		r.memoMu.Lock()
		r.memo = readMemo{ok: true, stamp: stamp, view: st.view, since: since, signals: signals}
		r.memoMu.Unlock()
	}
	return st, nil
}

// window is the earliest time a trigger counts verdicts from: the
// oldest latest run of an enabled supervisor, the latest batch, the oldest pending
// cleanup directive (aging); zero while a supervisor never ran.
func (st *state) window() time.Time {
	w := st.batch
	for _, s := range knowledge.Supervisors() {
		if !st.set.Enabled(string(s)) {
			continue
		}
		t := st.last[s].Time
		if t.IsZero() {
			return time.Time{}
		}
		if t.Before(w) {
			w = t
		}
	}
	for _, t := range st.view.pending {
		if cleanup(t) && t.CreatedAt.Before(w) {
			w = t.CreatedAt
		}
	}
	return w
}

// due returns why each enabled supervisor should run now: its triggers
// (Due), or for all of them an urgency of UrgencyThreshold or more.
// In the polish phase (every planned task verified) only a milestone
// that has just completed triggers them: seed 003's polish processes the
// existing cleanup directives, with no new supervisor runs.
func (st *state) due() (float64, map[knowledge.Supervisor][]string) {
	u := Urgency(st.signals, st.batch)
	out := map[knowledge.Supervisor][]string{}
	polish := st.view.functionallyComplete()
	for _, s := range knowledge.Supervisors() {
		if !st.set.Enabled(string(s)) {
			continue
		}
		why := Due(s, st.last[s], st.signals, st.view.done, st.set)
		if polish {
			why = slices.DeleteFunc(why, func(w string) bool { return !strings.HasPrefix(w, "milestone ") })
		}
		if u >= UrgencyThreshold && !polish {
			why = append(why, fmt.Sprintf("urgency %.1f", u))
		}
		if len(why) > 0 {
			out[s] = why
		}
	}
	return u, out
}

// Check is what follows each recycler verdict (seed 003's check_triggers
// after mark_complete): it runs the supervisors that are due, drops aged
// and surplus cleanup directives, ends polish phases at their limit and
// promotes documents used without a failure. A supervisor whose model
// cannot be reached is skipped with a warning; the execution loop goes
// on either way (seed 003, "Graceful Degradation").
func (r *Runner) Check(ctx context.Context) (*Report, error) {
	unlock, err := r.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &Report{}
	st, err := r.read(ctx)
	if err != nil {
		return rep, err
	}
	rep.Urgency, rep.Due = st.due()
	// A supervisor whose last try was skipped or discarded waits: a
	// model that is down, or that never writes the schema, is not asked
	// every check (retryWait).
	for s := range rep.Due {
		if rec, failed := st.lastTry(s); rec != nil && !rec.Ran() && r.now().Sub(rec.Started) < retryWait(failed) {
			delete(rep.Due, s)
		}
	}
	if len(rep.Due) > 0 {
		if err := r.runBatch(ctx, st, rep.Due, rep); err != nil {
			return rep, err
		}
	}
	if err := r.tidy(ctx, rep); err != nil {
		return rep, err
	}
	r.after(ctx, rep)
	return rep, nil
}

// after calls After when a supervisor of rep ran.
func (r *Runner) after(ctx context.Context, rep *Report) {
	if r.After == nil || !slices.ContainsFunc(rep.Runs, func(rec Record) bool { return rec.Ran() }) {
		return
	}
	if err := r.After(ctx); err != nil {
		r.warn(rep, "after the supervisors: %v", err)
	}
}

// Run runs the supervisors in only (all enabled ones when empty) now,
// whatever their triggers: 'cra supervisors run'. A disabled supervisor
// named in only runs too: a person asked for it.
func (r *Runner) Run(ctx context.Context, only []knowledge.Supervisor) (*Report, error) {
	unlock, err := r.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep := &Report{}
	st, err := r.read(ctx)
	if err != nil {
		return rep, err
	}
	rep.Urgency, _ = st.due()
	why := map[knowledge.Supervisor][]string{}
	for _, s := range knowledge.Supervisors() {
		if len(only) > 0 && slices.Contains(only, s) || len(only) == 0 && st.set.Enabled(string(s)) {
			why[s] = []string{"cra supervisors run"}
		}
	}
	rep.Due = why
	if err := r.runBatch(ctx, st, why, rep); err != nil {
		return rep, err
	}
	if err := r.tidy(ctx, rep); err != nil {
		return rep, err
	}
	r.after(ctx, rep)
	return rep, nil
}

// RetryAfter is how long Check leaves a supervisor alone after a try
// that was skipped (no model) or discarded (malformed twice); each such
// try in a row doubles it, up to MaxRetryAfter.
const (
	RetryAfter    = 10 * time.Minute
	MaxRetryAfter = 6 * time.Hour
)

// retryWait is the wait after failed tries in a row (at least one).
func retryWait(failed int) time.Duration {
	w := RetryAfter
	for i := 1; i < failed && w < MaxRetryAfter; i++ {
		w *= 2
	}
	return min(w, MaxRetryAfter)
}

// lastTry is s's latest record, run or not, and how many of s's latest
// records in a row did not run.
func (st *state) lastTry(s knowledge.Supervisor) (last *Record, failed int) {
	for i := len(st.recs) - 1; i >= 0; i-- {
		if st.recs[i].Supervisor != s {
			continue
		}
		if last == nil {
			last = &st.recs[i]
		}
		if st.recs[i].Ran() {
			break
		}
		failed++
	}
	return last, failed
}

// CheckEvery is how often Loop checks the triggers.
const CheckEvery = 30 * time.Second

// Loop calls Check every CheckEvery until ctx ends; an error is reported
// on Out and the loop goes on. It is what 'cra serve' runs beside the
// recycler.
func (r *Runner) Loop(ctx context.Context) error {
	t := time.NewTicker(CheckEvery)
	defer t.Stop()
	for {
		if _, err := r.Check(ctx); err != nil && ctx.Err() == nil {
			r.say("warning: supervisors: %v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// runBatch runs the supervisors in why, in seed 003's order, as one
// batch: urgency resets at its start.
func (r *Runner) runBatch(ctx context.Context, st *state, why map[knowledge.Supervisor][]string, rep *Report) error {
	batch := r.now().UTC().Truncate(time.Millisecond)
	after := "none"
	for i := len(st.signals) - 1; i >= 0; i-- {
		if st.signals[i].Kind == Verdict {
			after = st.signals[i].Task
			break
		}
	}
	for _, s := range knowledge.Supervisors() {
		reasons, ok := why[s]
		if !ok {
			continue
		}
		rec, err := r.runOne(ctx, st, s, reasons, batch, after)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, *rec)
		if err := appendRunLog(r.StateDir, rec); err != nil {
			r.warn(rep, "%v", err)
		}
		r.event(ctx, rep, string(s), Describe(rec))
		r.say("%s: %s", s, Describe(rec))
		if !rec.Ran() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %s", s, Describe(rec)))
		}
	}
	return nil
}

// Describe is a run's one-line account, its [event:supervisor] output.
func Describe(rec *Record) string {
	switch {
	case rec.Skipped != "":
		return "skipped: " + rec.Skipped
	case rec.Discarded != "":
		return "reply discarded: " + rec.Discarded
	}
	kind := "run"
	if rec.Bootstrap {
		kind = "bootstrap run"
	}
	s := fmt.Sprintf("%s (%s): %d document(s) written, %d refused, %d directive(s)", kind, strings.Join(rec.Reasons, "; "),
		countWritten(rec.Written), len(rec.Refused), len(rec.Directives))
	if rec.Converging && rec.Interval > 0 {
		s += fmt.Sprintf("; converging: every %d completions now", rec.Interval)
	}
	if rec.Summary != "" {
		s += ": " + rec.Summary
	}
	return s
}

func countWritten(ws []knowledge.Written) int {
	n := 0
	for _, w := range ws {
		if w.Change != "" {
			n++
		}
	}
	return n
}

// bootstrap reports whether s has no document in its folders yet (seed
// 003, "Cold Start").
func bootstrap(store *knowledge.Store, s knowledge.Supervisor) bool {
	listed, _ := store.List()
	for _, l := range listed {
		first, _, _ := strings.Cut(l.Path, "/")
		if slices.Contains(s.Folders(), first) {
			return false
		}
	}
	return true
}

// runOne makes one supervisor's run: inputs, one model call and one
// bounded retry after a malformed reply, then its outputs applied. A
// model that cannot be reached or fails is a skipped record; a reply
// malformed twice a discarded one; neither changes the store or the
// board.
func (r *Runner) runOne(ctx context.Context, st *state, s knowledge.Supervisor, reasons []string, batch time.Time, after string) (*Record, error) {
	rec := &Record{Batch: batch, Supervisor: s, Started: r.now().UTC().Truncate(time.Millisecond), Reasons: reasons, After: after,
		Milestones: slices.Clone(st.view.done), Bootstrap: bootstrap(st.store, s)}
	defer func() { rec.Finished = r.now().UTC().Truncate(time.Millisecond) }()
	in := gather(ctx, s, r.Root, r.history(), st.view, st.store, st.set.MaxInputTokens)
	req := llm.UserPrompt(system(s, rec.Bootstrap), in.text(s, reasons, after))
	req.JSON = true
	reply, calls, err := r.ask(ctx, st.cfg, s, batch, req)
	rec.Calls = calls
	switch {
	case errors.Is(err, ErrMalformed):
		rec.Discarded = err.Error()
		return rec, nil
	case err != nil:
		rec.Skipped = err.Error()
		return rec, nil
	}
	rec.Summary = oneLine(reply.Summary, 500)
	rec.Findings = reply.Findings()
	prev := st.lastRec[s]
	var prevFindings []string
	if prev != nil {
		prevFindings = prev.Findings
	}
	rec.Converging = prev != nil && Converging(prevFindings, rec.Findings)
	cur := st.last[s].Interval
	rec.Interval = NextInterval(BaseInterval(s, st.set), cur, rec.Converging)
	if err := r.apply(ctx, st, s, reply, rec); err != nil {
		return rec, err
	}
	return rec, nil
}

// ask makes the call through the gateway (role supervisor), recorded in
// raw.sqlite, with one retry naming the problem after a malformed reply.
func (r *Runner) ask(ctx context.Context, cfg *config.Config, s knowledge.Supervisor, batch time.Time, req llm.Request) (*Reply, int, error) {
	if r.Recorder == nil {
		return nil, 0, errors.New("no recorder: supervisor calls must be recorded")
	}
	gw := llm.NewGateway(llm.NewRouter(cfg, nil), r.Recorder)
	gw.NewClient, gw.Logger = r.NewClient, r.Logger
	id := fmt.Sprintf("supervisor-%s-%s", s, batch.Format("20060102T150405.000"))
	client, _, err := gw.Client(ctx, llm.CallInfo{Kind: llm.KindGeneral, TaskID: id, Type: CallType, Role: llm.RoleSupervisor, Stage: string(s)})
	if err != nil {
		return nil, 0, fmt.Errorf("no supervisor model reachable: %w", err)
	}
	resp, err := client.Complete(ctx, req)
	if err != nil {
		return nil, 1, fmt.Errorf("the supervisor model failed: %w", err)
	}
	reply, perr := ParseReply(s, resp.Text)
	if perr == nil {
		return reply, 1, nil
	}
	if err := llm.MarkMalformed(ctx, client, perr); err != nil {
		return nil, 1, err
	}
	resp, err = client.Complete(ctx, retryRequest(req, resp.Text, perr))
	if err != nil {
		return nil, 2, fmt.Errorf("the supervisor model failed on the retry after a malformed reply (%v): %w", perr, err)
	}
	if reply, err = ParseReply(s, resp.Text); err != nil {
		if merr := llm.MarkMalformed(ctx, client, err); merr != nil {
			return nil, 2, merr
		}
		return nil, 2, fmt.Errorf("malformed twice: %w", err)
	}
	return reply, 2, nil
}

// apply writes a reply's documents and items to the store and its
// directives to the board.
func (r *Runner) apply(ctx context.Context, st *state, s knowledge.Supervisor, reply *Reply, rec *Record) error {
	rep := &Report{}
	write := func(p string, d *knowledge.Doc) {
		w, err := st.store.Put(s, p, d, rec.After)
		if err != nil {
			rec.Refused = append(rec.Refused, fmt.Sprintf("%s: %v", p, err))
			r.event(ctx, rep, string(s), "refused write of "+p+": "+err.Error())
			return
		}
		rec.Written = append(rec.Written, w)
	}
	for _, d := range reply.Documents {
		write(strings.TrimSpace(d.Path), &knowledge.Doc{Title: d.Title, Rules: d.Rules, Good: d.Examples.Good, Bad: d.Examples.Bad, Rationale: d.Rationale})
	}
	for _, it := range reply.Items {
		folder := "lessons"
		if it.Category == "domain" {
			folder = "domain"
		}
		source := it.SourceTask
		if source == "" {
			source = rec.After
		}
		p := path.Join(folder, slug(it.Content)+".md")
		// An item never replaces another's rules: its name carries a hash
		// of its content, so a different item has its own file, and a file
		// there whose rules differ (a hash collision, a person's edit) is
		// left alone.
		if old, _, err := st.store.Read(p); err == nil && strings.TrimSpace(old.Rules) != strings.TrimSpace(it.Content) {
			rec.Refused = append(rec.Refused, fmt.Sprintf("%s: holds another lesson's rules, left as written", p))
			r.event(ctx, rep, string(s), "refused write of "+p+": it holds another lesson's rules")
			continue
		}
		write(p, &knowledge.Doc{Title: oneLine(it.Content, 70), Rules: it.Content,
			Rationale: fmt.Sprintf("Captured by the internaliser from task %s (confidence %s).", source, it.Confidence), NeedsReview: it.NeedsUserReview})
	}
	if len(reply.Directives) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, t := range st.view.pending {
		if t.Kind == board.KindDirective {
			seen[normalize(t.Description)] = true
		}
	}
	milestone := st.view.current()
	for _, d := range reply.Directives {
		if seen[normalize(d.Description)] {
			continue // already on the board
		}
		seen[normalize(d.Description)] = true
		t := board.NewTask(oneLine(d.Description, 120))
		t.Description = strings.TrimSpace(d.Description)
		t.Kind, t.Type, t.Priority, t.Source = board.KindDirective, d.Type, board.Priority(d.Priority), string(s)
		t.Rationale, t.Files, t.Milestone = strings.TrimSpace(d.Rationale), d.Files, milestone
		t.Need = "the directive is carried out, or the final output says why it is already handled"
		added, err := r.Board.Add(ctx, t)
		if err != nil {
			// One directive the board refuses does not undo the run.
			rec.Refused = append(rec.Refused, fmt.Sprintf("directive %q: %v", t.Title, err))
			r.event(ctx, rep, string(s), fmt.Sprintf("refused directive %q: %v", t.Title, err))
			continue
		}
		rec.Directives = append(rec.Directives, added.ID)
		if s == knowledge.Design && d.Type == board.DirectiveFunctional {
			rec.Drift = true
		}
	}
	return nil
}

// slug names an item's file: its first six ASCII words, then a short
// hash of its whole content (the content trimmed), so that two items
// share a file only when they say the same thing. Content without ASCII
// words is named by its hash alone: item-HASH.
func slug(s string) string {
	sum := sha256.Sum256([]byte(strings.TrimSpace(s)))
	hash := hex.EncodeToString(sum[:])[:10]
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		words = append(words, w)
		if len(words) == 6 {
			break
		}
	}
	if len(words) == 0 {
		return "item-" + hash
	}
	return strings.Join(words, "_") + "-" + hash
}

// history is where the reviews are read from: History, or the files.
func (r *Runner) history() verdict.HistoryStore {
	if r.History != nil {
		return r.History
	}
	return verdict.Files{StateDir: r.StateDir}
}
