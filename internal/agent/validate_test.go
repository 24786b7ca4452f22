package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/validation"
)

// TestValidationTimeoutReads: a check killed at its timeout reads as
// timed out, with the bound, in what the model and the user read, not as
// a plain failure (issue 19, defect 7).
func TestValidationTimeoutReads(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh commands")
	}
	v := &validation.Validator{Test: "sleep 30", Lint: "exit 1", Timeout: time.Second}
	res, err := v.Run(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Check(validation.CheckTest); c == nil || !c.TimedOut || res.FirstFailure() != ClassTest {
		t.Fatalf("got %+v", res)
	}
	summary, evidence := validationReport(res, false)
	if want := "The edits applied, but test timed out after 1s and lint failed."; summary != want {
		t.Errorf("summary: got %q, want %q", summary, want)
	}
	if want := "Output of test (`sleep 30`, timed out after 1s: killed)"; !strings.Contains(evidence, want) {
		t.Errorf("evidence lacks %q:\n%s", want, evidence)
	}
	data, _ := json.Marshal(res.Check(validation.CheckTest))
	if !strings.Contains(string(data), `"timed_out":true`) {
		t.Errorf("JSON lacks timed_out: %s", data)
	}
}

func TestTimedOut(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                      "timed out",
		300 * time.Millisecond: "timed out after 300ms",
		5 * time.Second:        "timed out after 5s",
		90 * time.Second:       "timed out after 1m30s",
		10 * time.Minute:       "timed out after 10m",
		2 * time.Hour:          "timed out after 2h",
	} {
		if got := timedOut(d); got != want {
			t.Errorf("%v: got %q, want %q", d, got, want)
		}
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
