package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// twoHosts returns two logs on one new database: two hosts of a fleet.
func twoHosts(t *testing.T) (*Log, *Log) {
	t.Helper()
	ctx := context.Background()
	url := openPGURL(t)
	var logs [2]*Log
	for i := range logs {
		l, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		logs[i] = l
	}
	return logs[0], logs[1]
}

// openPGURL returns the URL of a new database of the test cluster, its
// schema made.
func openPGURL(t *testing.T) string {
	t.Helper()
	return openPG(t, nil).pool.Config().ConnString()
}

func notices(t *testing.T, l *Log) string {
	t.Helper()
	got, err := l.Notices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, b := range got {
		s = append(s, string(b))
	}
	return strings.Join(s, " ")
}

// TestNoticeQueue: the queue keeps its lines in the order appended, a
// replace puts exactly what is left, and every step needs the lock.
func TestNoticeQueue(t *testing.T) {
	ctx := context.Background()
	l, _ := twoHosts(t)
	if err := l.AppendNotice(ctx, []byte(`{"n":0}`)); !errors.Is(err, errNoticesUnlocked) {
		t.Fatalf("an append without the lock: %v, want %v", err, errNoticesUnlocked)
	}
	unlock, ok, err := l.LockNotices(ctx)
	if err != nil || !ok {
		t.Fatalf("lock: %v, %v", ok, err)
	}
	for _, b := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		if err := l.AppendNotice(ctx, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if got := notices(t, l); got != `{"n": 1} {"n": 2} {"n": 3}` {
		t.Errorf("read %s, want 1 2 3 in order", got)
	}
	if err := l.ReplaceNotices(ctx, [][]byte{[]byte(`{"n":3}`), []byte(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	if got := notices(t, l); got != `{"n": 3} {"n": 1}` {
		t.Errorf("after a replace: %s, want 3 1", got)
	}
	if err := l.AppendNotice(ctx, []byte(`not json`)); err == nil {
		t.Error("a line that is not JSON was kept")
	}
	if err := l.ReplaceNotices(ctx, [][]byte{[]byte(`{"n":4}`), []byte(`{`)}); err == nil {
		t.Error("a replace with a broken line went through")
	}
	if got := notices(t, l); got != `{"n": 3} {"n": 1}` {
		t.Errorf("after a failed replace: %s, want it untouched, 3 1", got)
	}
	if err := l.ReplaceNotices(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := notices(t, l); got != "" {
		t.Errorf("after replacing by none: %s, want empty", got)
	}
	unlock()
	unlock() // twice is once
	if _, err := l.Notices(ctx); !errors.Is(err, errNoticesUnlocked) {
		t.Errorf("a read after unlock: %v, want %v", err, errNoticesUnlocked)
	}
}

// TestNoticeLockExcludes: one holder of the queue's lock across hosts
// and within one; unlocked, the other host takes it and reads what the
// first left. A holder whose session the database ended (a host cut
// off) has lost the lock: another takes it, and the first one's writes
// fail rather than go through.
func TestNoticeLockExcludes(t *testing.T) {
	ctx := context.Background()
	a, b := twoHosts(t)
	unlockA, ok, err := a.LockNotices(ctx)
	if err != nil || !ok {
		t.Fatalf("a takes the lock: %v, %v", ok, err)
	}
	if err := a.AppendNotice(ctx, []byte(`{"from":"a"}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.LockNotices(ctx); err != nil || ok {
		t.Fatalf("b took the lock a holds: %v, %v", ok, err)
	}
	if _, ok, err := a.LockNotices(ctx); err != nil || ok {
		t.Fatalf("a took the lock a second time: %v, %v", ok, err)
	}
	unlockA()
	unlockB, ok, err := b.LockNotices(ctx)
	if ok {
		t.Cleanup(unlockB) // before its Log closes, whatever fails
	}
	if err != nil || !ok {
		t.Fatalf("b after a let go: %v, %v", ok, err)
	}
	if got := notices(t, b); got != `{"from": "a"}` {
		t.Errorf("b reads %s, want what a left", got)
	}
	if _, ok, err := a.LockNotices(ctx); err != nil || ok {
		t.Fatalf("a took the lock b holds: %v, %v", ok, err)
	}

	// b's session ends under it: a takes the lock, b's next write fails.
	if _, err := a.pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND granted`, lockNotices); err != nil {
		t.Fatal(err)
	}
	// The backend ends, and lets its locks go, a moment after it is told.
	for i := 0; i < 200; i++ {
		if unlockA, ok, err = a.LockNotices(ctx); err != nil || ok {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err != nil || !ok {
		t.Fatalf("a after b's session ended: %v, %v", ok, err)
	}
	t.Cleanup(unlockA)
	if err := b.ReplaceNotices(ctx, nil); err == nil {
		t.Error("b wrote the queue after its session, and the lock, were gone")
	}
	unlockB() // must not let a's lock go
	if _, ok, err := b.LockNotices(ctx); err != nil || ok {
		t.Fatalf("b took the lock a holds after b's stale unlock: %v, %v", ok, err)
	}
	if got := notices(t, a); got != `{"from": "a"}` {
		t.Errorf("a reads %s, want the queue untouched", got)
	}
	unlockA()
}
