package gitx

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// ErrNoRemote is a remote name the repository's config does not define.
var ErrNoRemote = errors.New("git remote is not configured")

// ErrRejected is a push the remote refused because its branch has
// commits the pushed one lacks (not a fast-forward).
var ErrRejected = errors.New("the remote's branch has commits this one lacks")

// remoteName is what a remote's name may be here: it goes into a config
// key, so nothing that could make another key.
var remoteName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$`) })

// ConfiguredURL returns the URL of remote as repo's own config holds it
// (remote.NAME.url, read from the repository's config and the user's,
// never from a task's working copy): the fleet fetches and pushes with
// it explicitly, so that nothing written in a working copy redirects
// them. A remote the config does not define wraps ErrNoRemote.
func ConfiguredURL(ctx context.Context, repo, remote string) (string, error) {
	if !remoteName().MatchString(remote) || strings.Contains(remote, "..") {
		return "", fmt.Errorf("%q is not a git remote name: name one like origin", remote)
	}
	out, err := run(ctx, repo, "config", "--get", "remote."+remote+".url")
	url := strings.TrimSpace(string(out))
	if err != nil || url == "" {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: %s has no remote %q: add it with 'git remote add %s URL' (the repository every host shares), or set [fleet] remote", ErrNoRemote, repo, remote, remote)
	}
	if strings.HasPrefix(url, "-") || strings.ContainsAny(url, "\n\x00") {
		return "", fmt.Errorf("remote %q's URL %q is not a repository URL: fix it with 'git remote set-url %s URL'", remote, Redact(url), remote)
	}
	return url, nil
}

// userinfo is the user part of a URL with a scheme: the token or
// password a remote's URL may carry (https://TOKEN@host/…,
// https://user:password@host/…).
var userinfo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'"]+@`) })

// Redact returns s with the user part of every URL in it replaced by
// "***": a remote's URL goes into errors, which the world log, the web
// board and later runs' prompts show, and must not carry its credentials
// there. An scp-like address (git@host:path) holds no secret and stays.
func Redact(s string) string { return userinfo().ReplaceAllString(s, "${1}***@") }

// remoteGit is git for a fetch or push to another repository: no hooks
// and no prompt for a password (a daemon has no terminal), and the
// remote's credentials redacted from its error (Redact).
func remoteGit(ctx context.Context, repo string, args ...string) ([]byte, error) {
	out, err := runGit(ctx, repo, []string{"GIT_TERMINAL_PROMPT=0"}, nil, append([]string{"-c", noHooks}, args...)...)
	if err != nil && ctx.Err() == nil {
		return nil, errors.New(Redact(err.Error()))
	}
	return out, err
}

// RemoteBranch returns the commit branch is at in the repository at url,
// or "" when it has no such branch.
func RemoteBranch(ctx context.Context, repo, url, branch string) (string, error) {
	out, err := remoteGit(ctx, repo, "ls-remote", "--heads", url, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("read %s's branches: %w", Redact(url), err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		sha, ref, ok := strings.Cut(strings.TrimSpace(l), "\t")
		if ok && ref == "refs/heads/"+branch {
			return sha, nil
		}
	}
	return "", nil
}

// FetchBranch fetches branch from the repository at url into the ref
// into of repo (a remote-tracking ref, refs/remotes/NAME/BRANCH), and
// returns the commit fetched. Only that ref changes: no tags, no
// FETCH_HEAD.
func FetchBranch(ctx context.Context, repo, url, branch, into string) (string, error) {
	if _, err := remoteGit(ctx, repo, "fetch", "-q", "--no-tags", "--no-write-fetch-head", url,
		"+refs/heads/"+branch+":"+into); err != nil {
		return "", fmt.Errorf("fetch %s from %s: %w", branch, Redact(url), err)
	}
	return RevParse(ctx, repo, into)
}

// PushCommit sets branch in the repository at url to commit, only as a
// fast-forward: a remote branch with commits commit lacks wraps
// ErrRejected and is left as it is. Exactly that one ref is pushed.
func PushCommit(ctx context.Context, repo, url, commit, branch string) error {
	_, err := remoteGit(ctx, repo, "push", "-q", "--no-verify", url, commit+":refs/heads/"+branch)
	if err == nil {
		return nil
	}
	if msg := err.Error(); strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "fetch first") || strings.Contains(msg, "[rejected]") {
		return fmt.Errorf("push %s to %s: %w (not a fast-forward)", branch, Redact(url), ErrRejected)
	}
	return fmt.Errorf("push %s to %s: %w", branch, Redact(url), err)
}

// ReplaceCommit sets branch in the repository at url to commit whatever
// it held, but only while it still holds old (--force-with-lease): a
// branch that moved meanwhile wraps ErrRejected and is left as it is.
// Exactly that one ref is pushed.
func ReplaceCommit(ctx context.Context, repo, url, commit, branch, old string) error {
	ref := "refs/heads/" + branch
	_, err := remoteGit(ctx, repo, "push", "-q", "--no-verify", "--force-with-lease="+ref+":"+old, url, commit+":"+ref)
	if err == nil {
		return nil
	}
	if msg := err.Error(); strings.Contains(msg, "stale info") || strings.Contains(msg, "[rejected]") {
		return fmt.Errorf("replace %s on %s: %w (it moved)", branch, Redact(url), ErrRejected)
	}
	return fmt.Errorf("replace %s on %s: %w", branch, Redact(url), err)
}

// CreateBranch makes branch at commit only when it does not exist yet.
func CreateBranch(ctx context.Context, repo, branch, commit, reason string) error {
	_, err := run(ctx, repo, "update-ref", "-m", reason, "refs/heads/"+branch, commit, "")
	return err
}

// FastForward moves the clone's branch to commit, its files too, only
// when that is a fast-forward and touches no uncommitted change (git
// merge --ff-only): the repository fetched commit, and the clone shares
// its objects.
func (c *Clone) FastForward(ctx context.Context, commit string) error {
	if _, err := c.git(ctx, "", nil, "merge", "--ff-only", "-q", commit); err != nil {
		return fmt.Errorf("move the working copy %s to %.12s: %w", c.Path, commit, err)
	}
	return nil
}
