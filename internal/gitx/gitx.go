// Package gitx is cra's git plumbing: listing a work tree's files, reading
// HEAD, and streaming history with per-file line counts. It runs the git
// binary, so what cra sees is exactly what git sees (ignore rules,
// attributes, the index).
package gitx

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNotRepo is returned when a directory is not inside a git work tree.
var ErrNotRepo = errors.New("not a git repository")

// run runs git in dir and returns its stdout; stderr is folded into the
// error.
func run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return runInput(ctx, dir, "", args...)
}

// runInput is run with stdin (none when empty).
func runInput(ctx context.Context, dir, stdin string, args ...string) ([]byte, error) {
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	return runGit(ctx, dir, nil, in, append([]string{"-c", "core.quotePath=false"}, args...)...)
}

// runGit runs git in dir with env added to cra's and stdin (none when
// nil), and returns its stdout; stderr is folded into the error, which
// names the git command (the first argument after any -c settings).
func runGit(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		name := args
		for len(name) > 2 && name[0] == "-c" {
			name = name[2:]
		}
		return nil, fmt.Errorf("git %s: %s", name[0], msg)
	}
	return out, nil
}

// IsRepo reports whether dir is inside a git work tree. It returns an error
// only when git itself cannot be run.
func IsRepo(ctx context.Context, dir string) (bool, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return false, fmt.Errorf("git is not installed: %w", err)
	}
	out, err := run(ctx, dir, "rev-parse", "--is-inside-work-tree")
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, nil
	}
	return strings.TrimSpace(string(out)) == "true", nil
}

// ListFiles returns the files of the work tree under dir, relative to dir
// with forward slashes: tracked files plus untracked files that are not
// ignored (git ls-files --cached --others --exclude-standard). Tracked files
// deleted from the work tree are still listed; callers stat them.
func ListFiles(ctx context.Context, dir string) ([]string, error) {
	out, err := run(ctx, dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	if err != nil {
		return nil, err
	}
	files := splitNUL(out)
	sort.Strings(files)
	return files, nil
}

// splitNUL splits git's -z output into its non-empty paths.
func splitNUL(out []byte) []string {
	var paths []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, string(p))
		}
	}
	return paths
}

