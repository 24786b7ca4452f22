// Package supervisor is seed 003's supervisor layer over cra's board and
// world log: the code_style, design and internaliser agents, their
// triggers and urgency, and the directives they issue.
//
// DESIGN.md translates seed 003's LangGraph state: pending_directives
// are board tasks of kind directive (added with board.Add, so that their
// start entry is in the log first), supervisor_urgency and the
// tasks-since counters are derived from the world log and the recycler's
// reviews (a completion is a recycler verdict: an [agent:retry],
// [agent:verified] or [agent:failed] entry that a review in
// runs/<id>/reviews.jsonl wrote), and supervisor_run_log is
// .clean_room/supervisors.jsonl beside an [event:supervisor] line per
// run. Nothing is kept only in memory: a restarted daemon reads the same
// state back.
//
// # Triggers
//
// Due says when a supervisor runs: code_style every 5 completions and on
// a milestone complete, design on a milestone complete, a re-plan or an
// aborted (blocked) task, the internaliser every 3 completions and on a
// milestone complete. Urgency sums +0.3 per verdict that is not
// full_complete, +1.0 per blocked task, +0.2 per churn (a third re-queue,
// a task's text rewritten) and +0.5 per design run that found drift (a
// functional directive), since the latest batch; at 1.0 all three run
// and it resets. A run whose findings repeat the previous run's doubles
// that supervisor's interval (NextInterval, at most 8 times the base).
//
// # Runs
//
// Runner.Run runs now ('cra supervisors run'); Runner.Check runs what is
// due, then drops aged and surplus cleanup directives (Drops), ends the
// polish phase of milestones at polish_limit and promotes provisional
// documents used without a failure (Usage); the daemon calls it on a
// timer (Loop). A run compresses its
// inputs to [supervisors] max_input_tokens, asks the supervisor model
// role once, asks again once after a malformed reply naming the problem,
// and otherwise discards it: nothing changes. A supervisor whose folders
// hold no document yet makes a bootstrap run that establishes baselines.
package supervisor
