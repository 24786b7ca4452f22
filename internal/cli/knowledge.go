package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/fleet"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

func newKnowledgeCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "knowledge",
		Short: "List, show, promote and deprecate the documents of docs/knowledge/",
		Long: `The knowledge store, docs/knowledge/ in the repository (seed 003): short
documents of rules that every run's prompt gets under ## PROJECT
KNOWLEDGE (conventions always, the others by relevance, ~2k tokens).

  conventions/   code_style's: naming, formatting, error handling, layout
  design/        design's: architecture, data model, component boundaries
  lessons/       the internaliser's: what worked and what did not
  domain/        the internaliser's: facts of the problem domain

A document is short rules, not prose (seed 003's format):

  # Error Handling Conventions

  _Last updated by: code_style, t-1a2b3c4d_
  _Status: provisional_

  ## Rules
  1. Wrap errors once per layer: fmt.Errorf("open db: %w", err).
  2. Never log and return the same error.

  ## Examples
  Good:
    return fmt.Errorf("open db: %w", err)
  Bad:
    log.Print(err); return err

  ## Rationale
  One context per layer keeps messages readable.

  ## Changelog
  - 2026-01-02 code_style after t-1a2b3c4d: created

People write documents too, in the same format (any part may be left
out; a document without a status counts as established); a supervisor
never rewrites a person's document. A supervisor's new document is
provisional until establish_after tasks used it without a failure, or a
person promotes it. Deprecated documents leave the prompts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newKnowledgeListCmd(d, nil),
		newKnowledgeShowCmd(d, nil),
		newKnowledgeStatusCmd(d, fleet.KnowledgeEstablished, nil),
		newKnowledgeStatusCmd(d, fleet.KnowledgeDeprecated, nil),
		newKnowledgeReviewCmd(d, nil),
		newKnowledgeSyncCmd(d, nil),
	)
	return cmd
}

// knowledgeOptions are the inputs of the knowledge subcommands.
type knowledgeOptions struct {
	repo string
	json bool
	path string
	why  string
}

func addKnowledgeFlags(cmd *cobra.Command, o *knowledgeOptions, json bool) {
	cmd.Flags().StringVar(&o.repo, "repo", ".", "repository root, or a directory inside it")
	if json {
		cmd.Flags().BoolVar(&o.json, "json", false, "print JSON")
	}
}

func knowledgeStore(ctx context.Context, d *deps, repo string) (*fleet.KnowledgeStore, *workspace.Workspace, error) {
	ws, err := openWorkspace(ctx, d, repo, false)
	if err != nil {
		return nil, nil, err
	}
	return &fleet.KnowledgeStore{Root: ws.Root, Now: d.now}, ws, nil
}

func newKnowledgeListCmd(d *deps, runF func(context.Context, *deps, *knowledgeOptions) error) *cobra.Command {
	opts := &knowledgeOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the documents with their status and who wrote them last",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return knowledgeListRun(cmd.Context(), d, opts, false)
		},
	}
	addKnowledgeFlags(cmd, opts, true)
	return cmd
}

func knowledgeListRun(ctx context.Context, d *deps, opts *knowledgeOptions, reviewOnly bool) error {
	s, ws, err := knowledgeStore(ctx, d, opts.repo)
	if err != nil {
		return err
	}
	defer ws.Close()
	all, err := s.List()
	if err != nil {
		return err
	}
	listed := make([]fleet.KnowledgeListed, 0, len(all))
	for _, l := range all {
		if !reviewOnly || l.NeedsReview && l.Status != fleet.KnowledgeDeprecated {
			listed = append(listed, l)
		}
	}
	if opts.json {
		return encodeJSON(d.out, listed)
	}
	if len(listed) == 0 {
		msg := "no documents in " + fleet.KnowledgeDir + ": write one (see 'cra knowledge --help') or run 'cra supervisors run'"
		if reviewOnly {
			msg = "nothing waits for your review"
		}
		_, err := fmt.Fprintln(d.out, msg)
		return err
	}
	rows := [][]string{{"PATH", "STATUS", "BY", "AFTER", "TITLE"}}
	for _, l := range listed {
		by := l.By
		if l.Person {
			by = "person"
			if l.By != "" {
				by = l.By
			}
		}
		after := l.AfterTask
		if after == "" {
			after = "-"
		}
		status := string(l.Status)
		if l.NeedsReview {
			status += " (review)"
		}
		rows = append(rows, []string{l.Path, status, by, after, clipRunes(l.Title, 60)})
	}
	if err := writeTable(d.out, rows); err != nil {
		return err
	}
	if reviewOnly {
		_, err = fmt.Fprintln(d.out, "confirm one with 'cra knowledge promote PATH', reject it with 'cra knowledge deprecate PATH --why …'")
	}
	return err
}

func newKnowledgeShowCmd(d *deps, runF func(context.Context, *deps, *knowledgeOptions) error) *cobra.Command {
	opts := &knowledgeOptions{}
	cmd := &cobra.Command{
		Use:   "show <path>",
		Short: "Print a document (path relative to docs/knowledge/)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = strings.TrimPrefix(args[0], fleet.KnowledgeDir+"/")
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return knowledgeShowRun(cmd.Context(), d, opts)
		},
	}
	addKnowledgeFlags(cmd, opts, true)
	return cmd
}

// knowledgeDocJSON is 'cra knowledge show --json'.
type knowledgeDocJSON struct {
	Path string `json:"path"`
	*fleet.KnowledgeDoc
	Status fleet.KnowledgeStatus `json:"effective_status"`
	Text   string                `json:"text"`
}

func knowledgeShowRun(ctx context.Context, d *deps, opts *knowledgeOptions) error {
	s, ws, err := knowledgeStore(ctx, d, opts.repo)
	if err != nil {
		return err
	}
	defer ws.Close()
	doc, text, err := s.Read(opts.path)
	if err != nil {
		return knowledgeErr(err)
	}
	if opts.json {
		return encodeJSON(d.out, knowledgeDocJSON{Path: opts.path, KnowledgeDoc: doc, Status: doc.EffectiveStatus(), Text: text})
	}
	_, err = fmt.Fprint(d.out, text)
	return err
}

func knowledgeErr(err error) error {
	switch {
	case errors.Is(err, fleet.ErrKnowledgePath):
		return usageError{err: err}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: see 'cra knowledge list'", err)
	}
	return err
}

func newKnowledgeStatusCmd(d *deps, to fleet.KnowledgeStatus, runF func(context.Context, *deps, *knowledgeOptions) error) *cobra.Command {
	opts := &knowledgeOptions{}
	use, short := "promote <path>", "Mark a document established: a person confirmed it"
	if to == fleet.KnowledgeDeprecated {
		use, short = "deprecate <path>", "Mark a document deprecated: it no longer applies and leaves the prompts"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

Only the document's _Status:_ line changes (it is added when missing),
its review flag is cleared, and a changelog entry says who and why; the
rest stays as written. The change is logged as [event:user][knowledge].`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = strings.TrimPrefix(args[0], fleet.KnowledgeDir+"/")
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return knowledgeStatusRun(cmd.Context(), d, opts, to)
		},
	}
	addKnowledgeFlags(cmd, opts, false)
	cmd.Flags().StringVar(&opts.why, "why", "", "the reason, kept in the changelog")
	return cmd
}

