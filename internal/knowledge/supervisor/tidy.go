package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/lazyre"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/verdict"
	"github.com/cra-dev/cra/internal/world"
)

// cleanup reports whether t is a cleanup directive (as the board's Order
// places it).
func cleanup(t *board.Task) bool {
	return t.Kind == board.KindDirective && t.Priority != board.Critical &&
		(t.Type == board.DirectiveCleanup || t.Type == "" && t.Priority == board.Low)
}

// tidy drops aged and surplus cleanup directives, ends the polish phase
// of milestones at their limit, and promotes documents used without a
// failure. It reads the state afresh: a batch may have changed it.
func (r *Runner) tidy(ctx context.Context, rep *Report) error {
	st, err := r.read(ctx)
	if err != nil {
		return err
	}
	var vt []time.Time
	for _, s := range st.signals {
		if s.Kind == Verdict {
			vt = append(vt, s.Time)
		}
	}
	var aging []Aging
	byID := map[string]*board.Task{}
	for _, t := range st.view.pending {
		if cleanup(t) {
			aging = append(aging, Aging{ID: t.ID, Created: t.CreatedAt, Picked: t.Runs > 0})
			byID[t.ID] = t
		}
	}
	drops := Drops(aging, vt, st.set.DirectiveMaxAge, st.set.MaxCleanupDirectives)
	// The polish phase (seed 003): in a milestone whose planned tasks are
	// all verified, at most polish_limit cleanup directives run; then the
	// milestone is done and the rest are dropped.
	for _, m := range st.view.done {
		ran := 0
		for _, t := range st.view.all {
			if cleanup(t) && t.Milestone == m && t.Runs > 0 && st.view.folder[t.ID].Terminal() {
				ran++
			}
		}
		if ran < st.set.PolishLimit {
			continue
		}
		n := 0
		for _, t := range st.view.pending {
			if cleanup(t) && t.Milestone == m && drops[t.ID] == "" {
				drops[t.ID] = fmt.Sprintf("the polish phase of milestone %s ran its %d cleanup directives", m, st.set.PolishLimit)
				byID[t.ID] = t
				n++
			}
		}
		if n > 0 {
			rep.Polished = append(rep.Polished, m)
			r.event(ctx, rep, "polish", fmt.Sprintf("milestone %s done: %d cleanup directives ran in its polish phase, %d dropped", m, ran, n))
		}
	}
	ids := make([]string, 0, len(drops))
	for id := range drops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := r.drop(ctx, byID[id], drops[id]); err != nil {
			if errors.Is(err, board.ErrChanged) {
				continue // picked up meanwhile
			}
			r.warn(rep, "drop directive %s: %v", id, err)
			continue
		}
		if rep.Dropped == nil {
			rep.Dropped = map[string]string{}
		}
		rep.Dropped[id] = drops[id]
		r.say("dropped directive %s: %s", id, drops[id])
	}
	promoted, err := r.promote(ctx, st, rep)
	rep.Promoted = promoted
	return err
}

// drop ends a pending directive with one entry,
// [agent:failed][id] dropped: WHY; directive: TITLE; description: …,
// that holds its whole text (nothing is lost, and the log escapes what
// a line cannot hold); the file then follows to failed-blocked with
// processor_auto_requeue false, so that a rebuild agrees and a person can
// still bring it back ('cra task move ID pending'). failed is the one
// settling status the log allows from start and retry (world.Next).
//
// The text goes in that entry, not in an event before it: board.Decide
// writes the entry only once it has checked, under the board's lock,
// that the directive is still pending and has not run. One picked up
// meanwhile (board.ErrChanged) leaves no line claiming it was dropped.
func (r *Runner) drop(ctx context.Context, t *board.Task, why string) error {
	_, _, err := r.Board.Decide(ctx, board.Decision{ID: t.ID, From: board.Pending, Runs: t.Runs, Status: world.StatusFailed,
		Output: DroppedPrefix + why + "; " + droppedText(t),
		Need:   "nothing, unless you want it after all: cra task move " + t.ID + " pending"})
	return err
}

// droppedText is a dropped directive's whole text, as its failed entry
// keeps it.
func droppedText(t *board.Task) string {
	text := "directive: " + t.Title
	if d := strings.TrimSpace(t.Description); d != "" && d != t.Title {
		text += "; description: " + d
	}
	if t.Rationale != "" {
		text += "; rationale: " + t.Rationale
	}
	if len(t.Files) > 0 {
		text += "; files: " + strings.Join(t.Files, ", ")
	}
	return text + fmt.Sprintf("; type %s, priority %s, from %s", t.Type, t.Priority, t.Source)
}

