// Package kbtest writes a small, realistic curated database for the tests of
// kb and of the commands that read the index, so that each does not grow its
// own fixture.
//
// The main repository (its path is the caller's) is a tiny web shop: four
// Python files that import each other in a chain, two TypeScript files, a
// git history of four commits, co-change pairs, symbol references,
// docstrings, comments, the names definitions use, a full-text index,
// enrichment of three files, and one file indexed with syntax errors. OtherRepo has one Python file and no enrichment; EmptyRepo
// is registered with no files.
package kbtest

import (
	"context"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
)

// The repositories besides the main one.
const (
	OtherRepo = "/src/other"
	EmptyRepo = "/src/empty"
)

// Repository ids.
const (
	MainRepoID  int64 = 1
	OtherRepoID int64 = 2
	EmptyRepoID int64 = 3
)

// File ids. Dependencies: api.py → models.py → db.py → util.py, api.py →
// db.py, client.ts → types.ts (an import and a type_ref edge).
const (
	ModelsPy    int64 = 1 // app/models.py
	DBPy        int64 = 2 // app/db.py, 2 syntax errors
	APIPy       int64 = 3 // app/api.py
	UtilPy      int64 = 4 // app/util.py
	ClientTS    int64 = 5 // web/client.ts
	TypesTS     int64 = 6 // web/types.ts
	OtherMainPy int64 = 7 // main.py of OtherRepo
)

// Symbol ids.
const (
	SymUser         int64 = 1  // class User, app/models.py
	SymUserSave     int64 = 2  // method User.save
	SymLoadUser     int64 = 3  // function load_user, app/models.py
	SymConnect      int64 = 4  // function connect, app/db.py
	SymSession      int64 = 5  // class Session, app/db.py
	SymQuery        int64 = 6  // method Session.query
	SymGetUser      int64 = 7  // function get_user, app/api.py
	SymCreateUser   int64 = 8  // function create_user, app/api.py
	SymRetry        int64 = 9  // function retry, app/util.py
	SymFetchUser    int64 = 10 // function fetchUser, web/client.ts
	SymAPIClient    int64 = 11 // interface ApiClient, web/client.ts
	SymTSUser       int64 = 12 // interface User, web/types.ts
	SymUserID       int64 = 13 // type_alias UserId, web/types.ts
	SymOtherConnect int64 = 14 // function connect, OtherRepo main.py
)

