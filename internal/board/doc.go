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
// # Runs
//
// The processor that runs tasks with their agent profiles is the fleet's
// (internal/fleet/runner); the board keeps what a run writes: its
// lifecycle entries, its results and the folder they put the file in.
package board
