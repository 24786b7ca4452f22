package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/config"
	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/gitx"
	"github.com/cra-dev/cra/internal/knowledge"
	"github.com/cra-dev/cra/internal/statedir"
)

// The knowledge store of a fleet (issue 34 item 6) travels as the branch
// KnowledgeBranch of [fleet] remote, the remote its task branches travel
// through: a commit whose tree is docs/knowledge/ and nothing else. Each
// host keeps the store where a single machine does, in its own
// docs/knowledge/, which its prompts read (knowledge.Load) and its
// supervisors and people write; SyncKnowledge merges the two ways, file
// by file, against the state this host last synced (knowledgeSynced), so
// a change made on any host reaches every other. A branch, not a table:
// the store stays Markdown in git that people read, review, diff against
// their main branch and seed (DESIGN.md), with its history; it needs no
// database, so a fleet sharing only a remote shares it too; and the
// leader's supervisors write files exactly as on one machine.
const KnowledgeBranch = "cra/knowledge"

// knowledgeSynced is this host's record of the last synced commit, the
// base of the next merge: a ref outside refs/heads, so that no listing of
// task branches (cra/…) meets it.
const knowledgeSynced = "refs/cra/knowledge-synced"

// ErrNoPush is a knowledge sync on a host whose branches do not travel.
var ErrNoPush = errors.New("[fleet] push is off: the knowledge store syncs through [fleet] remote, like the task branches: set [fleet] push = true in .clean_room/config.toml")

// KnowledgeSync is what one sync did.
type KnowledgeSync struct {
	Remote string `json:"remote"`
	// Commit is the branch's commit after the sync, "" when there is
	// nothing to share on either side yet.
	Commit string `json:"commit,omitempty"`
	// Changed are the store's files the sync wrote or removed here;
	// Pushed says this host's changes went to the remote.
	Changed []string `json:"changed,omitempty"`
	Pushed  bool     `json:"pushed"`
	// Conflicts are documents both this host and another changed: the
	// remote's version is in the store, this host's in ConflictDir.
	Conflicts   []string `json:"conflicts,omitempty"`
	ConflictDir string   `json:"conflict_dir,omitempty"`
	// Skipped are the remote's files this host cannot write (a path the
	// store refuses): kept on the branch, not in the store.
	Skipped []string `json:"skipped,omitempty"`
	// TooLarge are the remote's files over knowledge.MaxSharedFile:
	// never read, kept on the branch as they are, not in the store.
	TooLarge []string `json:"too_large,omitempty"`
}

// SyncKnowledge syncs the repository's knowledge store with the fleet's
// remote (see KnowledgeBranch), when [fleet] push is on (ErrNoPush
// otherwise).
func (f *Fleet) SyncKnowledge(ctx context.Context) (*KnowledgeSync, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return SyncKnowledge(ctx, f.ws.Root, f.ws.StateDir, cfg, f.now())
}

// knowledgeSyncTries bounds the merges of one sync that another host's
// push overtook.
const knowledgeSyncTries = 3

// SyncKnowledge is Fleet.SyncKnowledge for the repository at root with
// state in stateDir: under the state directory's knowledge-sync lock, it
// fetches the remote's KnowledgeBranch, merges it with the store
// (knowledge.Merge3: a file changed on one side takes that side's, one
// changed on both takes the remote's, this host's kept aside), writes the
// result to the store, and pushes it as a fast-forward when it differs
// from the remote's; a push another host overtook is merged again.
func SyncKnowledge(ctx context.Context, root, stateDir string, cfg *config.Config, now time.Time) (*KnowledgeSync, error) {
	fs, err := cfg.FleetSettings()
	if err != nil {
		return nil, err
	}
	if !fs.Push {
		return nil, ErrNoPush
	}
	sd := statedir.At(stateDir)
	lock, err := flock.Lock(ctx, sd.KnowledgeSyncLock(), true)
	if err != nil {
		return nil, fmt.Errorf("lock the knowledge sync: %w", err)
	}
	defer lock.Close()
	url, err := gitx.ConfiguredURL(ctx, root, fs.Remote)
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		s, err := syncOnce(ctx, root, sd, fs, url, now)
		if errors.Is(err, gitx.ErrRejected) && try < knowledgeSyncTries {
			continue // another host pushed between the fetch and the push
		}
		return s, err
	}
}

