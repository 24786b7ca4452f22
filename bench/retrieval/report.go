package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// setReport is one set's summary, as printed and written to -json.
type setReport struct {
	Set    string `json:"set"`
	Path   string `json:"path"`
	Tasks  int    `json:"tasks"`
	Scored int    `json:"scored"`
	// ScopeStripped counts the scored tasks whose text stripping changed.
	ScopeStripped int             `json:"scope_stripped,omitempty"`
	Skipped       []skipped       `json:"skipped,omitempty"`
	Variants      []variantReport `json:"variants"`
}

type skipped struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// variantReport compares cra and BM25 on one task text.
type variantReport struct {
	Name      string  `json:"name"`
	CRA       Summary `json:"cra"`
	BM25All   Summary `json:"bm25_all"`
	BM25Code  Summary `json:"bm25_code"`
	CRAErrors int     `json:"cra_errors,omitempty"`
}

// summarizeTasks builds the report of tasks; variant maps a task to the
// variant to score (by name, falling back to the task's first).
func summarizeTasks(rs []*taskResult, names []string) []variantReport {
	var out []variantReport
	for _, name := range names {
		var cra, all, code []score
		errs := 0
		for _, r := range rs {
			v := r.variant(name)
			if v == nil {
				continue
			}
			cra, all, code = append(cra, v.CRA), append(all, v.BM25All), append(code, v.BM25Code)
			if v.CRAError != "" {
				errs++
			}
		}
		out = append(out, variantReport{Name: name, CRA: summarize(cra), BM25All: summarize(all), BM25Code: summarize(code), CRAErrors: errs})
	}
	return out
}

// variant returns the named variant, or the first when the task has no
// such variant (a SWE-bench issue has nothing to strip).
func (r *taskResult) variant(name string) *variantResult {
	if len(r.Variants) == 0 {
		return nil
	}
	for _, v := range r.Variants {
		if v.Name == name {
			return v
		}
	}
	return r.Variants[0]
}

func (r *taskResult) variantNames() []string {
	var out []string
	for _, v := range r.Variants {
		out = append(out, v.Name)
	}
	return out
}

func (h *harness) setReports() []setReport {
	var out []setReport
	for _, s := range h.opts.sets {
		rep := setReport{Set: s.Name, Path: s.Path, Tasks: len(s.Tasks)}
		var rs []*taskResult
		var names []string
		for _, r := range h.results {
			if r.Set != s.Name {
				continue
			}
			if r.Skipped != "" {
				rep.Skipped = append(rep.Skipped, skipped{r.ID, r.Skipped})
				continue
			}
			if len(r.Variants) == 0 {
				continue // not reached (interrupted)
			}
			rs = append(rs, r)
			names = union(names, r.variantNames())
			if v := r.variant(variantStripped); v.Name == variantStripped && v.Text != r.Variants[0].Text {
				rep.ScopeStripped++
			}
		}
		rep.Scored = len(rs)
		rep.Variants = summarizeTasks(rs, names)
		out = append(out, rep)
	}
	return out
}

// overall scores every scored task of every set: as written, and with
// commit scopes stripped (other tasks contribute their only text).
func (h *harness) overall() []variantReport {
	var rs []*taskResult
	stripped := false
	for _, r := range h.results {
		if r.Skipped == "" && len(r.Variants) > 0 {
			rs = append(rs, r)
			stripped = stripped || r.variant(variantStripped).Name == variantStripped
		}
	}
	names := []string{variantMessage}
	if stripped {
		names = append(names, variantStripped)
	}
	reps := summarizeTasks(rs, names)
	for i := range reps {
		reps[i].Name = map[string]string{variantMessage: "as written", variantStripped: "scope stripped"}[reps[i].Name]
	}
	return reps
}

func union(a, b []string) []string {
	for _, x := range b {
		found := false
		for _, y := range a {
			found = found || x == y
		}
		if !found {
			a = append(a, x)
		}
	}
	return a
}

// report prints the tables.
func (h *harness) report() error {
	w := h.stdout
	sets := h.setReports()
	for _, s := range sets {
		fmt.Fprintf(w, "%s: %d tasks, %d scored, %d skipped", s.Path, s.Tasks, s.Scored, len(s.Skipped))
		if s.ScopeStripped > 0 {
			fmt.Fprintf(w, "; stripping changed %d task texts", s.ScopeStripped)
		}
		fmt.Fprintln(w)
		writeTable(w, s.Variants)
		for _, sk := range s.Skipped {
			fmt.Fprintf(w, "  skipped %s: %s\n", short(sk.ID), sk.Reason)
		}
		fmt.Fprintln(w)
	}
	if len(sets) > 1 {
		fmt.Fprintln(w, "all sets:")
		writeTable(w, h.overall())
		fmt.Fprintln(w)
	}
	for _, st := range h.repoStats {
		fmt.Fprintf(w, "index %s (%s): %d files, first index %s", st.Repo, st.Path, st.Files, secs(st.FullIndex))
		if n := len(st.Incremental); n > 0 {
			fmt.Fprintf(w, ", incremental p50 %s p95 %s (%d runs)", secs(median(st.Incremental)), secs(percentile(st.Incremental, 95)), n)
		}
		if st.Error != "" {
			fmt.Fprintf(w, ", failed: %s", st.Error)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func writeTable(out io.Writer, vs []variantReport) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "variant\tmethod\ttasks\tAcc@1\tAcc@5\tAcc@10\tR@1\tR@5\tR@10\tR@8k\tR@32k\tp50 ms\tp95 ms\t")
	for _, v := range vs {
		for _, m := range []struct {
			name string
			s    Summary
		}{{"cra", v.CRA}, {"bm25-code", v.BM25Code}, {"bm25-all", v.BM25All}} {
			name := m.name
			if m.name == "cra" && v.CRAErrors > 0 {
				name = fmt.Sprintf("cra (%d errors)", v.CRAErrors)
			}
			s := m.s
			fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t\n",
				v.Name, name, s.Tasks, s.Acc1, s.Acc5, s.Acc10, s.R1, s.R5, s.R10, s.R8k, s.R32k, ms(s.LatencyP50), ms(s.LatencyP95))
		}
	}
	w.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// jsonReport is the -json file.
type jsonReport struct {
	Command string          `json:"command"`
	Sets    []setReport     `json:"sets"`
	Overall []variantReport `json:"overall"`
	Repos   []*repoStat     `json:"repos"`
	Tasks   []*taskResult   `json:"tasks"`
}

func (h *harness) writeJSON() error {
	rep := jsonReport{
		Command: strings.Join(os.Args, " "),
		Sets:    h.setReports(),
		Overall: h.overall(),
		Repos:   h.repoStats,
		Tasks:   h.results,
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(h.opts.jsonPath, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write -json: %w", err)
	}
	return nil
}
