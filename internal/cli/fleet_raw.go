package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/workspace"
)

// rawHelp is the --raw flag's help, the same for train-plan and
// curate-data.
const rawHelp = "also read these raw databases (other hosts' .clean_room/raw.sqlite, copied here; repeat the flag or list the files after it), merged with this host's without counting a row twice"

// addRawFlag adds --raw to cmd: the files of several hosts (issue 34
// item 8). Arguments after the flags are more files, so that
// '--raw hosts/*/raw.sqlite' works; without --raw a command takes none.
func addRawFlag(cmd *cobra.Command, raw *[]string) {
	cmd.Flags().StringArrayVar(raw, "raw", nil, rawHelp)
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		if len(*raw) == 0 {
			return usageError{err: fmt.Errorf("unexpected argument %q: %s takes no arguments, only flags (other hosts' raw databases go after --raw)", args[0], cmd.CommandPath())}
		}
		*raw = append(*raw, args...)
		return nil
	}
}

// readCorpus returns the corpus the training loop reads: this host's,
// or with --raw files a merged copy of this host's and theirs, saying on
// errOut what each file added. Close removes the copy.
func readCorpus(ctx context.Context, d *deps, ws *workspace.Workspace, raw []string) (*workspace.FleetCorpus, error) {
	f, err := ws.FleetCorpus(ctx, raw)
	if err != nil {
		if errors.Is(err, workspace.ErrNotRaw) {
			return nil, usageError{err: err}
		}
		return nil, err
	}
	for _, m := range f.Merged {
		fmt.Fprintf(d.errOut, "raw %s: %s\n", m.Source, mergedLine(m))
	}
	return f, nil
}

// mergedLine says what one file added: runs and calls copied, rows that
// were there already.
func mergedLine(m *workspace.Merged) string {
	calls := m.Copied["llm_calls"] + m.Copied["retrieval_llm_calls"]
	dup := 0
	for _, n := range m.Duplicates {
		dup += n
	}
	parts := []string{fmt.Sprintf("%d run(s)", m.Copied["task_runs"]), fmt.Sprintf("%d model call(s)", calls),
		fmt.Sprintf("%d retrieval decision(s)", m.Copied["retrieval_decisions"])}
	return fmt.Sprintf("merged %s; %d row(s) already read", strings.Join(parts, ", "), dup)
}
