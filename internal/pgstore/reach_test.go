package pgstore

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/pgtest"
)

// ReachOf tells loopback ports (guarded) from Unix sockets (not
// fenceable) and other hosts (neither), fallbacks included.
func TestReachOf(t *testing.T) {
	for _, c := range []struct {
		url  string
		want Reach
	}{
		{"postgres://u:p@localhost:5433/db", Reach{LoopbackPorts: []int{5433}}},
		{"postgres://u@127.0.0.1/db", Reach{LoopbackPorts: []int{5432}}},
		{"postgres://u@[::1]:6000/db", Reach{LoopbackPorts: []int{6000}}},
		{"host=/var/run/postgresql dbname=db", Reach{Sockets: []string{"/var/run/postgresql"}}},
		{"postgres://u@db.example.com/db", Reach{}},
		{"postgres://u@10.0.0.5,localhost:5433,127.0.0.1:5433/db", Reach{LoopbackPorts: []int{5433}}},
	} {
		got, err := ReachOf(c.url)
		if err != nil {
			t.Errorf("ReachOf(%q): %v", c.url, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ReachOf(%q) = %+v, want %+v", c.url, got, c.want)
		}
	}
	if _, err := ReachOf("postgres://u:secret@[bad"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a URL that does not parse: %v, want an error without its password", err)
	}
}

// The test cluster trusts every local user: it opens without a password,
// also to a URL that insists on SCRAM (an agent's client would not). A
// server that is not there does not.
func TestOpensWithoutPassword(t *testing.T) {
	ctx := context.Background()
	url := pgtest.DB(t)
	if open, err := OpensWithoutPassword(ctx, url); err != nil || !open {
		t.Errorf("the trust cluster: %v, %v; want it open", open, err)
	}
	for _, hard := range []string{"&require_auth=scram-sha-256", "&channel_binding=require"} {
		if open, err := OpensWithoutPassword(ctx, url+hard); err != nil || !open {
			t.Errorf("the trust cluster, URL with %s: %v, %v; want it open", hard, open, err)
		}
	}
	if open, err := OpensWithoutPassword(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=2"); err != nil || open {
		t.Errorf("no server: %v, %v; want closed", open, err)
	}
}

// The test cluster trusts every local user on its socket: that socket is
// named, whatever way the URL reached it.
func TestPasswordlessSockets(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	got, err := PasswordlessSockets(ctx, c.URL("postgres"))
	if err != nil || len(got) != 1 || got[0] != c.Dir() {
		t.Errorf("the trust cluster: %v, %v; want [%s]", got, err, c.Dir())
	}
	if _, err := PasswordlessSockets(ctx, "postgres://u@127.0.0.1:1/db?connect_timeout=2"); err == nil {
		t.Error("no server: no error")
	}
}
