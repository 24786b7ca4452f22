// Package review judges finished runs and keeps every task moving towards
// verified or failed: seed 004's recycler and seed 002's Level 2 reviewer
// in one (DESIGN.md puts them under supervise; they live here because they
// drive the board, which itself imports supervise for Level 1).
//
// A review is evidence first, the model second (DESIGN.md principle 2):
// the evidence package collects what the harness can check (the exit
// status, the [validation] commands re-run in the task's worktree, the
// diff against the task's base, deleted or weakened tests, loops in the
// output); the summarizer model then writes seed 004's note and
// classification, which Gate may lower and never raise. NextStreaks and
// Decide are seed 004 steps 5 and 6 as pure functions; the Recycler
// carries the verdict out through board.Decide, keeps every review in
// the task's history (reviews.jsonl), restarts stale or looping live runs
// (Level 2), resumes tasks a person answered, and tells a person through
// [notify] what ended.
package review
