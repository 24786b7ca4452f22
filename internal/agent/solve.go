package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/edit"
	"github.com/cra-dev/cra/internal/llm"
	"github.com/cra-dev/cra/internal/retrieve"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/validation"
)

// Solver is implement mode's execute stage (seed 001 §8.2): it asks the
// coding model for edit blocks, applies them in the worktree, validates
// them, and retries with the classified failure and its evidence until
// the task is done or MaxAttempts calls were made. A reply naming the
// context it lacks re-enters retrieval through Refine, at most
// MaxRefinementLoops times (§13).
type Solver struct {
	// Model is the coding model's client, recorded by the llm gateway.
	Model    llm.Client
	Worktree *Worktree
	// Validator runs the [validation] commands; nil or empty validates
	// nothing, and TaskResult.Validated says so.
	Validator *validation.Validator
	// Refine re-enters retrieval and returns the new package (seed 001
	// §13): the solver has written the refinement_request to Session, where
	// retrieval reads it. nil disables refinement.
	Refine func(ctx context.Context) (*retrieve.Package, error)
	// Session is the task's session DB: retry_context, attempt_summary
	// (seed 001 §11.2); nil keeps nothing.
	Session *store.SessionDB
	// Log records attempts; nil records nothing.
	Log *RunLog
	// Budget is the execute model's window and reservation (seed 001 §7).
	Budget retrieve.Budget
	// ReplyTokens caps each reply; the budget gate keeps it free.
	ReplyTokens int
	// MaxAttempts and MaxRefinementLoops are required (seed 001 §9.3).
	MaxAttempts        int
	MaxRefinementLoops int
	// Progress gets one line per attempt; nil is silent.
	Progress io.Writer
}

// Input is what a solve run works from.
type Input struct {
	Task string
	// Plan, when set, is followed step by step (seed 001 §8.2).
	Plan *Plan
	// Package is retrieval's context package.
	Package *retrieve.Package
	// Knowledge is the ## PROJECT KNOWLEDGE body; "" leaves it out.
	Knowledge string
}

// maxEvidence bounds the output of one check quoted in a retry prompt.
const maxEvidence = 1500

