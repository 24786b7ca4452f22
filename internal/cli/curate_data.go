package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/train"
	"github.com/cra-dev/cra/internal/workspace"
)

type curateDataOptions struct {
	repo string
	plan string
	json bool
	raw  []string
}

func newCurateDataCmd(d *deps, runF func(context.Context, *deps, *curateDataOptions) error) *cobra.Command {
	opts := &curateDataOptions{}
	cmd := &cobra.Command{
		Use:   "curate-data --plan FILE",
		Short: "Curate a training dataset from the logged calls, as a training plan says",
		Long: `Select the logged calls of the plan's stage (seed 001 §8.4, §16.2): those of
runs that succeeded, for scope and precision only runs whose retrieval
decisions were recorded (with_decisions); with include_negatives the calls
of failed runs too, as negatives, balanced to max_negative_share. Calls are
deduplicated, left out when longer than max_seq_length, and converted to
chat examples exactly as the model saw them at inference: system prompt,
prompt, reply. With mix_synthetic the stage's newest bootstrapped dataset
is mixed in, up to synthetic_share.

The dataset is written to .clean_room/training/datasets/plan-<id>-<time>/
(train.jsonl and valid.jsonl, newest examples for validation), which
appears only once complete, and recorded in training_datasets; train on it with 'cra train --dataset ID'. A plan file
with a bad key or value is refused before anything is written.

--raw FILE… selects from other hosts' raw databases too (each host of a
fleet keeps its own raw.sqlite), merged with this host's, a call read
twice counted once; the dataset is recorded in this host's.`,
		Example: `  cra curate-data --plan .clean_room/training/plans/plan-1.toml
  cra curate-data --plan plan-1.toml --json
  cra curate-data --plan plan-1.toml --raw /srv/hosts/*/raw.sqlite`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return curateDataRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root")
	f.StringVar(&opts.plan, "plan", "", "the training plan file 'cra train-plan' wrote (required)")
	f.BoolVar(&opts.json, "json", false, "print what was curated as JSON")
	addRawFlag(cmd, &opts.raw)
	return cmd
}

func curateDataRun(ctx context.Context, d *deps, opts *curateDataOptions) error {
	if opts.plan == "" {
		return usageError{err: errors.New("missing --plan: pass the file 'cra train-plan' wrote (.clean_room/training/plans/plan-<id>.toml)")}
	}
	plan, err := train.ReadPlan(opts.plan)
	if err != nil {
		if errors.Is(err, train.ErrPlanFile) {
			return usageError{err: err}
		}
		return err
	}
	ws, err := openWorkspace(ctx, d, opts.repo, false)
	if err != nil {
		return err
	}
	defer ws.Close()
	c, err := ws.Corpus(ctx)
	if err != nil {
		return err
	}
	rc, err := readCorpus(ctx, d, ws, opts.raw)
	if err != nil {
		return err
	}
	defer rc.Close()
	res, err := train.CurateFrom(ctx, c, rc.Corpus, train.NewLayout(ws.Root), plan, d.now())
	if err != nil {
		return err
	}
	if plan.Data.MixSynthetic && res.SyntheticFrom == 0 {
		fmt.Fprintf(d.errOut, "note: no bootstrapped dataset of stage %s to mix in ('cra bootstrap REPO' makes one)\n", plan.Stage)
	}
	if res.Summary.Negative > 0 {
		fmt.Fprintln(d.errOut, negativesNote(res.Summary.Negative))
	}
	if opts.json {
		return encodeJSON(d.out, struct {
			DatasetID     int64               `json:"dataset_id"`
			PlanID        int64               `json:"plan_id"`
			Stage         string              `json:"stage"`
			BaseModel     string              `json:"base_model"`
			Dir           string              `json:"dir"`
			Train         int                 `json:"train"`
			Valid         int                 `json:"valid"`
			Positive      int                 `json:"positive"`
			Negative      int                 `json:"negative"`
			Logged        int                 `json:"logged"`
			Synthetic     int                 `json:"synthetic"`
			SyntheticFrom int64               `json:"synthetic_from,omitempty"`
			Duplicates    int                 `json:"duplicates"`
			Skipped       map[string]int      `json:"skipped"`
			Raw           []*workspace.Merged `json:"raw,omitempty"`
		}{res.DatasetID, plan.ID, plan.Stage, plan.BaseModel, res.Dir, res.Summary.Train, res.Summary.Valid,
			res.Summary.Positive, res.Summary.Negative, res.Logged, res.Synthetic, res.SyntheticFrom, res.Skipped[train.SkipDuplicate], res.Skipped, rc.Merged})
	}
	s := res.Summary
	fmt.Fprintf(d.out, "dataset %d: %s (%s model), %d examples (%d train, %d valid), %d positive, %d negative\n",
		res.DatasetID, plan.Stage, plan.BaseModel, s.Examples(), s.Train, s.Valid, s.Positive, s.Negative)
	fmt.Fprintf(d.out, "from: %d logged call(s) (%d of successful runs, %d of failed runs)", res.Logged, res.Positive, res.Negative)
	if res.SyntheticFrom != 0 {
		fmt.Fprintf(d.out, ", %d bootstrapped example(s) of dataset %d", res.Synthetic, res.SyntheticFrom)
	}
	fmt.Fprintln(d.out)
	if len(res.Skipped) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(res.Skipped)) {
			parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), res.Skipped[k]))
		}
		fmt.Fprintf(d.out, "left out: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(d.out, "files: %s\n", relPath(ws.Root, res.Dir))
	fmt.Fprintf(d.out, "next: cra train --dataset %d\n", res.DatasetID)
	return nil
}

// negativesNote says where a dataset's negatives are and what they are for.
func negativesNote(n int) string {
	return fmt.Sprintf("note: %d negative example(s) (calls of failed runs) are in rejected.jsonl, not in train.jsonl or valid.jsonl: "+
		"a supervised trainer never learns from them; they are the rejected side for a preference trainer", n)
}
