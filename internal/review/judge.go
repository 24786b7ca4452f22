package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/validation"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// review judges task t's last run, which left it in folder, and carries
// out the verdict.
func (r *Recycler) review(ctx context.Context, cfg *config.Config, t *board.Task, folder board.Folder) (*Review, error) {
	set := cfg.RecyclerSettings()
	res := t.Results
	if res == nil {
		res = &board.Results{}
	}
	rv := &Review{Time: r.now().UTC().Truncate(time.Millisecond), TaskID: t.ID, Run: t.Runs, Folder: string(folder),
		Before: Streaks{Completion: t.ConsecutiveCompletionClaims, Failure: t.ConsecutiveFailures}}
	runFailed := folder == board.Failed
	ev, evText, err := r.collect(ctx, cfg, t, res, runFailed)
	if err != nil {
		return nil, err
	}
	if ev != nil {
		rv.Blockers = ev.Blockers(t.NoChange)
		rv.Unverified = unverified(ev, t, set)
		rv.Evidence, _ = json.Marshal(storedEvidence(ev))
	} else {
		rv.Blockers = []string{"the evidence could not be collected: " + evText}
	}
	// A person may have answered while the run went or waited for this
	// review: the model sees the answer, and the next run reads it.
	history, err := r.Board.History(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	var since board.Prompt
	since.FromLog(history)
	var reply Reply
	wait := false // the model gave no review: the run waits for it
	switch strings.TrimSpace(res.Output) {
	case "":
		rv.Fallback = "the run left no output"
	default:
		subject := Subject{Title: t.Title, Description: t.Description, Need: t.Need, NoChange: t.NoChange,
			Run: t.Runs, Folder: string(folder), Evidence: evText,
			Blockers: append(append([]string(nil), rv.Blockers...), rv.Unverified...), PreviousNote: t.Notes, Answers: since.Answers,
			OutputTail: res.Output, OutputHead: r.outputHead(t, res)}
		var calls int
		reply, calls, err = r.ask(ctx, cfg, subject, board.RunTaskID(t.ID, t.Runs))
		rv.Calls = calls
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // stopped, not a model error
			}
			rv.Fallback = err.Error()
			var me *modelError
			if errors.As(err, &me) {
				rv.Malformed = me.malformed
				wait = !me.malformed || r.malformedWaits(ctx, t) < maxMalformedWaits
			}
		}
	}
	r.countModel(rv, set)
	if wait {
		return r.wait(ctx, rv)
	}
	if rv.Fallback != "" {
		rv.Classification = Uncertain
		rv.Note = conservativeNote(rv, evText, t.Notes)
	} else {
		rv.Model, rv.Criteria, rv.Need, rv.Note = reply.Classification, reply.Criteria, reply.Need, reply.Note
		rv.Classification, rv.Lowered = Gate(reply.Classification, reply.Criteria, strings.TrimSpace(t.Need) != "", rv.Blockers, rv.Unverified)
		if len(rv.Lowered) > 0 {
			lead := "Not complete, whatever the run claimed: "
			if rv.Classification == SignificantProgress {
				lead = "Not verified, whatever the run claimed: "
			}
			rv.Note.Remaining = strings.TrimSpace(lead + strings.Join(rv.Lowered, "; ") + ".\n" + rv.Note.Remaining)
			// What the run claimed about the state and the evidence is
			// replaced by the harness's own lines: the next prompt quotes
			// the note, and must not carry the claim the evidence refuted
			// (issue 30 item 5).
			rv.Note.Status = "The harness found: " + strings.Join(rv.Lowered, "; ") + "."
			rv.Note.Evidence = harnessEvidence(ev)
			rv.Note.Fit()
		}
	}
	if rv.Need != "" && len(since.Answers) > 0 {
		// What the model would ask a person for, a person has answered
		// meanwhile: the next run has the answer, and no one is asked
		// twice.
		rv.Note.Remaining = strings.TrimSpace(fmt.Sprintf("Asked of a person (%s), who answered: %s.\n%s",
			clipRunes(rv.Need, 200), clipRunes(since.Answers[len(since.Answers)-1], 300), rv.Note.Remaining))
		rv.Note.Fit()
		rv.Need = ""
	}
	rv.After = NextStreaks(rv.Before, rv.Classification, runFailed || rv.Fallback != "" || len(rv.Lowered) > 0)
	// A type the recycler recycles needs completion_threshold complete
	// reviews in a row; any other is verified on its first (issue 30: a
	// finished task does not run twice more to confirm itself).
	completion := 1
	if set.EnabledFor.Matches(t.Type) {
		completion = set.CompletionThreshold
	}
	rv.Action = Decide(rv.After, Thresholds{Completion: completion, Failure: set.FailureThreshold}, rv.Need)
	d := board.Decision{ID: t.ID, From: folder, Runs: t.Runs}
	switch rv.Action {
	case Finalize:
		d.Status = world.StatusVerified
		d.Output = fmt.Sprintf("verified: %d complete reviews in a row: %s", rv.After.Completion, clipRunes(rv.Note.Accomplished, 200))
	case Block:
		d.Status = world.StatusFailed
		if rv.Need != "" {
			d.Output = "needs a person: " + clipRunes(rv.Note.Remaining, 200)
			d.Need = rv.Need
		} else if rv.Classification == SignificantProgress && len(rv.Unverified) > 0 && !runFailed {
			d.Output = fmt.Sprintf("blocked: %d claims of completion in a row that nothing could check: %s", rv.After.Failure, clipRunes(strings.Join(rv.Unverified, "; "), 200))
			d.Need = fmt.Sprintf("nothing checks this task's work: add a [validation] command to .clean_room/config.toml (or set [recycler] allow_unvalidated = true) and answer (cra answer %s '…'), or check branch %s%s yourself", t.ID, board.BranchPrefix, t.ID)
		} else {
			d.Output = fmt.Sprintf("blocked: %d runs in a row failed, could not be judged or claimed a completion the evidence refuted: %s", rv.After.Failure, clipRunes(rv.Note.Remaining, 200))
			d.Need = fmt.Sprintf("read the note (cra task show %s), fix the cause or tell the agent how: cra answer %s '…'", t.ID, t.ID)
		}
	default:
		d.Status = world.StatusRetry
		d.Output = guidance(rv)
	}
	rv.Entry = d.Output
	d.Review = reviewLine(rv)
	d.Update = func(t *board.Task) {
		t.Notes = rv.Note.String()
		t.ConsecutiveCompletionClaims, t.ConsecutiveFailures = rv.After.Completion, rv.After.Failure
		if t.Results == nil {
			t.Results = &board.Results{}
		}
		t.Results.Classification = string(rv.Classification)
		t.Results.Validation = validationSummary(ev)
	}
	// The review is kept before it is carried out (DESIGN.md principle
	// 5): a crash in between leaves it in the history, the move undone,
	// and the next tick reviews the run again.
	if err := r.appendHistory(ctx, rv); err != nil {
		return nil, err
	}
	if _, _, err := r.Board.Decide(ctx, d); err != nil {
		w := &Review{Time: r.now().UTC().Truncate(time.Millisecond), TaskID: t.ID, Run: t.Runs, Folder: string(folder), Withdrawn: err.Error()}
		if herr := r.appendHistory(ctx, w); herr != nil {
			r.say("warning: %v", herr)
		}
		return nil, err
	}
	r.say("reviewed %s run %d: %s → %s (streaks %d/%d)", t.ID, t.Runs, rv.Classification, rv.Action, rv.After.Completion, rv.After.Failure)
	return rv, nil
}

