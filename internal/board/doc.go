// Package board is cra's task board: tasks as YAML files in queue folders
// (seed 004, "Data Model Updates" and "Terminal Columns"), kept as a view of
// the world log (DESIGN.md principles 1 and 5, and its task lifecycle).
//
// # Folders
//
// A task is one file, .clean_room/tasks/<folder>/<id>.yaml, in one of six
// folders:
//
//	pending/              waiting for the processor (start, retry)
//	in-progress/          a run is going on (active)
//	completed/            the last run exited 0 (finish)
//	failed/               the last run failed: finish "run failed: …"
//	completed-finalized/  terminal: verified
//	failed-blocked/       terminal until a person answers: failed
//
// # The log first
//
// The world log is the truth and the folder a view of it: every lifecycle
// change is appended to the log before the file moves (FolderOf is the
// mapping), so that after a crash Board.Rebuild puts every file back where
// the log says. A person's move is an [event:user] line followed by the
// lifecycle entry that means the target folder (see Board.Move).
//
// # Files
//
// Task files are parsed strictly enough to name a bad field and the fix,
// and loosely enough to read what an older or newer cra wrote: missing
// fields take their defaults (seed 004: processor_auto_requeue true, the
// streak counters 0; 'cra task migrate' writes them in), and fields this
// cra does not know survive every rewrite, in their place. Writes go to a
// temp file in the same folder, are fsynced and renamed (atomicfile); a
// move is one rename.
//
// # Storage
//
// The board reads and writes tasks through Store, whose one implementation
// today is FileStore over the folders; a PostgreSQL queue (DESIGN.md,
// "Scale") is meant to implement the same interface. Each change of the
// board (add, edit, move, rebuild, migrate) runs under Store.Lock, a
// flock(2) on tasks/.lock for FileStore, so that its read, its log lines
// and its writes never interleave with another process's.
//
// # Order
//
// Order is the processor's pick order (seed 003): critical directives,
// other directives, planned tasks by priority and age, cleanup directives;
// a task waits while a task in its after list is not verified.
//
// # Processor
//
// Processor runs tasks (seed 004, "Execution Processor"; issue 13 items
// 4 and 5). Run is one run, what 'cra task run' calls; Tick starts runs
// of the pending tasks in Order up to [board] max_parallel, and Loop,
// for 'cra serve', ticks until its context ends. A run, under the lock,
// checks the task is pending, logs [agent:active][id] run N: profile and
// moves the file to in-progress; it then runs the task's Profile (its
// agent, else [board] default_agent, else cra's own solve) in the task's
// worktree, .clean_room/worktrees/<id> on branch cra/<id>, made from
// HEAD on the first run and kept across runs; it saves the process's
// supervise.Identity to runs/<id>/run.json and tags its environment with
// CRA_TASK_ID and CRA_RUN_ID, so that Level 1 can tell it from an orphan;
// it stops the process group at the profile's timeout; and it logs
// [agent:finish][id] "exit 0: last line", or "run failed: exit N: …",
// "run failed: timed out after D: …", "run failed: killed (signal): …",
// then writes the results and moves the file to completed or failed. It
// never requeues: that is the recycler's job (seed 004).
package board
