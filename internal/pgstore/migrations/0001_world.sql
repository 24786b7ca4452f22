-- The world log (seed 002) as an append-only table: one row per line of
-- world.log, numbered 1, 2, ... in commit order with no gap, holding the
-- line exactly as written, so that export gives world.log byte for byte.
CREATE TABLE world_log (
    id          bigint PRIMARY KEY,   -- the line's number
    off         bigint NOT NULL,      -- its byte offset in world.log
    raw         bytea  NOT NULL,      -- the line without its newline
    kind        text,                 -- NULL: a malformed or empty line
    source      text,
    status      text,
    ident       bytea,
    ts_ms       bigint,
    -- Set on an agent entry the fold skips (only a file log imported
    -- holds them: appends refuse what the lifecycle forbids).
    skip_from   text,
    skip_to     text,
    skip_user   boolean,
    skip_review boolean
);
CREATE INDEX world_log_ident ON world_log (ident, id);
CREATE INDEX world_log_skipped ON world_log (id) WHERE skip_to IS NOT NULL;

-- The fold of the log: each agent's state (world.AgentState), updated in
-- the transaction of every append; line and start_line are world_log ids.
CREATE TABLE world_agents (
    id          bytea PRIMARY KEY,
    status      text    NOT NULL,
    since_ms    bigint  NOT NULL,
    line        bigint  NOT NULL,
    start_line  bigint  NOT NULL,     -- -1: no start entry
    seen_ms     bigint  NOT NULL,
    user_after  boolean NOT NULL,
    reviewed    boolean NOT NULL,
    retries     integer NOT NULL
);

-- Read markers: where each reader stopped (the last line it read).
CREATE TABLE world_markers (
    name        text PRIMARY KEY,
    line        bigint NOT NULL,
    updated     timestamptz NOT NULL
);
