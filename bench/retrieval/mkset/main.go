// Command mkset writes a commit set in the shape of ../shared/eval's
// commits_*.jsonl from a repository's own history, so retrieval can be
// measured on any repository, and on more tasks than the shared sets hold:
//
//	go run ./bench/retrieval/mkset -repo /path/to/clone -name owner/name -n 100 > set.jsonl
//
// A commit qualifies when it has one parent, a message of a few words, and
// changes between one and -max-files files in a language cra parses (the
// gold files), with at most -max-lines changed lines in all. Commits
// listed in -exclude sets (by hash) are left out, so a generated set can
// be kept apart from the one it is checked against. The newest commits
// come first; -skip passes over the newest ones.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
)

// choreRe matches the subjects of automated and release commits: version
// bumps, releases, pre-commit updates. Nobody types them as a task.
var choreRe = regexp.MustCompile(`(?i)^(\[pre-commit\.ci\]|pre-commit autoupdate|bump |release |prepare release|update changelog|merge )|^v?\d+\.\d+(\.\d+)?$`)

type task struct {
	Repo         string   `json:"repo"`
	Commit       string   `json:"commit"`
	Parent       string   `json:"parent"`
	Message      string   `json:"message"`
	Subject      string   `json:"subject"`
	ChangedFiles []string `json:"changed_files"`
	GoldFiles    []string `json:"gold_files"`
	GoldExisting []string `json:"gold_existing_at_parent"`
	LinesChanged int      `json:"lines_changed"`
}

func main() {
	repo := flag.String("repo", "", "a local clone")
	name := flag.String("name", "", "the repository's owner/name, as -repo owner/name=PATH of the harness expects")
	n := flag.Int("n", 100, "tasks to write")
	skip := flag.Int("skip", 0, "qualifying commits to pass over first (the newest)")
	maxFiles := flag.Int("max-files", 4, "most gold files per task")
	maxLines := flag.Int("max-lines", 400, "most changed lines per task")
	var excludes multi
	flag.Var(&excludes, "exclude", "a JSONL set whose commits to leave out (repeatable)")
	flag.Parse()
	if *repo == "" || *name == "" {
		fmt.Fprintln(os.Stderr, "mkset: -repo and -name are required")
		os.Exit(2)
	}
	if err := run(os.Stdout, *repo, *name, *n, *skip, *maxFiles, *maxLines, excludes); err != nil {
		fmt.Fprintln(os.Stderr, "mkset:", err)
		os.Exit(1)
	}
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func run(w io.Writer, repo, name string, n, skip, maxFiles, maxLines int, excludes []string) error {
	excluded := map[string]bool{}
	for _, e := range excludes {
		data, err := os.ReadFile(e)
		if err != nil {
			return err
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			var t struct {
				Commit string `json:"commit"`
			}
			if json.Unmarshal(l, &t) == nil && t.Commit != "" {
				excluded[t.Commit] = true
			}
		}
	}
	// One pass over the history: hash, parents, then numstat lines.
	cmd := exec.Command("git", "-C", repo, "log", "--no-merges", "--no-renames", "--numstat", "--format=%x00%H %P")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	written, passed := 0, 0
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur []string
	flush := func() error {
		if len(cur) == 0 || written >= n {
			return nil
		}
		t, ok, err := qualify(repo, name, cur, maxFiles, maxLines)
		if err != nil || !ok || excluded[t.Commit] {
			return err
		}
		if passed < skip {
			passed++
			return nil
		}
		written++
		return enc.Encode(t)
	}
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "\x00") {
			if err := flush(); err != nil {
				return err
			}
			if written >= n {
				break // the rest of the history is not needed
			}
			cur = []string{strings.TrimPrefix(l, "\x00")}
			continue
		}
		if l != "" && cur != nil {
			cur = append(cur, l)
		}
	}
	if written < n {
		if err := flush(); err != nil {
			return err
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if written < n {
		fmt.Fprintf(os.Stderr, "mkset: only %d qualifying commits\n", written)
	}
	return sc.Err()
}

// qualify reads one commit's log record: "hash parent", then numstat lines.
func qualify(repo, name string, rec []string, maxFiles, maxLines int) (task, bool, error) {
	head := strings.Fields(rec[0])
	if len(head) != 2 { // a root commit, or a merge despite --no-merges
		return task{}, false, nil
	}
	t := task{Repo: name, Commit: head[0], Parent: head[1]}
	for _, l := range rec[1:] {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		add, err1 := strconv.Atoi(f[0])
		del, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			return task{}, false, nil // binary
		}
		t.LinesChanged += add + del
		t.ChangedFiles = append(t.ChangedFiles, f[2])
		if l, ok := lang.Detect(f[2]); ok && lang.Parsed(string(l)) && !strings.Contains(path.Base(f[2]), ".min.") {
			t.GoldFiles = append(t.GoldFiles, f[2])
		}
	}
	if len(t.GoldFiles) == 0 || len(t.GoldFiles) > maxFiles || t.LinesChanged > maxLines {
		return task{}, false, nil
	}
	msg, err := git(repo, "log", "-1", "--format=%B", t.Commit)
	if err != nil {
		return task{}, false, err
	}
	t.Message = strings.TrimSpace(msg)
	t.Subject, _, _ = strings.Cut(t.Message, "\n")
	if len(strings.Fields(t.Subject)) < 4 || choreRe.MatchString(t.Subject) {
		// "fix", "wip", "typo", a bot's version bump: no task to retrieve for
		return task{}, false, nil
	}
	for _, g := range t.GoldFiles {
		if _, err := git(repo, "cat-file", "-e", t.Parent+":"+g); err == nil {
			t.GoldExisting = append(t.GoldExisting, g)
		}
	}
	if len(t.GoldExisting) == 0 {
		return task{}, false, nil // only new files: nothing to find
	}
	return t, true, nil
}

func git(repo string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return "", err
	}
	return string(out), nil
}