func knowledgeStatusRun(ctx context.Context, d *deps, opts *knowledgeOptions, to fleet.KnowledgeStatus) error {
	s, ws, err := knowledgeStore(ctx, d, opts.repo)
	if err != nil {
		return err
	}
	defer ws.Close()
	if _, err := s.SetStatus(opts.path, to, "person", opts.why); err != nil {
		return knowledgeErr(err)
	}
	if workspace.HasState(ws.Root) {
		msg := fmt.Sprintf("%s %s", to, opts.path)
		if opts.why != "" {
			msg += ": " + opts.why
		}
		world.NoteEvent(ctx, d.errOut, ws.StateDir, world.SourceUser, "knowledge", msg)
	}
	_, err = fmt.Fprintf(d.out, "%s is %s\n", opts.path, to)
	return err
}

func newKnowledgeReviewCmd(d *deps, runF func(context.Context, *deps, *knowledgeOptions) error) *cobra.Command {
	opts := &knowledgeOptions{}
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List the items a supervisor flagged for a person's review",
		Long: `List the documents flagged "_Needs user review: yes_": knowledge the
internaliser captured that a person should confirm (seed 003, "User
review queue"), such as an architectural decision made implicitly.
Promote one to confirm it, deprecate it to reject it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return knowledgeListRun(cmd.Context(), d, opts, true)
		},
	}
	addKnowledgeFlags(cmd, opts, true)
	return cmd
}
