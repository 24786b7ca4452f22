-- The board (seed 004, internal/pgboard): one row per task, its folder a column, its body
-- the task's YAML exactly as the file tasks/<folder>/<id>.yaml would hold
-- it, so that export writes the files byte for byte. The id is the key:
-- a task is in one folder, which the files cannot promise (a crash or a
-- hand's copy leaves one in two).
CREATE TABLE board_tasks (
    id          text   PRIMARY KEY,
    folder      text   NOT NULL,
    body        bytea  NOT NULL,
    updated_ms  bigint NOT NULL      -- when the row was last written
);
CREATE INDEX board_tasks_folder ON board_tasks (folder, id);
