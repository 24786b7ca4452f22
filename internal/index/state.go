package index

import "github.com/cra-dev/cra/internal/store"

// NewBuilderIn returns a Builder writing to the databases of the state
// directory stateDir (a repository's .clean_room/), with defaults.
func NewBuilderIn(stateDir string) *Builder { return NewBuilder(store.NewFactory(stateDir)) }