// Tracked returns those of paths (relative to dir, taken literally) that
// git tracks.
func Tracked(ctx context.Context, dir string, paths []string) ([]string, error) {
	out, err := run(ctx, dir, append([]string{"--literal-pathspecs", "ls-files", "-z", "--cached", "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	return splitNUL(out), nil
}

// Head returns the commit HEAD points at, or "" in a repository with no
// commits yet.
func Head(ctx context.Context, dir string) (string, error) {
	out, err := run(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		// rev-parse -q exits 1 with no output for an unborn HEAD.
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", nil
	}
	return strings.TrimSpace(string(out)), nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func IsAncestor(ctx context.Context, dir, a, b string) bool {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "merge-base", "--is-ancestor", a, b)
	return cmd.Run() == nil
}

// Ancestors returns the commits reachable from rev (rev itself included),
// as a set of full hashes: one git call answers every "is c older than
// rev?" a caller asks after.
func Ancestors(ctx context.Context, dir, rev string) (map[string]bool, error) {
	if strings.HasPrefix(rev, "-") {
		return nil, fmt.Errorf("git rev-list: revision %q looks like an option", rev)
	}
	out, err := run(ctx, dir, "rev-list", rev, "--")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, h := range strings.Fields(string(out)) {
		set[h] = true
	}
	return set, nil
}

// RemoteURL returns the URL of the "origin" remote, or "".
func RemoteURL(ctx context.Context, dir string) string {
	out, err := run(ctx, dir, "config", "--get", "remote.origin.url")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// FileChange is one file touched by a commit. Counts are -1 for binary
// files and when line stats were not asked for.
type FileChange struct {
	Path       string
	Insertions int
	Deletions  int
}

// Commit is one commit with its changed files (none for a merge).
type Commit struct {
	Hash string
	// Parents are the parent commits: none for a root commit, two or more
	// for a merge.
	Parents   []string
	Author    string
	Timestamp string // author date, strict ISO 8601
	Message   string
	Files     []FileChange
}

// LogOptions bound a history walk.
type LogOptions struct {
	// Since excludes Since and its ancestors (the range Since..HEAD); empty
	// walks from the root.
	Since string
	// Max caps the number of commits, newest first; 0 means no cap.
	Max int
	// LineStats asks for insertions and deletions per file (--numstat),
	// which makes git compute every diff; without it files come from
	// --name-only and their counts are -1.
	LineStats bool
	// Merges includes merge commits, without files (git shows no diff for
	// them), and every commit of the history, an empty one too: the walk
	// is not limited to dir's paths (give the top level). By default
	// merges are left out.
	Merges bool
	// After, when set, keeps the commits made (committer date) at or
	// after it (--since).
	After time.Time
	// Until is the revision the walk starts from; empty is HEAD.
	Until string
}

// RecentCommits returns the hashes of the newest n commits Log reads with
// Max n (no merges, changing something below dir), newest first.
func RecentCommits(ctx context.Context, dir string, n int) ([]string, error) {
	out, err := run(ctx, dir, "log", "--no-merges", "-n", strconv.Itoa(n), "--format=%H", "HEAD", "--", ".")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// LastTouched returns the newest commit of rev (no merges), committed
// since the given date (git's --since, which ends the walk there), that
// changed one of paths (relative to dir, taken literally); "" when none
// did.
func LastTouched(ctx context.Context, dir, rev, since string, paths []string) (string, error) {
	args := []string{"--literal-pathspecs", "log", "--no-merges", "-1", "--format=%H"}
	if since != "" {
		args = append(args, "--since="+since)
	}
	out, err := run(ctx, dir, append(append(args, rev, "--"), paths...)...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Log streams the non-merge commits (all with LogOptions.Merges) reachable from HEAD (or LogOptions.Until), newest first, with
// the files each changed below dir (paths relative to dir), calling fn for
// each. Renames are reported as a deletion and an addition so every path is
// a plain path. It stops at the first error fn returns.
func Log(ctx context.Context, dir string, opt LogOptions, fn func(Commit) error) error {
	// Commit messages are free text: a marker with a random part, on a line
	// of its own, cannot be forged by a message.
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	mark := "\x1ecra-commit-" + hex.EncodeToString(nonce[:])
	msgEnd := "\x1dcra-end-" + hex.EncodeToString(nonce[:])
	stat := "--name-only"
	if opt.LineStats {
		stat = "--numstat"
	}
	args := []string{"-C", dir, "-c", "core.quotePath=false", "log", "--no-renames",
		stat, "--relative", "--format=" + mark + "%n%H%n%P%n%an%n%aI%n%B%n" + msgEnd}
	if !opt.Merges {
		args = append(args, "--no-merges")
	}
	if !opt.After.IsZero() {
		args = append(args, "--since="+strconv.FormatInt(opt.After.Unix(), 10))
	}
	if opt.Max > 0 {
		args = append(args, "-n", strconv.Itoa(opt.Max))
	}
	until := "HEAD"
	if opt.Until != "" {
		if strings.HasPrefix(opt.Until, "-") {
			return fmt.Errorf("git log: revision %q looks like an option", opt.Until)
		}
		until = opt.Until
	}
	if opt.Since != "" {
		args = append(args, opt.Since+".."+until)
	} else {
		args = append(args, until)
	}
	if !opt.Merges {
		// Limited to dir; git's history simplification then drops the
		// merges that changed nothing below it.
		args = append(args, "--", ".")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	perr := parseLog(stdout, mark, msgEnd, opt.LineStats, fn)
	if perr != nil {
		cancel()
		io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	if perr != nil {
		return perr
	}
	if werr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("git log: %s", strings.TrimSpace(stderr.String()))
	}
	return nil
}

// parseLog reads Log's stream line by line: a mark line, hash, parents, author and
// date lines, the message up to the msgEnd line, then numstat lines up to
// the next mark.
func parseLog(r io.Reader, mark, msgEnd string, numstat bool, fn func(Commit) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		c       *Commit
		header  int // header lines still expected
		inMsg   bool
		message []string
	)
	flush := func() error {
		if c == nil {
			return nil
		}
		if header > 0 || inMsg {
			return fmt.Errorf("git log: truncated record for %q", c.Hash)
		}
		err := fn(*c)
		c = nil
		return err
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == mark:
			if err := flush(); err != nil {
				return err
			}
			c, header, inMsg, message = &Commit{}, 4, false, message[:0]
		case c == nil:
			// Nothing precedes the first mark.
		case header == 4:
			c.Hash, header = line, 3
		case header == 3:
			c.Parents, header = strings.Fields(line), 2
		case header == 2:
			c.Author, header = line, 1
		case header == 1:
			c.Timestamp, header, inMsg = line, 0, true
		case inMsg && line == msgEnd:
			c.Message = strings.TrimRight(strings.Join(message, "\n"), "\n")
			inMsg = false
		case inMsg:
			message = append(message, line)
		case line == "":
		case !numstat:
			c.Files = append(c.Files, FileChange{Path: unquote(line), Insertions: -1, Deletions: -1})
		default:
			parts := strings.SplitN(line, "\t", 3)
			if len(parts) != 3 {
				return fmt.Errorf("git log: malformed numstat line %.80q", line)
			}
			ins, errI := strconv.Atoi(parts[0])
			del, errD := strconv.Atoi(parts[1])
			if errI != nil || errD != nil { // "-" for binary files
				ins, del = -1, -1
			}
			c.Files = append(c.Files, FileChange{Path: unquote(parts[2]), Insertions: ins, Deletions: del})
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("git log: %w", err)
	}
	return flush()
}

// unquote undoes git's C-style quoting of unusual paths ("a\tb", octal
// escapes for bytes when core.quotePath is on).
func unquote(p string) string {
	if len(p) < 2 || p[0] != '"' || p[len(p)-1] != '"' {
		return p
	}
	s := p[1 : len(p)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3':
			if i+2 < len(s) {
				if v, err := strconv.ParseUint(s[i:i+3], 8, 8); err == nil {
					b.WriteByte(byte(v))
					i += 2
					continue
				}
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
