package train

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/flock"
)

// Curated is what Curate wrote and recorded.
type Curated struct {
	DatasetID int64
	Dir       string // the stage's directory (train.jsonl, valid.jsonl, meta files)
	Summary   dataset.Summary
	// Logged and Synthetic count the examples selected from each source,
	// before the duplicates across the sources are dropped; Positive and
	// Negative split Logged.
	Logged, Synthetic  int
	Positive, Negative int
	// SyntheticFrom is the bootstrapped dataset mixed in; 0 for none.
	SyntheticFrom int64
	// Skipped counts the examples left out, by reason. Its SkipDuplicate
	// counts them all: the logged calls that repeat one and the examples
	// dataset.Write dropped (Summary.Duplicates, a part of it).
	Skipped map[string]int
}

// Reasons a logged call is left out.
const (
	SkipConversation = "conversation" // a multi-turn prompt: datasets are one turn
	SkipTooLong      = "too_long"     // longer than max_seq_length tokens
	SkipDuplicate    = "duplicate"    // same messages as one kept
	SkipOverMax      = "over_max"     // beyond max_examples (oldest dropped)
	SkipNegShare     = "over_negative_share"
	SkipSynthShare   = "over_synthetic_share"
)

// PlanSnapshot is the copy of the plan a curated dataset's root holds.
const PlanSnapshot = "plan.toml"

// ErrNoExamples is a plan whose criteria select nothing.
var ErrNoExamples = errors.New("no example matches the plan")

// Curate selects the plan's examples from the logged calls (seed 001 §8.4,
// §16.2) and, when the plan says so, the stage's newest bootstrapped
// dataset, and writes them as one dataset under l.Datasets(), recorded in
// training_datasets (source logged, the plan's id). Each logged example is
// the call exactly as the model saw it: its system prompt, its prompt and
// the reply as logged, the format of inference. Nothing is written when
// nothing matches (ErrNoExamples) or the plan's row is missing.
//
// The dataset is written in a hidden temporary directory beside the
// datasets' and renamed into place once complete, then recorded: a run
// killed in the middle leaves no partial plan-* directory a reader could
// take for a dataset, only a temporary one the next run removes. One run
// at a time writes, under the training directory's curate.lock; another
// waits for it.
func Curate(ctx context.Context, c *corpus.Corpus, l Layout, p *Plan, now time.Time) (*Curated, error) {
	return CurateFrom(ctx, c, c, l, p, now)
}

