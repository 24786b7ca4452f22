package index

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/cra-dev/cra/internal/gitx"
)

// history is a history mining step under way: the mode chosen from the
// stored state, and the commits read by a concurrent git log.
type history struct {
	mode    string // "none", "full", "incremental", "up to date"
	root    string
	head    string
	prev    string // the head mined before
	commits []gitx.Commit
	err     error
	done    chan struct{}
	cancel  context.CancelFunc
}

// startHistory chooses how to mine history — incrementally (only commits
// after the last mined head) when that head is an ancestor of HEAD and the
// bounds are unchanged, from scratch otherwise (a rebase, a force push, new
// bounds) — and starts reading the commits in the background.
func (b *Builder) startHistory(ctx context.Context, tx *sql.Tx, root string, repoID int64, isGit bool) *history {
	h := &history{done: make(chan struct{}), cancel: func() {}, root: root}
	if !isGit {
		h.mode = "none"
		close(h.done)
		return h
	}
	h.head, h.err = gitx.Head(ctx, root)
	var (
		lastHead             sql.NullString
		lastDepth, lastMaxCF sql.NullInt64
	)
	if h.err == nil {
		h.err = tx.QueryRowContext(ctx, `SELECT git_head, history_depth, max_commit_files FROM repo_state WHERE repo_id = ?`, repoID).
			Scan(&lastHead, &lastDepth, &lastMaxCF)
	}
	if h.err != nil {
		close(h.done)
		return h
	}
	h.prev = lastHead.String
	sameBounds := lastDepth.Valid && int(lastDepth.Int64) == b.HistoryDepth && lastMaxCF.Valid && int(lastMaxCF.Int64) == b.MaxCommitFiles
	since := ""
	switch {
	case h.head == "" || b.HistoryDepth == 0:
		h.mode = "none"
	case sameBounds && lastHead.String == h.head:
		h.mode = "up to date"
	case sameBounds && lastHead.String != "" && gitx.IsAncestor(ctx, root, lastHead.String, h.head):
		h.mode, since = "incremental", lastHead.String
	default:
		h.mode = "full"
	}
	if h.mode != "full" && h.mode != "incremental" {
		close(h.done)
		return h
	}
	ctx, h.cancel = context.WithCancel(ctx)
	go func() {
		defer close(h.done)
		h.commits, h.err = b.mine(ctx, root, since)
	}()
	return h
}