// Solve runs the retry loop. Its error is for what stops a run outright:
// a model call that failed or was not recorded, the budget gate, I/O. A
// task that is not done after MaxAttempts is a result with Success false.
func (s *Solver) Solve(ctx context.Context, in Input) (*TaskResult, error) {
	switch {
	case s.Model == nil || s.Worktree == nil:
		return nil, errors.New("solve: a model and a worktree are required")
	case s.MaxAttempts < 1:
		return nil, fmt.Errorf("solve: max attempts must be >= 1, got %d", s.MaxAttempts)
	case s.MaxRefinementLoops < 0:
		return nil, fmt.Errorf("solve: max refinement loops must be >= 0, got %d", s.MaxRefinementLoops)
	case s.ReplyTokens <= 0:
		return nil, fmt.Errorf("solve: reply tokens must be > 0, got %d", s.ReplyTokens)
	}
	if err := s.Budget.Validate(); err != nil {
		return nil, err
	}
	res := &TaskResult{Attempts: []AttemptRecord{}, Validated: s.Validator.Configured()}
	pkg := in.Package
	var notes []retryNote
	var asked []string // refinement requests made, to refuse repeats
	for n := 1; n <= s.MaxAttempts; n++ {
		changes := ""
		if len(s.Worktree.Files()) > 0 {
			var err error
			if changes, err = s.Worktree.Diff(ctx); err != nil {
				return res, err
			}
		}
		prompt := newSolvePrompt(in, pkg, changes, notes)
		user, estimate, err := prompt.fit(CodeSystem, s.Budget.ContextWindow, s.ReplyTokens)
		if err != nil {
			return res, fmt.Errorf("attempt %d: %w", n, err)
		}
		if len(prompt.trimmed) > 0 {
			s.progress("attempt %d/%d: budget gate left out %s", n, s.MaxAttempts, summarize(prompt.trimmed))
		}
		req := llm.UserPrompt(CodeSystem, user)
		req.MaxTokens = s.ReplyTokens
		req.ContextWindow = s.Budget.ContextWindow
		resp, callErr := s.Model.Complete(ctx, req)
		a := AttemptRecord{Attempt: n, PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens, EstimatedTokens: estimate,
			Latency: resp.Latency, RawResponse: resp.Text, Trimmed: prompt.trimmed}
		// A reply past the bound was cut unread: a malformed attempt the
		// model is told about, not a failed server.
		tooLarge := errors.Is(callErr, llm.ErrReplyTooLarge)
		if callErr != nil && !tooLarge {
			a.Class, a.Evidence = ClassModelError, callErr.Error()
			res.Attempts = append(res.Attempts, a)
			res.Class, res.Evidence = a.Class, a.Evidence
			if err := s.record(ctx, &a); err != nil {
				return res, errors.Join(callErr, err)
			}
			return res, fmt.Errorf("attempt %d: %w", n, callErr)
		}
		note := retryNote{attempt: n}
		reply, perr := ParseReply(resp.Text)
		switch {
		case tooLarge:
			a.Class = ClassUnparseable
			note.summary = "Your reply was far longer than any answer here needs, and was cut unread."
			note.evidence = "Answer with the edit blocks only: no explanation, no whole files, each SEARCH only as long as it takes to match once."
		case perr != nil:
			a.Class = ClassUnparseable
			note.summary = "Your reply could not be used: " + perr.Error() + "."
			note.evidence = "Your reply began:\n```\n" + head(resp.Text, 400) + "\n```\nAnswer in the edit-block format of the system prompt."
		case reply.Need != nil:
			a.Class, a.Need = ClassInsufficientContext, reply.Need
			key := needKey(*reply.Need)
			switch {
			case s.Refine == nil:
				note.summary = "You asked for more context, but none can be retrieved in this run. Make the change with the context you have."
			case slices.Contains(asked, key):
				note.summary = "You asked for the same context again: retrieval already added what it could find. Make the change with the context you have."
			case len(asked) >= s.MaxRefinementLoops:
				note.summary = fmt.Sprintf("You asked for more context, but the limit of %d refinement(s) is reached. Make the change with the context you have.", s.MaxRefinementLoops)
			default:
				asked = append(asked, key)
				// Seed 001 §13 step 2: the request and the attempts so far go
				// to the session, where retrieval reads them.
				if err := s.setSession(ctx, "refinement_request", reply.Need); err != nil {
					return res, err
				}
				if err := s.setSession(ctx, "attempt_summary", map[string]any{"attempts": notesJSON(append(notes, retryNote{attempt: n, class: a.Class, summary: "asked for context"})), "request": reply.Need}); err != nil {
					return res, err
				}
				s.progress("attempt %d/%d: the model needs context (%s): refining retrieval", n, s.MaxAttempts, describeNeed(*reply.Need))
				newPkg, err := s.Refine(ctx)
				if err != nil {
					res.Attempts = append(res.Attempts, a)
					if rerr := s.record(ctx, &a); rerr != nil {
						return res, errors.Join(err, rerr)
					}
					return res, fmt.Errorf("attempt %d: refine context: %w", n, err)
				}
				pkg = newPkg
				a.Refined = true
				res.Refinements++
				note.summary = fmt.Sprintf("You asked for more context (%s). The CONTEXT section now holds what retrieval found.", describeNeed(*reply.Need))
			}
		default:
			// A block's own failure is a result; an error here is about the
			// worktree itself (gone, its file system full or read-only), and
			// no retry would mend it.
			blocks, err := s.Worktree.Apply(ctx, reply.Edits)
			if err != nil {
				a.Blocks = blocks
				return res, s.stop(ctx, res, &a, fmt.Errorf("attempt %d: %w", n, err))
			}
			a.Blocks = blocks
			failed, fresh := 0, 0
			for _, b := range blocks {
				switch b.Status {
				case edit.StatusFailed:
					failed++
				case edit.StatusApplied, edit.StatusCreated:
					fresh++
				}
			}
			if failed > 0 {
				a.Class = ClassApply
				note.summary = fmt.Sprintf("%d of %d edit blocks applied; %d failed. Send again only the blocks that failed, corrected.", len(blocks)-failed, len(blocks), failed)
				note.evidence = blockReport(blocks)
				break
			}
			a.PatchApplied = true
			if !s.Validator.Configured() {
				break
			}
			v, err := s.Validator.Run(ctx, s.Worktree.Root)
			if err != nil {
				return res, s.stop(ctx, res, &a, fmt.Errorf("attempt %d: %w", n, err))
			}
			a.Validation = v
			if v.Success {
				break
			}
			a.Class = v.FirstFailure()
			note.summary, note.evidence = validationReport(v, fresh == 0)
		}
		a.Evidence = strings.TrimSpace(note.summary + "\n" + note.evidence)
		if a.Class == "" {
			a.Evidence = ""
		}
		res.Attempts = append(res.Attempts, a)
		if err := s.record(ctx, &a); err != nil {
			return res, err
		}
		if a.Class == "" {
			s.progress("attempt %d/%d: %s", n, s.MaxAttempts, successLine(&a))
			res.Success = true
			break
		}
		s.progress("attempt %d/%d: %s: %s", n, s.MaxAttempts, a.Class, FirstLine(note.summary, 160))
		note.class = a.Class
		notes = append(notes, note)
		res.Class, res.Evidence = a.Class, a.Evidence
		if err := s.setSession(ctx, "retry_context", notesJSON(notes)); err != nil {
			return res, err
		}
	}
	if res.Success {
		res.Class, res.Evidence = "", ""
	}
	res.Files = s.Worktree.Files()
	if len(res.Files) > 0 {
		diff, err := s.Worktree.Diff(ctx)
		if err != nil {
			return res, err
		}
		res.Diff = diff
	}
	return res, nil
}

