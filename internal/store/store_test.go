package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/statedir"
	"github.com/google/go-cmp/cmp"
)

// TestSchemaMatchesSeed checks every table, column, constraint and index of
// seed 001 §4.5–4.7 against the databases the factory creates.
func TestSchemaMatchesSeed(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	for _, role := range []Role{Curated, Raw, Session} {
		t.Run(string(role), func(t *testing.T) {
			db, err := f.Open(ctx, role, "task-1", false)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for table, want := range seedSchema[role] {
				got := columns(t, db, table)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("table %s columns (-seed +got):\n%s", table, diff)
				}
			}
		})
	}
}

// seedSchema is §4.5–4.7 transcribed: column name, declared type, NOT NULL,
// default, primary-key position.
var seedSchema = map[Role]map[string][]col{
	Curated: {
		"repos":             {{"id", "INTEGER", false, "", 1}, {"path", "TEXT", true, "", 0}, {"remote_url", "TEXT", false, "", 0}, {"indexed_at", "TEXT", true, "", 0}},
		"files":             {{"id", "INTEGER", false, "", 1}, {"repo_id", "INTEGER", true, "", 0}, {"path", "TEXT", true, "", 0}, {"language", "TEXT", true, "", 0}, {"content_hash", "TEXT", true, "", 0}, {"size_bytes", "INTEGER", true, "", 0}},
		"symbols":           {{"id", "INTEGER", false, "", 1}, {"file_id", "INTEGER", true, "", 0}, {"name", "TEXT", true, "", 0}, {"kind", "TEXT", true, "", 0}, {"start_line", "INTEGER", true, "", 0}, {"end_line", "INTEGER", true, "", 0}, {"signature", "TEXT", false, "", 0}, {"parent_symbol_id", "INTEGER", false, "", 0}},
		"docstrings":        {{"id", "INTEGER", false, "", 1}, {"symbol_id", "INTEGER", false, "", 0}, {"file_id", "INTEGER", true, "", 0}, {"content", "TEXT", true, "", 0}, {"format", "TEXT", false, "", 0}, {"parsed_fields", "TEXT", false, "", 0}},
		"inline_comments":   {{"id", "INTEGER", false, "", 1}, {"file_id", "INTEGER", true, "", 0}, {"symbol_id", "INTEGER", false, "", 0}, {"line", "INTEGER", true, "", 0}, {"content", "TEXT", true, "", 0}, {"kind", "TEXT", false, "", 0}, {"is_rationale", "INTEGER", true, "0", 0}},
		"dependencies":      {{"id", "INTEGER", false, "", 1}, {"source_file_id", "INTEGER", true, "", 0}, {"target_file_id", "INTEGER", true, "", 0}, {"kind", "TEXT", true, "", 0}},
		"symbol_references": {{"id", "INTEGER", false, "", 1}, {"caller_symbol_id", "INTEGER", true, "", 0}, {"callee_symbol_id", "INTEGER", true, "", 0}, {"reference_kind", "TEXT", true, "", 0}, {"confidence", "REAL", true, "", 0}},
		"commits":           {{"id", "INTEGER", false, "", 1}, {"repo_id", "INTEGER", true, "", 0}, {"hash", "TEXT", true, "", 0}, {"author", "TEXT", false, "", 0}, {"message", "TEXT", false, "", 0}, {"timestamp", "TEXT", true, "", 0}, {"files_changed", "INTEGER", false, "", 0}, {"insertions", "INTEGER", false, "", 0}, {"deletions", "INTEGER", false, "", 0}},
		"file_commits":      {{"file_id", "INTEGER", true, "", 1}, {"commit_id", "INTEGER", true, "", 2}},
		"co_changes":        {{"file_a_id", "INTEGER", true, "", 1}, {"file_b_id", "INTEGER", true, "", 2}, {"count", "INTEGER", true, "1", 0}, {"last_commit_hash", "TEXT", false, "", 0}},
		"file_metadata":     {{"file_id", "INTEGER", false, "", 1}, {"purpose", "TEXT", false, "", 0}, {"module", "TEXT", false, "", 0}, {"domain", "TEXT", false, "", 0}, {"concepts", "TEXT", false, "", 0}, {"public_api_surface", "TEXT", false, "", 0}, {"complexity_notes", "TEXT", false, "", 0}},
		"adapter_metadata":  {{"id", "INTEGER", false, "", 1}, {"stage_name", "TEXT", true, "", 0}, {"base_model", "TEXT", true, "", 0}, {"model_tag", "TEXT", true, "", 0}, {"version", "INTEGER", true, "1", 0}, {"active", "INTEGER", true, "1", 0}, {"performance_notes", "TEXT", false, "", 0}, {"deployed_at", "TEXT", true, "", 0}},
	},
	Raw: {
		"index_runs":          {{"id", "INTEGER", false, "", 1}, {"repo_path", "TEXT", true, "", 0}, {"files_scanned", "INTEGER", true, "", 0}, {"files_changed", "INTEGER", true, "", 0}, {"duration_ms", "INTEGER", true, "", 0}, {"status", "TEXT", true, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"enrichment_outputs":  {{"id", "INTEGER", false, "", 1}, {"file_id", "INTEGER", true, "", 0}, {"model", "TEXT", true, "", 0}, {"purpose", "TEXT", false, "", 0}, {"module", "TEXT", false, "", 0}, {"domain", "TEXT", false, "", 0}, {"concepts", "TEXT", false, "", 0}, {"public_api_surface", "TEXT", false, "", 0}, {"complexity_notes", "TEXT", false, "", 0}, {"raw_prompt", "TEXT", true, "", 0}, {"raw_response", "TEXT", true, "", 0}, {"promoted", "INTEGER", true, "0", 0}, {"timestamp", "TEXT", true, "", 0}},
		"retrieval_llm_calls": {{"id", "INTEGER", false, "", 1}, {"task_id", "TEXT", true, "", 0}, {"call_type", "TEXT", true, "", 0}, {"stage_name", "TEXT", false, "", 0}, {"model", "TEXT", true, "", 0}, {"prompt", "TEXT", true, "", 0}, {"response", "TEXT", true, "", 0}, {"prompt_tokens", "INTEGER", false, "", 0}, {"completion_tokens", "INTEGER", false, "", 0}, {"latency_ms", "INTEGER", true, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"retrieval_decisions": {{"id", "INTEGER", false, "", 1}, {"task_id", "TEXT", true, "", 0}, {"stage", "TEXT", true, "", 0}, {"file_id", "INTEGER", true, "", 0}, {"tier", "TEXT", false, "", 0}, {"included", "INTEGER", true, "", 0}, {"reason", "TEXT", false, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"task_runs":           {{"id", "INTEGER", false, "", 1}, {"task_id", "TEXT", true, "", 0}, {"repo_path", "TEXT", true, "", 0}, {"mode", "TEXT", true, "", 0}, {"execute_model", "TEXT", true, "", 0}, {"context_window", "INTEGER", true, "", 0}, {"reserved_tokens", "INTEGER", true, "", 0}, {"stages", "TEXT", true, "", 0}, {"plan_artifact", "TEXT", false, "", 0}, {"success", "INTEGER", false, "", 0}, {"total_tokens", "INTEGER", false, "", 0}, {"total_latency_ms", "INTEGER", false, "", 0}, {"final_diff", "TEXT", false, "", 0}, {"final_plan", "TEXT", false, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"run_attempts":        {{"id", "INTEGER", false, "", 1}, {"task_run_id", "INTEGER", true, "", 0}, {"attempt", "INTEGER", true, "", 0}, {"prompt_tokens", "INTEGER", false, "", 0}, {"completion_tokens", "INTEGER", false, "", 0}, {"latency_ms", "INTEGER", true, "", 0}, {"raw_response", "TEXT", true, "", 0}, {"patch_applied", "INTEGER", true, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"validation_results":  {{"id", "INTEGER", false, "", 1}, {"attempt_id", "INTEGER", true, "", 0}, {"success", "INTEGER", true, "", 0}, {"test_output", "TEXT", false, "", 0}, {"lint_output", "TEXT", false, "", 0}, {"type_check_output", "TEXT", false, "", 0}, {"failing_tests", "TEXT", false, "", 0}},
		"session_archives":    {{"id", "INTEGER", false, "", 1}, {"task_id", "TEXT", true, "", 0}, {"session_blob", "BLOB", true, "", 0}, {"archived_at", "TEXT", true, "", 0}},
		"training_plans":      {{"id", "INTEGER", false, "", 1}, {"task_id", "TEXT", true, "", 0}, {"target_stage", "TEXT", true, "", 0}, {"base_model", "TEXT", true, "", 0}, {"source", "TEXT", true, "'logged'", 0}, {"data_criteria", "TEXT", true, "", 0}, {"hyperparameters", "TEXT", false, "", 0}, {"improvement_targets", "TEXT", false, "", 0}, {"raw_plan", "TEXT", true, "", 0}, {"timestamp", "TEXT", true, "", 0}},
		"training_datasets":   {{"id", "INTEGER", false, "", 1}, {"training_plan_id", "INTEGER", true, "", 0}, {"stage_name", "TEXT", true, "", 0}, {"base_model", "TEXT", true, "", 0}, {"source", "TEXT", true, "'logged'", 0}, {"dataset_path", "TEXT", true, "", 0}, {"example_count", "INTEGER", true, "", 0}, {"positive_count", "INTEGER", true, "", 0}, {"negative_count", "INTEGER", true, "", 0}, {"format", "TEXT", true, "'jsonl'", 0}, {"timestamp", "TEXT", true, "", 0}},
		// dataset_id is optional (raw migration 0003): an adapter trained
		// outside cra has no dataset here.
		"adapter_registry": {{"id", "INTEGER", false, "", 1}, {"dataset_id", "INTEGER", false, "", 0}, {"stage_name", "TEXT", true, "", 0}, {"base_model", "TEXT", true, "", 0}, {"model_tag", "TEXT", true, "", 0}, {"training_loss", "REAL", false, "", 0}, {"eval_metrics", "TEXT", false, "", 0}, {"deployed", "INTEGER", true, "0", 0}, {"trained_at", "TEXT", true, "", 0}},
	},
	Session: {
		"kv": {{"key", "TEXT", false, "", 1}, {"value", "TEXT", true, "", 0}, {"updated_at", "TEXT", true, "", 0}},
	},
}

type col struct {
	Name    string
	Type    string
	NotNull bool
	Default string
	PK      int
}

func columns(t *testing.T, db *sql.DB, table string) []col {
	t.Helper()
	rows, err := db.Query("SELECT name, type, \"notnull\", COALESCE(dflt_value, ''), pk FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []col
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.Name, &c.Type, &c.NotNull, &c.Default, &c.PK); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSeedIndexes(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	db, err := f.Open(ctx, Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// §4.5 "Indexes": table(columns) in order.
	want := []string{
		"files(repo_id,path)", "symbols(file_id)", "symbols(name)",
		"symbol_references(caller_symbol_id)", "symbol_references(callee_symbol_id)",
		"dependencies(source_file_id)", "dependencies(target_file_id)",
		"commits(repo_id,hash)", "file_metadata(domain)", "file_metadata(module)",
		"adapter_metadata(stage_name,active)",
	}
	have := map[string]bool{}
	rows, err := db.Query("SELECT tbl_name, name FROM sqlite_master WHERE type = 'index'")
	if err != nil {
		t.Fatal(err)
	}
	type ix struct{ table, name string }
	var all []ix
	for rows.Next() {
		var i ix
		if err := rows.Scan(&i.table, &i.name); err != nil {
			t.Fatal(err)
		}
		all = append(all, i)
	}
	rows.Close()
	for _, i := range all {
		cols, err := db.Query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", i.name)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for cols.Next() {
			var n string
			cols.Scan(&n)
			names = append(names, n)
		}
		cols.Close()
		have[i.table+"("+strings.Join(names, ",")+")"] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("missing index on %s", w)
		}
	}
}

func TestConstraints(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	db, err := f.Open(ctx, Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, "INSERT INTO repos(id, path, indexed_at) VALUES (1, '/r', 'now')")
	mustExec(t, db, "INSERT INTO files(id, repo_id, path, language, content_hash, size_bytes) VALUES (1, 1, 'a.py', 'python', 'h', 1), (2, 1, 'b.py', 'python', 'h', 1)")
	tests := []struct {
		name, sql string
	}{
		{"foreign key files.repo_id", "INSERT INTO files(repo_id, path, language, content_hash, size_bytes) VALUES (99, 'x', 'python', 'h', 1)"},
		{"foreign key symbols.file_id", "INSERT INTO symbols(file_id, name, kind, start_line, end_line) VALUES (99, 'f', 'function', 1, 1)"},
		{"co_changes a < b", "INSERT INTO co_changes(file_a_id, file_b_id) VALUES (2, 1)"},
		{"co_changes primary key", "INSERT INTO co_changes(file_a_id, file_b_id) VALUES (1, 2), (1, 2)"},
		{"file_commits foreign key", "INSERT INTO file_commits(file_id, commit_id) VALUES (1, 99)"},
		{"not null name", "INSERT INTO symbols(file_id, kind, start_line, end_line) VALUES (1, 'function', 1, 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := db.Exec(tc.sql); err == nil {
				t.Errorf("got no error, want a constraint violation")
			}
		})
	}
	rawDB, err := f.Open(ctx, Raw, "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer rawDB.Close()
	mustExec(t, rawDB, "INSERT INTO task_runs(task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages, timestamp) VALUES ('t', '/r', 'plan', 'm', 1, 0, 'scope', 'now')")
	if _, err := rawDB.Exec("INSERT INTO task_runs(task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages, timestamp) VALUES ('t', '/r', 'plan', 'm', 1, 0, 'scope', 'now')"); err == nil {
		t.Error("task_runs.task_id: got no error, want UNIQUE violation")
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestWALAndReadOnly(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	if _, err := f.Open(ctx, Curated, "", true); !errors.Is(err, ErrNotExist) {
		t.Fatalf("read-only open of a missing db: got %v, want ErrNotExist", err)
	}
	rw, err := f.Open(ctx, Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	rw.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode: got %q, want wal", mode)
	}
	mustExec(t, rw, "INSERT INTO repos(path, indexed_at) VALUES ('/r', 'now')")
	rw.Close()

	ro, err := f.Open(ctx, Curated, "", true)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var n int
	if err := ro.QueryRow("SELECT COUNT(*) FROM repos").Scan(&n); err != nil || n != 1 {
		t.Fatalf("read through read-only connection: got %d, %v, want 1", n, err)
	}
	if _, err := ro.Exec("INSERT INTO repos(path, indexed_at) VALUES ('/x', 'now')"); err == nil {
		t.Fatal("write through read-only connection: got no error, want refusal")
	} else if !regexp.MustCompile(`(?i)readonly|read-only|read only`).MatchString(err.Error()) {
		t.Errorf("write through read-only connection: got %v, want a read-only error", err)
	}
}

func TestMigrateIdempotentAndVersioned(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	for i := 0; i < 2; i++ {
		db, err := f.Open(ctx, Raw, "", false)
		if err != nil {
			t.Fatal(err)
		}
		var n, max int
		db.QueryRow("SELECT COUNT(*), MAX(version) FROM schema_migrations").Scan(&n, &max)
		files, _ := migrationFiles(Raw)
		if n != len(files) || max != len(files) {
			t.Errorf("open %d: got %d rows, max version %d, want %d", i, n, max, len(files))
		}
		db.Close()
	}
	// A database from a newer cra is refused, not silently used.
	db, _ := f.Open(ctx, Raw, "", false)
	mustExec(t, db, "INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'future', 'now')")
	db.Close()
	if _, err := f.Open(ctx, Raw, "", false); err == nil || !strings.Contains(err.Error(), "upgrade cra") {
		t.Errorf("got %v, want an 'upgrade cra' error", err)
	}
}

func TestSessionHelpers(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	s, err := f.OpenSession(ctx, "3f1c2a9e-0000-4000-8000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok, err := s.Get(ctx, "final_context"); ok || err != nil {
		t.Fatalf("get missing: got ok=%v err=%v, want false, nil", ok, err)
	}
	for k, v := range map[string]any{"stage_outputs": map[string]int{"scope": 3}, "stage_progress": []string{"scope"}, "retry_context": "x", "final_context": nil} {
		if err := s.Set(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set(ctx, "stage_outputs", map[string]int{"scope": 4}); err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if ok, err := s.Load(ctx, "stage_outputs", &got); !ok || err != nil {
		t.Fatalf("load: %v %v", ok, err)
	}
	if got["scope"] != 4 {
		t.Errorf("overwrite: got %v, want scope=4", got)
	}
	keys, err := s.List(ctx, "stage_")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"stage_outputs", "stage_progress"}, keys); diff != "" {
		t.Errorf("list prefix (-want +got):\n%s", diff)
	}
	all, _ := s.List(ctx, "")
	if !sort.StringsAreSorted(all) || len(all) != 4 {
		t.Errorf("list all: got %v, want 4 sorted keys", all)
	}
	if err := s.Delete(ctx, "retry_context"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "retry_context"); err != nil {
		t.Errorf("delete missing: got %v, want nil", err)
	}
	if _, ok, _ := s.Get(ctx, "retry_context"); ok {
		t.Error("deleted key still present")
	}
	// List treats LIKE metacharacters literally.
	s.Set(ctx, "a%b", 1)
	s.Set(ctx, "axb", 1)
	if keys, _ := s.List(ctx, "a%"); len(keys) != 1 {
		t.Errorf("list with %%: got %v, want [a%%b]", keys)
	}
}

func TestSessionPath(t *testing.T) {
	f := NewFactory(statedir.At("/state"))
	for _, bad := range []string{"", "../escape", "a/b", ".hidden", strings.Repeat("x", 200)} {
		if _, err := f.Path(Session, bad); err == nil {
			t.Errorf("task id %q: got no error, want refusal", bad)
		}
	}
	p, err := f.Path(Session, "abc-1")
	if err != nil || p != filepath.Join("/state", "sessions", "session_abc-1.sqlite") {
		t.Errorf("got %q, %v", p, err)
	}
	if p, _ := f.Path(Curated, "ignored"); p != filepath.Join("/state", "curated.sqlite") {
		t.Errorf("curated path: got %q", p)
	}
}

// archiverFunc is an Archiver that calls itself.
type archiverFunc func(ctx context.Context, taskID string, blob []byte) error

func (f archiverFunc) ArchiveSession(ctx context.Context, taskID string, blob []byte) error {
	return f(ctx, taskID, blob)
}

var _ Archiver = archiverFunc(nil)

func TestSessionArchive(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	s, err := f.OpenSession(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "final_context", map[string]int{"files": 3}); err != nil {
		t.Fatal(err)
	}
	path, _ := f.Path(Session, "t-1")
	var blob []byte
	keep := archiverFunc(func(_ context.Context, taskID string, b []byte) error {
		if taskID != "t-1" {
			t.Errorf("archived as %q, want t-1", taskID)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("session file gone before it was kept: %v", err)
		}
		blob = b
		return nil
	})
	if err := s.Archive(ctx, f, keep, "t-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session file still there after archiving: %v", err)
	}
	// The archived bytes are a whole SQLite database holding the state.
	restored := filepath.Join(t.TempDir(), "restored.sqlite")
	os.WriteFile(restored, blob, 0o644)
	db, err := sql.Open("sqlite", restored)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT value FROM kv WHERE key = 'final_context'").Scan(&v); err != nil || v != `{"files":3}` {
		t.Errorf("restored session: got %q, %v", v, err)
	}
}

// TestSessionArchiveFailure: a session whose bytes could not be kept
// stays on disk, and the archiver's error is returned as is.
func TestSessionArchiveFailure(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	s, err := f.OpenSession(ctx, "t-2")
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("archive session: disk full")
	err = s.Archive(ctx, f, archiverFunc(func(context.Context, string, []byte) error { return full }), "t-2")
	if err != full {
		t.Errorf("got %v, want the archiver's error as is", err)
	}
	path, _ := f.Path(Session, "t-2")
	if _, err := os.Stat(path); err != nil {
		t.Errorf("session file removed although it was not kept: %v", err)
	}
}

// TestDamagedFileSaysWhatToDo: a file that is not a database names the
// fix, which differs between the rebuildable knowledge base and the
// records.
func TestDamagedFileSaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		role Role
		want string
	}{
		{Curated, "run 'cra index --rebuild' to set it aside and build it anew"},
		{Raw, "move it aside, keeping it for its records"},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			f := NewFactory(statedir.At(t.TempDir()))
			path, err := f.Path(tc.role, "")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 300), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, ro := range []bool{false, true} {
				db, err := f.Open(ctx, tc.role, "", ro)
				if err == nil {
					db.Close()
					t.Fatalf("read-only %v: opened a damaged file", ro)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("read-only %v: got %v, want it to contain %q", ro, err, tc.want)
				}
				if !errors.Is(err, ErrDamaged) {
					t.Errorf("read-only %v: got %v, want it to match ErrDamaged", ro, err)
				}
			}
		})
	}
}

// TestSetAside: a database set aside keeps its bytes under .damaged, the
// next open starts an empty one, and a second set-aside replaces the
// first copy.
func TestSetAside(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	if got, err := f.SetAside(Curated); err != nil || got != "" {
		t.Fatalf("no file: got %q, %v; want nothing to do", got, err)
	}
	db, err := f.Open(ctx, Curated, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE marker(x)`); err != nil {
		t.Fatal(err)
	}
	if err := QuickCheck(ctx, db); err != nil {
		t.Fatalf("a sound database: %v", err)
	}
	db.Close()
	for range 2 {
		aside, err := f.SetAside(Curated)
		path, _ := f.Path(Curated, "")
		if err != nil || aside != path+".damaged" {
			t.Fatalf("got %q, %v", aside, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the file is still there: %v", err)
		}
		db, err := f.Open(ctx, Curated, "", false)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'marker'`).Scan(&n)
		db.Close()
		if n != 0 {
			t.Errorf("the new database has the old table")
		}
	}
}

// TestConnectionPragmas: every connection reads through a memory map; a
// session, scratch memory archived at the run's end, is never fsynced,
// while the curated and raw databases keep synchronous=normal.
func TestConnectionPragmas(t *testing.T) {
	ctx := context.Background()
	f := NewFactory(statedir.At(t.TempDir()))
	for _, tc := range []struct {
		role     Role
		readOnly bool
		sync     int // 0 off, 1 normal; -1 not checked
	}{
		{Curated, false, 1},
		{Curated, true, -1},
		{Raw, false, 1},
		{Session, false, 0},
	} {
		db, err := f.Open(ctx, tc.role, "task-1", tc.readOnly)
		if err != nil {
			t.Fatal(err)
		}
		// One connection, so that both pragmas are read where they were set.
		db.SetMaxOpenConns(1)
		var mmap int64
		if err := db.QueryRow("PRAGMA mmap_size").Scan(&mmap); err != nil || mmap != mmapBytes {
			t.Errorf("%s (read-only %v): mmap_size got %d, %v, want %d", tc.role, tc.readOnly, mmap, err, mmapBytes)
		}
		if tc.sync >= 0 {
			var sync int
			if err := db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != tc.sync {
				t.Errorf("%s: synchronous got %d, %v, want %d", tc.role, sync, err, tc.sync)
			}
		}
		db.Close()
	}
}
