// Package supervise keeps the world log and the machine in agreement. This
// part is Level 1, the reconciler of seed 002 Phase 3: pure code, no model,
// run at daemon start and every few seconds (DESIGN.md principle 2 and its
// lifecycle: "active in the log but no live run → restart with backoff and a
// start limit; a process carrying CRA_TASK_ID that the log does not call
// active → kill its process group").
//
// # Runs
//
// Seed 002's sketch matches agents to processes with pgrep and kills by
// pid. A pid alone names nothing for long: when a run exits, the kernel
// gives its number to the next process, and a reconciler that trusts it
// kills a stranger or takes a stranger for a live agent. So a run is named
// by an Identity, pid and start time and run number, recorded in
// .clean_room/runs/<task_id>/run.json when the processor starts it. The
// start time tells the run from a process that reused its pid; the run
// number tells the active run from an older run of the same task whose
// processes linger. On Linux the start time is /proc/<pid>/stat field 22,
// clock ticks since boot, which the wall clock cannot move.
//
// # A pass
//
// Scan finds the processes tagged with CRA_TASK_ID (and CRA_RUN_ID) in
// their environment, which every process the processor starts carries and
// its children inherit. Reconcile, a pure function of the active agents
// (from world.Log.Current), their recorded identities, the tagged processes,
// the restart history, the time and the Policy, returns the Actions: Kill
// each orphan (a process whose task is not active, or whose run is stale),
// Restart an active agent without a live run, after an exponential backoff
// (Policy.Next), or Fail it past the start limit, and Wait otherwise.
// Executor.Apply carries them out through the board's functions and writes
// "[event:system][ID] restarted | reason: not running" and
// "[event:system][PID] killed | reason: orphan"; with DryRun it only says
// what it would do. Stop checks the start time again right before each
// signal, so a process that merely reuses a dead run's pid is never
// touched.
package supervise
