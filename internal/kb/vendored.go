package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// VendoredFile is an indexed file that is a copy of another project's
// code or a tool's output (vendored, generated or minified; see
// index.Vendored), with the reason.
type VendoredFile struct {
	ID     int64  `json:"id"`
	Path   string `json:"path"`
	Reason string `json:"vendored"`
}

// ErrNoVendoredFlags means the curated DB predates vendored detection
// (migration 0004): 'cra index' upgrades it.
var ErrNoVendoredFlags = errors.New("the index predates vendored-file detection: run 'cra index' to upgrade it")

// VendoredFiles lists a repository's vendored, generated and minified
// files, by path. On an index older than the flag it returns
// ErrNoVendoredFlags.
func (k *KnowledgeBase) VendoredFiles(ctx context.Context, repoID int64) ([]VendoredFile, error) {
	vs, err := scanAll(ctx, k.db, func(r *sql.Rows, v *VendoredFile) error {
		return r.Scan(&v.ID, &v.Path, &v.Reason)
	}, `SELECT f.id, f.path, fi.vendored FROM file_index fi INDEXED BY idx_file_index_vendored
		JOIN files f ON f.id = fi.file_id WHERE fi.vendored != '' AND f.repo_id = ? ORDER BY f.path`, repoID)
	if err != nil {
		if strings.Contains(err.Error(), "no such column") || strings.Contains(err.Error(), "no such index") {
			return nil, ErrNoVendoredFlags
		}
		return nil, fmt.Errorf("query vendored files: %w", err)
	}
	return vs, nil
}
