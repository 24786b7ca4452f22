package corpus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
)

// Snapshot writes a consistent copy of the whole raw database to path
// (VACUUM INTO), which must not exist: the start of a fleet's merged
// corpus (Merge), so that this host's own file is never written by a
// merge.
func (c *Corpus) Snapshot(ctx context.Context, path string) error {
	if _, err := c.db.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return fmt.Errorf("copy the raw database to %s: %w", path, err)
	}
	return nil
}

// Merged is what Merge did with one raw database: per table, the rows it
// copied and the rows it left out because the corpus had them already.
type Merged struct {
	Source     string         `json:"source"`
	Copied     map[string]int `json:"copied"`
	Duplicates map[string]int `json:"duplicates"`
}

// mergeStep copies one table's rows from src into main, each statement
// inserting only the rows whose key main lacks; count counts src's rows.
type mergeStep struct {
	table, insert, count string
}

// mergeSteps are the tables the training loop reads (train-plan's
// analyses, curate-data's calls), parents before children, so that a
// child finds its copied parent by its key and takes its new id. Each
// row's key is what says it is the same event on whichever host it is
// read from:
//   - task_runs: task_id (unique per run: a run's id names its host's
//     run, never another's);
//   - run_attempts: the run's task_id, attempt number and timestamp;
//     validation_results: their attempt (one each);
//   - llm_calls and retrieval_llm_calls: task_id, call type, model,
//     timestamp (milliseconds), prompt and response: two distinct calls
//     differ in one of them, while the same row read twice (a file named
//     twice, or a host's file copied to another) is counted once;
//     retrieval_llm_call_details follow their call;
//   - retrieval_decisions: task_id, stage, file, included and timestamp.
//
// Plans, datasets and adapters stay this host's (they name files on its
// disk); index runs, enrichment and session archives are not training
// data the loop reads.
var mergeSteps = []mergeStep{
	{"task_runs", `INSERT INTO main.task_runs (task_id, repo_path, mode, execute_model, context_window, reserved_tokens, stages,
		plan_artifact, success, total_tokens, total_latency_ms, final_diff, final_plan, timestamp)
	SELECT s.task_id, s.repo_path, s.mode, s.execute_model, s.context_window, s.reserved_tokens, s.stages,
		s.plan_artifact, s.success, s.total_tokens, s.total_latency_ms, s.final_diff, s.final_plan, s.timestamp
	FROM src.task_runs s WHERE NOT EXISTS (SELECT 1 FROM main.task_runs m WHERE m.task_id = s.task_id) ORDER BY s.id`,
		`SELECT COUNT(*) FROM src.task_runs`},
	{"run_attempts", `INSERT INTO main.run_attempts (task_run_id, attempt, prompt_tokens, completion_tokens, latency_ms, raw_response, patch_applied, timestamp)
	SELECT mr.id, a.attempt, a.prompt_tokens, a.completion_tokens, a.latency_ms, a.raw_response, a.patch_applied, a.timestamp
	FROM src.run_attempts a JOIN src.task_runs sr ON sr.id = a.task_run_id JOIN main.task_runs mr ON mr.task_id = sr.task_id
	WHERE NOT EXISTS (SELECT 1 FROM main.run_attempts x WHERE x.task_run_id = mr.id AND x.attempt = a.attempt AND x.timestamp = a.timestamp)
	ORDER BY a.id`,
		`SELECT COUNT(*) FROM src.run_attempts`},
	{"validation_results", `INSERT INTO main.validation_results (attempt_id, success, test_output, lint_output, type_check_output, failing_tests)
	SELECT ma.id, v.success, v.test_output, v.lint_output, v.type_check_output, v.failing_tests
	FROM src.validation_results v JOIN src.run_attempts sa ON sa.id = v.attempt_id JOIN src.task_runs sr ON sr.id = sa.task_run_id
	JOIN main.task_runs mr ON mr.task_id = sr.task_id
	JOIN main.run_attempts ma ON ma.task_run_id = mr.id AND ma.attempt = sa.attempt AND ma.timestamp = sa.timestamp
	WHERE NOT EXISTS (SELECT 1 FROM main.validation_results x WHERE x.attempt_id = ma.id) ORDER BY v.id`,
		`SELECT COUNT(*) FROM src.validation_results`},
	{"llm_calls", `INSERT INTO main.llm_calls (task_id, call_type, role, stage, provider, model, system, prompt, response,
		prompt_tokens, completion_tokens, latency_ms, error, timestamp)
	SELECT s.task_id, s.call_type, s.role, s.stage, s.provider, s.model, s.system, s.prompt, s.response,
		s.prompt_tokens, s.completion_tokens, s.latency_ms, s.error, s.timestamp
	FROM src.llm_calls s WHERE NOT EXISTS (SELECT 1 FROM main.llm_calls m WHERE m.task_id IS s.task_id AND m.timestamp = s.timestamp
		AND m.call_type = s.call_type AND m.model = s.model AND m.prompt = s.prompt AND m.response = s.response) ORDER BY s.id`,
		`SELECT COUNT(*) FROM src.llm_calls`},
	{"retrieval_llm_calls", `INSERT INTO main.retrieval_llm_calls (task_id, call_type, stage_name, model, prompt, response,
		prompt_tokens, completion_tokens, latency_ms, timestamp)
	SELECT s.task_id, s.call_type, s.stage_name, s.model, s.prompt, s.response, s.prompt_tokens, s.completion_tokens, s.latency_ms, s.timestamp
	FROM src.retrieval_llm_calls s WHERE NOT EXISTS (SELECT 1 FROM main.retrieval_llm_calls m WHERE m.task_id = s.task_id AND m.timestamp = s.timestamp
		AND m.call_type = s.call_type AND m.model = s.model AND m.prompt = s.prompt AND m.response = s.response) ORDER BY s.id`,
		`SELECT COUNT(*) FROM src.retrieval_llm_calls`},
	{"retrieval_llm_call_details", `INSERT INTO main.retrieval_llm_call_details (call_id, role, provider, system, error)
	SELECT m.id, d.role, d.provider, d.system, d.error
	FROM src.retrieval_llm_call_details d JOIN src.retrieval_llm_calls s ON s.id = d.call_id
	JOIN main.retrieval_llm_calls m ON m.task_id = s.task_id AND m.timestamp = s.timestamp AND m.call_type = s.call_type
		AND m.model = s.model AND m.prompt = s.prompt AND m.response = s.response
	WHERE NOT EXISTS (SELECT 1 FROM main.retrieval_llm_call_details x WHERE x.call_id = m.id) ORDER BY d.call_id`,
		`SELECT COUNT(*) FROM src.retrieval_llm_call_details`},
	{"retrieval_decisions", `INSERT INTO main.retrieval_decisions (task_id, stage, file_id, tier, included, reason, timestamp)
	SELECT s.task_id, s.stage, s.file_id, s.tier, s.included, s.reason, s.timestamp
	FROM src.retrieval_decisions s WHERE NOT EXISTS (SELECT 1 FROM main.retrieval_decisions m WHERE m.task_id = s.task_id AND m.stage = s.stage
		AND m.file_id = s.file_id AND m.included = s.included AND m.timestamp = s.timestamp) ORDER BY s.id`,
		`SELECT COUNT(*) FROM src.retrieval_decisions`},
}

