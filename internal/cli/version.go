package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionText is what 'cra version' and 'cra --version' print: the
// version set at build time ("dev" from a clone), the commit and its time
// from the build's VCS stamp (go install and go build in a clone record
// them), a mark when the tree had uncommitted changes, and the Go version.
func versionText() string {
	commit, when, dirty := "not recorded: build with -buildvcs=true", "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			version = info.Main.Version // go install module@vX.Y.Z
		}
	}
	if len(commit) == 40 {
		commit = commit[:12] // a hash, as git log --oneline shortens it
	}
	s := fmt.Sprintf("cra %s (commit %s", version, commit)
	if when != "" {
		s += ", " + when
	}
	if dirty {
		s += ", with uncommitted changes"
	}
	return s + ", " + runtime.Version() + ")"
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
