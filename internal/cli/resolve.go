package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/run"
	"github.com/cra-dev/cra/internal/workspace"
)

// openRun opens the workspace of a retrieve, plan or solve and resolves
// what they share: stages and budget, flag > config > error (seed 001
// §10.2), and the budget against the executing model's window; more
// resolves the command's own values. Every missing value is named in one
// error, with the 'cra init' that stores them all, and, when models are
// needed and missing too, those.
func openRun(ctx context.Context, d *deps, mode, repoFlag, stageFlag string, bf budgetFlags, taskID string, needModels bool,
	more ...func(*config.Config) error) (*workspace.Workspace, run.Spec, error) {
	ws, err := openWorkspace(ctx, d, repoFlag, false)
	if err != nil {
		return nil, run.Spec{}, err
	}
	spec := run.Spec{TaskID: taskID, Progress: d.errOut}
	var errs []error
	spec.Stages, spec.StageList, err = resolveStages(stageFlag, ws.Config)
	errs = append(errs, err)
	if spec.Budget, err = resolveBudget(bf, ws.Config); err == nil {
		err = runError(run.CheckWindow(ws.Config, mode, spec.Budget))
	}
	errs = append(errs, err)
	for _, resolve := range more {
		errs = append(errs, resolve(ws.Config))
	}
	if needModels && workspace.CheckModels(ws.Config) != nil {
		errs = append(errs, &missingValue{name: "models", init: "--coding MODEL --reasoning MODEL --base-url URL", onlyWithOthers: true})
	}
	if err := gather(errs); err != nil {
		ws.Close()
		return nil, run.Spec{}, err
	}
	return ws, spec, nil
}

// missingValue is a required value given neither by a flag nor in the
// config.
type missingValue struct {
	name string // what to pass, e.g. "--stages"
	init string // the 'cra init' flags that store it
	msg  string // the error when it is the only value missing
	// onlyWithOthers: alone, it is not an error here (the run names it
	// its own way); beside others it is listed with them.
	onlyWithOthers bool
}

func (m *missingValue) Error() string { return m.msg }

// gather returns the first error that is not a missing value, else one
// error naming every missing value.
func gather(errs []error) error {
	var missing []*missingValue
	for _, err := range errs {
		for _, e := range flatten(err) {
			var one *missingValue
			var many *missingValues
			switch {
			case errors.As(e, &many):
				missing = append(missing, many.all...)
			case errors.As(e, &one):
				missing = append(missing, one)
			default:
				return e
			}
		}
	}
	needed := 0
	for _, m := range missing {
		if !m.onlyWithOthers {
			needed++
		}
	}
	switch {
	case needed == 0:
		return nil
	case len(missing) == 1:
		return usageError{err: missing[0]}
	}
	return usageError{err: &missingValues{all: missing}}
}

// flatten lists the errors an errors.Join holds, or err alone.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// missingValues is several missing values, named at once.
type missingValues struct{ all []*missingValue }

func (m *missingValues) Error() string {
	names, inits := make([]string, len(m.all)), make([]string, len(m.all))
	for i, v := range m.all {
		names[i], inits[i] = v.name, v.init
	}
	return fmt.Sprintf("missing %s: pass them, or store them once with 'cra init %s'", strings.Join(names, ", "), strings.Join(inits, " "))
}

// budgetFlags are the budget inputs shared by retrieve, plan and solve
// (seed 001 §9.3): the pair of numbers or a file, mutually exclusive.
type budgetFlags struct {
	contextWindow  *int
	reservedTokens *int
	budgetConfig   string
	safetyMargin   float64
}

func addBudgetFlags(cmd *cobra.Command, b *budgetFlags) func() {
	var cw, rt int
	f := cmd.Flags()
	f.IntVar(&cw, "context-window", 0, "execute model's context window in tokens (with --reserved-tokens)")
	f.IntVar(&rt, "reserved-tokens", 0, "tokens kept for system prompt, task, retries and the reply")
	f.StringVar(&b.budgetConfig, "budget-config", "", "TOML file with context_window and reserved_tokens (instead of the two flags)")
	f.Float64Var(&b.safetyMargin, "safety-margin", run.DefaultSafetyMargin, "share of the budget left free for the chars/4 estimate's error")
	return func() {
		if f.Changed("context-window") {
			b.contextWindow = &cw
		}
		if f.Changed("reserved-tokens") {
			b.reservedTokens = &rt
		}
	}
}