// stop records attempt a, whose reply was made but whose edits or
// validation met err, so the reply is not lost with the run; it returns
// err, joined with the recording's own error. An interrupted run records
// it too.
func (s *Solver) stop(ctx context.Context, res *TaskResult, a *AttemptRecord, err error) error {
	res.Attempts = append(res.Attempts, *a)
	if rerr := s.record(context.WithoutCancel(ctx), a); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

func (s *Solver) record(ctx context.Context, a *AttemptRecord) error {
	if s.Log == nil {
		return nil
	}
	return s.Log.Attempt(ctx, a)
}

func (s *Solver) setSession(ctx context.Context, key string, v any) error {
	if s.Session == nil {
		return nil
	}
	return s.Session.Set(ctx, key, v)
}

func (s *Solver) progress(format string, args ...any) {
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, format+"\n", args...)
	}
}

func successLine(a *AttemptRecord) string {
	n := 0
	for _, b := range a.Blocks {
		if b.Status != edit.StatusAlreadyApplied {
			n++
		}
	}
	if a.Validation == nil {
		return fmt.Sprintf("%d edit block(s) applied (not validated)", n)
	}
	var names []string
	for _, c := range a.Validation.Checks {
		names = append(names, c.Name)
	}
	return fmt.Sprintf("%d edit block(s) applied; %s pass", n, strings.Join(names, ", "))
}

// notesJSON is the retry context as the session keeps it (seed 001
// §11.2 retry_context).
func notesJSON(notes []retryNote) []map[string]any {
	out := make([]map[string]any, len(notes))
	for i, n := range notes {
		out[i] = map[string]any{"attempt": n.attempt, "class": n.class, "summary": n.summary, "evidence": n.evidence}
	}
	return out
}

