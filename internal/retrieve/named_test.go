package retrieve

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestNamedLines(t *testing.T) {
	lines := strings.SplitAfter(strings.Repeat("x = 1\n", 40), "\n")
	lines = lines[:40]
	lines[4] = "    if len(queue) > self.max_backlog:\n"
	lines[9] = "    self.max_backlog_seen = 0\n" // a longer identifier: not a use
	lines[19] = "    drain(queue, max_backlog)\n"
	for i := 20; i < 30; i++ {
		lines[i] = "    queue.step()\n" // queue: on a quarter of the lines
	}
	tests := []struct {
		name  string
		names []string
		want  []int
	}{
		{"uses as whole words", []string{"max_backlog"}, []int{5, 20}},
		{"a name on too many lines locates nothing", []string{"queue"}, nil},
		{"unused names", []string{"hangup"}, nil},
		{"the rarest first, in line order", []string{"queue", "drain", "max_backlog"}, []int{5, 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := namedLines(lines, tc.names); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAssembleNamedIdentifierUse(t *testing.T) {
	// A long method uses an option the task names, once, in its middle;
	// the option is read in many files, so its word is not the task's
	// most telling: the package shows the line that uses it.
	var b strings.Builder
	b.WriteString("class Scheduler:\n    def __init__(self, max_backlog):\n        self.max_backlog = max_backlog\n        self.backlog = []\n\n")
	b.WriteString("    def drain(self):\n")
	for i := 0; i < 300; i++ {
		if i == 150 {
			b.WriteString("        if len(self.backlog) > self.max_backlog:\n")
			continue
		}
		fmt.Fprintf(&b, "        self.backlog.step(%d)\n", i)
	}
	files := map[string]string{
		"scheduler.py": b.String(),
		"signals.py":   "def on_hangup(sched):\n    sched.reload()\n",
	}
	for _, n := range []string{"config", "cli", "server", "api", "web"} {
		files[n+".py"] = fmt.Sprintf("def %s_options(max_backlog=10):\n    return {\"max_backlog\": max_backlog}\n", n)
	}
	f := newFixture(t, files)
	pkg := f.assemble(t, "The scheduler ignores `max_backlog` after a hangup", Budget{ContextWindow: 1200, ReservedTokens: 100})
	const use = 157 // the line that reads self.max_backlog in drain
	for _, pf := range pkg.Files {
		for _, it := range pf.Items {
			if pf.Path == "scheduler.py" && it.StartLine <= use && use <= it.EndLine && strings.Contains(it.Text, "> self.max_backlog") {
				return
			}
		}
	}
	t.Errorf("got %s, want line %d of scheduler.py", pkg.Render(), use)
}

func TestAssembleTestBodiesDecay(t *testing.T) {
	// Every test of a test file holds the task's words. The package shows
	// its best few in full and the rest by their signatures, with the
	// source's definitions, rather than test after test.
	var b strings.Builder
	b.WriteString("from backoff import retry_limit\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "def test_retry_limit_%d():\n    policy = retry_limit(%d)\n    assert not policy.allows(%d)\n\n", i, i, i)
	}
	var src strings.Builder
	src.WriteString("def retry_limit(n):\n    return Policy(n)\n\n\n")
	src.WriteString("def attempts_left(policy, attempt):\n    # How many a retry may still use.\n    return max(0, policy.n - attempt)\n\n\n")
	for i := 0; i < 80; i++ {
		fmt.Fprintf(&src, "def unrelated_%d(x):\n    return x * %d + len(str(x))\n\n\n", i, i)
	}
	f := newFixture(t, map[string]string{"tests/test_backoff.py": b.String(), "backoff.py": src.String()})
	pkg := f.assemble(t, "retry_limit allows one retry too many", Budget{ContextWindow: 1100, ReservedTokens: 100})
	tests, helper := 0, false
	for _, pf := range pkg.Files {
		for _, it := range pf.Items {
			switch {
			case pf.Path == "tests/test_backoff.py" && it.Kind == "symbol":
				tests++
			case pf.Path == "backoff.py" && it.Kind == "symbol" && it.Name == "attempts_left":
				helper = true
			}
		}
	}
	if !helper || tests > 8 {
		t.Errorf("got %d test bodies, attempts_left %v; want at most 8 and attempts_left:\n%s", tests, helper, pkg.Render())
	}
}

func TestAssembleTypeMembersDocs(t *testing.T) {
	// An options interface documents each member in the words of the
	// tasks about it; those doc blocks do not make its whole body a
	// primary one, as a definition's own doc block does not.
	var b strings.Builder
	b.WriteString("export interface Options {\n")
	for i := range 40 {
		m := fmt.Sprintf("option%d", i)
		fmt.Fprintf(&b, "\t/**\n\tThe %s option. A Retry-After header given as an HTTP date is read\n\tas the date to retry after; see the retry docs.\n\t*/\n\t%s?: unknown;\n\n", m, m)
	}
	b.WriteString("}\n")
	retry := "export function retryDelay(header: string): number {\n\tconst date = Date.parse(header);\n\treturn Number.isNaN(date) ? Number(header) * 1000 : date - Date.now();\n}\n"
	f := newFixture(t, map[string]string{"source/types/options.ts": b.String(), "source/core/retry.ts": retry, "source/index.ts": "export * from './core/retry';\n"})
	pkg := f.assemble(t, "Retry-After given as an HTTP date is ignored", Budget{ContextWindow: 3000, ReservedTokens: 500})
	for _, pf := range pkg.Files {
		for _, it := range pf.Items {
			if pf.Path == "source/types/options.ts" && it.Kind == "symbol" && it.Name == "Options" && it.Detail == DetailPrimary {
				t.Errorf("got Options as a primary body, want it judged without its members' doc blocks:\n%s", pkg.Render())
			}
		}
	}
}