// resolveBudget applies flag > file > config > hard error (seed 001 §9.3,
// §10.2) and validates the result (§7.5).
func resolveBudget(b budgetFlags, cfg *config.Config) (run.Budget, error) {
	out := run.Budget{SafetyMargin: b.safetyMargin}
	pair := b.contextWindow != nil || b.reservedTokens != nil
	switch {
	case b.budgetConfig != "" && pair:
		return out, usageError{err: errors.New("--budget-config and --context-window/--reserved-tokens are mutually exclusive: pass one or the other")}
	case b.budgetConfig != "":
		type pairKeys struct {
			ContextWindow  *int `toml:"context_window"`
			ReservedTokens *int `toml:"reserved_tokens"`
		}
		var file struct {
			pairKeys
			// A [budget] table, as config.toml has it, reads the same.
			Budget *pairKeys `toml:"budget"`
		}
		md, err := toml.DecodeFile(b.budgetConfig, &file)
		if err != nil {
			return out, usageError{err: fmt.Errorf("--budget-config %s: %w", b.budgetConfig, err)}
		}
		if u := md.Undecoded(); len(u) > 0 {
			return out, usageError{err: fmt.Errorf("--budget-config %s: unknown key %s (only context_window and reserved_tokens)", b.budgetConfig, u[0])}
		}
		if file.Budget != nil {
			if file.ContextWindow != nil || file.ReservedTokens != nil {
				return out, usageError{err: fmt.Errorf("--budget-config %s: the keys are both at the top and under [budget]: keep one place", b.budgetConfig)}
			}
			file.pairKeys = *file.Budget
		}
		if file.ContextWindow == nil || file.ReservedTokens == nil {
			return out, usageError{err: fmt.Errorf("--budget-config %s: needs both context_window and reserved_tokens", b.budgetConfig)}
		}
		out.ContextWindow, out.ReservedTokens = *file.ContextWindow, *file.ReservedTokens
	case pair:
		if b.contextWindow == nil || b.reservedTokens == nil {
			return out, usageError{err: errors.New("--context-window and --reserved-tokens go together: pass both")}
		}
		out.ContextWindow, out.ReservedTokens = *b.contextWindow, *b.reservedTokens
	default:
		if cfg == nil || cfg.Budget == nil || cfg.Budget.ContextWindow == nil || cfg.Budget.ReservedTokens == nil {
			return out, usageError{err: &missingValue{name: "--context-window and --reserved-tokens (or --budget-config)", init: "--context-window N --reserved-tokens N",
				msg: "missing budget: pass --context-window N --reserved-tokens N or --budget-config FILE, or store them with 'cra init --context-window N --reserved-tokens N'"}}
		}
		out.ContextWindow, out.ReservedTokens = *cfg.Budget.ContextWindow, *cfg.Budget.ReservedTokens
	}
	if err := out.Validate(); err != nil {
		return out, usageError{err: fmt.Errorf("invalid budget: %w", err)}
	}
	return out, nil
}

// resolveStages applies flag > config > hard error and checks every name.
func resolveStages(flag string, cfg *config.Config) ([]run.Stage, string, error) {
	list := flag
	if list == "" && cfg != nil && cfg.Stages != nil {
		list = cfg.Stages.Default
	}
	if list == "" {
		return nil, "", usageError{err: &missingValue{name: "--stages", init: "--stages scope,precision",
			msg: "missing --stages: pass --stages scope,precision, or store a default with 'cra init --stages scope,precision'"}}
	}
	stages, err := run.ParseStages(list)
	if err != nil {
		if flag == "" {
			err = fmt.Errorf("[stages] default in .clean_room/config.toml: %w (store good ones with 'cra init --stages scope,precision', or pass --stages)", err)
		}
		return nil, "", usageError{err: err}
	}
	return stages, list, nil
}
