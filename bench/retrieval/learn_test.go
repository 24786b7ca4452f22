package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/gitx/gittest"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// linearHistory makes a repository of n commits, one a day from
// 2024-01-01, in one git fast-import, and returns their hashes, oldest
// first.
func linearHistory(t *testing.T, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	gittest.Run(t, dir, "init", "-q")
	var b strings.Builder
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		when := day.AddDate(0, 0, i).Unix()
		msg := fmt.Sprintf("change number %d of the history", i)
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\nauthor A <a@example.com> %d +0000\ncommitter A <a@example.com> %d +0000\ndata %d\n%s\n", i+1, when, when, len(msg), msg)
		if i > 0 {
			fmt.Fprintf(&b, "from :%d\n", i)
		}
		content := fmt.Sprintf("x = %d\n", i)
		fmt.Fprintf(&b, "M 100644 inline a.py\ndata %d\n%s\n", len(content), content)
	}
	cmd := exec.Command("git", "-C", dir, "fast-import", "--quiet")
	cmd.Env = gittest.Env()
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	hashes := strings.Fields(gittest.Run(t, dir, "rev-list", "--reverse", "main"))
	if len(hashes) != n {
		t.Fatalf("got %d commits, want %d", len(hashes), n)
	}
	return dir, hashes
}

// TestRepoWeightsNeverSeeTheBaseOrLater: the harness's repo weights for a
// task are learned from the commits before its base only, however many
// later commits the cache of examples holds (the newest task's history).
func TestRepoWeightsNeverSeeTheBaseOrLater(t *testing.T) {
	dir, hashes := linearHistory(t, 90)
	examples := exampleSet(hashes)
	l := &repoLearner{clone: dir, examples: examples, fits: map[string]fitResult{}}
	for _, base := range []int{59, 75, 89} {
		_, fit, err := l.weightsFor(context.Background(), hashes[base])
		if err != nil {
			t.Fatal(err)
		}
		if fit.Error != "" || fit.Train+fit.Valid != base {
			t.Fatalf("base %d: got %+v, want every one of the %d commits before it learned from or judged on", base, fit, base)
		}
		if fit.Newest != hashes[base-1] {
			t.Errorf("base %d: the newest commit learned from is %.8s, want the base's parent %.8s", base, fit.Newest, hashes[base-1])
		}
	}
	// Too little history before the base: no fit, the default weights.
	w, fit, err := l.weightsFor(context.Background(), hashes[20])
	if err != nil || fit.Use || fit.Error == "" || w != fixedWeights(weightsDefault, nil) {
		t.Errorf("base 20: got %+v, %v, want the default weights and why", fit, err)
	}
}

// exampleSet gives each commit a small ranking problem, dated as the
// commit is.
func exampleSet(hashes []string) []learn.Example {
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []learn.Example
	for i, h := range hashes {
		out = append(out, learn.Example{Repo: "o/r", Commit: h, Date: day.AddDate(0, 0, i), Gold: []string{"a.py"},
			Candidates: []learn.Row{
				{Path: "a.py", Gold: true, Code: true, Signals: map[string]float64{"search": 0.4, "symbol": 1}},
				{Path: "b.py", Code: true, Signals: map[string]float64{"search": 1}},
			}})
	}
	return out
}

func TestParseWeights(t *testing.T) {
	got, files, err := parseWeights("hand-set, learned,repo")
	if err != nil || strings.Join(got, ",") != "hand-set,learned,repo" || len(files) != 0 {
		t.Errorf("got %v, %v, %v", got, files, err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("mine.json", `{"search":1,"symbol":0.5,"prose":0.2,"test_demotion":0.4}`)
	got, files, err = parseWeights("hand-set,file:" + good)
	want := retrieve.Weights{Search: 1, Symbol: 0.5, Prose: 0.2, TestDemotion: 0.4}
	if err != nil || strings.Join(got, ",") != "hand-set,file:mine" || files["file:mine"] != want {
		t.Errorf("got %v, %v, %v; want the file's weights as file:mine", got, files, err)
	}
	if fixedWeights("file:mine", files) != want || fixedWeights("hand-set", files) != retrieve.HandSetWeights {
		t.Error("fixedWeights does not give each row its weights")
	}
	bad := []string{"hand-set,hand-set", "tuned", "", "file:", "file:" + filepath.Join(dir, "absent.json"),
		"file:" + write("typo.json", `{"serach":1}`), "file:" + write("negative.json", `{"search":-1}`),
		"file:" + write("demotion.json", `{"search":1,"test_demotion":1}`), "file:" + good + ",file:" + good}
	for _, b := range bad {
		if _, _, err := parseWeights(b); err == nil {
			t.Errorf("%q: got no error", b)
		}
	}
}
