package world

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The child mode of the test binary: compact the log in $CRA_TEST_COMPACT_DIR,
// killing itself (SIGKILL, as kill -9) at the step $CRA_TEST_COMPACT_DIE.
const (
	envCompactDir = "CRA_TEST_COMPACT_DIR"
	envCompactDie = "CRA_TEST_COMPACT_DIE"
)

func compactMain(dir, die string) int {
	l, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	l.crashAt = func(step string) {
		if step == die {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	if _, err := l.Compact(context.Background(), CompactOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// writeBigLog writes a log of n verified agents (8 lines each, the review
// included, 6 of them archived by a compaction) and n/4 running ones
// straight to dir.
func writeBigLog(t *testing.T, dir string, n int) {
	t.Helper()
	var b bytes.Buffer
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	line := func(e Entry) {
		now = now.Add(time.Millisecond)
		e.Time = now
		s, err := Format(e)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	for i := range n {
		id := fmt.Sprintf("a%06d", i)
		for _, st := range agentSteps {
			if st == StatusVerified {
				line(Entry{Kind: KindEvent, Source: SourceReview, ID: id, Output: "run of " + id + " reviewed"})
			}
			line(Entry{Kind: KindAgent, Status: st, ID: id, Output: "step " + string(st) + " of " + id + " with some words to make the line longer"})
		}
		if i%4 == 0 {
			id := fmt.Sprintf("r%06d", i)
			line(Entry{Kind: KindAgent, Status: StatusStart, ID: id, Output: "running " + id, Need: "tests pass"})
			line(Entry{Kind: KindAgent, Status: StatusActive, ID: id, Output: "run 1"})
		}
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// compactedState is what a finished compaction leaves that a test compares:
// the log, the archive and stray files.
func compactedState(t *testing.T, dir string) (log, archive []byte, stray []string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	archive, _ = os.ReadFile(filepath.Join(dir, archiveName))
	for _, pat := range []string{"." + FileName + ".compact*", journalName, "*.tmp*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		stray = append(stray, m...)
	}
	return log, archive, stray
}

// TestCompactionSurvivesKill9: a compaction killed at each of its steps,
// and at random moments, then run again, leaves exactly what one
// uninterrupted compaction leaves: the same log, the same archive (no line
// twice, none torn) and no temp file.
func TestCompactionSurvivesKill9(t *testing.T) {
	const agents = 3000
	ref := t.TempDir()
	writeBigLog(t, ref, agents)
	if _, err := compactOnce(t, ref); err != nil {
		t.Fatal(err)
	}
	wantLog, wantArchive, _ := compactedState(t, ref)
	if bytes.Count(wantArchive, []byte("\n")) != agents*6 {
		t.Fatalf("reference archive has %d lines, want %d", bytes.Count(wantArchive, []byte("\n")), agents*6)
	}

	check := func(t *testing.T, dir string) {
		t.Helper()
		if _, err := compactOnce(t, dir); err != nil {
			t.Fatal(err)
		}
		log, archive, stray := compactedState(t, dir)
		if !bytes.Equal(log, wantLog) {
			t.Errorf("log differs from one clean compaction's (%d bytes, want %d)", len(log), len(wantLog))
		}
		if !bytes.Equal(archive, wantArchive) {
			t.Errorf("archive differs from one clean compaction's: %d lines, want %d", bytes.Count(archive, []byte("\n")), agents*6)
		}
		if len(stray) > 0 {
			t.Errorf("left behind: %v", stray)
		}
	}
	for _, step := range []string{"journaled", "archived", "marked", "replaced", "moved"} {
		t.Run("at "+step, func(t *testing.T) {
			dir := t.TempDir()
			writeBigLog(t, dir, agents)
			killCompaction(t, dir, step, 0)
			check(t, dir)
		})
	}
	for i := range 6 {
		t.Run(fmt.Sprintf("random %d", i), func(t *testing.T) {
			dir := t.TempDir()
			writeBigLog(t, dir, agents)
			killCompaction(t, dir, "", time.Duration(rand.IntN(400))*time.Millisecond)
			check(t, dir)
		})
	}
	t.Run("torn archive tail", func(t *testing.T) {
		dir := t.TempDir()
		writeBigLog(t, dir, agents)
		// An older cra killed mid-append, without a journal.
		if err := os.WriteFile(filepath.Join(dir, archiveName), []byte("[2026-01-01T00:00:00Z] [agent:start][x] tor"), 0o644); err != nil {
			t.Fatal(err)
		}
		check(t, dir)
	})
}

// killCompaction runs a compaction of the log in dir in a child process
// killed (SIGKILL) at the step die, or after the given time.
func killCompaction(t *testing.T, dir, die string, after time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envCompactDir+"="+dir, envCompactDie+"="+die)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if after > 0 {
		time.Sleep(after)
		cmd.Process.Signal(syscall.SIGKILL) // this test's own child, by pid
	}
	err = cmd.Wait()
	if die != "" {
		// Killed at its step, not exited: the step must still exist.
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("the child was not killed at step %q: %v", die, err)
		}
	}
}

// TestCompactionCrashMovesMarkers: read markers in the middle and at the
// end of a log end up where one clean compaction puts them — before the
// same entries — when a compaction is killed at any step from the rename
// on, and recovered by the next compaction or by the next Check.
func TestCompactionCrashMovesMarkers(t *testing.T) {
	const agents = 400
	names := []string{"third", "two-thirds", "end"}
	setup := func(t *testing.T, dir string) *Log {
		t.Helper()
		writeBigLog(t, dir, agents)
		full, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Each marker reads the log as it was when a part of it was there.
		written := 0
		for i, name := range names {
			end := len(full) * (i + 1) / len(names)
			end += bytes.IndexByte(full[end-1:], '\n') // the end of the line
			flag := os.O_WRONLY | os.O_APPEND
			if i == 0 {
				flag = os.O_WRONLY | os.O_TRUNC
			}
			f, err := os.OpenFile(l.Path(), flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(full[written:end])
			f.Close()
			written = end
			if _, err := l.Check(context.Background(), name, func(*Record) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	// places checks each marker: where it was (the first line read, or
	// the end when none) and the lines read.
	places := func(t *testing.T, l *Log) (map[string]Position, map[string][]string) {
		t.Helper()
		pos, lines := map[string]Position{}, map[string][]string{}
		for _, name := range names {
			end, err := l.Check(context.Background(), name, func(r *Record) error {
				if len(lines[name]) == 0 {
					pos[name] = Position{Offset: r.Offset, Line: r.Line - 1}
				}
				lines[name] = append(lines[name], string(r.Raw))
				return nil
			})
			if err != nil {
				t.Fatalf("check %s after the compaction: %v", name, err)
			}
			if len(lines[name]) == 0 {
				pos[name] = end
			}
		}
		return pos, lines
	}
	ref := setup(t, t.TempDir())
	if _, err := ref.Compact(context.Background(), CompactOptions{}); err != nil {
		t.Fatal(err)
	}
	wantPos, wantLines := places(t, ref)
	if len(wantLines["third"]) == 0 || len(wantLines["end"]) != 0 {
		t.Fatalf("reference: lines after the markers: %d, %d, %d; want some after the first, none after the last",
			len(wantLines["third"]), len(wantLines["two-thirds"]), len(wantLines["end"]))
	}
	for _, step := range []string{"marked", "replaced", "moved"} {
		for _, recovery := range []string{"compact", "check"} {
			if step == "marked" && recovery == "check" {
				continue // not replaced: the markers still mark the old log, which the next compaction compacts
			}
			t.Run(step+" then "+recovery, func(t *testing.T) {
				dir := t.TempDir()
				l := setup(t, dir)
				killCompaction(t, dir, step, 0)
				if recovery == "compact" {
					if _, err := compactOnce(t, dir); err != nil {
						t.Fatal(err)
					}
				}
				pos, lines := places(t, l)
				if diff := cmp.Diff(wantPos, pos); diff != "" {
					t.Errorf("marker positions (-clean +recovered):\n%s", diff)
				}
				if diff := cmp.Diff(wantLines, lines); diff != "" {
					t.Errorf("lines after the markers (-clean +recovered):\n%s", diff)
				}
				if _, err := os.Stat(filepath.Join(dir, journalName)); !os.IsNotExist(err) {
					t.Errorf("journal left: %v", err)
				}
			})
		}
	}
}

// compactOnce compacts the log in dir in this process, as a re-run does.
func compactOnce(t *testing.T, dir string) (CompactStats, error) {
	t.Helper()
	l, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l.Compact(context.Background(), CompactOptions{})
}

// FuzzCompactionRecovery: whatever archive and journal a killed compaction
// left, recovery and the next compaction's repair leave a prefix of the
// archive that ends a line, cut back to the journal's length when the log
// was not replaced, and no journal.
func FuzzCompactionRecovery(f *testing.F) {
	f.Add([]byte("[a] line one\n[b] line two\n[c] torn"), int64(13), false)
	f.Add([]byte("whole\n"), int64(0), true)
	f.Add([]byte("no newline at all"), int64(100), false)
	f.Add([]byte{}, int64(5), false)
	f.Fuzz(func(t *testing.T, archive []byte, before int64, replaced bool) {
		dir := t.TempDir()
		l, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(l.Path(), []byte("[2026-01-01T00:00:00Z] [event:index][x] hello\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		archPath := filepath.Join(dir, archiveName)
		if err := os.WriteFile(archPath, archive, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(l.Path())
		if err != nil {
			t.Fatal(err)
		}
		dev, ino := fileID(fi)
		if replaced {
			ino++ // the journal names a log that is no longer there
		}
		before = max(0, before) % int64(len(archive)+1)
		b, _ := json.Marshal(journal{Dev: dev, Ino: ino, Archive: before})
		if err := os.WriteFile(filepath.Join(dir, journalName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := l.recoverCompaction(); err != nil {
			t.Fatal(err)
		}
		arch, err := os.OpenFile(archPath, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		n, err := cutTornTail(arch)
		arch.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(archPath)
		if int64(len(got)) != n || !bytes.HasPrefix(archive, got) {
			t.Fatalf("archive %q is not a prefix of %q (n %d)", got, archive, n)
		}
		if len(got) > 0 && got[len(got)-1] != '\n' {
			t.Fatalf("archive ends mid-line: %q", got)
		}
		if !replaced && int64(len(got)) > before {
			t.Fatalf("archive kept %d bytes past the journal's %d", len(got), before)
		}
		if _, err := os.Stat(filepath.Join(dir, journalName)); !os.IsNotExist(err) {
			t.Fatalf("journal left: %v", err)
		}
	})
}
