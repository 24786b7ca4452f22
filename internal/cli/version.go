package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// build is what this binary knows of itself: the version set at build
// time ("dev" from a clone, the module's version after go install
// module@vX.Y.Z), and the commit, its time and whether the tree had
// uncommitted changes, from the build's VCS stamp (go install and go
// build in a clone record them).
type build struct {
	version, commit, when string
	dirty                 bool
}

// thisBuild reads the build's stamp.
func thisBuild() build {
	b := build{version: version, commit: "not recorded: build with -buildvcs=true"}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.commit = s.Value
			case "vcs.time":
				b.when = s.Value
			case "vcs.modified":
				b.dirty = s.Value == "true"
			}
		}
		if b.version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.version = info.Main.Version
		}
	}
	if len(b.commit) == 40 {
		b.commit = b.commit[:12] // a hash, as git log --oneline shortens it
	}
	return b
}

// versionText is what 'cra version' and 'cra --version' print.
func versionText() string {
	b := thisBuild()
	s := fmt.Sprintf("cra %s (commit %s", b.version, b.commit)
	if b.when != "" {
		s += ", " + b.when
	}
	if b.dirty {
		s += ", with uncommitted changes"
	}
	return s + ", " + runtime.Version() + ")"
}

// hostVersion is the short form a fleet host's heartbeat carries, which
// 'cra fleet status' shows beside the host: the version, and the commit
// when the build recorded one ("dev 1a2b3c4d5e6f", "dev 1a2b3c4d5e6f+"
// with uncommitted changes, "v1.2.0").
func hostVersion() string {
	b := thisBuild()
	if len(b.commit) != 12 {
		return b.version
	}
	s := b.version + " " + b.commit
	if b.dirty {
		s += "+"
	}
	return s
}

func newVersionCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cra's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(d.out, versionText())
			return err
		},
	}
}

// commandGroups sorts the root's commands into the groups 'cra --help'
// shows, in this order.
var commandGroups = []struct {
	id, title string
	names     []string
}{
	{"core", "Core: index a repository, retrieve context, plan and solve:", []string{"init", "index", "query", "retrieve", "plan", "solve", "enrich", "doctor", "mcp"}},
	{"board", "Board: tasks and the daemon that runs them:", []string{"task", "answer", "serve", "recycle", "fleet"}},
	{"supervision", "Supervision: the world log and what keeps it true:", []string{"log", "supervise", "supervisors", "knowledge", "cleanup"}},
	{"training", "Training: data, plans, adapters and ranking weights:", []string{"bootstrap", "train-plan", "curate-data", "train", "adapters", "tune"}},
	{"maintenance", "Maintenance:", []string{"clean", "version", "completion", "help"}},
}

// groupCommands puts each of root's commands in its group.
func groupCommands(root *cobra.Command) {
	group := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, n := range g.names {
			group[n] = g.id
		}
	}
	root.SetHelpCommandGroupID("maintenance")
	root.SetCompletionCommandGroupID("maintenance")
	for _, c := range root.Commands() {
		if id, ok := group[c.Name()]; ok {
			c.GroupID = id
		}
	}
}