func syncOnce(ctx context.Context, root string, sd statedir.Dir, fs config.FleetSettings, url string, now time.Time) (*KnowledgeSync, error) {
	s := &KnowledgeSync{Remote: fs.Remote}
	tracking := "refs/remotes/" + fs.Remote + "/" + KnowledgeBranch
	remote, err := gitx.RemoteBranch(ctx, root, url, KnowledgeBranch)
	if err != nil {
		return nil, fmt.Errorf("the knowledge store cannot sync (fix the remote or the network): %w", err)
	}
	// A file over MaxSharedFile on either commit is never read (anyone
	// who can push writes the branch): it stays on the branch as it is
	// (large, kept by CommitFiles), and this host leaves its path alone.
	base := map[string][]byte{}
	var baseLarge, large []gitx.Blob
	synced, err := gitx.RevParse(ctx, root, knowledgeSynced)
	if err == nil {
		if base, baseLarge, err = gitx.ReadFiles(ctx, root, synced, knowledge.Dir, knowledge.MaxSharedFile); err != nil {
			return nil, err
		}
	}
	theirs := map[string][]byte{}
	switch {
	case remote == "":
	case remote == synced:
		theirs, large = base, baseLarge // nothing new on the remote: no fetch
	default:
		if have, _ := gitx.RevParse(ctx, root, tracking); have != remote {
			if remote, err = gitx.FetchBranch(ctx, root, url, KnowledgeBranch, tracking); err != nil {
				return nil, err
			}
		}
		if theirs, large, err = gitx.ReadFiles(ctx, root, remote, knowledge.Dir, knowledge.MaxSharedFile); err != nil {
			return nil, fmt.Errorf("read %s's %s: %w", fs.Remote, KnowledgeBranch, err)
		}
	}
	store := &knowledge.Store{Root: root}
	ours, err := store.Files()
	if err != nil {
		return nil, err
	}
	// The remote's files this host cannot hold pass through untouched:
	// neither written here nor dropped from the branch.
	view := make(map[string][]byte, len(ours))
	for p, b := range ours {
		view[p] = b
	}
	for p, b := range theirs {
		if knowledge.CheckShared(p) != nil {
			view[p] = b
			s.Skipped = append(s.Skipped, p)
		}
	}
	for _, b := range large {
		delete(view, b.Path)
		delete(base, b.Path)
		s.TooLarge = append(s.TooLarge, b.Path)
	}
	if remote != "" && remote == synced && sameFiles(view, base) {
		s.Commit = remote // nothing changed on either side: the common case
		return s, nil
	}
	merged, conflicts := knowledge.Merge3(base, view, theirs)
	if len(conflicts) > 0 {
		// This host's versions, kept for a person before the remote's
		// replace them.
		s.ConflictDir = filepath.Join(sd.KnowledgeConflicts(), now.UTC().Format("20060102T150405Z"))
		for _, p := range conflicts {
			if b, ok := ours[p]; ok {
				dst := filepath.Join(s.ConflictDir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return nil, err
				}
				if err := atomicfile.Write(dst, b, 0o644); err != nil {
					return nil, fmt.Errorf("keep this host's %s: %w", p, err)
				}
			}
		}
		s.Conflicts = conflicts
	}
	changed, skipped, err := store.Apply(view, merged)
	s.Changed = changed
	s.Skipped = append(s.Skipped, skipped...)
	if err != nil {
		return s, err
	}
	if remote == "" && len(merged) == 0 {
		return s, nil // nothing anywhere yet
	}
	head := remote
	var parents []string
	if remote != "" {
		parents = []string{remote}
	}
	commit, tree, err := gitx.CommitFiles(ctx, root, merged, large, knowledge.Dir, parents,
		fmt.Sprintf("knowledge: the store as host %s has it\n", fs.Host))
	if err != nil {
		return s, fmt.Errorf("commit the knowledge store: %w", err)
	}
	same := false
	if remote != "" {
		rt, err := gitx.Tree(ctx, root, remote)
		if err != nil {
			return s, err
		}
		same = rt == tree
	}
	if !same {
		if err := gitx.PushCommit(ctx, root, url, commit, KnowledgeBranch); err != nil {
			return s, err
		}
		head, s.Pushed = commit, true
	}
	if err := gitx.SetRef(ctx, root, knowledgeSynced, head, "cra: knowledge synced with "+fs.Remote); err != nil {
		return s, err
	}
	s.Commit = head
	return s, nil
}

