package llm

import (
	"context"
	"fmt"
	"strings"
)

// ListModels asks the server of m which models it has: Ollama's /api/tags
// or an OpenAI-compatible /v1/models. It makes one attempt, bounded by
// ctx; 'cra doctor' uses it to check endpoints and models.
func ListModels(ctx context.Context, m ModelConfig) ([]string, error) {
	switch m.Provider {
	case ProviderOpenAI:
		c, err := NewOpenAI(m)
		if err != nil {
			return nil, err
		}
		return c.ListModels(ctx)
	case ProviderOllama:
		c, err := NewOllama(m)
		if err != nil {
			return nil, err
		}
		return c.ListModels(ctx)
	}
	return nil, fmt.Errorf("unknown provider %q: use ollama or openai", m.Provider)
}

// HasModel reports whether model is among the names a server listed. An
// Ollama tag without a version ("llama3") is the ":latest" one.
func HasModel(names []string, model string) bool {
	for _, n := range names {
		if n == model || (!strings.Contains(model, ":") && n == model+":latest") {
			return true
		}
	}
	return false
}
