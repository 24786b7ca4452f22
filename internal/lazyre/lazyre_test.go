package lazyre

import "testing"

func TestNew(t *testing.T) {
	re := New(`a(b+)`)
	if re() != re() {
		t.Fatal("compiled twice")
	}
	if got := re().FindStringSubmatch("xabbb")[1]; got != "bbb" {
		t.Errorf("got %q, want bbb", got)
	}
	bad := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic on first use")
		}
	}()
	bad()
}
