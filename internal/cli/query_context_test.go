package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/kb"
)

func TestQueryContextRun(t *testing.T) {
	repo := queryFixture(t)
	d, out, _ := testDeps()
	if err := queryContextRun(context.Background(), d, &queryContextOptions{queryOptions: queryOptions{repo: repo}, path: "app/models.py"}); err != nil {
		t.Fatal(err)
	}
	want := `app/models.py  python  30 lines  900 bytes
purpose   User model
domain    users
module    app.models
concepts  user, persistence
api       User, load_user
symbols (3)
  User       class     3-20
  User.save  method    8-14
  load_user  function  22-30
docstrings (3)
  (module)   User model and persistence.
  User       A shop customer.
  load_user  Load a user by id.
rationale comments (2)
  10  # flush before commit because the driver buffers writes
  25  # cache misses are rare, so no lock here
imports (1)
  app/db.py  import
imported by (1)
  app/api.py  import
changed together with (2)
  5  app/db.py
  2  app/api.py
recent commits (3)
  c3c3c3c  2024-03-01  Ann  Fix session leak
  c2c2c2c  2024-02-01  Bob  Add the API
  c1c1c1c  2024-01-01  Ann  Add models and db
`
	if diff := deepDiff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}

	t.Run("sparse file", func(t *testing.T) {
		d, out, _ := testDeps()
		if err := queryContextRun(context.Background(), d, &queryContextOptions{queryOptions: queryOptions{repo: repo}, path: "app/util.py"}); err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{"app/util.py  python  8 lines  200 bytes\n", "docstrings (none)\n", "rationale comments (none)\n", "imports (none)\n"} {
			if !strings.Contains(out.String(), line) {
				t.Errorf("got\n%s\nwant a line %q", out, line)
			}
		}
		if strings.Contains(out.String(), "purpose") {
			t.Errorf("got\n%s\nwant no enrichment lines", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		c := queryJSON[kb.FileContext](t, queryContextRun, &queryContextOptions{queryOptions: queryOptions{repo: repo, json: true}, path: "app/db.py"})
		if c.File.Path != "app/db.py" || len(c.Symbols) != 3 || len(c.ImportedBy) != 2 || c.Metadata == nil || c.Metadata.Domain != "storage" {
			t.Errorf("got %+v, want app/db.py's context", c)
		}
	})
}
