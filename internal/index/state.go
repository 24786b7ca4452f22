package index

import (
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// NewBuilderIn returns a Builder writing to the databases of the state
// directory stateDir (a repository's .clean_room/), with defaults.
func NewBuilderIn(stateDir string) *Builder {
	return NewBuilder(store.NewFactory(statedir.At(stateDir)))
}

// SetAside moves the index of stateDir out of the way (to
// curated.sqlite.damaged, replacing an older one) so that the next run
// builds it from scratch: the fix for a damaged index. It returns where
// the old file went, or "" when there was none. The index is rebuilt from
// the repository; promoted enrichment is promoted again from the raw
// database with 'cra enrich --promote'.
func SetAside(stateDir string) (string, error) {
	return store.NewFactory(statedir.At(stateDir)).SetAside(store.Curated)
}
