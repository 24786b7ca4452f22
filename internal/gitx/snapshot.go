package gitx

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Blob is one file of a commit's tree.
type Blob struct {
	Path string
	// Mode is git's: 100644, 100755, 120000 (a symbolic link).
	Mode string
	// Object is the blob's id.
	Object string
	// Size is the blob's size in bytes, where the lister read it
	// (ReadFiles' large blobs), else -1.
	Size int64
}

// TreeFiles lists the files of commit's whole tree (submodules left out),
// in git's order.
func TreeFiles(ctx context.Context, dir, commit string) ([]Blob, error) {
	return lsTree(ctx, dir, commit, false)
}

// lsTree is TreeFiles, with each blob's size when sizes is set (git
// ls-tree -l: git reads the objects' headers, not their contents).
func lsTree(ctx context.Context, dir, commit string, sizes bool) ([]Blob, error) {
	args := []string{"ls-tree", "-r", "-z", "--full-tree"}
	if sizes {
		args = append(args, "-l")
	}
	out, err := run(ctx, dir, append(args, commit)...)
	if err != nil {
		return nil, err
	}
	var blobs []Blob
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "<mode> SP <type> SP <object> TAB <path>", with -l
		// "<mode> SP <type> SP <object> SP+ <size> TAB <path>"
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) < 3 || f[1] != "blob" {
			continue
		}
		b := Blob{Path: string(p), Mode: f[0], Object: f[2], Size: -1}
		if sizes {
			if len(f) != 4 {
				return nil, fmt.Errorf("git ls-tree -l: %q for %s", meta, p)
			}
			if b.Size, err = strconv.ParseInt(f[3], 10, 64); err != nil || b.Size < 0 {
				return nil, fmt.Errorf("git ls-tree -l: size %q for %s", f[3], p)
			}
		}
		blobs = append(blobs, b)
	}
	return blobs, nil
}

// RevParse returns the commit rev names, resolved once: a caller that
// holds it works on that commit whatever the branch does next.
func RevParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := run(ctx, dir, "rev-parse", "--verify", "-q", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// RestorePaths puts paths (relative to the top level, literal) back in
// the work tree at dir as commit holds them, and in its index; every
// path must be in commit. Git writes them: a leading directory that the
// work tree has as a symbolic link is replaced, never followed out of
// the tree. Hooks do not run.
func RestorePaths(ctx context.Context, dir, commit string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	_, err := runInput(ctx, dir, literal(paths), "-c", noHooks, "checkout", "--no-recurse-submodules",
		commit, "--pathspec-from-file=-", "--pathspec-file-nul")
	if err != nil {
		return fmt.Errorf("restore %d file(s) at %.12s: %w", len(paths), commit, err)
	}
	return nil
}

// RemovePaths deletes paths (relative to the top level, literal) from
// the work tree at dir and its index; a path that is not there is no
// error.
func RemovePaths(ctx context.Context, dir string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	_, err := runInput(ctx, dir, literal(paths), "rm", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul")
	if err != nil {
		return fmt.Errorf("remove %d file(s): %w", len(paths), err)
	}
	return nil
}

// literal is paths as a NUL-separated pathspec file, each path taken as
// written (no glob, no magic of its own).
func literal(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(":(literal)")
		b.WriteString(p)
		b.WriteByte(0)
	}
	return b.String()
}
