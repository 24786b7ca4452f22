package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cra-dev/cra/internal/evidence"
	"github.com/cra-dev/cra/internal/lang"
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
	// CandidateMisses counts the tasks with a gold file in bm25-code's
	// top candidateMissRank that cra did not rank at all (not among its
	// -rank candidates): files candidate generation lost.
	CandidateMisses int `json:"candidate_misses"`
	// GoldTests counts the gold files that are test files
	// (evidence.IsTestFile); GoldTests8k and GoldTests32k those whose
	// changed lines cra's package of that budget held.
	GoldTests    int `json:"gold_tests"`
	GoldTests8k  int `json:"gold_tests_8k"`
	GoldTests32k int `json:"gold_tests_32k"`
	// MCPTasks counts the tasks 'cra mcp' localize was asked (-mcp),
	// MCPSame those whose top 10 was cra's ranking's, in order, and
	// MCPRefused those it refused (a text over its limit).
	MCPTasks   int `json:"mcp_tasks,omitempty"`
	MCPSame    int `json:"mcp_same,omitempty"`
	MCPRefused int `json:"mcp_refused,omitempty"`
	// Alt are cra's summaries with the other -weights, by name.
	Alt map[string]Summary `json:"cra_weights,omitempty"`
	// SpanMisses8k counts the tasks with a gold file in cra's 8k package
	// whose changed lines the package does not hold (the file is there,
	// other parts of it shown): what choosing the spans of long files
	// loses.
	SpanMisses8k int `json:"span_misses_8k"`
}

// candidateMissRank is the bm25-code rank within which a gold file must
// be among cra's candidates.
const candidateMissRank = 20

// candidateMiss reports whether a gold file of the task is in bm25-code's
// top candidateMissRank but not among cra's ranked candidates.
func candidateMiss(v *variantResult) bool {
	for i, r := range v.BM25Code.Ranks {
		if r >= 1 && r <= candidateMissRank && i < len(v.CRA.Ranks) && v.CRA.Ranks[i] == 0 {
			return true
		}
	}
	return false
}

// spanMiss reports whether a gold file is in s's 8k package without its
// changed lines.
func spanMiss(golds []gold, s score) bool {
	for i, g := range golds {
		if i < len(s.Covered8k) && !s.Covered8k[i] && slices.Contains(s.Packed8k, g.Path) {
			return true
		}
	}
	return false
}

