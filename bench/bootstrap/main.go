// Command bootstrap measures 'cra bootstrap' on a real repository's
// history: commits per second, pairs per stage, and the share of
// execute_code derivations whose edit blocks reproduce their commit.
//
//	go run ./bench/bootstrap -repo /work/bench/click -max-commits 300
//
// It writes nothing in the repository: the scratch worktree, the scratch
// index and the datasets go to -state (a temporary directory by
// default, removed at the end). -json writes the full report.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/cra-dev/cra/internal/agent"
	"github.com/cra-dev/cra/internal/bootstrap"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/retrieve"
)

func main() {
	repo := flag.String("repo", "", "repository whose history is read")
	max := flag.Int("max-commits", 300, "newest commits examined")
	state := flag.String("state", "", "directory for the scratch index and the datasets (kept; default a temporary one, removed)")
	window := flag.Int("context-window", 32768, "execute model's context window")
	reserved := flag.Int("reserved-tokens", 4096, "tokens reserved besides the context")
	jsonOut := flag.String("json", "", "write the report as JSON to this file")
	check := flag.String("check", "", "only parse every assistant message of the dataset directory DIR with cra's inference parsers")
	verbose := flag.Bool("v", false, "a line per commit on stderr")
	flag.Parse()
	if *check != "" {
		if err := checkDatasets(*check); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *repo == "" {
		fmt.Fprintln(os.Stderr, "usage: bootstrap -repo PATH [-max-commits N] [-state DIR] [-json FILE]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir := *state
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cra-bench-bootstrap-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	opts := bootstrap.Options{Repo: *repo, ScratchDir: filepath.Join(dir, "scratch"), DatasetsDir: filepath.Join(dir, "datasets"),
		MaxCommits: *max, Budget: retrieve.Budget{ContextWindow: *window, ReservedTokens: *reserved, SafetyMargin: retrieve.DefaultSafetyMargin}}
	if *verbose {
		opts.Progress = os.Stderr
	}
	rep, err := bootstrap.Run(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d commits examined, %d kept in %s (%.2f kept commits/s; indexing %s)\n", rep.Repo, rep.Seen, rep.Kept,
		rep.Duration.Round(time.Millisecond), rep.CommitsPerSecond(), rep.IndexDuration.Round(time.Millisecond))
	fmt.Printf("skipped: %v\n", rep.Skipped)
	for _, s := range dataset.Stages {
		fmt.Printf("  %-13s %4d pairs  missing %v\n", s, rep.Pairs[s], rep.Missing[s])
	}
	share := 0.0
	if rep.Code.Tried > 0 {
		share = float64(rep.Code.Reproduced) / float64(rep.Code.Tried)
	}
	fmt.Printf("execute_code: %d expressible as edit blocks, %d reproduced (%.1f%%), %d with every SEARCH in the context\n",
		rep.Code.Tried, rep.Code.Reproduced, 100*share, rep.Code.InContext)
	if rep.Dir != "" {
		if err := checkDatasets(rep.Dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *jsonOut != "" {
		data, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, data, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// checkDatasets parses every assistant message of a run's datasets with
// the parser cra uses at inference for its stage, and says how many did.
func checkDatasets(dir string) error {
	total, bad := 0, 0
	for _, stage := range dataset.Stages {
		for _, split := range []dataset.Split{dataset.Train, dataset.Valid} {
			recs, err := dataset.Read(dataset.Dir(dir, stage), split)
			if err != nil {
				return err
			}
			for _, r := range recs {
				total++
				reply := r.Example.Messages[len(r.Example.Messages)-1].Content
				var err error
				switch stage {
				case dataset.TaskAnalysis:
					_, err = retrieve.ParseTaskAnalysis(reply)
				case dataset.Scope:
					_, err = retrieve.ParseScopeReply(reply)
				case dataset.Precision:
					_, err = retrieve.ParsePrecisionReply(reply)
				case dataset.ExecutePlan:
					_, err = agent.ParsePlanReply(reply, "task")
				case dataset.ExecuteCode:
					var rep agent.Reply
					if rep, err = agent.ParseReply(reply); err == nil && len(rep.Edits) == 0 {
						err = fmt.Errorf("no edit blocks")
					}
				}
				if err != nil {
					bad++
					fmt.Fprintf(os.Stderr, "%s %.12s: %v\n", stage, r.Meta.Commit, err)
				}
			}
		}
	}
	fmt.Printf("parsed %d assistant messages with the inference parsers: %d failed\n", total, bad)
	if bad > 0 {
		return fmt.Errorf("%d assistant messages do not parse", bad)
	}
	return nil
}
