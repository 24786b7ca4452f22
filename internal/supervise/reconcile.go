package supervise

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/world"
)

// Active is an agent the world log calls active, with the run number of
// its [agent:active][ID] run N: profile entry.
type Active struct {
	ID string
	// Run is the active run's number; 0 when the entry names none (an
	// entry written by hand or by an older cra), and then no run of the
	// task counts as stale.
	Run   int
	Since time.Time // time of the [agent:active] entry
}

// ActiveAgents returns the agents of agents (as Log.Current returns them)
// whose status is active, in the same order, each with its run number.
func ActiveAgents(agents []world.Agent) []Active {
	var out []Active
	for _, a := range agents {
		if a.Status != world.StatusActive {
			continue
		}
		run, _ := world.ParseRun(a.Output)
		out = append(out, Active{ID: a.ID, Run: run, Since: a.Since})
	}
	return out
}

// Input is what one reconciliation pass looks at.
type Input struct {
	// Active are the agents the log calls active (ActiveAgents).
	Active []Active
	// Runs holds the recorded identity of each task's latest run, by
	// task id (LoadIdentity of RunFile); a task with none is absent.
	Runs map[string]Identity
	// Procs are the live tagged processes (Observe, or Scan). A run is
	// live when its recorded pid and start time are among them.
	Procs []Process
	// Restarts holds, by task id, when Level 1 restarted the task, e.g.
	// Restarted of the log's recent entries. Only those within
	// Policy.Window count.
	Restarts map[string][]time.Time
	// StarterAlive holds, by task id, whether the process that started
	// the recorded run is alive (Identity.StarterAlive).
	StarterAlive map[string]bool
	// Held holds the active agents whose run the deciding process holds
	// itself (Pass.Held): they are left alone, and so are their
	// processes of the log's run.
	Held map[string]bool
	// Claims holds, by task id, the claims (LoadClaim of ClaimFile) whose
	// starter is alive: a claim of the log's run, which has no identity
	// yet, is left to its starter like a held run, however long it
	// starts.
	Claims map[string]Identity
	// GoneSince holds, by task id, when an earlier pass first found the
	// recorded run gone while its starter lived (the Waits with Finishing
	// set); a task absent was first found so now.
	GoneSince map[string]time.Time
	Now       time.Time
	Policy    Policy
}

// Action is one step a pass decides on: Restart, Fail, Kill or Wait. Its
// String says what it would do, naming the pid of a kill.
type Action interface {
	String() string
	action()
}

// Restart asks for a new run of an active agent whose run is gone; the
// caller logs "[event:system][ID] restarted | reason: Reason" first
// (seed 002 Phase 3).
type Restart struct {
	ID     string
	Run    int    // the run that is gone; 0 when the entry names none
	Reason string // "not running"
	Detail string // which run is gone and why it reads as gone
}

// Fail asks for an agent to be failed: its run is gone and the start
// limit is reached, so a person must look ([agent:failed][ID] Reason |
// need: Need, DESIGN.md's lifecycle).
type Fail struct {
	ID     string
	Run    int // the active run the failure is about; 0 when none is known
	Reason string
	Need   string // what a person must do
}

// Kill asks for an orphan to be ended: a tagged process whose task the
// log does not call active, or whose run is not the active run. The
// caller logs "[event:system][PID] killed | reason: Reason" once it is
// done.
type Kill struct {
	PID       int
	StartTime int64 // checked again right before signalling
	// PGID is the process group to end; 0 to end PID alone, when its
	// group also holds tagged processes that are not orphans.
	PGID   int
	TaskID string
	Run    int
	Reason string // "orphan"
	Detail string // why it is an orphan
}

// Wait says an active agent without a live run is left alone until
// Until: it is backing off after a restart, or its run may still be
// starting (Policy.StartGrace).
type Wait struct {
	ID     string
	Until  time.Time
	Reason string
	// Finishing is a wait for a run that ended while the process that
	// started it is alive to log how (Policy.FinishGrace).
	Finishing bool
}

func (Restart) action() {}
func (Fail) action()    {}
func (Kill) action()    {}
func (Wait) action()    {}

// String says what the restart does: "restart ID: reason (detail)".
func (r Restart) String() string {
	return fmt.Sprintf("restart %s: %s (%s)", r.ID, r.Reason, r.Detail)
}

// String says what the failure does: "fail ID: reason | need: need".
func (f Fail) String() string {
	return fmt.Sprintf("fail %s: %s | need: %s", f.ID, f.Reason, f.Need)
}

