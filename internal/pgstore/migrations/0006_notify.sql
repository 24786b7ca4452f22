-- The notification queue (issue 34 item 1): the endings the recycler
-- read from the log and has not told yet, and those whose notifier failed
-- with when to try again, one row each in the order read (the file
-- notify-pending.jsonl's lines, shared by the fleet's hosts, so that a
-- new leader tells what the old one left). body is review's JSON line.
CREATE TABLE notify_queue (
    id    bigserial PRIMARY KEY,
    body  jsonb     NOT NULL
);
