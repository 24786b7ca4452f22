package train

import (
	"slices"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
)

// The names of the training data that the training commands take: the
// sources a plan reads, the two base models and the stages (dataset's
// and corpus's, as this package hands them on).
const (
	SourceLogged    = corpus.SourceLogged
	SourceSynthetic = corpus.SourceSynthetic
	Coding          = dataset.Coding
	Reasoning       = dataset.Reasoning
)

type (
	// Corpus is the raw database's reads and writes (corpus.Corpus).
	Corpus = corpus.Corpus
	// Dataset is a dataset recorded in raw.sqlite (corpus.Dataset).
	Dataset = corpus.Dataset
	// AdapterRecord is an adapter recorded in raw.sqlite.
	AdapterRecord = corpus.AdapterRecord
)

// Stages lists the datasets' stages, in pipeline order (dataset.Stages).
func Stages() []string { return slices.Clone(dataset.Stages) }

// CheckStage says why stage is not a dataset stage (dataset.CheckStage).
func CheckStage(stage string) error { return dataset.CheckStage(stage) }
