package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// The fleet's settings and their event commit together: a failed event
// stores nothing, a bad body is refused, a later change replaces the
// earlier one.
func TestSetSettings(t *testing.T) {
	ctx := context.Background()
	l := openPG(t, nil)
	if _, ok, err := l.Settings(ctx); err != nil || ok {
		t.Fatalf("a new fleet has settings: %v %v", ok, err)
	}
	boom := errors.New("the log is full")
	err := l.SetSettings(ctx, []byte(`{"recycler":{"interval_seconds":90}}`), func(context.Context, world.Store) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the event's failure", err)
	}
	if _, ok, _ := l.Settings(ctx); ok {
		t.Error("settings stored though their event failed")
	}
	for _, body := range []string{`[1,2]`, `not json`, `{"x":"` + strings.Repeat("y", MaxSettingsBytes) + `"}`} {
		if err := l.SetSettings(ctx, []byte(body), func(context.Context, world.Store) error { return nil }); err == nil {
			t.Errorf("settings %.20q… were stored", body)
		}
	}
	logged := func(ctx context.Context, log world.Store) error {
		_, err := log.Event(ctx, world.SourceUser, "settings", "changed")
		return err
	}
	for _, body := range []string{`{"a":1}`, `{"a":2}`} {
		if err := l.SetSettings(ctx, []byte(body), logged); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := l.Settings(ctx); err != nil || !ok || string(got) != `{"a": 2}` {
		t.Errorf("settings %s %v %v, want the last change", got, ok, err)
	}
}
