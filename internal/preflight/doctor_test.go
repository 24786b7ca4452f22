package preflight

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/llm"
)

func TestEndpointProblem(t *testing.T) {
	ollama := llm.ModelConfig{Role: llm.RoleReasoning, Provider: llm.ProviderOllama, BaseURL: "http://h:11434"}
	openai := llm.ModelConfig{Role: llm.RoleSupervisor, Provider: llm.ProviderOpenAI, BaseURL: "https://or/api/v1", APIKeyEnv: "OR_KEY"}
	call := func(m llm.ModelConfig, err error) error { return &llm.CallError{Model: m, Err: err} }
	tests := []struct {
		name    string
		m       llm.ModelConfig
		err     error
		wantFix string
	}{
		{"ollama down", ollama, call(ollama, errors.New("connection failed")), "start the server ('ollama serve') or correct models.base_url"},
		{"not ollama", ollama, call(ollama, &llm.StatusError{StatusCode: http.StatusNotFound}), `set provider = "openai"`},
		{"openai without /v1", openai, call(openai, &llm.StatusError{StatusCode: http.StatusNotFound}), "models.supervisor.base_url ends in /v1"},
		{"bad key", openai, call(openai, &llm.StatusError{StatusCode: http.StatusUnauthorized}), "check the API key in $OR_KEY"},
		{"key wanted", ollama, call(ollama, &llm.StatusError{StatusCode: http.StatusForbidden}), "set api_key_env"},
		{"openai down", openai, call(openai, errors.New("connection failed")), "start the server or correct models.supervisor.base_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			detail, fix := endpointProblem(tc.m, tc.err)
			if !strings.Contains(fix, tc.wantFix) || strings.Contains(detail, tc.m.BaseURL+" (") {
				t.Errorf("got %q / %q, want a fix containing %q and the detail without the model's name", detail, fix, tc.wantFix)
			}
		})
	}
}