// collect gathers the evidence of t's last run: its text, and the
// evidence itself (nil, with the reason as text, when it cannot be had).
func (r *Recycler) collect(ctx context.Context, cfg *config.Config, t *board.Task, res *board.Results, runFailed bool) (*evidence.Evidence, string, error) {
	if r.Fetch != nil {
		if err := r.Fetch(ctx, t.ID); err != nil {
			if errors.Is(err, board.ErrBranchAway) {
				// The run's work is on a remote that cannot be read
				// now: the review waits (the task stays, held, and is
				// tried again), as nothing says the run failed.
				return nil, "", err
			}
			if errors.Is(err, board.ErrForeignBranch) {
				// The branch is not the run's (DESIGN.md, "Trust"):
				// nothing on it is validated or shown to the model as
				// the run's work, and the review does not pass.
				return nil, err.Error(), nil
			}
			r.say("warning: review of %s: %v", t.ID, err)
		}
	}
	top, prefix, err := gitx.TopLevel(ctx, r.Root)
	if err != nil {
		return nil, err.Error(), nil
	}
	in := evidence.Input{
		Repo: top, Branch: board.BranchPrefix + t.ID,
		Worktree: statedir.At(r.StateDir).Worktree(t.ID), Subdir: prefix,
		Validator: validation.FromConfig(cfg), ExitCode: res.ExitCode, TimedOut: res.TimedOut, RunFailed: runFailed,
		Output: res.Output, TestsMayChange: t.TestsMayChange, TaskText: t.Title + "\n" + t.Description + "\n" + t.Need,
		BaseCache: statedir.At(r.StateDir).ValidationBases(), Unset: cfg.SecretEnv(),
	}
	if v := cfg.Validation; v != nil {
		in.Protected = v.Protected
	}
	if in.Sandbox, err = r.sandbox(cfg); err != nil {
		return nil, err.Error(), nil
	}
	ev, err := evidence.Collect(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, err.Error(), nil
	}
	return ev, ev.Text(), nil
}

