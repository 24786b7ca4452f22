package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cra-dev/cra/internal/corpus"
	"github.com/cra-dev/cra/internal/dataset"
	"github.com/cra-dev/cra/internal/llm/llmtest"
	"github.com/cra-dev/cra/internal/sandbox"
	"github.com/cra-dev/cra/internal/statedir"
	"github.com/cra-dev/cra/internal/store"
	"github.com/cra-dev/cra/internal/testpar"
)

func TestMain(m *testing.M) {
	// In-process commands confine what they run through this binary.
	sandbox.Main(os.Args)
	testscript.Main(parallelScripts{m}, map[string]func(){
		// As cmd/cra: SIGINT and SIGTERM end the context, so a script can
		// stop a daemon the way a person does.
		"cra": func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
	})
}

// scriptParallel is how many tests (scripts, mostly) run at once when
// -parallel is not given: a script spends most of its time waiting on
// the processes it starts (a daemon's tick, an agent's sleep, git), so
// GOMAXPROCS at a time, the default, left the cores idle for much of the
// package's run.
const scriptParallel = 6

// parallelScripts is the package's testing.M: it runs the tests with
// scriptParallel at once unless -parallel says otherwise. testscript.Main
// calls Run only when the binary runs as the tests, not as cra.
type parallelScripts struct{ m *testing.M }

func (p parallelScripts) Run() int {
	testpar.Default(scriptParallel)
	return p.m.Run()
}

// TestScripts runs the end-to-end scenarios in testdata/script: each reads
// like a user's session with the real binary entry point. It runs in
// parallel with TestPostgresScripts, so that the PostgreSQL scripts fill
// the slots the last long scripts leave idle instead of starting after
// them.
func TestScripts(t *testing.T) {
	t.Parallel()
	// Scripts that run go test share this machine's build cache (which
	// their [validation] caches declare): a cold one per script would
	// compile the standard library each time.
	goCache := os.Getenv("GOCACHE")
	if goCache == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			goCache = strings.TrimSpace(string(out))
		}
	}
	agentsBin, err := filepath.Abs(filepath.Join("..", "..", "tools", "agents", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Files:               longestFirst(t, "testdata/script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Real git repositories need an identity and no user config.
			env.Setenv("GIT_AUTHOR_NAME", "cra test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
			env.Setenv("GIT_COMMITTER_NAME", "cra test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
			env.Setenv("HOME", env.WorkDir)
			// Under -race every process sleeps a second at exit to let the
			// detector report; the scripts start hundreds of them.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			if goCache != "" {
				env.Setenv("GOCACHE", goCache)
			}
			// The agent CLIs .ci/run installs (npm install --prefix
			// tools/agents), for the scripts that run them.
			env.Setenv("AGENTS_BIN", agentsBin)
			reapAtEnd(env)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// bigfile PATH BYTES writes a text file of that size (files too
			// large to keep in a txtar).
			"bigfile": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: bigfile PATH BYTES")
				}
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				line := []byte("x = 1\n")
				data := bytes.Repeat(line, n/len(line)+1)[:n]
				ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
			},

			// envstdout NAME sets $NAME to the last command's standard
			// output, trimmed: the id 'cra task add' printed.
			"envstdout": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: envstdout NAME")
				}
				ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
			},

			// dataset STAGE FILE writes the records of FILE, JSON lines of
			// {"example": …, "meta": …}, with dataset.Write (half of them
			// valid) under .clean_room/training/datasets/test, records its
			// training_datasets row and prints the row's id.
			"dataset": writeDataset,

			// llmtest starts and scripts a fake model server speaking the
			// Ollama and OpenAI-compatible protocols (see llmtest.ScriptCmd).
			"llmtest": llmtest.ScriptCmd,

			// readme names a command the README shows, to run as written
			// (see readme_test.go).
			"readme": readmeCmd(string(readme)),
		},
	})
}

// longScripts are the scripts that take longest (about 75 to 165 s each
// under -race at load 3-12, most of it waiting on the processes they
// start), longest first.
var longScripts = []string{"recycle", "hostile_validation_go", "readme", "serve_crash", "bootstrap",
	"agent_presets", "recycle_once", "hostile_sandbox", "hostile_validation_py", "task_steer"}

// longestFirst lists dir's scripts with longScripts first and the rest
// in name order: started last, as their names placed them, the long
// ones ran alone after the others had finished, and the package's tail
// reached testscript's deadline (the default -timeout less its grace).
func longestFirst(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	rank := func(f string) int {
		if i := slices.Index(longScripts, strings.TrimSuffix(filepath.Base(f), ".txtar")); i >= 0 {
			return i
		}
		return len(longScripts)
	}
	slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	return files
}

// writeDataset is the testscript command "dataset" (see TestScripts).
func writeDataset(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: dataset STAGE FILE")
	}
	var recs []dataset.Record
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile(args[1])))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Example dataset.Example `json:"example"`
			Meta    dataset.Meta    `json:"meta"`
		}
		ts.Check(json.Unmarshal(sc.Bytes(), &line))
		recs = append(recs, dataset.Record{Example: line.Example, Meta: line.Meta})
	}
	stage := args[0]
	stateDir := statedir.Of(ts.MkAbs(".")).Path()
	sum, err := dataset.Write(filepath.Join(stateDir, "training", "datasets", "test"), stage, recs, 0.5)
	ts.Check(err)
	ctx := context.Background()
	db, err := store.NewFactory(statedir.At(stateDir)).Open(ctx, store.Raw, "", false)
	ts.Check(err)
	defer db.Close()
	c := corpus.New(db)
	plan, err := c.RecordPlan(ctx, corpus.Plan{TaskID: "testscript", TargetStage: stage, BaseModel: dataset.BaseModel(stage),
		Source: corpus.SourceSynthetic, DataCriteria: "{}", RawPlan: "written by the test"})
	ts.Check(err)
	id, err := c.RecordDataset(ctx, corpus.Dataset{PlanID: plan, Stage: stage, BaseModel: dataset.BaseModel(stage),
		Source: corpus.SourceSynthetic, Path: sum.Dir, Examples: sum.Examples(), Positive: sum.Positive, Negative: sum.Negative})
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), id)
}
