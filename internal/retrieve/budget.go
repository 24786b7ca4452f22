package retrieve

import (
	"errors"
	"fmt"
	"math"
)

// Budget is the token budget of a context package (seed 001 §7.1): the
// execute model's window less what the prompt around the package needs.
type Budget struct {
	// ContextWindow is the execute model's total window, in tokens.
	ContextWindow int `json:"context_window"`
	// ReservedTokens covers the system prompt, the task, retry context and
	// the completion (seed 001 §7.1).
	ReservedTokens int `json:"reserved_tokens"`
	// SafetyMargin is the share of the remainder kept free because chars/4
	// is an estimate (seed 001 §7.3); 0 trusts the estimate.
	SafetyMargin float64 `json:"safety_margin"`
}

// DefaultSafetyMargin is the share of the package budget left unused to
// absorb the error of the chars/4 estimate.
const DefaultSafetyMargin = 0.1

// Validate enforces seed 001 §7.5, once, for every command that budgets.
func (b Budget) Validate() error {
	var errs []error
	if b.ContextWindow <= 0 {
		errs = append(errs, fmt.Errorf("context window must be > 0, got %d", b.ContextWindow))
	}
	if b.ReservedTokens < 0 {
		errs = append(errs, fmt.Errorf("reserved tokens must be >= 0, got %d", b.ReservedTokens))
	}
	if b.ContextWindow > 0 && b.ReservedTokens >= b.ContextWindow {
		errs = append(errs, fmt.Errorf("reserved tokens (%d) must be < context window (%d)", b.ReservedTokens, b.ContextWindow))
	}
	if b.SafetyMargin < 0 || b.SafetyMargin >= 1 || math.IsNaN(b.SafetyMargin) {
		errs = append(errs, fmt.Errorf("safety margin must be in [0, 1), got %v", b.SafetyMargin))
	}
	return errors.Join(errs...)
}

// Available is the token count a package may use:
// (context_window - reserved_tokens) × (1 - safety margin).
func (b Budget) Available() int {
	return int(float64(b.ContextWindow-b.ReservedTokens) * (1 - b.SafetyMargin))
}
