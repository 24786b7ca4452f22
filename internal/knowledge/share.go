package knowledge

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/lazyre"
)

// A fleet's hosts share one knowledge store (issue 34 item 6): each
// keeps it in its own docs/knowledge/, and a sync merges it with the
// branch cra/knowledge on the fleet's remote. Files, Merge3 and Apply are
// the store's half of that; the git half is the fleet's.

// sharedPath is a path a synced file may have: slash-separated segments
// of letters, digits, '.', '_' and '-', none starting with a dot. A file
// from another host (or from whoever can push to the remote) with any
// other path is not written.
var sharedPath = lazyre.New(`^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$`)

// MaxSharedFile bounds a synced file: a knowledge document is a page.
const MaxSharedFile = 1 << 20

// CheckShared returns an error unless rel may be a synced file's path.
func CheckShared(rel string) error {
	if len(rel) > MaxPath || !sharedPath().MatchString(rel) || path.Clean(rel) != rel || slices.Contains(strings.Split(rel, "/"), "..") {
		return fmt.Errorf("%q: %w: a synced file's path is relative, with letters, digits, '.', '_' or '-'", rel, ErrBadPath)
	}
	return nil
}

// Files returns every regular file of the store (documents, _index.md
// and whatever else a person keeps there) by its slash-separated path,
// for a sync. Symbolic links are left out; a store whose own directory
// is one is refused (CheckDir).
func (s *Store) Files() (map[string][]byte, error) {
	if err := CheckDir(s.Root); err != nil {
		return nil, err
	}
	dir := s.Dir()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return filepath.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if CheckShared(rel) != nil {
			return nil // a hidden or odd name: this host's own
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Dir, err)
	}
	return out, nil
}

// Merge3 merges the store's files file by file: base is what this host
// last synced, ours what it has now, theirs what the remote has. A file
// changed (or added, or removed) on one side only takes that side's
// version; a file both sides changed differently is a conflict: theirs
// wins, since every other host reads it already, and the caller keeps
// ours aside for a person. A file and a directory of the same name
// cannot both be (one side made notes.md a directory, notes.md/x.md,
// while the other kept the file): of such paths, those theirs lacks are
// conflicts too, left out. merged never aliases its inputs' maps.
func Merge3(base, ours, theirs map[string][]byte) (merged map[string][]byte, conflicts []string) {
	merged = map[string][]byte{}
	seen := map[string]bool{}
	for _, m := range []map[string][]byte{base, ours, theirs} {
		for p := range m {
			seen[p] = true
		}
	}
	for p := range seen {
		b, inB := base[p]
		o, inO := ours[p]
		t, inT := theirs[p]
		same := func(x []byte, inX bool, y []byte, inY bool) bool { return inX == inY && bytes.Equal(x, y) }
		switch {
		case same(o, inO, t, inT): // both agree
		case same(o, inO, b, inB): // only theirs changed
			o, inO = t, inT
		case same(t, inT, b, inB): // only ours changed
		default:
			conflicts = append(conflicts, p)
			o, inO = t, inT
		}
		if inO {
			merged[p] = o
		}
	}
	conflicts = append(conflicts, dropClashes(merged, theirs)...)
	slices.Sort(conflicts)
	return merged, conflicts
}

// dropClashes removes from merged each file that a file of merged at one
// of its directories' paths makes impossible (notes.md and
// notes.md/x.md), and returns them: of the two, the one theirs lacks
// goes, else (theirs holds both, a tree no file system holds) the one
// under the directory.
func dropClashes(merged, theirs map[string][]byte) (dropped []string) {
	for _, p := range sortedKeys(merged) {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := merged[d]; !ok {
				continue
			}
			_, dIn := theirs[d]
			_, pIn := theirs[p]
			gone := p
			if pIn && !dIn {
				gone = d
			}
			delete(merged, gone)
			dropped = append(dropped, gone)
			if gone == p {
				break
			}
		}
	}
	return dropped
}

// Apply makes the store's files those of want, given ours, what Files
// read: it removes each file want lacks, with the directories that
// leaves empty, then writes each file that differs (atomically), and
// returns the paths it changed. Removals come first so that a document
// replaced by a directory of its name (notes.md by notes.md/x.md), or a
// directory by a document, is written where the old one was. A path
// CheckShared refuses, a file over MaxSharedFile, or one under a
// symbolic link is not written, and is reported in skipped.
func (s *Store) Apply(ours, want map[string][]byte) (changed, skipped []string, err error) {
	if err := CheckDir(s.Root); err != nil {
		return nil, nil, err
	}
	dir := s.Dir()
	target := func(rel string) (string, error) {
		if err := CheckShared(rel); err != nil {
			return "", err
		}
		p := dir
		for _, part := range strings.Split(rel, "/") {
			p = filepath.Join(p, part)
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return "", fmt.Errorf("%q: %w: %s is a symbolic link", rel, ErrBadPath, p)
			}
		}
		return p, nil
	}
	for _, rel := range sortedKeys(ours) {
		if _, ok := want[rel]; ok {
			continue
		}
		p, err := target(rel)
		if err != nil {
			skipped = append(skipped, rel)
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return changed, skipped, fmt.Errorf("remove %s/%s: %w", Dir, rel, err)
		}
		// The directories this leaves empty go too (as git's checkout
		// does), so that a document may take a directory's name.
		for d := filepath.Dir(p); len(d) > len(dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break // not empty: other files are in it
			}
		}
		changed = append(changed, rel)
	}
	for _, rel := range sortedKeys(want) {
		data := want[rel]
		if old, ok := ours[rel]; ok && bytes.Equal(old, data) {
			continue
		}
		p, err := target(rel)
		if err != nil || len(data) > MaxSharedFile {
			skipped = append(skipped, rel)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return changed, skipped, fmt.Errorf("write %s/%s: %w", Dir, rel, err)
		}
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && os.Remove(p) != nil {
			return changed, skipped, fmt.Errorf("write %s/%s: this host has a directory there, holding files it does not sync (hidden or oddly named): move them out of %s, then sync again", Dir, rel, p)
		}
		if err := atomicfile.Write(p, data, 0o644); err != nil {
			return changed, skipped, fmt.Errorf("write %s/%s: %w", Dir, rel, err)
		}
		changed = append(changed, rel)
	}
	return changed, skipped, nil
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
