-- Level 2 across hosts (issue 34 item 5): each lease carries when its
-- run last put anything out, as its holder's renewal reports it, by the
-- database's clock (the holder sends the age of its output, so a host's
-- skewed clock does not age a run). NULL: never reported.
ALTER TABLE run_leases ADD COLUMN last_output timestamptz;

-- A lease the leader revoked (Level 2 stopped its run as stale) says why
-- here until its holder lets it go: its renewal fails, it is reported
-- lost with this reason, and no other host claims the task before the
-- holder released it or the lease ran out (by then the holder's own
-- deadline has stopped its copy), so a revoked run never overlaps its
-- restart. NULL: not revoked.
ALTER TABLE run_leases ADD COLUMN revoked text;