// sameFiles reports whether a and b hold the same files.
func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		if y, ok := b[p]; !ok || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// Summary is the sync in one line.
func (s *KnowledgeSync) Summary() string {
	parts := []string{fmt.Sprintf("%d file(s) changed here", len(s.Changed))}
	if s.Pushed {
		parts = append(parts, "this host's changes pushed")
	}
	if len(s.Conflicts) > 0 {
		parts = append(parts, fmt.Sprintf("%d conflict(s), %s's version kept, this host's in %s: %s", len(s.Conflicts), s.Remote, s.ConflictDir, strings.Join(s.Conflicts, ", ")))
	}
	if len(s.Skipped) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) not written here (a path the store refuses): %s", len(s.Skipped), strings.Join(s.Skipped, ", ")))
	}
	if len(s.TooLarge) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) over the limit of %d bytes, not read nor written here, left on the branch as they are (shrink or remove them on %s): %s",
			len(s.TooLarge), knowledge.MaxSharedFile, KnowledgeBranch, strings.Join(s.TooLarge, ", ")))
	}
	c := s.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	return fmt.Sprintf("knowledge synced with %s's %s (%s): %s", s.Remote, KnowledgeBranch, c, strings.Join(parts, "; "))
}

// syncForRun syncs the knowledge store before a run's prompt reads it,
// when cfg's [fleet] push is on; what the sync did goes to the Logger.
// cfg is the configuration the run was started with (the processor's
// last good one): a config.toml broken since must not fail the run.
//
// A sync that fails (the remote stalls past KnowledgeSyncTimeout, or its
// cra/knowledge holds what this host cannot take) leaves the run to the
// host's own store and says why: one bad push to the shared branch must
// not stop every run of every host.
func (f *Fleet) syncForRun(ctx context.Context, cfg *config.Config) error {
	sctx, cancel := context.WithTimeout(ctx, KnowledgeSyncTimeout)
	defer cancel()
	s, err := SyncKnowledge(sctx, f.ws.Root, f.ws.StateDir, cfg, f.now())
	switch {
	case errors.Is(err, ErrNoPush):
		return nil
	case err != nil && ctx.Err() != nil:
		return ctx.Err() // the run was stopped
	case err != nil:
		f.logger.Warn("knowledge store not synced with the fleet's remote: the run's prompt reads this host's own store; fix the remote or its "+KnowledgeBranch+", then 'cra knowledge sync'", "err", err)
		return nil
	}
	if len(s.Changed) > 0 || len(s.Conflicts) > 0 || len(s.Skipped) > 0 || len(s.TooLarge) > 0 {
		f.logger.Info(s.Summary())
	}
	return nil
}

// KnowledgeSyncTimeout bounds one sync of the knowledge store: a remote
// that stalls must not hold every run's prompt (they wait on one lock).
const KnowledgeSyncTimeout = 2 * time.Minute

// KnowledgeSyncEvery is how often the daemon syncs the knowledge store
// when [fleet] push is on, so that what the leader's supervisors and
// cleanup write reaches every host between runs too.
const KnowledgeSyncEvery = time.Minute

// knowledgeService is the daemon's knowledge sync: every
// KnowledgeSyncEvery, as long as [fleet] push is on (read each pass).
func (f *Fleet) knowledgeService(out io.Writer) Service {
	return &Every{Name: "knowledge sync", Interval: KnowledgeSyncEvery, Now: true, Out: out, Pass: func(ctx context.Context) error {
		// The processor's configuration: the last good one while
		// config.toml cannot be read, which the processor reports.
		ctx, cancel := context.WithTimeout(ctx, KnowledgeSyncTimeout)
		defer cancel()
		s, err := SyncKnowledge(ctx, f.ws.Root, f.ws.StateDir, f.Processor().CurrentConfig(), f.now())
		if errors.Is(err, ErrNoPush) {
			return nil
		}
		if err != nil {
			return err
		}
		if out != nil && (len(s.Changed) > 0 || len(s.Conflicts) > 0 || len(s.Skipped) > 0 || len(s.TooLarge) > 0) {
			fmt.Fprintln(out, s.Summary())
		}
		return nil
	}}
}
