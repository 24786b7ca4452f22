package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/fleetapi"
	"github.com/cra-dev/cra/internal/pgstore"
	"github.com/cra-dev/cra/internal/pgtest"
	"github.com/cra-dev/cra/internal/workspace"
	"github.com/cra-dev/cra/internal/world"
)

// pgHost opens the fleet of a new repository whose config.toml is body,
// its board in the database at url (CRA_TEST_DATABASE_URL).
func pgHost(t *testing.T, body, url string) (*Fleet, string) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".clean_room"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, ".clean_room", "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(ctx, root, workspace.Options{Exact: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, ws, Options{Create: true, Getenv: func(name string) string {
		if name == "CRA_TEST_DATABASE_URL" {
			return url
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// On a fleet the web board's settings are the fleet's: a change from one
// host is stored in the database with its event, in one transaction, and
// every host's settings and workers' config read it; no host's
// config.toml changes. A bad value changes nothing anywhere.
func TestSettingsSharedAcrossHosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.DB(t)
	if _, _, err := pgstore.Init(ctx, url); err != nil {
		t.Fatal(err)
	}
	const cfg = "[fleet]\ndatabase_url_env = \"CRA_TEST_DATABASE_URL\"\nhost = %q\n\n[recycler]\ninterval_seconds = 60\n"
	a, pathA := pgHost(t, strings.Replace(cfg, "%q", `"a"`, 1), url)
	b, pathB := pgHost(t, strings.Replace(cfg, "%q", `"b"`, 1), url)
	fileA, _ := os.ReadFile(pathA)
	fileB, _ := os.ReadFile(pathB)

	in := fleetapi.Settings{Recycler: fleetapi.RecyclerSettings{EnabledFor: json.RawMessage(`["bug"]`), IntervalSeconds: 90,
		CompletionThreshold: 3, FailureThreshold: 4}}
	if _, err := a.SetSettings(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := b.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Recycler; r.IntervalSeconds != 90 || r.CompletionThreshold != 3 || r.FailureThreshold != 4 || string(r.EnabledFor) != `["bug"]` {
		t.Errorf("host b's settings %+v, want host a's change", r)
	}
	c, err := b.Config()
	if err != nil {
		t.Fatal(err)
	}
	if rs := c.RecyclerSettings(); rs.Interval.Seconds() != 90 || rs.FailureThreshold != 4 || !rs.EnabledFor.Matches("bug") {
		t.Errorf("host b's workers read %+v, want the shared settings", rs)
	}
	for path, was := range map[string][]byte{pathA: fileA, pathB: fileB} {
		if now, _ := os.ReadFile(path); !bytes.Equal(now, was) {
			t.Errorf("%s changed:\n%s", path, now)
		}
	}
	var events []string
	err = a.Board.Log.Select(ctx, world.Filter{Kind: world.KindEvent, Sources: []world.Source{world.SourceUser}}, func(r *world.Record) error {
		if r.Entry.ID == fleetapi.SettingsID {
			events = append(events, r.Entry.Output)
		}
		return nil
	})
	if err != nil || len(events) != 1 || !strings.Contains(events[0], "recycler.interval_seconds=60→90") {
		t.Errorf("settings events %q (%v), want one naming the change", events, err)
	}

	bad := in
	bad.Recycler.FailureThreshold = 0
	var se *fleetapi.SettingError
	if _, err := b.SetSettings(ctx, bad); !errors.As(err, &se) {
		t.Fatalf("a bad value: %v, want a SettingError", err)
	}
	if got, err := a.Settings(ctx); err != nil || got.Recycler.FailureThreshold != 4 {
		t.Errorf("after a refused change host a has %+v (%v), want it unchanged", got.Recycler, err)
	}
}
