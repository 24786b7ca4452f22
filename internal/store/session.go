package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// SessionDB is a per-task key-value working memory (seed 001 §4.7, §11).
// Values are JSON.
type SessionDB struct {
	db *sql.DB
}

// OpenSession opens (creating if needed) the session DB of taskID.
func (f *Factory) OpenSession(ctx context.Context, taskID string) (*SessionDB, error) {
	db, err := f.Open(ctx, Session, taskID, false)
	if err != nil {
		return nil, err
	}
	return &SessionDB{db: db}, nil
}

// Close closes the underlying database.
func (s *SessionDB) Close() error { return s.db.Close() }

// Set stores v, JSON-encoded, under key (set_state).
func (s *SessionDB) Set(ctx context.Context, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("session set %s: %w", key, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO kv(key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, string(data), Now())
	if err != nil {
		return fmt.Errorf("session set %s: %w", key, err)
	}
	return nil
}

// Get returns the JSON stored under key, and false when there is none
// (get_state).
func (s *SessionDB) Get(ctx context.Context, key string) (json.RawMessage, bool, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM kv WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("session get %s: %w", key, err)
	}
	return json.RawMessage(v), true, nil
}

// Load decodes the value under key into dst; false when there is none.
func (s *SessionDB) Load(ctx context.Context, key string, dst any) (bool, error) {
	raw, ok, err := s.Get(ctx, key)
	if err != nil || !ok {
		return ok, err
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return true, fmt.Errorf("session load %s: %w", key, err)
	}
	return true, nil
}

// Delete removes key; deleting a missing key is not an error (delete_state).
func (s *SessionDB) Delete(ctx context.Context, key string) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM kv WHERE key = ?", key); err != nil {
		return fmt.Errorf("session delete %s: %w", key, err)
	}
	return nil
}

// List returns the keys that start with prefix, sorted (list_keys).
func (s *SessionDB) List(ctx context.Context, prefix string) ([]string, error) {
	// Range scan rather than LIKE, so '%' and '_' in prefix are literal.
	rows, err := s.db.QueryContext(ctx, "SELECT key FROM kv WHERE key >= ? ORDER BY key", prefix)
	if err != nil {
		return nil, fmt.Errorf("session list: %w", err)
	}
	defer rows.Close()
	keys := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("session list: %w", err)
		}
		if !strings.HasPrefix(k, prefix) {
			break
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// Archiver keeps the bytes of an archived session database; the raw
// database's *corpus.Corpus is one (seed 001 §4.6 session_archives).
type Archiver interface {
	ArchiveSession(ctx context.Context, taskID string, blob []byte) error
}

// Archive closes the session, hands the database file's bytes to a for
// keeping and deletes the file (seed 001 §11.1 steps 5-7). The file is
// removed only after a has kept it; a's error is returned as is.
func (s *SessionDB) Archive(ctx context.Context, f *Factory, a Archiver, taskID string) error {
	// Closing the last connection checkpoints the WAL into the main file.
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close session: %w", err)
	}
	path, err := f.Path(Session, taskID)
	if err != nil {
		return err
	}
	blob, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("archive session: %w", err)
	}
	if err := a.ArchiveSession(ctx, taskID, blob); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove archived session: %w", err)
		}
	}
	return nil
}