// knowledgeHeading is a document's heading in a prompt's PROJECT
// KNOWLEDGE section (knowledge.Load).
var knowledgeHeading = lazyre.New(`^### (\S+\.md)\s*$`)

var promptFile = lazyre.New(`^prompt-([0-9]+)\.md$`)

// Use is what the runs say of one provisional document.
type Use struct {
	Path string `json:"path"`
	// Tasks are the tasks verified after a run whose prompt held the
	// document; Failures the runs with it that ended blocked.
	Tasks    []string `json:"tasks,omitempty"`
	Failures []string `json:"failures,omitempty"`
}

// Usage reads which documents each run's prompt held (the PROJECT
// KNOWLEDGE section of runs/<id>/prompt-N.md) and how the run ended
// (its review: verified counts as a use without failure, blocked as a
// failure), for the documents in paths, counting only prompts written
// after the document last changed.
func Usage(stateDir, root string, paths []string) (map[string]*Use, error) {
	out := map[string]*Use{}
	since := map[string]int64{}
	for _, p := range paths {
		out[p] = &Use{Path: p}
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(knowledge.Dir), filepath.FromSlash(p))); err == nil {
			since[p] = fi.ModTime().UnixNano()
		}
	}
	oldest := int64(0)
	for _, t := range since {
		if oldest == 0 || t < oldest {
			oldest = t
		}
	}
	sd := statedir.At(stateDir)
	runs := sd.Runs()
	ents, err := os.ReadDir(runs)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the runs: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || board.CheckID(e.Name()) != nil {
			continue
		}
		// A run directory untouched since the oldest document changed
		// holds no prompt written after it.
		if fi, err := e.Info(); err != nil || fi.ModTime().UnixNano() < oldest {
			continue
		}
		id := e.Name()
		hist, _, _ := verdict.History(stateDir, id)
		ended := map[int]verdict.Action{}
		for _, rv := range hist {
			ended[rv.Run] = rv.Action
		}
		files, _ := os.ReadDir(sd.Run(id).Path())
		for _, f := range files {
			m := promptFile().FindStringSubmatch(f.Name())
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			action := ended[n]
			if action != verdict.Finalize && action != verdict.Block {
				continue
			}
			fi, err := f.Info()
			if err != nil {
				continue
			}
			data, err := os.ReadFile(sd.Run(id).File(f.Name()))
			if err != nil {
				continue
			}
			for _, p := range promptDocs(string(data)) {
				u := out[p]
				if u == nil || fi.ModTime().UnixNano() < since[p] {
					continue
				}
				if action == verdict.Finalize && !slices.Contains(u.Tasks, id) {
					u.Tasks = append(u.Tasks, id)
				}
				if action == verdict.Block {
					u.Failures = append(u.Failures, fmt.Sprintf("%s run %d", id, n))
				}
			}
		}
	}
	return out, nil
}

// promptDocs returns the documents under a prompt file's PROJECT
// KNOWLEDGE section.
func promptDocs(text string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			in = strings.TrimSpace(l) == "## PROJECT KNOWLEDGE"
		case in:
			if m := knowledgeHeading().FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// Promotable reports whether a provisional document's use makes it
// established: n tasks or more used it, and no run with it failed.
func Promotable(u *Use, n int) bool { return u != nil && len(u.Failures) == 0 && len(u.Tasks) >= n }

// promote makes established each provisional document that
// establish_after tasks used without a failure (seed 003, "Provisional
// status"), and logs it.
func (r *Runner) promote(ctx context.Context, st *state, rep *Report) ([]string, error) {
	listed, err := st.store.List()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, l := range listed {
		if l.Status == knowledge.Provisional {
			paths = append(paths, l.Path)
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	uses, err := Usage(r.StateDir, r.Root, paths)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range paths {
		u := uses[p]
		if !Promotable(u, st.set.EstablishAfter) {
			continue
		}
		why := fmt.Sprintf("used by %d verified tasks without a failure (%s)", len(u.Tasks), strings.Join(u.Tasks, ", "))
		if _, err := st.store.SetStatus(p, knowledge.Established, "cra", why); err != nil {
			r.warn(rep, "promote %s: %v", p, err)
			continue
		}
		r.event(ctx, rep, "knowledge", "established "+p+": "+why)
		r.say("established %s: %s", p, why)
		out = append(out, p)
	}
	return out, nil
}
