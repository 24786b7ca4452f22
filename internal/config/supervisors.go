package config

import (
	"fmt"
	"slices"
)

// Supervisors is the [supervisors] section: seed 003's supervisor agents
// (code_style, design, internaliser), when they run and how their
// directives and documents age. Every key is optional;
// SupervisorSettings fills in the defaults.
type Supervisors struct {
	// Enabled false turns every supervisor off; Disabled names the ones
	// turned off one by one (seed 003: "individually enabled/disabled").
	Enabled  *bool    `toml:"enabled,omitempty"`
	Disabled []string `toml:"disabled,omitempty"`
	// CodeStyleEvery and InternaliserEvery are their periodic triggers,
	// in completions (recycler verdicts): seed 003's defaults 5 and 3.
	CodeStyleEvery    *int `toml:"code_style_every,omitempty"`
	InternaliserEvery *int `toml:"internaliser_every,omitempty"`
	// EstablishAfter is how many runs must use a provisional document
	// without a failure before it becomes established.
	EstablishAfter *int `toml:"establish_after,omitempty"`
	// MaxCleanupDirectives caps the pending cleanup directives (the
	// oldest is dropped), and DirectiveMaxAge drops a cleanup directive
	// not picked up within that many completions (seed 003: 10 and 15).
	MaxCleanupDirectives *int `toml:"max_cleanup_directives,omitempty"`
	DirectiveMaxAge      *int `toml:"directive_max_age,omitempty"`
	// PolishLimit bounds the polish phase of a milestone whose tasks are
	// all verified: at most this many cleanup directives run (seed 003:
	// 10).
	PolishLimit *int `toml:"polish_limit,omitempty"`
	// MaxInputTokens bounds a supervisor's prompt (seed 003: ~5k).
	MaxInputTokens *int `toml:"max_input_tokens,omitempty"`
}

// SupervisorNames are the supervisors [supervisors] disabled may name.
var SupervisorNames = []string{"code_style", "design", "internaliser"}

// Bounds of the [supervisors] values.
const (
	MaxSupervisorEvery = 1000
	MaxSupervisorCount = 1000
	MinSupervisorInput = 1000
	MaxSupervisorInput = 100000
)

// Validate returns the problems of the values present, each naming its
// key and the fix.
func (s *Supervisors) Validate() []string {
	if s == nil {
		return nil
	}
	var problems []string
	for _, n := range s.Disabled {
		if !slices.Contains(SupervisorNames, n) {
			problems = append(problems, fmt.Sprintf("supervisors.disabled lists %q: use code_style, design or internaliser", n))
		}
	}
	problems = append(problems, intRange("supervisors.code_style_every", s.CodeStyleEvery, 1, MaxSupervisorEvery)...)
	problems = append(problems, intRange("supervisors.internaliser_every", s.InternaliserEvery, 1, MaxSupervisorEvery)...)
	problems = append(problems, intRange("supervisors.establish_after", s.EstablishAfter, 1, MaxSupervisorCount)...)
	problems = append(problems, intRange("supervisors.max_cleanup_directives", s.MaxCleanupDirectives, 0, MaxSupervisorCount)...)
	problems = append(problems, intRange("supervisors.directive_max_age", s.DirectiveMaxAge, 1, MaxSupervisorCount)...)
	problems = append(problems, intRange("supervisors.polish_limit", s.PolishLimit, 0, MaxSupervisorCount)...)
	problems = append(problems, intRange("supervisors.max_input_tokens", s.MaxInputTokens, MinSupervisorInput, MaxSupervisorInput)...)
	return problems
}

// SupervisorSettings are [supervisors] with the defaults filled in.
type SupervisorSettings struct {
	// Disabled holds the supervisors that do not run: all three when
	// enabled = false.
	Disabled             []string
	CodeStyleEvery       int
	InternaliserEvery    int
	EstablishAfter       int
	MaxCleanupDirectives int
	DirectiveMaxAge      int
	PolishLimit          int
	MaxInputTokens       int
}

// Enabled reports whether supervisor name runs.
func (s SupervisorSettings) Enabled(name string) bool { return !slices.Contains(s.Disabled, name) }

// The defaults of [supervisors] (seed 003).
const (
	DefaultCodeStyleEvery       = 5
	DefaultInternaliserEvery    = 3
	DefaultEstablishAfter       = 3
	DefaultMaxCleanupDirectives = 10
	DefaultDirectiveMaxAge      = 15
	DefaultPolishLimit          = 10
	DefaultSupervisorInput      = 5000
)

// SupervisorSettings resolves [supervisors]: each key that is set and
// valid replaces its default. A nil Config gives the defaults.
func (c *Config) SupervisorSettings() SupervisorSettings {
	s := SupervisorSettings{
		CodeStyleEvery: DefaultCodeStyleEvery, InternaliserEvery: DefaultInternaliserEvery,
		EstablishAfter: DefaultEstablishAfter, MaxCleanupDirectives: DefaultMaxCleanupDirectives,
		DirectiveMaxAge: DefaultDirectiveMaxAge, PolishLimit: DefaultPolishLimit, MaxInputTokens: DefaultSupervisorInput,
	}
	if c == nil || c.Supervisors == nil {
		return s
	}
	v := c.Supervisors
	if v.Enabled != nil && !*v.Enabled {
		s.Disabled = slices.Clone(SupervisorNames)
	} else {
		for _, n := range v.Disabled {
			if slices.Contains(SupervisorNames, n) && !slices.Contains(s.Disabled, n) {
				s.Disabled = append(s.Disabled, n)
			}
		}
	}
	pick := func(dst *int, v *int, lo, hi int) {
		if v != nil && *v >= lo && *v <= hi {
			*dst = *v
		}
	}
	pick(&s.CodeStyleEvery, v.CodeStyleEvery, 1, MaxSupervisorEvery)
	pick(&s.InternaliserEvery, v.InternaliserEvery, 1, MaxSupervisorEvery)
	pick(&s.EstablishAfter, v.EstablishAfter, 1, MaxSupervisorCount)
	pick(&s.MaxCleanupDirectives, v.MaxCleanupDirectives, 0, MaxSupervisorCount)
	pick(&s.DirectiveMaxAge, v.DirectiveMaxAge, 1, MaxSupervisorCount)
	pick(&s.PolishLimit, v.PolishLimit, 0, MaxSupervisorCount)
	pick(&s.MaxInputTokens, v.MaxInputTokens, MinSupervisorInput, MaxSupervisorInput)
	return s
}
