-- The fleet (issue 34): the hosts that run cra serve on this database,
-- the leases on their runs, and the leader of the shared duties. Every
-- time that decides who holds what is the database's clock (now()), so
-- that the hosts' clocks, skewed or not, never matter.

-- One row per host, upserted by its heartbeat.
CREATE TABLE fleet_hosts (
    host        text PRIMARY KEY,
    started     timestamptz NOT NULL,   -- when its cra serve started
    heartbeat   timestamptz NOT NULL,   -- its last heartbeat
    slots       integer     NOT NULL,   -- max_parallel: runs it may hold
    version     text        NOT NULL    -- the cra it runs
);

-- A host's claim on a task's run, held while the host renews it. A lease
-- past expires is no one's: any host may take the task over (restart
-- it), and its former holder's renewal then fails.
CREATE TABLE run_leases (
    task_id     text PRIMARY KEY,
    host        text        NOT NULL,
    run_id      text        NOT NULL UNIQUE,
    started     timestamptz NOT NULL,
    renewed     timestamptz NOT NULL,
    expires     timestamptz NOT NULL,
    -- Set on a takeover: whose lease it was, and why it was taken.
    prev_host   text,
    reason      text
);
CREATE INDEX run_leases_host ON run_leases (host);
CREATE INDEX run_leases_expires ON run_leases (expires);

-- The leader of each shared duty (the recycler, the supervisors, cleanup,
-- notifications: one row, 'leader'), held as a lease; term grows by one
-- each time another host takes it.
CREATE TABLE fleet_leader (
    duty        text PRIMARY KEY,
    host        text        NOT NULL,
    term        bigint      NOT NULL,
    since       timestamptz NOT NULL,
    renewed     timestamptz NOT NULL,
    expires     timestamptz NOT NULL
);

-- The live feed (the web board's events) resumes a client by the byte
-- offset it reached: the line starting there is found by it.
CREATE INDEX world_log_off ON world_log (off);
