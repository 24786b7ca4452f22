package pgstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestLeasesStartWhenWritten: a claim that waited for the claims' lock,
// a renewal that waited for a row a claim or a sweep held, and a
// campaign that waited for another's, each stamp the lease they write
// with the time it was written, after the wait: a lease stamped with its
// transaction's start would be partly spent when granted.
func TestLeasesStartWhenWritten(t *testing.T) {
	const lease = time.Minute
	tests := []struct {
		name  string
		setup func(t *testing.T, f *Fleet) // before the block
		block string                       // run in the blocking transaction
		write func(f *Fleet) error         // waits for the block
		read  func(t *testing.T, f *Fleet) (renewed, expires time.Time)
	}{
		{name: "claim",
			block: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", lockClaim),
			write: func(f *Fleet) error {
				_, err := f.Claim(context.Background(), "a", []string{"T-1"}, 1, lease)
				return err
			},
			read: func(t *testing.T, f *Fleet) (time.Time, time.Time) {
				l := leaseOf(t, f, "T-1")
				return l.Renewed, l.Expires
			}},
		{name: "renew",
			setup: func(t *testing.T, f *Fleet) {
				if _, err := f.Claim(context.Background(), "a", []string{"T-1"}, 1, lease); err != nil {
					t.Fatal(err)
				}
			},
			block: "SELECT 1 FROM run_leases WHERE task_id = 'T-1' FOR UPDATE",
			write: func(f *Fleet) error {
				ls, err := f.Leases(context.Background())
				if err != nil {
					return err
				}
				_, err = f.Renew(context.Background(), "a", ls, lease)
				return err
			},
			read: func(t *testing.T, f *Fleet) (time.Time, time.Time) {
				l := leaseOf(t, f, "T-1")
				return l.Renewed, l.Expires
			}},
		{name: "campaign",
			setup: func(t *testing.T, f *Fleet) {
				if _, _, err := f.Campaign(context.Background(), "a", lease); err != nil {
					t.Fatal(err)
				}
			},
			block: "SELECT 1 FROM fleet_leader FOR UPDATE",
			write: func(f *Fleet) error { _, _, err := f.Campaign(context.Background(), "a", lease); return err },
			read: func(t *testing.T, f *Fleet) (time.Time, time.Time) {
				l, err := f.CurrentLeader(context.Background())
				if err != nil || l == nil {
					t.Fatalf("leader %v (%v)", l, err)
				}
				return l.Renewed, l.Expires
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f, _ := openFleet(t)
			if tc.setup != nil {
				tc.setup(t, f)
			}
			tx, err := f.pool.BeginTx(ctx, pgx.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, tc.block); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- tc.write(f) }()
			// Until the write waits for the block's lock.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				var waiting int
				if err := f.pool.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted").Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the write never waited for the lock")
				}
			}
			time.Sleep(100 * time.Millisecond) // the wait is long enough to see
			var released time.Time
			if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&released); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			renewed, expires := tc.read(t, f)
			if renewed.Before(released) {
				t.Errorf("stamped %v, %v before the lock it waited for was released at %v", renewed, released.Sub(renewed), released)
			}
			if d := expires.Sub(renewed) - lease; d < 0 || d > time.Millisecond {
				t.Errorf("expires %v after it was stamped, want the lease, %v", expires.Sub(renewed), lease)
			}
		})
	}
}