// String says what the kill does, naming the process group and the pid:
// "kill process group G (pid P) of task T run N: orphan (detail)".
func (k Kill) String() string {
	what := fmt.Sprintf("process %d", k.PID)
	if k.PGID != 0 {
		what = fmt.Sprintf("process group %d (pid %d)", k.PGID, k.PID)
	}
	return fmt.Sprintf("kill %s of task %s run %d: %s (%s)", what, k.TaskID, k.Run, k.Reason, k.Detail)
}

// String says how long the agent is left alone and why.
func (w Wait) String() string {
	return fmt.Sprintf("wait for %s until %s: %s", w.ID, w.Until.UTC().Format(time.RFC3339), w.Reason)
}

// Reconcile is one Level 1 pass as a pure decision (seed 002 Phase 3,
// DESIGN.md principle 2): it compares the agents the log calls active
// with the live runs and returns what to do, kills first (ordered by
// pid), then one action per active agent without a live run (in
// in.Active's order). It has no side effects; Executor.Apply carries the
// actions out.
//
// A run is live when the task's recorded identity is of the active run
// and its pid and start time are among the live processes. A tagged
// process is an orphan when the log does not call its task active, when
// its run number is not the active one, or when it belongs to the active
// run but that run's recorded process is gone (a leftover child, killed
// so that a restart never makes two live runs); the run is spared while
// it may still be starting (StartGrace). Orphans are killed by process
// group when every tagged process of the group is an orphan, else one by
// one. An active agent without a live run is restarted, after a backoff,
// or failed past the start limit (Policy.Next); but a run whose starter
// is alive is first left to it for Policy.FinishGrace, since it logs the
// run's finish a moment after the exit.
func Reconcile(in Input) []Action {
	p := in.Policy.withDefaults()
	// A start stamped after now counts as now: a time in the future never
	// holds a wait past its grace from now (a Pass keeps such a time
	// where it first saw it, FutureClamp).
	in.Active = slices.Clone(in.Active)
	for i, a := range in.Active {
		if a.Since.After(in.Now) {
			in.Active[i].Since = in.Now
		}
	}
	active := make(map[string]Active, len(in.Active))
	for _, a := range in.Active {
		active[a.ID] = a
	}
	byPID := make(map[int]Process, len(in.Procs))
	for _, pr := range in.Procs {
		byPID[pr.PID] = pr
	}
	// live: the active agents whose recorded run is the active one and runs.
	live := map[string]bool{}
	recorded := map[string]bool{} // the active run has an identity
	for _, a := range in.Active {
		id, ok := in.Runs[a.ID]
		if !ok || id.TaskID != a.ID || a.Run != 0 && id.Run != a.Run {
			continue
		}
		recorded[a.ID] = true
		if pr, ok := byPID[id.PID]; ok && pr.StartTime == id.StartTime {
			live[a.ID] = true
		}
	}
	starting := func(a Active) bool {
		return !recorded[a.ID] && in.Now.Before(a.Since.Add(p.StartGrace))
	}
	// claimed: the active agents whose run a live process is starting.
	claimed := map[string]Identity{}
	for _, a := range in.Active {
		if c, ok := in.Claims[a.ID]; ok && !recorded[a.ID] && c.TaskID == a.ID && a.Run != 0 && c.Run == a.Run {
			claimed[a.ID] = c
		}
	}
	isClaimed := func(id string) bool { _, ok := claimed[id]; return ok }

	var orphans []Kill
	orphan := map[int]bool{}
	for _, pr := range in.Procs {
		a, ok := active[pr.TaskID]
		var detail string
		switch {
		case !ok:
			detail = fmt.Sprintf("task %s is not active in the log", pr.TaskID)
		case a.Run != 0 && pr.Run != a.Run:
			detail = fmt.Sprintf("run %d is stale: the log's active run is %d", pr.Run, a.Run)
		case live[a.ID] || starting(a) || in.Held[a.ID] || isClaimed(a.ID):
			continue
		default:
			detail = fmt.Sprintf("run %d's recorded process is gone", pr.Run)
		}
		orphan[pr.PID] = true
		orphans = append(orphans, Kill{PID: pr.PID, StartTime: pr.StartTime, TaskID: pr.TaskID, Run: pr.Run, Reason: "orphan", Detail: detail})
	}
	actions := make([]Action, 0, len(orphans)+len(in.Active))
	ownGroups := map[int]bool{} // groups a recorded run made: its pid is their id
	for _, id := range in.Runs {
		ownGroups[id.PID] = true
	}
	for _, k := range groupKills(orphans, in.Procs, orphan, ownGroups) {
		actions = append(actions, k)
	}

	for _, a := range in.Active {
		if live[a.ID] {
			continue
		}
		if in.Held[a.ID] {
			actions = append(actions, Wait{ID: a.ID, Until: in.Now,
				Reason: fmt.Sprintf("run %d is held by this process, which is starting it or recording how it ended", a.Run)})
			continue
		}
		if c, ok := claimed[a.ID]; ok {
			actions = append(actions, Wait{ID: a.ID, Until: in.Now,
				Reason: fmt.Sprintf("run %d is starting: process %d claimed it and is alive", a.Run, c.StarterPID)})
			continue
		}
		if starting(a) {
			actions = append(actions, Wait{ID: a.ID, Until: a.Since.Add(p.StartGrace),
				Reason: fmt.Sprintf("run %d has no recorded process yet and may still be starting", a.Run)})
			continue
		}
		if recorded[a.ID] && in.StarterAlive[a.ID] {
			since, seen := in.GoneSince[a.ID]
			if !seen {
				since = in.Now
			}
			if until := since.Add(p.FinishGrace); in.Now.Before(until) {
				actions = append(actions, Wait{ID: a.ID, Until: until, Finishing: true,
					Reason: fmt.Sprintf("run %d has ended; the process that started it is alive and logs how", a.Run)})
				continue
			}
		}
		d := p.Next(in.Restarts[a.ID], in.Now)
		switch d.Verdict {
		case RestartNow:
			actions = append(actions, Restart{ID: a.ID, Run: a.Run, Reason: "not running", Detail: goneDetail(a, in.Runs[a.ID], recorded[a.ID])})
		case RestartAt:
			actions = append(actions, Wait{ID: a.ID, Until: d.At,
				Reason: fmt.Sprintf("not running; backing off: restarted %d times in the last %v", d.Starts, p.Window)})
		case LimitReached:
			actions = append(actions, Fail{ID: a.ID, Run: a.Run,
				Reason: fmt.Sprintf("not running: start limit reached (restarted %d times in the last %v)", d.Starts, p.Window),
				Need:   fmt.Sprintf("find why its agent keeps dying (its output is in .clean_room/runs/%s/), fix the cause, then answer it to retry: cra answer %s '…'", a.ID, a.ID)})
		}
	}
	return actions
}