// mergeIndexes make the key lookups of mergeSteps quick in the merged
// copy (a temporary file: they cost this host's database nothing).
var mergeIndexes = []string{
	`CREATE INDEX IF NOT EXISTS merge_llm_calls ON llm_calls(timestamp, call_type)`,
	`CREATE INDEX IF NOT EXISTS merge_retrieval_llm_calls ON retrieval_llm_calls(timestamp, call_type)`,
	`CREATE INDEX IF NOT EXISTS merge_retrieval_decisions ON retrieval_decisions(task_id, timestamp)`,
	`CREATE INDEX IF NOT EXISTS merge_run_attempts ON run_attempts(task_run_id, attempt)`,
}

// srcTables are the tables Merge reads from another host's file.
var srcTables = []string{"schema_migrations", "task_runs", "run_attempts", "validation_results", "llm_calls",
	"retrieval_llm_calls", "retrieval_llm_call_details", "retrieval_decisions"}

// ErrNotRaw is a file Merge cannot read as a raw database of this cra's
// schema.
var ErrNotRaw = errors.New("not a raw database of this cra")

// Merge copies into the corpus the training rows of the raw database
// file at path (another host's raw.sqlite), read-only, in one
// transaction: the rows whose key (see mergeSteps) the corpus lacks, with
// new ids. It is for a merged copy (Snapshot), never a host's own file.
// A file that is not a raw database of this cra's schema wraps ErrNotRaw
// and copies nothing.
func (c *Corpus) Merge(ctx context.Context, path string) (*Merged, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("--raw %s: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--raw %s: %w: not a file (name a host's .clean_room/raw.sqlite)", path, ErrNotRaw)
	}
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro"}
	if _, err := conn.ExecContext(ctx, "ATTACH DATABASE ? AS src", u.String()); err != nil {
		return nil, fmt.Errorf("--raw %s: %w: %v", path, ErrNotRaw, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DETACH DATABASE src")
	var theirs, ours sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT MAX(version) FROM src.schema_migrations").Scan(&theirs); err != nil {
		return nil, fmt.Errorf("--raw %s: %w (%v): name a host's .clean_room/raw.sqlite", path, ErrNotRaw, err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT MAX(version) FROM main.schema_migrations").Scan(&ours); err != nil {
		return nil, err
	}
	if theirs != ours {
		return nil, fmt.Errorf("--raw %s: %w: its schema is version %d, this cra's %d: run this cra once in that host's repository (any command opens and upgrades it), then copy the file again",
			path, ErrNotRaw, theirs.Int64, ours.Int64)
	}
	// Another host's file is outside input: each name read must be a
	// table, not a view or anything else standing in for one.
	for _, name := range srcTables {
		var typ string
		if err := conn.QueryRowContext(ctx, "SELECT type FROM src.sqlite_schema WHERE name = ?", name).Scan(&typ); err != nil || typ != "table" {
			if typ == "" {
				typ = "missing"
			}
			return nil, fmt.Errorf("--raw %s: %w: its %s is %s, not a table: name a host's .clean_room/raw.sqlite as cra wrote it", path, ErrNotRaw, name, typ)
		}
	}
	for _, q := range mergeIndexes {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("merge %s: %w", path, err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	m := &Merged{Source: path, Copied: map[string]int{}, Duplicates: map[string]int{}}
	for _, s := range mergeSteps {
		var n int
		if err := tx.QueryRowContext(ctx, s.count).Scan(&n); err != nil {
			return nil, fmt.Errorf("merge %s: count %s: %w", path, s.table, err)
		}
		res, err := tx.ExecContext(ctx, s.insert)
		if err != nil {
			return nil, fmt.Errorf("merge %s: copy %s: %w", path, s.table, err)
		}
		copied, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		m.Copied[s.table], m.Duplicates[s.table] = int(copied), n-int(copied)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("merge %s: %w", path, err)
	}
	return m, nil
}
