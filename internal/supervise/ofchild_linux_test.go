package supervise

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

// TestOfChildIdentifiesAnExitedChild: a child that exited before anyone
// read it (a zombie until reaped) still has its identity for the one who
// started it, and that identity reads as gone; Of refuses it.
func TestOfChildIdentifiesAnExitedChild(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := stat(ctx, pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	id, err := OfChild(ctx, pid)
	if err != nil || id.PID != pid || id.StartTime == 0 {
		t.Fatalf("OfChild(zombie) = %+v, %v; want its pid and start time", id, err)
	}
	if alive, err := id.Alive(ctx); alive || err != nil {
		t.Errorf("Alive of an exited child = %v, %v; want false", alive, err)
	}
	if _, err := Of(ctx, pid); !errors.Is(err, errNoProcess) {
		t.Errorf("Of(zombie) error = %v, want errNoProcess", err)
	}
}
