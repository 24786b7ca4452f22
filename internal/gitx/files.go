package gitx

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ReadFiles returns the regular files of commit's tree under prefix (a
// slash-separated directory, "" for all), by their path below it: the
// content of a branch that holds files rather than a work tree's
// history (the knowledge store's branch). Links and submodules are left
// out. A file over max bytes is not read: the branch may be anyone's
// push, and one blob of gigabytes must not go into memory; it is in
// large instead (its Path below prefix, its Object and Size), which
// CommitFiles can keep as it is.
func ReadFiles(ctx context.Context, repo, commit, prefix string, max int64) (files map[string][]byte, large []Blob, err error) {
	// git ls-tree -l gives the sizes from the objects' headers, before
	// any content is read.
	blobs, err := lsTree(ctx, repo, commit, true)
	if err != nil {
		return nil, nil, err
	}
	if prefix != "" {
		prefix = strings.TrimSuffix(prefix, "/") + "/"
	}
	// One git cat-file --batch reads them all: a process per file costs
	// more than the files.
	type want struct {
		rel  string
		size int64
	}
	var wants []want
	var req strings.Builder
	for _, b := range blobs {
		rel, ok := strings.CutPrefix(b.Path, prefix)
		if !ok || b.Mode != "100644" && b.Mode != "100755" || strings.ContainsAny(b.Path, "\n") {
			continue
		}
		if b.Size > max {
			b.Path = rel
			large = append(large, b)
			continue
		}
		wants = append(wants, want{rel, b.Size})
		fmt.Fprintf(&req, "%s\n", b.Object)
	}
	files = map[string][]byte{}
	if len(wants) == 0 {
		return files, large, nil
	}
	data, err := runGit(ctx, repo, nil, []byte(req.String()), "cat-file", "--batch")
	if err != nil {
		return nil, nil, err
	}
	for _, w := range wants {
		// "<object> SP blob SP <size> LF <contents> LF"
		head, rest, ok := bytes.Cut(data, []byte{'\n'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 3 || f[1] != "blob" {
			return nil, nil, fmt.Errorf("git cat-file --batch: %q for %s", head, w.rel)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || n != w.size || n+1 > int64(len(rest)) {
			return nil, nil, fmt.Errorf("git cat-file --batch: size %q for %s", f[2], w.rel)
		}
		files[w.rel] = rest[:n:n]
		data = rest[n+1:]
	}
	return files, large, nil
}

// CommitFiles makes, without touching a work tree, the index or a ref, a
// commit whose tree is exactly files (each path under prefix, mode
// 100644) and keep (blobs already in the repository, each path under
// prefix, with its mode: ReadFiles' large ones) with the given parents,
// and returns it and its tree. The commit is cra's.
func CommitFiles(ctx context.Context, repo string, files map[string][]byte, keep []Blob, prefix string, parents []string, message string) (commit, tree string, err error) {
	tmp, err := os.MkdirTemp("", "cra-index-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"),
		"GIT_AUTHOR_NAME=cra", "GIT_AUTHOR_EMAIL=cra@localhost", "GIT_COMMITTER_NAME=cra", "GIT_COMMITTER_EMAIL=cra@localhost"}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// The blobs in one git hash-object call, from copies in the temporary
	// directory: a process per file costs more than the files.
	var list strings.Builder
	for i, p := range paths {
		if strings.ContainsAny(p, "\n\t") {
			return "", "", fmt.Errorf("commit files: path %q holds a newline or a tab", p)
		}
		name := filepath.Join(tmp, strconv.Itoa(i))
		if err := os.WriteFile(name, files[p], 0o600); err != nil {
			return "", "", err
		}
		list.WriteString(name + "\n")
	}
	shas, err := runGit(ctx, repo, env, []byte(list.String()), "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return "", "", err
	}
	ids := strings.Fields(string(shas))
	if len(ids) != len(paths) {
		return "", "", fmt.Errorf("git hash-object: %d objects for %d files", len(ids), len(paths))
	}
	full := func(p string) string {
		if prefix == "" {
			return p
		}
		return strings.TrimSuffix(prefix, "/") + "/" + p
	}
	var info strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&info, "100644 %s\t%s\n", ids[i], full(p))
	}
	for _, b := range keep {
		if _, dup := files[b.Path]; dup || strings.ContainsAny(b.Path, "\n\t") || b.Mode != "100644" && b.Mode != "100755" {
			return "", "", fmt.Errorf("commit files: cannot keep %q (mode %s) as it is", b.Path, b.Mode)
		}
		fmt.Fprintf(&info, "%s %s\t%s\n", b.Mode, b.Object, full(b.Path))
	}
	if _, err := runGit(ctx, repo, env, []byte(info.String()), "update-index", "--add", "--index-info"); err != nil {
		return "", "", err
	}
	out, err := runGit(ctx, repo, env, nil, "write-tree")
	if err != nil {
		return "", "", err
	}
	tree = strings.TrimSpace(string(out))
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err = runGit(ctx, repo, env, []byte(message), append(args, "-F", "-")...)
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(string(out)), tree, nil
}

// Tree returns the tree of commit.
func Tree(ctx context.Context, repo, commit string) (string, error) {
	out, err := run(ctx, repo, "rev-parse", "--verify", "-q", commit+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("the tree of %s: %w", commit, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// SetRef points ref (a full ref name) at commit.
func SetRef(ctx context.Context, repo, ref, commit, reason string) error {
	_, err := run(ctx, repo, "update-ref", "-m", reason, ref, commit)
	return err
}
