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
	for _, t := range terms {
		if _, ok := v.df[t]; !ok {
			ask = append(ask, t)
			v.df[t] = 0
		}
	}
	for start := 0; start < len(ask); start += 500 {
		end := min(start+500, len(ask))
		rows, err := v.db.QueryContext(ctx, `SELECT term, doc FROM file_search_vocab WHERE term IN (`+placeholders(end-start)+`)`, ask[start:end]...)
		if err != nil {
			for _, t := range ask {
				delete(v.df, t.(string)) // not known after all
			}
			return nil, fmt.Errorf("vocabulary: %w", err)
		}
		for rows.Next() {
			var t termDF
			if err := rows.Scan(&t.term, &t.df); err != nil {
				rows.Close()
				return nil, err
			}
			v.df[t.term] = t.df
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
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
