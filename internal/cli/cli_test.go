package cli

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cra-dev/cra/internal/llm/llmtest"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
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

// TestScripts runs the end-to-end scenarios in testdata/script: each reads
// like a user's session with the real binary entry point.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
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

			// llmtest starts and scripts a fake model server speaking the
			// Ollama and OpenAI-compatible protocols (see llmtest.ScriptCmd).
			"llmtest": llmtest.ScriptCmd,
		},
	})
}
