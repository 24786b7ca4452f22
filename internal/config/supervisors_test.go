package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSupervisorSettings(t *testing.T) {
	if got := (*Config)(nil).SupervisorSettings(); got.CodeStyleEvery != 5 || got.InternaliserEvery != 3 || got.MaxCleanupDirectives != 10 ||
		got.DirectiveMaxAge != 15 || got.PolishLimit != 10 || got.EstablishAfter != 3 || !got.Enabled("design") {
		t.Errorf("defaults: %+v", got)
	}
	n, off := 7, false
	c := &Config{Supervisors: &Supervisors{CodeStyleEvery: &n, Disabled: []string{"design", "nobody"}}}
	got := c.SupervisorSettings()
	if got.CodeStyleEvery != 7 || got.Enabled("design") || !got.Enabled("code_style") {
		t.Errorf("set: %+v", got)
	}
	c.Supervisors.Enabled = &off
	if got := c.SupervisorSettings(); !cmp.Equal(got.Disabled, SupervisorNames) {
		t.Errorf("off: %+v", got)
	}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `supervisors.disabled lists "nobody"`) {
		t.Errorf("validate: %v", err)
	}
	zero := 0
	c = &Config{Supervisors: &Supervisors{CodeStyleEvery: &zero}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "supervisors.code_style_every is 0: use 1 to 1000") {
		t.Errorf("validate: %v", err)
	}
}
