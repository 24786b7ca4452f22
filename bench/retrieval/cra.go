package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cra-dev/cra/internal/kb"
	"github.com/cra-dev/cra/internal/retrieve"
)

// reservedTokens is what the budgets reserve besides the package; any
// value works, as the context window is set to budget + reserved and the
// safety margin to 0, so the package gets exactly the budget.
const reservedTokens = 2048

func budgetOf(tokens int) retrieve.Budget {
	return retrieve.Budget{ContextWindow: tokens + reservedTokens, ReservedTokens: reservedTokens, SafetyMargin: 0}
}

// craResult is cra's deterministic retrieval of one task.
type craResult struct {
	ranked     []string
	signals    map[string]map[string]float64 // by path
	p8k, p32k  pack
	latency    time.Duration // Analyze + Rank + Assemble(8k)
	tokens8k   int
	files8k    []string
	budgetSeen int // the 8k package's Budget, to check the arithmetic
}

// runCRA analyses text, ranks up to limit files with the weights w and
// assembles the packages of both budgets, as 'cra retrieve
// --deterministic' would.
func runCRA(ctx context.Context, db *sql.DB, repoID int64, root, text string, limit int, precision bool, w retrieve.Weights) (*craResult, error) {
	k := kb.New(db)
	start := time.Now()
	q := retrieve.Analyze(text)
	rk := retrieve.NewRanker(k, repoID)
	rk.Root, rk.Weights = root, w
	cands, err := rk.Rank(ctx, q, limit)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	sc := &retrieve.StageContext{Task: q, Ranker: rk, Candidates: cands, Excluded: map[string]string{}}
	if precision {
		// The precision stage's deterministic step, as 'cra retrieve
		// --stages scope,precision --deterministic' runs it.
		if err := (&retrieve.PrecisionStage{}).Run(ctx, sc); err != nil {
			return nil, fmt.Errorf("precision: %w", err)
		}
	}
	asm := sc.Assembler(root)
	p8, err := asm.Assemble(ctx, q, cands, budgetOf(budgets[0]))
	if err != nil {
		return nil, fmt.Errorf("assemble %d: %w", budgets[0], err)
	}
	r := &craResult{latency: time.Since(start), tokens8k: p8.Tokens, budgetSeen: p8.Budget}
	p32, err := asm.Assemble(ctx, q, cands, budgetOf(budgets[1]))
	if err != nil {
		return nil, fmt.Errorf("assemble %d: %w", budgets[1], err)
	}
	r.signals = map[string]map[string]float64{}
	for _, c := range cands {
		r.ranked = append(r.ranked, c.Path)
		r.signals[c.Path] = c.Signals
	}
	r.p8k, r.p32k = packOf(p8), packOf(p32)
	for _, f := range p8.Files {
		r.files8k = append(r.files8k, f.Path)
	}
	return r, nil
}

// packOf reduces a package to the line spans of its items.
func packOf(p *retrieve.Package) pack {
	out := pack{}
	for _, f := range p.Files {
		for _, it := range f.Items {
			span := lineRange{it.StartLine, it.EndLine}
			if it.Kind == "file" {
				span = wholeFile
			}
			out[f.Path] = append(out[f.Path], span)
		}
	}
	return out
}