// blockReport tells the model what became of each block, so applied ones
// are not sent again.
func blockReport(blocks []edit.Result) string {
	var b strings.Builder
	for _, r := range blocks {
		switch r.Status {
		case edit.StatusFailed:
			fmt.Fprintf(&b, "- block %d (%s): FAILED. %s\n", r.Block, r.Path, r.Message)
		case edit.StatusAlreadyApplied:
			fmt.Fprintf(&b, "- block %d (%s): already in the file; do not send it again\n", r.Block, r.Path)
		default:
			fmt.Fprintf(&b, "- block %d (%s): %s; do not send it again\n", r.Block, r.Path, r.Status)
		}
	}
	return b.String()
}

// validationReport is the summary and evidence of a failed validation.
func validationReport(v *validation.Result, nothingNew bool) (string, string) {
	var summary strings.Builder
	if nothingNew {
		summary.WriteString("Your edits were already in the files, and ")
	} else {
		summary.WriteString("The edits applied, but ")
	}
	// A check killed at its timeout says so: "test failed" would send the
	// model looking for a wrong assertion, not for a loop or a wait.
	var failed, phrases []string
	var evidence strings.Builder
	for _, c := range v.Checks {
		if c.Passed {
			continue
		}
		status := fmt.Sprintf("exit status %d", c.ExitCode)
		if c.TimedOut {
			after := timedOut(c.Timeout)
			phrases = append(phrases, c.Name+" "+after)
			status = after + ": killed"
		} else {
			failed = append(failed, c.Name)
		}
		fmt.Fprintf(&evidence, "Output of %s (`%s`, %s), last lines:\n```\n%s\n```\n", c.Name, c.Command, status, tail(c.Output, maxEvidence))
	}
	if len(failed) > 0 {
		phrases = append(phrases, strings.Join(failed, " and ")+" failed")
	}
	summary.WriteString(strings.Join(phrases, " and ") + ".")
	if len(v.FailingTests) > 0 {
		names := v.FailingTests
		more := ""
		if len(names) > 10 {
			names, more = names[:10], fmt.Sprintf(" and %d more", len(v.FailingTests)-10)
		}
		fmt.Fprintf(&summary, " Failing tests: %s%s.", strings.Join(names, ", "), more)
	}
	return summary.String(), evidence.String()
}

// timedOut is "timed out after 5s", the bound written short: "10m", not
// "10m0s"; "timed out" when the bound is unknown.
func timedOut(d time.Duration) string {
	if d <= 0 {
		return "timed out"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return "timed out after " + s
}

// needKey identifies a refinement request, to refuse a repeat.
func needKey(r retrieve.RefinementRequest) string {
	k := struct{ F, S, T, E []string }{slices.Sorted(slices.Values(r.MissingFiles)), slices.Sorted(slices.Values(r.MissingSymbols)),
		slices.Sorted(slices.Values(r.MissingTests)), slices.Sorted(slices.Values(r.ErrorSignatures))}
	data, _ := json.Marshal(k) // strings only: cannot fail
	return string(data)
}

func describeNeed(r retrieve.RefinementRequest) string {
	var parts []string
	for _, l := range []struct {
		name  string
		items []string
	}{{"files", r.MissingFiles}, {"symbols", r.MissingSymbols}, {"tests", r.MissingTests}, {"errors", r.ErrorSignatures}} {
		if len(l.items) > 0 {
			parts = append(parts, l.name+": "+FirstLine(strings.Join(l.items, ", "), 120))
		}
	}
	return strings.Join(parts, "; ")
}

func summarize(items []string) string {
	if len(items) <= 3 {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:3], ", "), len(items)-3)
}

// head returns about the first n bytes of s, at a line end when one is
// near.
func head(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	if i := strings.LastIndexByte(s[:n], '\n'); i > n/2 {
		cut = i
	}
	return strings.ToValidUTF8(s[:cut], "") + "\n…"
}

// tail returns about the last n bytes of s, from a line start when one is
// near.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < n/2 {
		cut += i + 1
	}
	return "…\n" + strings.ToValidUTF8(s[cut:], "")
}
