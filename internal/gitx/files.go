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
// out.
func ReadFiles(ctx context.Context, repo, commit, prefix string) (map[string][]byte, error) {
	blobs, err := TreeFiles(ctx, repo, commit)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix = strings.TrimSuffix(prefix, "/") + "/"
	}
	// One git cat-file --batch reads them all: a process per file costs
	// more than the files.
	var rels []string
	var req strings.Builder
	for _, b := range blobs {
		rel, ok := strings.CutPrefix(b.Path, prefix)
		if !ok || b.Mode != "100644" && b.Mode != "100755" || strings.ContainsAny(b.Path, "\n") {
			continue
		}
		rels = append(rels, rel)
		fmt.Fprintf(&req, "%s:%s\n", commit, b.Path)
	}
	out := map[string][]byte{}
	if len(rels) == 0 {
		return out, nil
	}
	data, err := runGit(ctx, repo, nil, []byte(req.String()), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	for _, rel := range rels {
		// "<object> SP blob SP <size> LF <contents> LF"
		head, rest, ok := bytes.Cut(data, []byte{'\n'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("git cat-file --batch: %q for %s", head, rel)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 || n+1 > len(rest) {
			return nil, fmt.Errorf("git cat-file --batch: size %q for %s", f[2], rel)
		}
		out[rel] = rest[:n:n]
		data = rest[n+1:]
	}
	return out, nil
}

// CommitFiles makes, without touching a work tree, the index or a ref, a
// commit whose tree is exactly files (each path under prefix, mode
// 100644) with the given parents, and returns it and its tree. The
// commit is cra's.
func CommitFiles(ctx context.Context, repo string, files map[string][]byte, prefix string, parents []string, message string) (commit, tree string, err error) {
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
	var info strings.Builder
	for i, p := range paths {
		full := p
		if prefix != "" {
			full = strings.TrimSuffix(prefix, "/") + "/" + p
		}
		fmt.Fprintf(&info, "100644 %s\t%s\n", ids[i], full)
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
