package retrieve

import (
	"context"
	"database/sql"
	"fmt"
)

// vocab looks up the document frequencies of terms in the full-text
// vocabulary (file_search_vocab), each term once: the ranker, the
// precision stage and the assembler all weigh the task's terms, and on a
// large repository each lookup scans the vocabulary.
type vocab struct {
	db     *sql.DB
	repoID int64
	files  int            // files of the repository; -1 until counted
	df     map[string]int // every term looked up; 0: not in any file
}

func newVocab(db *sql.DB, repoID int64) *vocab {
	return &vocab{db: db, repoID: repoID, files: -1, df: map[string]int{}}
}

// lookup returns the document frequency of each term that occurs in the
// repository, in the order of terms; absent terms are left out.
func (v *vocab) lookup(ctx context.Context, terms []string) ([]termDF, error) {
	var ask []any
	asked := map[string]bool{}
	for _, t := range terms {
		if _, ok := v.df[t]; !ok && !asked[t] {
			asked[t] = true
			ask = append(ask, t)
		}
	}
	// Into the cache only once every batch has been read: a lookup that
	// fails leaves nothing half known.
	found := map[string]int{}
	for start := 0; start < len(ask); start += 500 {
		end := min(start+500, len(ask))
		if err := v.query(ctx, ask[start:end], found); err != nil {
			return nil, fmt.Errorf("vocabulary: %w", err)
		}
	}
	for t := range asked {
		v.df[t] = found[t] // 0: in no file
	}
	var out []termDF
	seen := map[string]bool{}
	for _, t := range terms {
		if df := v.df[t]; df > 0 && !seen[t] {
			seen[t] = true
			out = append(out, termDF{t, df})
		}
	}
	return out, nil
}

func (v *vocab) query(ctx context.Context, terms []any, found map[string]int) error {
	rows, err := v.db.QueryContext(ctx, `SELECT term, doc FROM file_search_vocab WHERE term IN (`+placeholders(len(terms))+`)`, terms...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var t termDF
		if err := rows.Scan(&t.term, &t.df); err != nil {
			return err
		}
		found[t.term] = t.df
	}
	return rows.Err()
}

// fileCount returns how many files the repository has.
func (v *vocab) fileCount(ctx context.Context) (int, error) {
	if v.files < 0 {
		if err := v.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM files WHERE repo_id = ?`, v.repoID).Scan(&v.files); err != nil {
			v.files = -1
			return 0, fmt.Errorf("count files: %w", err)
		}
	}
	return v.files, nil
}
