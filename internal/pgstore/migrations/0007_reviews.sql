-- The recycler's review histories (issue 34 item 1): each task's reviews,
-- one row a record, in the order they were appended, the body exactly the
-- line .clean_room/runs/<id>/reviews.jsonl would hold (one JSON object,
-- no newline). On a fleet the recycler runs on the leading host, and the
-- next leader reads here what the one before it wrote.
CREATE TABLE review_history (
    task_id text      NOT NULL,
    seq     bigserial NOT NULL,   -- append order
    body    bytea     NOT NULL,
    PRIMARY KEY (task_id, seq)
);
