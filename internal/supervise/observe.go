package supervise

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/cra-dev/cra/internal/statedir"
)

// Observation is what a pass reads of the machine and of the run files:
// Input's Runs and Procs.
type Observation struct {
	Runs  map[string]Identity
	Procs []Process
	// Claims are the active agents' claims (LoadClaim), whatever their
	// run and starter.
	Claims map[string]Identity
	// Problems are the run files that could not be read, each error
	// naming its file. Their tasks have no recorded run, so a pass
	// restarts them; a person should still hear of the file.
	Problems []error
}

// Observe reads, for the active agents, their recorded identities and
// claims under runsDir (.clean_room/runs) and the live tagged processes
// (Scan). A
// recorded run that is alive but missing from the scan, because its
// environment could not be read, is added to Procs from its identity, so
// that a live run is never taken for a dead one.
func Observe(ctx context.Context, runsDir string, active []Active) (Observation, error) {
	procs, err := Scan(ctx)
	if err != nil {
		return Observation{}, err
	}
	o := Observation{Runs: map[string]Identity{}, Procs: procs, Claims: map[string]Identity{}}
	seen := make(map[Identity]bool, len(procs))
	for _, p := range procs {
		seen[Identity{PID: p.PID, StartTime: p.StartTime}] = true
	}
	for _, a := range active {
		path, err := RunFile(runsDir, a.ID)
		if err != nil {
			o.Problems = append(o.Problems, err)
			continue
		}
		claim, err := LoadClaim(statedir.RunAt(filepath.Dir(path)).Claim())
		switch {
		case err == nil:
			o.Claims[a.ID] = claim
		case !errors.Is(err, fs.ErrNotExist):
			o.Problems = append(o.Problems, err)
		}
		id, err := LoadIdentity(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			o.Problems = append(o.Problems, err)
			continue
		}
		o.Runs[a.ID] = id
		if seen[Identity{PID: id.PID, StartTime: id.StartTime}] {
			continue
		}
		st, err := stat(ctx, id.PID)
		if err != nil || st.Exited || st.StartTime != id.StartTime {
			continue
		}
		// Recorded under this state directory's runs/: it is its run.
		o.Procs = append(o.Procs, Process{PID: id.PID, PGID: st.PGID, StartTime: id.StartTime, TaskID: id.TaskID, Run: id.Run, StateDir: filepath.Dir(runsDir)})
	}
	slices.SortFunc(o.Procs, func(a, b Process) int { return cmp.Compare(a.PID, b.PID) })
	return o, nil
}

// Proc returns the live process of task id's run run, as its run.json
// names it (pid and start time), or nil when that run has none: it
// ended, or another run is recorded.
func (o Observation) Proc(id string, run int) *Process {
	rid, ok := o.Runs[id]
	if !ok || rid.Run != run {
		return nil
	}
	for i, p := range o.Procs {
		if p.PID == rid.PID && p.StartTime == rid.StartTime {
			return &o.Procs[i]
		}
	}
	return nil
}
