package index

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/flock"
	"github.com/cra-dev/cra/internal/statedir"
)

// LockName is the file under the state directory whose flock(2) the
// writers of the index hold: one index run (or promotion) at a time.
const LockName = statedir.IndexLock

// DefaultLockWait bounds how long a writer waits for another one.
const DefaultLockWait = 10 * time.Minute

// BusyError is a wait for another writer of the index that ran out.
type BusyError struct {
	PID  int // the holder, as it wrote itself into the lock file; 0 if unknown
	Wait time.Duration
}

func (e *BusyError) Error() string {
	who := "another cra process"
	if e.PID > 0 {
		who = fmt.Sprintf("another cra process (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s has been writing the index for over %s: wait for it to finish, or stop it, then run again", who, e.Wait)
}

// Lock takes the index's write lock in stateDir, waiting at most wait
// (DefaultLockWait when 0) for another writer; waiting, when set, is
// called once with the holder's pid before the wait. The holder's pid is
// written into the lock file for the next one to name. Closing the
// returned file releases the lock.
func Lock(ctx context.Context, stateDir string, wait time.Duration, waiting func(pid int)) (*os.File, error) {
	if wait <= 0 {
		wait = DefaultLockWait
	}
	path := statedir.At(stateDir).IndexLock()
	f, ok, err := flock.TryLock(path)
	if err != nil {
		return nil, fmt.Errorf("lock index: %w", err)
	}
	if !ok {
		pid := holder(path)
		if waiting != nil {
			waiting(pid)
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if f, err = flock.Lock(wctx, path, true); err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return nil, &BusyError{PID: pid, Wait: wait}
			}
			return nil, err
		}
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// holder reads the pid the lock's holder wrote into path, or 0.
func holder(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}
