// Package stage names the stages of cra's model calls (seed 001 §3.4,
// §5.4): the keys of [models.overrides], adapter_metadata.stage_name and
// the training datasets, and the retrieval stages a [stages] default or a
// --stages flag lists. It is a leaf, so that config checks, retrieval and
// training agree on the names without importing each other.
package stage

import (
	"errors"
	"fmt"
	"strings"
)

// The stages of the pipeline, in its order.
const (
	TaskAnalysis = "task_analysis"
	Scope        = "scope"
	Precision    = "precision"
	ExecutePlan  = "execute_plan"
	ExecuteCode  = "execute_code"
)

// Retrieval lists the retrieval stages, sorted: the names a stage list
// may hold.
func Retrieval() []string { return []string{Precision, Scope} }

// ParseRetrieval splits a comma-separated list of retrieval stages,
// checking every name before anything runs; an unknown one is a hard
// error. Order is the caller's (seed 001 §5.4).
func ParseRetrieval(list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n != Scope && n != Precision {
			return nil, fmt.Errorf("unknown stage %q: known stages are %s", n, strings.Join(Retrieval(), ", "))
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("no stages given: pass --stages scope,precision")
	}
	return out, nil
}