// goneDetail says why an active agent's run reads as gone.
func goneDetail(a Active, id Identity, recorded bool) string {
	switch {
	case recorded:
		return fmt.Sprintf("run %d, pid %d, has exited", id.Run, id.PID)
	case id.TaskID == a.ID:
		return fmt.Sprintf("the recorded run is %d, not the active run %d", id.Run, a.Run)
	}
	return fmt.Sprintf("run %d has no recorded process", a.Run)
}

// groupKills turns orphan processes into kills: one per process group
// when the group is an agent's own — its leader is itself a tagged orphan,
// or its id is the pid of a recorded run (the processor makes each run a
// group) — and every tagged process of it is an orphan, naming the leader
// or else the lowest pid; one per process otherwise, so that a tagged
// process started inside someone else's group (a shell's job, a test
// runner's) never takes that group down with it. The result is ordered by
// pid.
func groupKills(orphans []Kill, procs []Process, orphan, ownGroups map[int]bool) []Kill {
	whole := map[int]bool{} // groups whose tagged processes are all orphans
	for _, pr := range procs {
		if _, seen := whole[pr.PGID]; !seen {
			whole[pr.PGID] = orphan[pr.PGID] || ownGroups[pr.PGID]
		}
		if !orphan[pr.PID] || pr.PGID <= 1 {
			whole[pr.PGID] = false
		}
	}
	pgid := map[int]int{}
	for _, pr := range procs {
		pgid[pr.PID] = pr.PGID
	}
	named := map[int]Kill{} // group → the kill that names it
	var out []Kill
	for _, k := range orphans {
		g := pgid[k.PID]
		if !whole[g] {
			out = append(out, k)
			continue
		}
		k.PGID = g
		if cur, ok := named[g]; !ok || k.PID == g || cur.PID != g && k.PID < cur.PID {
			named[g] = k
		}
	}
	for _, k := range named {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Kill) int { return cmp.Compare(a.PID, b.PID) })
	return out
}

// Restarted returns, by task id, the times of the restarts that e (world
// log entries, in any order) record as "[event:system][ID] restarted …":
// Input.Restarts rebuilt from the log, so that a daemon that restarts
// keeps counting towards the start limit (DESIGN.md principle 1).
func Restarted(entries []world.Entry) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, e := range entries {
		if e.Kind == world.KindEvent && e.Source == world.SourceSystem && strings.HasPrefix(e.Output, "restarted") {
			out[e.ID] = append(out[e.ID], e.Time)
		}
	}
	return out
}
