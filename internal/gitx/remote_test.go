package gitx

import (
	"context"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/gitx/gittest"
)

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://ghp_tok3n@github.com/o/r.git", "https://***@github.com/o/r.git"},
		{"fatal: unable to access 'https://user:s3cret@host/r/': refused", "fatal: unable to access 'https://***@host/r/': refused"},
		{"ssh://git@host:22/r.git and http://a:b@c/d", "ssh://***@host:22/r.git and http://***@c/d"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"}, // scp-like: no secret
		{"https://github.com/o/r.git", "https://github.com/o/r.git"},
		{"/srv/git/r.git", "/srv/git/r.git"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRemoteErrorsHideCredentials: a fetch, a push and a read of a
// remote whose URL carries a token fail (nothing listens) with errors
// that name the remote without the token, as they reach the world log.
func TestRemoteErrorsHideCredentials(t *testing.T) {
	ctx := context.Background()
	repo := gittest.Init(t)
	commit := gittest.Commit(t, repo, "first", map[string]string{"a.txt": "a\n"})
	url := "https://x-access-token:ghs_S3CRET@127.0.0.1:1/o/r.git"
	errs := map[string]error{}
	_, errs["ls-remote"] = RemoteBranch(ctx, repo, url, "cra/t-1")
	_, errs["fetch"] = FetchBranch(ctx, repo, url, "cra/t-1", "refs/remotes/origin/cra/t-1")
	errs["push"] = PushCommit(ctx, repo, url, commit, "cra/t-1")
	for what, err := range errs {
		if err == nil {
			t.Fatalf("%s to a port nothing listens on succeeded", what)
		}
		if msg := err.Error(); strings.Contains(msg, "S3CRET") || strings.Contains(msg, "x-access-token") {
			t.Errorf("%s's error shows the URL's credentials: %s", what, msg)
		} else if !strings.Contains(msg, "https://***@127.0.0.1:1/o/r.git") {
			t.Errorf("%s's error does not name the remote: %s", what, msg)
		}
	}
}