// Write creates the curated database in the state directory dir (through
// the store factory, so the schema is the real one), fills it with the
// fixture with repoPath as the main repository, and closes it.
func Write(t testing.TB, dir, repoPath string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.NewFactory(statedir.At(dir)).Open(ctx, store.Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO repos (id, path, remote_url, indexed_at) VALUES
		(1, ?, 'https://example.com/shop.git', '2024-03-05T12:00:00.000Z'),
		(2, ?, NULL, '2024-03-04T12:00:00.000Z'),
		(3, ?, NULL, '2024-03-03T12:00:00.000Z')`, repoPath, OtherRepo, EmptyRepo); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range fixture {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

var fixture = []string{
	`INSERT INTO files (id, repo_id, path, language, content_hash, size_bytes) VALUES
		(1, 1, 'app/models.py', 'python', 'aa01', 900),
		(2, 1, 'app/db.py', 'python', 'aa02', 1500),
		(3, 1, 'app/api.py', 'python', 'aa03', 700),
		(4, 1, 'app/util.py', 'python', 'aa04', 200),
		(5, 1, 'web/client.ts', 'typescript', 'aa05', 600),
		(6, 1, 'web/types.ts', 'typescript', 'aa06', 150),
		(7, 2, 'main.py', 'python', 'bb01', 100)`,
	`INSERT INTO file_index (file_id, mtime_ns, line_count, syntax_errors, parsed) VALUES
		(1, 1, 30, 0, 1), (2, 1, 40, 2, 1), (3, 1, 20, 0, 1), (4, 1, 8, 0, 1),
		(5, 1, 25, 0, 1), (6, 1, 6, 0, 1), (7, 1, 5, 0, 1)`,
	`INSERT INTO symbols (id, file_id, name, kind, start_line, end_line, signature, parent_symbol_id) VALUES
		(1, 1, 'User', 'class', 3, 20, 'class User:', NULL),
		(2, 1, 'save', 'method', 8, 14, 'def save(self):', 1),
		(3, 1, 'load_user', 'function', 22, 30, 'def load_user(user_id):', NULL),
		(4, 2, 'connect', 'function', 1, 10, 'def connect(dsn):', NULL),
		(5, 2, 'Session', 'class', 12, 40, 'class Session:', NULL),
		(6, 2, 'query', 'method', 15, 25, 'def query(self, sql):', 5),
		(7, 3, 'get_user', 'function', 1, 10, 'def get_user(request):', NULL),
		(8, 3, 'create_user', 'function', 12, 20, 'def create_user(request):', NULL),
		(9, 4, 'retry', 'function', 1, 8, 'def retry(fn, attempts):', NULL),
		(10, 5, 'fetchUser', 'function', 3, 12, 'export async function fetchUser(id: UserId): Promise<User>', NULL),
		(11, 5, 'ApiClient', 'interface', 14, 25, 'export interface ApiClient', NULL),
		(12, 6, 'User', 'interface', 1, 4, 'export interface User', NULL),
		(13, 6, 'UserId', 'type_alias', 6, 6, 'export type UserId = string', NULL),
		(14, 7, 'connect', 'function', 1, 5, 'def connect():', NULL)`,
	`INSERT INTO symbol_references (id, caller_symbol_id, callee_symbol_id, reference_kind, confidence) VALUES
		(1, 7, 3, 'call', 0.9),
		(2, 3, 4, 'call', 0.8),
		(3, 3, 6, 'call', 0.6),
		(4, 2, 4, 'call', 0.8),
		(5, 8, 1, 'instantiation', 0.7),
		(6, 3, 1, 'type_ref', 0.5)`,
	`INSERT INTO docstrings (id, symbol_id, file_id, content, format, parsed_fields) VALUES
		(1, NULL, 1, 'User model and persistence.', 'plain', NULL),
		(2, 3, 1, 'Load a user by id.

Args:
    user_id: the id.', 'google', '{"args":{"user_id":"the id."}}'),
		(3, 1, 1, 'A shop customer.', 'plain', NULL),
		(4, 5, 2, 'A database session.', 'plain', NULL)`,
	`INSERT INTO inline_comments (id, file_id, symbol_id, line, content, kind, is_rationale) VALUES
		(1, 1, 2, 10, '# flush before commit because the driver buffers writes', 'rationale', 1),
		(2, 1, NULL, 2, '# TODO: split this module', 'todo', 0),
		(3, 1, 3, 25, '# cache misses are rare, so no lock here', 'rationale', 1),
		(4, 2, NULL, 3, '# NOTE: sqlite only', 'note', 0)`,
	`INSERT INTO dependencies (id, source_file_id, target_file_id, kind) VALUES
		(1, 3, 1, 'import'),
		(2, 3, 2, 'import'),
		(3, 1, 2, 'import'),
		(4, 2, 4, 'import'),
		(5, 5, 6, 'import'),
		(6, 5, 6, 'type_ref')`,
	// Commit 3 is at 07:00Z written with a +02:00 offset, commit 4 at 08:30Z:
	// text order and time order disagree.
	`INSERT INTO commits (id, repo_id, hash, author, message, timestamp, files_changed, insertions, deletions) VALUES
		(1, 1, 'c1c1c1c1c1c1', 'Ann', 'Add models and db', '2024-01-01T10:00:00Z', 2, 60, 0),
		(2, 1, 'c2c2c2c2c2c2', 'Bob', 'Add the API' || char(10) || char(10) || 'Long description.', '2024-02-01T10:00:00Z', 2, 30, 2),
		(3, 1, 'c3c3c3c3c3c3', 'Ann', 'Fix session leak', '2024-03-01T09:00:00+02:00', 2, 5, 3),
		(4, 1, 'c4c4c4c4c4c4', 'Cy', 'Retry connects', '2024-03-01T08:30:00Z', 2, 8, 1),
		(5, 2, 'd1d1d1d1d1d1', 'Dee', 'Init', '2023-06-01T00:00:00Z', 1, 5, 0)`,
	`INSERT INTO file_commits (file_id, commit_id) VALUES
		(1, 1), (2, 1), (1, 2), (3, 2), (1, 3), (2, 3), (2, 4), (4, 4), (5, 2), (7, 5)`,
	`INSERT INTO co_changes (file_a_id, file_b_id, count, last_commit_hash) VALUES
		(1, 2, 5, 'c3c3c3c3c3c3'),
		(1, 3, 2, 'c2c2c2c2c2c2'),
		(2, 4, 1, 'c4c4c4c4c4c4'),
		(5, 6, 3, 'c2c2c2c2c2c2')`,
	`INSERT INTO file_metadata (file_id, purpose, module, domain, concepts, public_api_surface, complexity_notes) VALUES
		(1, 'User model', 'app.models', 'users', '["user", "persistence"]', '["User", "load_user"]', NULL),
		(2, 'Database access', 'app.db', 'storage', '["persistence", "SQL"]', '["connect", "Session"]', 'session lifetime is subtle'),
		(3, 'HTTP handlers', 'app.api', 'users', '["http"]', NULL, NULL)`,
	`INSERT INTO adapter_metadata (id, stage_name, base_model, model_tag, version, active, performance_notes, deployed_at) VALUES
		(1, 'scope', 'reasoning', 'qwen3:4b-scope-v1', 1, 1, NULL, '2024-01-10T00:00:00Z'),
		(2, 'scope', 'reasoning', 'qwen3:4b-scope-v2', 2, 1, 'recall +4%', '2024-02-10T00:00:00Z'),
		(3, 'scope', 'reasoning', 'qwen3:4b-scope-v3', 3, 0, 'regressed', '2024-03-10T00:00:00Z'),
		(4, 'precision', 'reasoning', 'qwen3:4b-precision-v1', 1, 0, NULL, '2024-01-10T00:00:00Z')`,
	// Names the definitions' bodies use; the api.py row without a symbol is
	// a module-level import.
	`INSERT INTO name_refs (file_id, symbol_id, name, qualifier, kind, line) VALUES
		(1, 2, 'connect', '', 'call', 10),
		(1, 3, 'connect', '', 'call', 24),
		(1, 3, 'Session', '', 'call', 25),
		(2, 6, 'retry', '', 'call', 16),
		(3, NULL, 'Session', '', 'import', 1),
		(3, 7, 'load_user', '', 'call', 3),
		(3, 8, 'User', '', 'call', 14),
		(5, 10, 'UserId', '', 'type_ref', 3),
		(5, 10, 'User', '', 'type_ref', 3)`,
	// The full-text index: rowid is the file id.
	`INSERT INTO file_search (rowid, path, symbols, body) VALUES
		(1, 'app/models.py', 'User save load_user', 'user model persistence save load'),
		(2, 'app/db.py', 'connect Session query', 'database session connect query sql'),
		(3, 'app/api.py', 'get_user create_user', 'http handlers user request'),
		(4, 'app/util.py', 'retry', 'retry attempts'),
		(5, 'web/client.ts', 'fetchUser ApiClient', 'fetch user api client'),
		(6, 'web/types.ts', 'User UserId', 'user id types'),
		(7, 'main.py', 'connect', 'connect main')`,
}