// finishHistory waits for the commits and writes commits, file_commits and
// co_changes.
func (b *Builder) finishHistory(ctx context.Context, w *writer, h *history, res *Result) error {
	defer h.cancel()
	tx, repoID := w.tx, w.repoID
	select {
	case <-h.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.err != nil {
		return fmt.Errorf("mine history: %w", h.err)
	}
	if err := b.remineForReturns(ctx, w, h); err != nil {
		return err
	}
	res.History = h.mode
	if h.mode == "none" || h.mode == "full" {
		if err := clearHistory(ctx, tx, repoID); err != nil {
			return err
		}
	}
	if len(h.commits) > 0 {
		if err := b.storeCommits(ctx, w, h.commits, res); err != nil {
			return err
		}
	}
	if h.mode == "incremental" {
		if err := b.trimHistory(ctx, w, h.root); err != nil {
			return err
		}
	}
	if h.mode == "none" && h.head == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE repo_state SET git_head = ?, history_depth = ?, max_commit_files = ? WHERE repo_id = ?`,
		h.head, b.HistoryDepth, b.MaxCommitFiles, repoID); err != nil {
		return fmt.Errorf("update repo state: %w", err)
	}
	return nil
}

// maxReturnCheck bounds the files added in one run whose history is
// looked for: more (a branch switch) re-mine the history at once.
const maxReturnCheck = 500

// remineForReturns turns an incremental or up-to-date mine into a full
// one when a file this run added has commits in the stored history: a
// file that left the index and came back (moved aside, deleted and
// restored by a revert) lost its commits and co-changes with its rows,
// and only a full mine links them again. A new file has none: the check
// walks the history mined before, back to its oldest commit, once.
func (b *Builder) remineForReturns(ctx context.Context, w *writer, h *history) error {
	if h.mode != "incremental" && h.mode != "up to date" || len(w.added) == 0 || h.prev == "" {
		return nil
	}
	if len(w.added) <= maxReturnCheck {
		// Only what git tracks has a history: a file a person just made
		// costs no walk.
		tracked, err := gitx.Tracked(ctx, h.root, w.added)
		if err != nil {
			return fmt.Errorf("mine history: %w", err)
		}
		if len(tracked) == 0 {
			return nil
		}
		// The oldest by the instant, not the text: each date carries its
		// author's offset.
		var oldest string
		err = w.tx.QueryRowContext(ctx, `SELECT timestamp FROM commits WHERE repo_id = ? ORDER BY julianday(timestamp) LIMIT 1`, w.repoID).Scan(&oldest)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mine history: %w", err)
		}
		last, err := gitx.LastTouched(ctx, h.root, h.prev, oldest, tracked)
		if err != nil {
			return fmt.Errorf("mine history: %w", err)
		}
		if last == "" {
			return nil
		}
		var one int
		err = w.tx.QueryRowContext(ctx, `SELECT 1 FROM commits WHERE repo_id = ? AND hash = ?`, w.repoID, last).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mine history: %w", err)
		}
	}
	h.mode = "full"
	var err error
	if h.commits, err = b.mine(ctx, h.root, ""); err != nil {
		return fmt.Errorf("mine history: %w", err)
	}
	return nil
}

// mine reads the commits of root after since (all, for ""), newest
// first, at most HistoryDepth.
func (b *Builder) mine(ctx context.Context, root, since string) ([]gitx.Commit, error) {
	var commits []gitx.Commit
	err := gitx.Log(ctx, root, gitx.LogOptions{Since: since, Max: b.HistoryDepth, LineStats: b.LineStats}, func(c gitx.Commit) error {
		commits = append(commits, c)
		return nil
	})
	return commits, err
}

// trimSlack is how many commits over the depth an index may hold before
// a trim: a trim asks git for the whole window (a fifth of a second on
// 7,000 commits), which each small pull would pay otherwise.
func trimSlack(depth int) int { return max(depth/20, 1) }

// trimHistory keeps the newest HistoryDepth commits, as a full mine reads
// them, once the index holds more than trimSlack over them: an
// incremental mine adds new commits on top of the stored ones, and the
// oldest go, with their file links and their share of the co-change
// counts.
func (b *Builder) trimHistory(ctx context.Context, w *writer, root string) error {
	tx, repoID := w.tx, w.repoID
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM commits WHERE repo_id = ?`, repoID).Scan(&n); err != nil {
		return fmt.Errorf("trim history: %w", err)
	}
	if n <= b.HistoryDepth+trimSlack(b.HistoryDepth) {
		return nil
	}
	window, err := gitx.RecentCommits(ctx, root, b.HistoryDepth)
	if err != nil {
		return fmt.Errorf("trim history: %w", err)
	}
	keep := make(map[string]bool, len(window))
	for _, h := range window {
		keep[h] = true
	}
	type old struct {
		id    int64
		files int
	}
	var drop []old
	rows, err := tx.QueryContext(ctx, `SELECT id, hash, files_changed FROM commits WHERE repo_id = ?`, repoID)
	if err != nil {
		return fmt.Errorf("trim history: %w", err)
	}
	for rows.Next() {
		var o old
		var hash string
		if err := rows.Scan(&o.id, &hash, &o.files); err != nil {
			rows.Close()
			return fmt.Errorf("trim history: %w", err)
		}
		if !keep[hash] {
			drop = append(drop, o)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("trim history: %w", err)
	}
	for _, o := range drop {
		var fids []int64
		frows, err := tx.QueryContext(ctx, `SELECT file_id FROM file_commits WHERE commit_id = ? ORDER BY file_id`, o.id)
		if err != nil {
			return fmt.Errorf("trim history: %w", err)
		}
		for frows.Next() {
			var id int64
			if err := frows.Scan(&id); err != nil {
				frows.Close()
				return fmt.Errorf("trim history: %w", err)
			}
			fids = append(fids, id)
		}
		frows.Close()
		if o.files <= b.MaxCommitFiles {
			for i := range fids {
				for j := i + 1; j < len(fids); j++ {
					if _, err := tx.ExecContext(ctx, `UPDATE co_changes SET count = count - 1 WHERE file_a_id = ? AND file_b_id = ?`, fids[i], fids[j]); err != nil {
						return fmt.Errorf("trim history: %w", err)
					}
				}
			}
		}
		for _, q := range []string{`DELETE FROM file_commits WHERE commit_id = ?`, `DELETE FROM commits WHERE id = ?`} {
			if _, err := tx.ExecContext(ctx, q, o.id); err != nil {
				return fmt.Errorf("trim history: %w", err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM co_changes WHERE count <= 0 AND file_a_id IN (SELECT id FROM files WHERE repo_id = ?)`, repoID); err != nil {
		return fmt.Errorf("trim history: %w", err)
	}
	return nil
}

func clearHistory(ctx context.Context, tx *sql.Tx, repoID int64) error {
	for _, q := range []string{
		`DELETE FROM co_changes WHERE file_a_id IN (SELECT id FROM files WHERE repo_id = ?)`,
		`DELETE FROM file_commits WHERE commit_id IN (SELECT id FROM commits WHERE repo_id = ?)`,
		`DELETE FROM commits WHERE repo_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, repoID); err != nil {
			return fmt.Errorf("clear history: %w", err)
		}
	}
	return nil
}

type pair struct{ a, b int64 }

type pairCount struct {
	count    int
	lastHash string // newest commit of the pair: the first seen, as log runs newest first
}

func (b *Builder) storeCommits(ctx context.Context, w *writer, commits []gitx.Commit, res *Result) error {
	tx, repoID := w.tx, w.repoID
	files, err := w.files(ctx)
	if err != nil {
		return err
	}
	ids := make(map[string]int64, len(files))
	for _, f := range files {
		ids[f.path] = f.id
	}
	insCommit, err := tx.PrepareContext(ctx, `INSERT INTO commits(repo_id, hash, author, message, timestamp, files_changed, insertions, deletions)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(repo_id, hash) DO NOTHING RETURNING id`)
	if err != nil {
		return err
	}
	defer insCommit.Close()
	// The commits' files and the co-change counts go in multi-row
	// statements, in the order they went a row at a time: 40,000 rows on
	// a full index of django.
	insFC := &batcher{w: w, prefix: `INSERT OR IGNORE INTO file_commits(file_id, commit_id) VALUES `, cols: 2}

	pairs := map[pair]*pairCount{}
	for _, c := range commits {
		var ins, del any // NULL unless line stats were mined
		if b.LineStats {
			ni, nd := 0, 0
			for _, f := range c.Files {
				ni += max(f.Insertions, 0)
				nd += max(f.Deletions, 0)
			}
			ins, del = ni, nd
		}
		var cid int64
		err := insCommit.QueryRowContext(ctx, repoID, c.Hash, c.Author, c.Message, c.Timestamp, len(c.Files), ins, del).Scan(&cid)
		if err == sql.ErrNoRows {
			continue // already mined
		}
		if err != nil {
			return fmt.Errorf("store commit %s: %w", c.Hash, err)
		}
		res.NewCommits++
		var fids []int64
		for _, f := range c.Files {
			if id, ok := ids[f.Path]; ok {
				fids = append(fids, id)
				if err := insFC.add(ctx, id, cid); err != nil {
					return fmt.Errorf("store commit %s: %w", c.Hash, err)
				}
			}
		}
		// Commits that touch very many files (mass renames, formatting
		// sweeps, vendoring) say nothing about which files belong together.
		if len(c.Files) > b.MaxCommitFiles || len(fids) < 2 {
			continue
		}
		sort.Slice(fids, func(i, j int) bool { return fids[i] < fids[j] })
		for i := range fids {
			for j := i + 1; j < len(fids); j++ {
				p := pair{fids[i], fids[j]}
				if pc := pairs[p]; pc != nil {
					pc.count++
				} else {
					pairs[p] = &pairCount{count: 1, lastHash: c.Hash}
				}
			}
		}
	}
	if err := insFC.flush(ctx); err != nil {
		return fmt.Errorf("store commits: %w", err)
	}
	keys := slices.SortedFunc(maps.Keys(pairs), func(x, y pair) int { return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b)) })
	up := &batcher{w: w, prefix: `INSERT INTO co_changes(file_a_id, file_b_id, count, last_commit_hash) VALUES `, cols: 4,
		suffix: ` ON CONFLICT(file_a_id, file_b_id) DO UPDATE SET count = count + excluded.count, last_commit_hash = excluded.last_commit_hash`}
	for _, k := range keys {
		pc := pairs[k]
		if err := up.add(ctx, k.a, k.b, pc.count, pc.lastHash); err != nil {
			return fmt.Errorf("store co-change: %w", err)
		}
	}
	if err := up.flush(ctx); err != nil {
		return fmt.Errorf("store co-change: %w", err)
	}
	return nil
}