// summarizeTasks builds the report of tasks; variant maps a task to the
// variant to score (by name, falling back to the task's first).
func summarizeTasks(rs []*taskResult, names []string) []variantReport {
	var out []variantReport
	for _, name := range names {
		var cra, all, code []score
		alt := map[string][]score{}
		rep := variantReport{Name: name}
		for _, r := range rs {
			v := r.variant(name)
			if v == nil {
				continue
			}
			cra, all, code = append(cra, v.CRA), append(all, v.BM25All), append(code, v.BM25Code)
			for k, s := range v.Alt {
				alt[k] = append(alt[k], s)
			}
			if v.CRAError != "" {
				rep.CRAErrors++
			}
			if candidateMiss(v) {
				rep.CandidateMisses++
			}
			if m := v.MCP; m != nil {
				rep.MCPTasks++
				switch {
				case m.Refused != "":
					rep.MCPRefused++
				case m.Same:
					rep.MCPSame++
				}
			}
			if spanMiss(r.Gold, v.CRA) {
				rep.SpanMisses8k++
			}
			for i, g := range r.Gold {
				if !evidence.IsTestFile(g.Path) {
					continue
				}
				rep.GoldTests++
				if i < len(v.CRA.Covered8k) && v.CRA.Covered8k[i] {
					rep.GoldTests8k++
				}
				if i < len(v.CRA.Covered32k) && v.CRA.Covered32k[i] {
					rep.GoldTests32k++
				}
			}
		}
		rep.CRA, rep.BM25All, rep.BM25Code = summarize(cra), summarize(all), summarize(code)
		for k, ss := range alt {
			if rep.Alt == nil {
				rep.Alt = map[string]Summary{}
			}
			rep.Alt[k] = summarize(ss)
		}
		out = append(out, rep)
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

// Language groups of the per-language report.
const (
	langPython = "Python"
	langGo     = "Go"
	langJS     = "TS/JS"
	langOther  = "other"
)

// languageOf groups a path by its language: Python, Go, TypeScript and
// JavaScript together (one ecosystem, often one repository), or other.
func languageOf(p string) string {
	l, ok := lang.Detect(p)
	switch {
	case !ok:
		return langOther
	case l == lang.Python:
		return langPython
	case l == lang.Go:
		return langGo
	case l == lang.TypeScript || l == lang.TSX || l == lang.JavaScript:
		return langJS
	}
	return langOther
}

// taskLanguage is the language most of the task's gold files are in (the
// first gold file's on a tie).
func taskLanguage(r *taskResult) string {
	count := map[string]int{}
	best := langOther
	for _, g := range r.Gold {
		l := languageOf(g.Path)
		count[l]++
		if count[l] > count[best] || best == langOther && l != langOther && count[l] == count[best] {
			best = l
		}
	}
	return best
}

// byLanguage scores every scored task's text as written (a SWE-bench
// issue's only text), grouped by the task's language; one row per
// language present, in a fixed order.
func (h *harness) byLanguage() []variantReport {
	groups := map[string][]*taskResult{}
	for _, r := range h.results {
		if r.Skipped == "" && len(r.Variants) > 0 {
			l := taskLanguage(r)
			groups[l] = append(groups[l], r)
		}
	}
	var out []variantReport
	for _, l := range []string{langPython, langGo, langJS, langOther} {
		if len(groups[l]) == 0 {
			continue
		}
		rep := summarizeTasks(groups[l], []string{variantMessage})[0]
		rep.Name = l
		out = append(out, rep)
	}
	return out
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
		writeTable(w, s.Variants, h.opts.weights)
		writeExtras(w, s.Variants, h.opts.rankLimit)
		for _, sk := range s.Skipped {
			fmt.Fprintf(w, "  skipped %s: %s\n", short(sk.ID), sk.Reason)
		}
		fmt.Fprintln(w)
	}
	if len(sets) > 1 {
		fmt.Fprintln(w, "all sets:")
		overall := h.overall()
		writeTable(w, overall, h.opts.weights)
		writeExtras(w, overall, h.opts.rankLimit)
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "by language (text as written):")
	writeTable(w, h.byLanguage(), h.opts.weights)
	fmt.Fprintln(w)
	for _, st := range h.repoStats {
		fmt.Fprintf(w, "index %s (%s): %d files, first index %s", st.Repo, st.Path, st.Files, secs(st.FullIndex))
		if n := len(st.Incremental); n > 0 {
			fmt.Fprintf(w, ", incremental p50 %s p95 %s (%d runs)", secs(median(st.Incremental)), secs(percentile(st.Incremental, 95)), n)
		}
		if st.LearnTasks > 0 {
			fmt.Fprintf(w, "; repo weights: examples drawn in %s, fitted for %d tasks in %s, kept for %d", secs(st.LearnExtract), st.LearnTasks, secs(st.LearnFit), st.LearnKept)
			if st.LearnError != "" {
				fmt.Fprintf(w, " (no examples: %s)", firstLine(st.LearnError))
			}
		}
		if st.Error != "" {
			fmt.Fprintf(w, ", failed: %s", st.Error)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// writeTable prints a row per method; weights names cra's rows when
// cra was measured with more than the default weights.
func writeTable(out io.Writer, vs []variantReport, weights []string) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "variant\tmethod\ttasks\tAcc@1\tAcc@5\tAcc@10\tR@1\tR@5\tR@10\tR@8k\tR@32k\tp50 ms\tp95 ms\t")
	for _, v := range vs {
		type method struct {
			name string
			s    Summary
		}
		first := "cra"
		if len(weights) > 1 || len(weights) == 1 && weights[0] != weightsDefault {
			first = "cra " + weights[0]
		}
		rows := []method{{first, v.CRA}}
		for _, n := range weights[min(1, len(weights)):] {
			rows = append(rows, method{"cra " + n, v.Alt[n]})
		}
		rows = append(rows, method{"bm25-code", v.BM25Code}, method{"bm25-all", v.BM25All})
		for i, m := range rows {
			name := m.name
			if i == 0 && v.CRAErrors > 0 {
				name = fmt.Sprintf("%s (%d errors)", m.name, v.CRAErrors)
			}
			s := m.s
			fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t\n",
				v.Name, name, s.Tasks, s.Acc1, s.Acc5, s.Acc10, s.R1, s.R5, s.R10, s.R8k, s.R32k, ms(s.LatencyP50), ms(s.LatencyP95))
		}
	}
	w.Flush()
}

// writeExtras prints, per variant, the candidate misses and how many gold
// test files had their changed lines in cra's packages.
func writeExtras(w io.Writer, vs []variantReport, rankLimit int) {
	var miss, tests, spans []string
	for _, v := range vs {
		miss = append(miss, fmt.Sprintf("%s %d", v.Name, v.CandidateMisses))
		tests = append(tests, fmt.Sprintf("%s 8k %d/%d, 32k %d/%d", v.Name, v.GoldTests8k, v.GoldTests, v.GoldTests32k, v.GoldTests))
		spans = append(spans, fmt.Sprintf("%s %d of %d", v.Name, v.SpanMisses8k, v.CRA.Tasks))
	}
	fmt.Fprintf(w, "  candidate misses (a gold file in bm25-code's top %d, not among cra's %d candidates): %s\n", candidateMissRank, rankLimit, strings.Join(miss, "; "))
	fmt.Fprintf(w, "  gold test files with changed lines in cra's package: %s\n", strings.Join(tests, "; "))
	fmt.Fprintf(w, "  tasks with a gold file in cra's 8k package but not its changed lines: %s\n", strings.Join(spans, "; "))
	var agree []string
	for _, v := range vs {
		if v.MCPTasks > 0 {
			agree = append(agree, fmt.Sprintf("%s %d/%d (%d refused)", v.Name, v.MCPSame, v.MCPTasks, v.MCPRefused))
		}
	}
	if len(agree) > 0 {
		fmt.Fprintf(w, "  'cra mcp' localize top 10 the same as cra's ranking: %s\n", strings.Join(agree, "; "))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// jsonReport is the -json file.
type jsonReport struct {
	Command string          `json:"command"`
	Sets    []setReport     `json:"sets"`
	Overall []variantReport `json:"overall"`
	// Languages are the tasks as written, by their gold files' language.
	Languages []variantReport `json:"languages"`
	Repos     []*repoStat     `json:"repos"`
	Tasks     []*taskResult   `json:"tasks"`
}

func (h *harness) writeJSON() error {
	rep := jsonReport{
		Command:   strings.Join(os.Args, " "),
		Sets:      h.setReports(),
		Overall:   h.overall(),
		Languages: h.byLanguage(),
		Repos:     h.repoStats,
		Tasks:     h.results,
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
