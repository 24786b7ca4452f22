// Package runner runs the board's tasks with their agent profiles: the
// processor of seed 004 ("Execution Processor"), moved out of the board
// so that the board keeps only tasks, folders and their lifecycle.
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
package runner
