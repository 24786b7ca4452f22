package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cra-dev/cra/internal/workspace"
)

type fleetStatusOptions struct {
	repo string
	json bool
}

func newFleetStatusCmd(d *deps, runF func(context.Context, *deps, *fleetStatusOptions) error) *cobra.Command {
	opts := &fleetStatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the fleet's hosts, their last heartbeat, their runs and their slots",
		Long: `List every host that runs 'cra serve' on the fleet's PostgreSQL: how long ago
its last heartbeat was, how many of its slots (max_parallel) its runs hold,
and each run with its task and when its lease ends. A host silent for longer
than [fleet] lease is marked: its runs' leases run out and other hosts
restart them. The leader runs the shared duties (the recycler, supervisors,
cleanup, notifications). Times are the database's clock.`,
		Example: `  cra fleet status
  cra fleet status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), d, opts)
			}
			return fleetStatusRun(cmd.Context(), d, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.repo, "repo", ".", "repository root (or a directory inside it)")
	f.BoolVar(&opts.json, "json", false, "print the status as JSON")
	return cmd
}

func fleetStatusRun(ctx context.Context, d *deps, opts *fleetStatusOptions) error {
	_, cfg, err := fleetConfig(d, opts.repo)
	if err != nil {
		return err
	}
	warnConfig(d, cfg)
	fs, err := cfg.FleetSettings()
	if err != nil {
		return err
	}
	st, err := workspace.FleetStatus(ctx, cfg, os.Getenv)
	if err != nil {
		return err
	}
	if opts.json {
		return encodeJSON(d.out, st)
	}
	return printFleetStatus(terminalSafe(d.out), st, fs.Lease)
}

// printFleetStatus writes st for a person: a block per host, its runs
// indented under it, then the leases of hosts that never beat, then the
// leader. The rows are the hosts' (or a hand's, past cra's checks): a
// name with a space, a newline or a control character is printed quoted.
func printFleetStatus(w io.Writer, st workspace.FleetState, lease time.Duration) error {
	var b strings.Builder
	if len(st.Hosts) == 0 {
		b.WriteString("no hosts: none has sent a heartbeat ('cra serve' with [fleet] database_url_env set sends them)\n")
	}
	for _, h := range st.Hosts {
		fmt.Fprintf(&b, "host %s  heartbeat %s ago", field(h.Name), roundAge(h.Age))
		if h.Age > lease {
			fmt.Fprintf(&b, " (silent longer than the lease, %v: down or cut off?)", lease)
		}
		fmt.Fprintf(&b, "  runs %d/%d  cra %s\n", len(h.Runs), h.Slots, field(h.Version))
		for _, l := range h.Runs {
			writeLease(&b, "  ", l, st.Now, false)
		}
	}
	if len(st.Orphans) > 0 {
		b.WriteString("runs of hosts that never sent a heartbeat:\n")
		for _, l := range st.Orphans {
			writeLease(&b, "  ", l, st.Now, true)
		}
	}
	switch l := st.Leader; {
	case l == nil:
		b.WriteString("leader: none yet\n")
	case l.Expires.After(st.Now):
		fmt.Fprintf(&b, "leader %s (term %d), its lease ends in %s\n", field(l.Host), l.Term, roundAge(l.Expires.Sub(st.Now)))
	default:
		fmt.Fprintf(&b, "leader: none (%s's lead of term %d ended %s ago; the next host to campaign takes it)\n", field(l.Host), l.Term, roundAge(st.Now.Sub(l.Expires)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLease(b *strings.Builder, indent string, l workspace.FleetLease, now time.Time, withHost bool) {
	b.WriteString(indent + field(l.TaskID) + "  run " + field(l.RunID))
	if withHost {
		b.WriteString("  host " + field(l.Host))
	}
	fmt.Fprintf(b, "  started %s ago", roundAge(now.Sub(l.Started)))
	if l.Expires.After(now) {
		fmt.Fprintf(b, "  lease ends in %s", roundAge(l.Expires.Sub(now)))
	} else {
		fmt.Fprintf(b, "  lease ended %s ago: another host restarts it", roundAge(now.Sub(l.Expires)))
	}
	if l.PrevHost != "" {
		b.WriteString("  (restarted from host " + field(l.PrevHost) + ")")
	}
	b.WriteString("\n")
}

// field is s as one word of a line: quoted when it is empty or holds a
// space, a control character or invalid UTF-8.
func field(s string) string {
	if s == "" || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || unicode.IsControl(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// roundAge is d to the second, at least 0s.
func roundAge(d time.Duration) time.Duration {
	return max(d.Round(time.Second), 0)
}