// CurateFrom is Curate with the logged calls read from from, a fleet's
// merged raw databases (workspace.FleetCorpus, issue 34 item 8), while
// the plan, the bootstrapped datasets and the new dataset's row are c's,
// this host's.
func CurateFrom(ctx context.Context, c, from *corpus.Corpus, l Layout, p *Plan, now time.Time) (*Curated, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if _, err := c.Plan(ctx, p.ID); err != nil {
		if errors.Is(err, corpus.ErrNoRow) {
			return nil, fmt.Errorf("plan id %d has no training_plans row: keep the id train-plan wrote, or run 'cra train-plan' again", p.ID)
		}
		return nil, err
	}
	out := &Curated{Skipped: map[string]int{}}
	seen := map[[32]byte]bool{}
	convert := func(calls []corpus.LoggedCall, positive bool) []dataset.Record {
		var recs []dataset.Record
		for _, call := range calls {
			if strings.HasPrefix(strings.TrimSpace(call.Prompt), "[{") && json.Valid([]byte(call.Prompt)) {
				out.Skipped[SkipConversation]++
				continue
			}
			if (len(call.System)+len(call.Prompt)+len(call.Response))/4 > p.Hyper.MaxSeqLength {
				out.Skipped[SkipTooLong]++
				continue
			}
			ex := dataset.Chat(call.System, call.Prompt, call.Response)
			line, _ := json.Marshal(ex) // strings only: cannot fail
			h := sha256.Sum256(line)
			if seen[h] {
				out.Skipped[SkipDuplicate]++
				continue
			}
			seen[h] = true
			recs = append(recs, dataset.Record{Example: ex, Meta: dataset.Meta{Stage: p.Stage, Source: corpus.SourceLogged,
				Positive: positive, Date: call.Time, TaskID: call.TaskID, CallID: call.ID}})
		}
		return recs
	}
	withDecisions := p.Data.WithDecisions && (p.Stage == dataset.Scope || p.Stage == dataset.Precision)
	// Read bounds: twice what is kept, newest first, leaves room for the
	// duplicates and the over-long without holding the whole log.
	calls, err := from.LoggedCalls(ctx, corpus.CallFilter{Stage: p.Stage, Outcome: corpus.OutcomeSuccess, WithDecisions: withDecisions,
		Accepted: true, Limit: 2 * p.Data.MaxExamples})
	if err != nil {
		return nil, fmt.Errorf("select logged calls: %w", err)
	}
	pos := newest(convert(calls, true), p.Data.MaxExamples, out, SkipOverMax)
	var neg []dataset.Record
	if limit := shareLimit(len(pos), p.Data.MaxNegativeShare); p.Data.IncludeNegatives && limit > 0 {
		calls, err := from.LoggedCalls(ctx, corpus.CallFilter{Stage: p.Stage, Outcome: corpus.OutcomeFailure, Limit: 2 * limit})
		if err != nil {
			return nil, fmt.Errorf("select logged calls: %w", err)
		}
		// Balance: negatives at most MaxNegativeShare of the examples.
		neg = newest(convert(calls, false), limit, out, SkipNegShare)
	}
	out.Positive, out.Negative = len(pos), len(neg)
	out.Logged = len(pos) + len(neg)
	recs := append(pos, neg...)
	if p.Data.MixSynthetic {
		syn, from, err := synthetic(ctx, c, p.Stage)
		if err != nil {
			return nil, err
		}
		if out.Logged > 0 {
			syn = newest(syn, shareLimit(out.Logged, p.Data.SyntheticShare), out, SkipSynthShare)
		} else {
			syn = newest(syn, p.Data.MaxExamples, out, SkipOverMax)
		}
		out.Synthetic, out.SyntheticFrom = len(syn), from
		recs = append(recs, syn...)
	}
	if err := os.MkdirAll(l.Datasets(), 0o755); err != nil {
		return nil, fmt.Errorf("datasets directory: %w", err)
	}
	// One run at a time writes: a temporary directory found while the
	// lock is held is a killed run's, never a live one's. It goes even
	// when this run has nothing to write.
	lk, err := flock.Lock(ctx, l.state().TrainingCurateLock(), true)
	if err != nil {
		return nil, fmt.Errorf("lock the datasets directory: %w", err)
	}
	defer lk.Close()
	if err := removeLeftovers(ctx, c, l.Datasets()); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no call of stage %s in a successful run%s%s; run more tasks ('cra solve', 'cra plan'), or edit the plan (include_negatives, mix_synthetic with 'cra bootstrap' data)",
			ErrNoExamples, p.Stage, map[bool]string{true: " with included retrieval decisions (with_decisions)"}[withDecisions], skippedNote(out.Skipped))
	}
	tmp := filepath.Join(l.Datasets(), tempPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("datasets directory: %w", err)
	}
	defer os.RemoveAll(tmp) // nothing left once placed
	sum, err := dataset.Write(tmp, p.Stage, recs, p.Data.ValidShare)
	if err != nil {
		return nil, err
	}
	if sum.Duplicates > 0 {
		out.Skipped[SkipDuplicate] += sum.Duplicates
	}
	// The plan as curated, edits included: 'cra train' takes the
	// hyperparameters from it.
	planText, err := p.Encode()
	if err == nil {
		err = atomicfile.Write(filepath.Join(tmp, PlanSnapshot), planText, 0o644)
	}
	if err == nil {
		err = dataset.MarkPending(tmp, tempPrefix)
	}
	if err != nil {
		return nil, fmt.Errorf("write dataset: %w", err)
	}
	// A directory of its own: a dataset recorded earlier is never
	// replaced, even by one curated in the same second.
	_, root, err := dataset.Place(l.Datasets(), fmt.Sprintf("plan-%d-%s", p.ID, now.UTC().Format("20060102T150405Z")), tmp)
	if err != nil {
		return nil, err
	}
	sum.Dir = dataset.Dir(root, p.Stage)
	out.Summary, out.Dir = sum, sum.Dir
	out.DatasetID, err = c.RecordDataset(ctx, corpus.Dataset{PlanID: p.ID, Stage: p.Stage, BaseModel: p.BaseModel, Source: corpus.SourceLogged,
		Path: sum.Dir, Examples: sum.Examples(), Positive: sum.Positive, Negative: sum.Negative})
	if err != nil {
		// A dataset is its files and its row, or neither.
		os.RemoveAll(root)
		return nil, err
	}
	dataset.Settle(root)
	return out, nil
}

