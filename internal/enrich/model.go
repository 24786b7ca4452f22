package enrich

import (
	"context"
	"log/slog"

	"github.com/cra-dev/cra/internal/llm"
)

// CheckModels says whether the reasoning role has a model at all (seed
// 001 §14.1): what 'cra enrich' checks before it opens the index.
func CheckModels(ctx context.Context, router *llm.Router) error {
	_, err := router.Resolve(ctx, llm.RoleReasoning, "")
	return err
}

// Model returns the client of the model that describes files (the
// reasoning role at the enrich stage), its diagnostics to logger, and the
// model it resolved. A model without a context window is ErrNoWindow.
func Model(ctx context.Context, router *llm.Router, logger *slog.Logger) (llm.Client, llm.ModelConfig, error) {
	m, err := router.Resolve(ctx, llm.RoleReasoning, Stage)
	if err != nil {
		return nil, m, err
	}
	if m.ContextWindow <= 0 {
		return nil, m, ErrNoWindow
	}
	client, err := llm.New(m)
	if err != nil {
		return nil, m, err
	}
	llm.SetLogger(client, logger)
	return client, m, nil
}
