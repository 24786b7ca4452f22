-- Every LLM call is recorded (DESIGN.md principle 4): the raw DB is the
-- training corpus. Seed 001 §4.6 has tables for retrieval calls and
-- enrichment outputs only; this adds one for every other call (plan,
-- solve, reviewer, supervisors, cleanup, training) and, beside the seed's
-- two tables, what they have no column for: the error of a failed call,
-- the system prompt, provider and role, and for enrichment the file's
-- content hash that makes 'cra enrich' resumable. The seed's tables stay
-- exactly as §4.6 specifies.

-- LLM calls outside retrieval and enrichment. A failed call has an error
-- and the response received so far (usually empty).
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  task_id TEXT,                    -- NULL for calls outside a task run
  call_type TEXT NOT NULL,         -- "plan", "solve", "review", "supervisor", ...
  role TEXT NOT NULL,              -- coding, reasoning, supervisor, summarizer
  stage TEXT,                      -- pipeline stage, when the call serves one
  provider TEXT NOT NULL,          -- ollama or openai
  model TEXT NOT NULL,
  system TEXT,
  prompt TEXT NOT NULL,
  response TEXT NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  latency_ms INTEGER NOT NULL,
  error TEXT,                      -- NULL when the call succeeded
  timestamp TEXT NOT NULL
);
CREATE INDEX idx_llm_calls_task ON llm_calls(task_id);
CREATE INDEX idx_llm_calls_type ON llm_calls(call_type);

-- What a retrieval_llm_calls row has no column for.
CREATE TABLE retrieval_llm_call_details (
  call_id INTEGER PRIMARY KEY REFERENCES retrieval_llm_calls(id),
  role TEXT NOT NULL,
  provider TEXT NOT NULL,
  system TEXT,
  error TEXT                       -- NULL when the call succeeded
);

-- What an enrichment_outputs row has no column for. An output is valid
-- when error is NULL; a malformed reply or a failed call keeps its error.
-- path and content_hash say which content was described, so a re-run
-- skips files whose current content already has a valid output.
CREATE TABLE enrichment_output_details (
  output_id INTEGER PRIMARY KEY REFERENCES enrichment_outputs(id),
  path TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  provider TEXT NOT NULL,
  system TEXT,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  latency_ms INTEGER NOT NULL,
  error TEXT
);
CREATE INDEX idx_enrichment_output_details_content ON enrichment_output_details(path, content_hash);