// tempPrefix begins the name of the temporary directory, beside the
// datasets' directories, in which a run writes its dataset before it
// places it (dataset.Place): a dot, which no dataset's directory has,
// and a name no other writer of the directory (bootstrap) uses.
const tempPrefix = ".curate.tmp-"

// removeLeftovers removes what runs killed in the middle of writing their
// dataset left (dataset.RemoveLeftovers). The caller holds the curate lock
// (training/curate.lock, held from the removal of the leftovers to the
// dataset's record), so no run is in the middle of its own. Other
// directories, bootstrap's included, stay.
func removeLeftovers(ctx context.Context, c *corpus.Corpus, root string) error {
	rows, err := c.Datasets(ctx, "")
	if err != nil {
		return fmt.Errorf("read the datasets: %w", err)
	}
	recorded := make([]string, len(rows))
	for i, d := range rows {
		recorded[i] = d.Path
	}
	return dataset.RemoveLeftovers(root, tempPrefix, "cra curate-data", recorded)
}

// shareLimit is how many examples may join n others and stay at most
// share of the whole: n·share/(1−share), rounded down (with a margin for
// the float error of shares such as 1/3).
func shareLimit(n int, share float64) int {
	return int(math.Floor(float64(n)*share/(1-share) + 1e-9))
}

func skippedNote(s map[string]int) string {
	if len(s) == 0 {
		return ""
	}
	var parts []string
	for _, k := range []string{SkipConversation, SkipTooLong, SkipDuplicate} {
		if n := s[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(k, "_", " ")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (left out: " + strings.Join(parts, ", ") + ")"
}

// newest keeps the newest n of recs (recs are oldest first), counting the
// rest under reason.
func newest(recs []dataset.Record, n int, out *Curated, reason string) []dataset.Record {
	if n < 0 {
		n = 0
	}
	if len(recs) <= n {
		return recs
	}
	out.Skipped[reason] += len(recs) - n
	kept := recs[len(recs)-n:]
	return kept
}

// synthetic returns the training records of the stage's newest
// bootstrapped dataset, oldest first, and its id; none when there is none.
func synthetic(ctx context.Context, c *corpus.Corpus, stage string) ([]dataset.Record, int64, error) {
	ds, err := c.Datasets(ctx, stage)
	if err != nil {
		return nil, 0, fmt.Errorf("read datasets: %w", err)
	}
	for _, d := range ds {
		if d.Source != corpus.SourceSynthetic {
			continue
		}
		// Its training split only: its validation split is what an
		// adapter evaluated on it ('cra adapters eval --dataset') must
		// not have seen.
		recs, err := dataset.Read(d.Path, dataset.Train)
		if err != nil {
			return nil, 0, fmt.Errorf("synthetic dataset %d: %w (run 'cra bootstrap' again, or set mix_synthetic = false)", d.ID, err)
		}
		return recs, d.ID, nil
	}
	return nil, 0, nil
}
