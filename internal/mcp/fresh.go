package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/index"
)

// The states of the index a call read.
const (
	// StateFresh: the files match the index.
	StateFresh = "fresh"
	// StateRefreshed: files had changed, and the call re-indexed them
	// before it answered.
	StateRefreshed = "refreshed"
	// StateStale: files changed and the index was read as it stands; the
	// note says why and what to do.
	StateStale = "stale"
)

// maxChangedNames bounds the changed files a result names.
const maxChangedNames = 20

// refreshLockWait is how long a refresh waits for another writer of the
// index ('cra index', another server) before it answers from the index as
// it stands.
const refreshLockWait = 5 * time.Second

// IndexState says how current the index was for a call.
type IndexState struct {
	// State is StateFresh, StateRefreshed or StateStale.
	State string `json:"state"`
	// ChangedFiles counts the files that differed from the index;
	// Changed names up to 20 of them (added, then changed, then deleted).
	ChangedFiles int      `json:"changed_files,omitempty"`
	Changed      []string `json:"changed,omitempty"`
	// Note says why a stale index was not refreshed, and the fix.
	Note string `json:"note,omitempty"`
}

// line is the state in one line of text.
func (st IndexState) line() string {
	switch st.State {
	case StateFresh:
		return "index: fresh"
	case StateRefreshed:
		return fmt.Sprintf("index: refreshed (%s re-indexed first)", plural(st.ChangedFiles, "changed file"))
	}
	names := strings.Join(st.Changed, ", ")
	if st.ChangedFiles > len(st.Changed) {
		names += fmt.Sprintf(" and %d more", st.ChangedFiles-len(st.Changed))
	}
	if names == "" {
		return "index: stale: " + st.Note
	}
	return fmt.Sprintf("index: stale, %s changed since it was built (%s): %s", plural(st.ChangedFiles, "file"), names, st.Note)
}

// freshen compares the files with the index and re-indexes them when a
// few changed and the state directory may be written (package doc). It
// never fails a call: what it could not do is in the state's note.
func (s *Server) freshen(ctx context.Context) IndexState {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.watch.Changes(ctx)
	if err != nil {
		return IndexState{State: StateStale, Note: "the files could not be compared with the index (" + err.Error() + "): the index is read as it stands"}
	}
	if !d.Stale() {
		return IndexState{State: StateFresh}
	}
	paths := d.Paths()
	st := IndexState{State: StateStale, ChangedFiles: len(paths), Changed: paths[:min(len(paths), maxChangedNames)]}
	switch {
	case s.opts.ReadOnly:
		st.Note = "the state directory is read-only here (a sandboxed run), so the index is read as it stands: read those files themselves for their current content"
		return st
	case s.files != s.root:
		st.Note = "these files of " + s.files + " (the run's working copy: its edits, or commits since the index) differ from the repository's index, which is read as it stands: read those files themselves for their current content"
		return st
	case d.Reextract:
		st.Note = "the index was built by another version of cra: run 'cra index " + s.root + "' to read every file again"
		return st
	case len(paths) > s.opts.RefreshFiles:
		st.Note = fmt.Sprintf("more than the %d files a call re-indexes: run 'cra index %s'", s.opts.RefreshFiles, s.root)
		return st
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RefreshTimeout)
	defer cancel()
	if _, err := s.builder.Run(ctx, s.root); err != nil {
		var busy *index.BusyError
		switch {
		case errors.As(err, &busy):
			st.Note = "another cra is writing the index; the next call finds it refreshed"
		case errors.Is(err, context.DeadlineExceeded):
			st.Note = fmt.Sprintf("re-indexing took longer than %s: run 'cra index %s'", s.opts.RefreshTimeout, s.root)
		default:
			st.Note = "re-indexing failed (" + err.Error() + "): run 'cra index " + s.root + "'"
		}
		return st
	}
	st.State, st.Note = StateRefreshed, ""
	return st
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