// sandbox is how the validation that decides a verdict is confined:
// through cra itself (Executable) as the launcher, writing its checkout,
// its temp directory and [validation] caches; or, with [board] sandbox =
// "off", unconfined.
func (r *Recycler) sandbox(cfg *config.Config) (evidence.Sandbox, error) {
	if cfg.SandboxOff() {
		return evidence.Sandbox{Off: true}, nil
	}
	var sb evidence.Sandbox
	if v := cfg.Validation; v != nil {
		for _, dir := range v.Caches {
			d, err := config.ExpandCache(dir)
			if err != nil {
				return sb, fmt.Errorf("validation.caches: %w", err)
			}
			if err := os.MkdirAll(d, 0o755); err != nil {
				return sb, fmt.Errorf("validation.caches: %w", err)
			}
			sb.Caches = append(sb.Caches, d)
		}
	}
	exe := r.Executable
	if exe == "" {
		exe, _ = os.Executable()
	}
	if exe != "" {
		sb.Wrap = func(cmd *exec.Cmd, write []string) error {
			return sandbox.Wrap(cmd, exe, sandbox.Spec{Write: write})
		}
	}
	return sb, nil
}

// unverified says why nothing checked t's work, or nil (DESIGN.md, "Trust": no validation, no full_complete):
// no [validation] command is configured, and neither does the task
// change nothing (--no-change) nor does [recycler] allow_unvalidated let
// the model's word stand.
func unverified(ev *evidence.Evidence, t *board.Task, set config.RecyclerSettings) []string {
	if ev == nil || ev.ValidationConfigured || t.NoChange || set.AllowUnvalidated {
		return nil
	}
	return []string{"no [validation] command is configured, so nothing but the model's word says the work is done " +
		"(set [validation] test in .clean_room/config.toml, or [recycler] allow_unvalidated = true to let that word stand)"}
}

// maxCheckOutput caps each validation check's output in the stored
// review: its tail, where the failures are.
const maxCheckOutput = 4096

// storedEvidence is ev with each check's output cut to its tail, for the
// review history (a check keeps up to 256 KiB).
func storedEvidence(ev *evidence.Evidence) *evidence.Evidence {
	if ev.Validation == nil {
		return ev
	}
	c := *ev
	v := *ev.Validation
	v.Checks = append([]validation.CheckResult(nil), v.Checks...)
	for i := range v.Checks {
		if out := v.Checks[i].Output; len(out) > maxCheckOutput {
			v.Checks[i].Output = strings.ToValidUTF8(out[len(out)-maxCheckOutput:], "")
		}
	}
	c.Validation = &v
	return &c
}

func validationSummary(ev *evidence.Evidence) string {
	if ev == nil || ev.Validation == nil {
		return ""
	}
	var parts []string
	for _, c := range ev.Validation.Checks {
		s := "passed"
		switch {
		case c.TimedOut:
			s = "timed out"
		case !c.Passed:
			s = fmt.Sprintf("failed (exit %d)", c.ExitCode)
		}
		parts = append(parts, c.Name+" "+s)
	}
	return strings.Join(parts, ", ")
}

// outputHead returns the start of the run's log when the stored tail does
// not reach back to it: how the run began says what it set out to do.
func (r *Recycler) outputHead(t *board.Task, res *board.Results) string {
	if len(res.Output) < board.MaxOutput {
		return "" // the tail is the whole output
	}
	f, err := os.Open(statedir.At(r.StateDir).Run(t.ID).Log(t.Runs))
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	return strings.ToValidUTF8(string(buf[:n]), "")
}

// ask makes the review call: one request, and after a malformed reply one
// more with the problem named. Every call is recorded in raw.sqlite under
// runID. It returns the parsed reply and the calls made, or the error
// that sends the review to its fallback.
func (r *Recycler) ask(ctx context.Context, cfg *config.Config, s Subject, runID string) (Reply, int, error) {
	gw := llm.NewGateway(llm.NewRouter(cfg, nil), r.Recorder)
	gw.NewClient, gw.Logger = r.NewClient, r.Logger
	client, _, err := gw.Client(ctx, llm.CallInfo{Kind: llm.KindGeneral, TaskID: runID, Type: CallReview, Role: llm.RoleSummarizer})
	if err != nil {
		return Reply{}, 0, &modelError{err: fmt.Errorf("the model could not be reached: %w", err)}
	}
	req := Prompt(s)
	resp, err := client.Complete(ctx, req)
	if err != nil {
		return Reply{}, 1, &modelError{err: fmt.Errorf("the model failed: %w", err)}
	}
	reply, perr := ParseReply(resp.Text)
	if perr == nil {
		return reply, 1, nil
	}
	if err := llm.MarkMalformed(ctx, client, perr); err != nil {
		return Reply{}, 1, &modelError{err: err}
	}
	resp, err = client.Complete(ctx, retryPrompt(req, resp.Text, perr))
	if err != nil {
		return Reply{}, 2, &modelError{err: fmt.Errorf("the model failed on the retry after a malformed reply (%v): %w", perr, err)}
	}
	reply, err = ParseReply(resp.Text)
	if err != nil {
		if merr := llm.MarkMalformed(ctx, client, err); merr != nil {
			return Reply{}, 2, &modelError{err: merr}
		}
		return Reply{}, 2, &modelError{err: fmt.Errorf("the reply was malformed twice: %w", err), malformed: true}
	}
	return reply, 2, nil
}

// modelError is a review the model could not make: the review waits
// for the model (Wait). One that could not reach the model counts towards
// the circuit breaker; malformed says the model answered, out of format.
type modelError struct {
	err       error
	malformed bool
}

func (e *modelError) Error() string { return e.err.Error() }
func (e *modelError) Unwrap() error { return e.err }

// maxMalformedWaits bounds the reviews of one run that wait because the
// model's reply broke the format twice: the next one falls back to the
// conservative note, which counts a failure. The model answered, so the
// run's own output (a prompt injection, say) may be what keeps it from
// answering in the format, and waiting for ever would let a run hold its
// review off.
const maxMalformedWaits = 2

// malformedWaits counts the reviews of t's last run that waited, in a
// row, on a malformed reply.
func (r *Recycler) malformedWaits(ctx context.Context, t *board.Task) int {
	hist, _, err := verdict.ReadHistory(ctx, r.history(), t.ID)
	if err != nil {
		return 0
	}
	n := 0
	for i := len(hist) - 1; i >= 0 && hist[i].Run == t.Runs && hist[i].Action == Wait; i-- {
		if hist[i].Malformed {
			n++
		}
	}
	return n
}

// wait is the end of a review the model could not give (DESIGN.md: a
// review the model could not give counts nothing and moves nothing): the
// task stays where its run left it, no streak moves, nothing is logged
// but the review history's record, and the run is reviewed again on a
// later tick, when the model is back.
func (r *Recycler) wait(ctx context.Context, rv *Review) (*Review, error) {
	rv.Action, rv.Classification, rv.After = Wait, "", rv.Before
	if err := r.appendHistory(ctx, rv); err != nil {
		return nil, err
	}
	r.say("review of %s run %d waits for the model: %s (it stays in %s; nothing counted)", rv.TaskID, rv.Run, clipRunes(rv.Fallback, 200), rv.Folder)
	return rv, nil
}

// countModel keeps the breaker's count in .clean_room/ (breaker): a
// review that could not reach the model adds one, a reply from it (even
// one out of format) resets it; at breaker_after in a row the recycler
// pauses for breaker_cooldown, and says so in the log.
func (r *Recycler) countModel(rv *Review, set config.RecyclerSettings) {
	if rv.Calls == 0 {
		return // no model call: nothing learned of the model
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	b, err := readBreaker(r.StateDir, now, set.BreakerCooldown)
	if err != nil {
		r.say("warning: %v", err)
	}
	if rv.Fallback == "" || rv.Malformed {
		if b.Errors == 0 {
			return
		}
		b.Errors = 0
	} else if b.Errors++; b.Errors >= set.BreakerAfter {
		b.Errors, b.PausedUntil = 0, now.Add(set.BreakerCooldown).UTC()
		msg := fmt.Sprintf("recycler paused for %s after %d model errors in a row: %s", set.BreakerCooldown, set.BreakerAfter, clipRunes(rv.Fallback, 200))
		if _, err := r.Board.Log.Event(context.WithoutCancel(context.Background()), world.SourceSystem, "recycler", msg); err != nil && r.Logger != nil {
			r.Logger.Warn("log the pause", "err", err)
		}
		r.say("warning: %s", msg)
	}
	if err := b.save(r.StateDir); err != nil {
		r.say("warning: %v", err)
	}
}

// conservativeNote is seed 004's fallback: "Not sure current status",
// with what the harness knows filled in, and the previous note's next
// actions kept.
func conservativeNote(rv *Review, evText, previous string) Note {
	n := Note{
		Accomplished: "Not sure current status.",
		Status:       "Not reviewed: " + rv.Fallback + ".",
		Remaining:    "Unknown.",
		Next:         "Continue the task; check the evidence below.",
		Evidence:     strings.TrimSpace(evText),
	}
	if len(rv.Blockers) > 0 {
		n.Remaining = strings.Join(rv.Blockers, "; ") + "."
	}
	if prev, err := parseNote(strings.Split(previous, "\n")); err == nil && prev.Next != "None." {
		n.Next = prev.Next
	}
	if n.Evidence == "" {
		n.Evidence = "None."
	}
	n.Fit()
	return n
}

// reviewLine is the [event:review] line the recycler logs before its
// verdict: the run, the final classification (and the model's, when the
// evidence lowered it) and what was done.
func reviewLine(rv *Review) string {
	s := fmt.Sprintf("review of run %d: %s", rv.Run, rv.Classification)
	if len(rv.Lowered) > 0 {
		s += fmt.Sprintf(" (the model said %s: %s)", rv.Model, clipRunes(strings.Join(rv.Lowered, "; "), 200))
	}
	if rv.Fallback != "" {
		s += " (not reviewed by the model: " + clipRunes(rv.Fallback, 200) + ")"
	}
	return s + fmt.Sprintf(", then %s (streaks %d/%d)", rv.Action, rv.After.Completion, rv.After.Failure)
}

// harnessEvidence is the Validation evidence section of a note whose
// verdict the evidence lowered: each check as the harness ran it, and the
// tail of each failing check's output, which the next run reads.
func harnessEvidence(ev *evidence.Evidence) string {
	if ev == nil || ev.Validation == nil || len(ev.Validation.Checks) == 0 {
		if ev != nil && ev.ValidationSkipped != "" {
			return "Validation did not run: " + ev.ValidationSkipped
		}
		return "No validation ran."
	}
	var b strings.Builder
	for _, c := range ev.Validation.Checks {
		if c.Passed {
			fmt.Fprintf(&b, "%s passed (%s)\n", c.Name, c.Command)
			continue
		}
		how := fmt.Sprintf("exit %d", c.ExitCode)
		if c.TimedOut {
			how = "timed out"
		}
		fmt.Fprintf(&b, "%s failed, %s (%s); the end of its output:\n", c.Name, how, c.Command)
		for _, line := range lastLines(c.Output, 15) {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, clipRunes(l, 300))
		}
	}
	return out[max(len(out)-n, 0):]
}

// guidance is the output of a retry entry: the note's next actions, on
// one line. A run judged complete that goes back to pending (a recycled
// type short of its streak) is told it is a confirmation run.
func guidance(rv *Review) string {
	g := clipRunes(rv.Note.Next, 300)
	if rv.Fallback != "" {
		return "not sure current status (" + clipRunes(rv.Fallback, 120) + "): " + g
	}
	if rv.Classification == FullComplete {
		return Confirmation
	}
	if isNone(g) {
		// "None" is no guidance: say what the review found instead.
		switch {
		case len(rv.Lowered) > 0:
			g = "the evidence refuted the claim of completion: make the failing checks in the latest note's Validation evidence pass"
		default:
			g = "go on toward Done when; the latest note says where the work stands"
		}
	}
	return string(rv.Classification) + ": " + g
}

// Confirmation is the guidance of a run after a review that judged the
// work complete, which a recycled type needs more of.
const Confirmation = "confirmation run: the last run was judged complete (see the latest note). Check the work against Done when and change nothing unless something is wrong: a run that changes nothing and says the work holds confirms it"
