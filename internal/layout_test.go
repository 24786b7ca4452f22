// Package internal_test keeps the package map of DESIGN.md true: data flows
// one way (cli and server on top), each database's SQL has one owner, and
// the command line stays thin.
package internal_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cra-dev/cra/internal/"

// source is one non-test Go file under internal/.
type source struct {
	pkg     string // the package's path under internal/, e.g. "cli" or "llm/llmtest"
	path    string
	text    string
	imports []string
}

func sources(t *testing.T) []source {
	t.Helper()
	var out []source
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, body, parser.ImportsOnly)
		if err != nil {
			return err
		}
		s := source{pkg: filepath.ToSlash(filepath.Dir(path)), path: path, text: string(body)}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			s.imports = append(s.imports, p)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found %d source files under internal/: is the test running in its directory?", len(out))
	}
	return out
}

func top(pkg string) string { return strings.Split(pkg, "/")[0] }

// TestDataFlowsOneWay: no package imports the command line or the HTTP
// server; they sit on top (DESIGN.md, "Packages").
func TestDataFlowsOneWay(t *testing.T) {
	for _, s := range sources(t) {
		for _, imp := range s.imports {
			for _, upper := range []string{"cli", "server"} {
				if imp == module+upper && top(s.pkg) != "cli" && top(s.pkg) != "server" {
					t.Errorf("%s imports internal/%s: only cli and server may sit on top", s.path, upper)
				}
			}
		}
	}
}

// TestCommandLineHoldsNoSQL: internal/cli parses flags, calls the domain
// packages and renders; it opens no database and runs no SQL, and neither
// does internal/retrieve, which reads the index through kb and records
// through corpus.
func TestCommandLineHoldsNoSQL(t *testing.T) {
	sqlCall := regexp.MustCompile(`\b(QueryContext|ExecContext|QueryRowContext|PrepareContext)\(|\.(Query|Exec)\(`)
	for _, s := range sources(t) {
		pkg := top(s.pkg)
		if pkg != "cli" && pkg != "retrieve" {
			continue
		}
		for _, imp := range s.imports {
			if imp == "database/sql" || (pkg == "cli" && imp == module+"store") {
				t.Errorf("%s imports %s", s.path, imp)
			}
		}
		for i, line := range strings.Split(s.text, "\n") {
			if sqlCall.MatchString(line) {
				t.Errorf("%s:%d runs SQL: %s", s.path, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestCommandFilesStaySmall: one file per command keeps each under 500
// lines; a longer one holds logic that belongs in a domain package.
func TestCommandFilesStaySmall(t *testing.T) {
	for _, s := range sources(t) {
		if top(s.pkg) != "cli" {
			continue
		}
		if n := strings.Count(s.text, "\n"); n > 500 {
			t.Errorf("%s has %d lines, want at most 500: move its logic to a domain package", s.path, n)
		}
	}
}

// stateNames are the entries of the state directory (statedir's
// constants). Outside internal/statedir no code joins one into a path or
// keeps one as a constant of its own: every path under .clean_room/ comes
// from statedir.Dir (DESIGN.md, "Where state lives"; STYLE.md, "Owners").
var stateNames = map[string]bool{
	".clean_room": true, "config.toml": true, "curated.sqlite": true, "raw.sqlite": true, "sessions": true,
	"world.log": true, "world.log.lock": true, "world.log.idx": true, "world.log.compacted": true,
	"world.log.compacting": true, "world.log.archive": true, "markers": true,
	"tasks": true, "worktrees": true, "runs": true, "run.json": true, "starting.json": true, "reviews.jsonl": true,
	"plans": true, "training": true, "datasets": true, "bootstrap": true,
	"notify-pending.jsonl": true, "notify.lock": true, "supervisors.jsonl": true, "supervisors.lock": true,
	"serve.json": true, "serve.lock": true, "serve.token": true,
	"index.lock": true, "cleanup.lock": true, "adapters.lock": true, "curate.lock": true,
	"knowledge-sync.lock": true, "knowledge-conflicts": true, "fleet-raw-": true, "in-use.lock": true,
}

// stateFilePrefixes begin the names of files the state directory holds
// one of per task or run; joined by hand they mean a path built outside
// statedir.
var stateFilePrefixes = []string{"run-%", "prompt-%", "task-%", "session_", "plan-%", "dataset-%", ".index."}

func stateLiteral(lit *ast.BasicLit) bool {
	if lit.Kind != token.STRING {
		return false
	}
	v, err := strconv.Unquote(lit.Value)
	if err != nil {
		return false
	}
	if stateNames[v] || stateNames[strings.TrimSuffix(v, "/")] {
		return true
	}
	for _, p := range stateFilePrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// TestStatePathsFromOneLayout fails on a filepath.Join outside
// internal/statedir that takes a state directory's entry by name: a
// literal ("runs", "world.log", "run-%d.log"), a statedir constant, or a
// package's own constant that stands for one (board.RunsDir). It fails too
// on a constant outside statedir that spells an entry's name itself.
func TestStatePathsFromOneLayout(t *testing.T) {
	type file struct {
		s    source
		f    *ast.File
		base string // the package's last path element, as importers name it
	}
	var files []file
	aliases := map[string]bool{} // "board.RunsDir": a constant standing for a state entry
	for _, s := range sources(t) {
		if top(s.pkg) == "statedir" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), s.path, s.text, 0)
		if err != nil {
			t.Fatal(err)
		}
		fl := file{s: s, f: f, base: filepath.Base(s.pkg)}
		files = append(files, fl)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if i >= len(vs.Names) {
						break
					}
					switch v := v.(type) {
					case *ast.BasicLit:
						if stateLiteral(v) {
							aliases[fl.base+"."+vs.Names[i].Name] = true
							t.Errorf("%s: %s spells the state entry %s: use statedir's constant or a statedir.Dir method",
								s.path, vs.Names[i].Name, v.Value)
						}
					case *ast.SelectorExpr:
						if x, ok := v.X.(*ast.Ident); ok && x.Name == "statedir" {
							aliases[fl.base+"."+vs.Names[i].Name] = true
						}
					}
				}
			}
		}
	}
	sites := 0
	for _, fl := range files {
		imports := map[string]string{} // local name → package base
		for _, imp := range fl.f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := filepath.Base(p)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = filepath.Base(p)
		}
		fset := token.NewFileSet()
		f, _ := parser.ParseFile(fset, fl.s.path, fl.s.text, 0)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isCall(call, "filepath", "Join") {
				return true
			}
			var bad []string
			for _, arg := range call.Args {
				ast.Inspect(arg, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.BasicLit:
						if stateLiteral(n) {
							bad = append(bad, n.Value)
						}
					case *ast.SelectorExpr:
						if x, ok := n.X.(*ast.Ident); ok {
							if x.Name == "statedir" || aliases[imports[x.Name]+"."+n.Sel.Name] {
								bad = append(bad, x.Name+"."+n.Sel.Name)
							}
						}
						return false
					case *ast.Ident:
						if aliases[fl.base+"."+n.Name] {
							bad = append(bad, n.Name)
						}
					}
					return true
				})
			}
			if len(bad) > 0 {
				sites++
				t.Errorf("%s:%d joins the state entry %s by hand: ask statedir.Dir for the path",
					fl.s.path, fset.Position(call.Pos()).Line, strings.Join(bad, ", "))
			}
			return true
		})
	}
	if sites > 0 {
		t.Logf("%d hand-joined state paths", sites)
	}
}

// isCall reports whether call is pkg.name(…).
func isCall(call *ast.CallExpr, pkg, name string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}

// leafPackages import no internal package; every other package may import
// any of them.
var leafPackages = []string{"atomicfile", "flock", "glob", "jsonl", "lazyre", "procgroup", "sandbox", "shell", "stage", "statedir", "terms", "tokens"}

// allowedImports is the package map of DESIGN.md as a rule: for each
// package under internal/, the internal packages it may import besides
// the leaves. Data flows down the floors, front ends first; a package
// imports from its own floor only where it is listed. A new package gets
// a line on its floor; a new import that is not listed means the map or
// the import is wrong.
var allowedImports = map[string][]string{
	// Front ends.
	"cli":    {"*"},                                    // the top: flags, rendering, exit codes
	"server": {"fleetapi", "board", "config", "world"}, // over the fleet as an interface (server.Fleet)
	// mcp: cra's MCP server, a front end beside server over the fleet
	// and the execution half.
	"mcp": {"fleetapi", "fleet/runner", "board", "knowledge",
		"run", "workspace", "agent", "retrieve", "edit", "enrich", "preflight", "validation",
		"index", "lang", "kb", "corpus", "store", "world", "llm", "config", "gitx"},

	// Supervision: fleet owns one repository's board and its workers.
	"fleetapi": {"board", "verdict", "world", "agentcli"}, // the fleet's operations and the records they exchange
	"fleet": {"fleetapi", "fleet/runner", "board", "review", "verdict", "evidence", "supervise", "knowledge", "knowledge/supervisor", "cleanup", "notify",
		"workspace", "validation", "pgstore", "pgboard",
		"kb", "corpus", "store", "world", "llm", "config", "gitx"},
	"fleet/runner":         {"board", "supervise", "knowledge", "agentcli", "world", "config", "gitx"}, // runs agent profiles
	"knowledge/supervisor": {"board", "verdict", "knowledge", "world", "llm", "config"},
	"cleanup":              {"board", "verdict", "world", "llm"},
	"review":               {"board", "verdict", "evidence", "supervise", "notify", "validation", "world", "llm", "config", "gitx"},
	"verdict":              {"notify"}, // the recycler's reviews and reports as records others read
	"board":                {"world"},  // tasks and their lifecycle; the runner runs them
	"evidence":             {"validation", "outcome", "gitx"},
	"supervise":            {"world"},
	"notify":               {},
	"knowledge":            {}, // the store in docs/knowledge/; run injects it, so it imports leaves only

	// Training: beside supervision, over the execution half.
	"adapter":   {"workspace", "agent", "retrieve", "edit", "preflight", "dataset", "index", "kb", "corpus", "llm", "gitx"},
	"bootstrap": {"replay", "agent", "retrieve", "edit", "knowledge", "dataset", "index", "lang", "kb", "corpus", "store", "gitx"},
	"train":     {"dataset", "corpus", "llm", "config"},
	"replay":    {"retrieve", "index", "kb", "store", "gitx"},                // history replayed at each commit's parent
	"learn":     {"replay", "retrieve", "evidence", "lang", "store", "gitx"}, // ranking weights from replayed commits
	"dataset":   {},

	// Execution: workspace and run own it.
	"enrich":     {"workspace", "index", "kb", "corpus", "llm"},
	"run":        {"workspace", "agent", "retrieve", "validation", "knowledge", "kb", "store", "world", "llm", "config", "gitx"},
	"workspace":  {"preflight", "kb", "corpus", "store", "pgstore", "world", "llm", "config", "gitx"},
	"preflight":  {"agentcli", "kb", "corpus", "store", "llm", "config", "gitx"},
	"agent":      {"retrieve", "edit", "validation", "corpus", "store", "llm", "config", "gitx"},
	"retrieve":   {"index", "lang", "kb", "corpus", "store", "llm"},
	"edit":       {},
	"validation": {"config"},
	"outcome":    {},         // test runners' reports read and compared
	"agentcli":   {"config"}, // the agent CLIs' presets: their commands and readers of their output

	// Data.
	"index":  {"lang", "corpus", "store", "config", "gitx"},
	"llm":    {"corpus", "config"},
	"kb":     {"store"},
	"corpus": {"store"},
	"store":  {},
	"world":  {},
	// pgstore: shared state in PostgreSQL for a fleet (DESIGN.md "Scale"):
	// today the world log, as world.Store.
	"pgstore": {"world"},
	// pgboard: the board's tasks in pgstore's database (board.Store), beside
	// pgstore so that the world log's readers do not take the board along.
	"pgboard": {"board", "pgstore", "world"},
	"lang":    {},
	"config":  {},
	"gitx":    {},

	// Test helpers.
	"parsetest":       {},
	"llm/llmtest":     {},
	"kb/kbtest":       {"kb", "store"},
	"gitx/gittest":    {"gitx"},
	"store/storetest": {"store"},
	"pgtest":          {},
	"testpar":         {},                 // how many parallel tests a package runs by default
	"board/boardtest": {"board", "world"}, // the suite every board.Store passes // a real PostgreSQL cluster per test package (initdb, a Unix socket)
}

// internalImports returns each internal package's imports of other
// internal packages, from its non-test files.
func internalImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	graph := map[string]map[string]bool{}
	for _, s := range sources(t) {
		if graph[s.pkg] == nil {
			graph[s.pkg] = map[string]bool{}
		}
		for _, imp := range s.imports {
			if p, ok := strings.CutPrefix(imp, module); ok {
				graph[s.pkg][p] = true
			}
		}
	}
	return graph
}

// TestImportsFollowTheMap: every package imports only what its line of
// allowedImports (and the leaves) allow.
func TestImportsFollowTheMap(t *testing.T) {
	leaves := map[string]bool{}
	for _, l := range leafPackages {
		leaves[l] = true
	}
	for pkg, imps := range internalImports(t) {
		allowed, listed := allowedImports[pkg]
		if !listed && !leaves[pkg] {
			t.Errorf("internal/%s is not in allowedImports: give it a line on its floor (DESIGN.md, \"Packages\")", pkg)
			continue
		}
		ok := map[string]bool{}
		for _, a := range allowed {
			ok[a] = true
		}
		for imp := range imps {
			switch {
			case leaves[pkg]:
				t.Errorf("internal/%s is a leaf but imports internal/%s", pkg, imp)
			case ok["*"], ok[imp], leaves[imp]:
			default:
				t.Errorf("internal/%s imports internal/%s, which allowedImports does not allow: import the other way, move the name down, or change the map on purpose", pkg, imp)
			}
		}
	}
}

// maxImportChain bounds the longest chain of imports, counted in
// packages from cmd/cra to a leaf (cmd/cra → cli → … → config): issue 27's
// at most 7. Each link makes a change below reach further up.
const maxImportChain = 7

// commandImports returns the graph of internalImports with cmd/cra on top,
// read from its non-test files.
func commandImports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	graph := internalImports(t)
	files, err := filepath.Glob(filepath.Join("..", "cmd", "cra", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in cmd/cra (%v): is the test running in internal/?", err)
	}
	graph["cmd/cra"] = map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p, ok := strings.CutPrefix(p, module); ok {
				graph["cmd/cra"][p] = true
			}
		}
	}
	return graph
}

// longestChain returns the longest import chain from pkg down, in
// packages; between chains of one length, the alphabetically first.
func longestChain(t *testing.T, graph map[string]map[string]bool, pkg string) []string {
	t.Helper()
	longest := map[string][]string{}
	var chain func(pkg string, seen map[string]bool) []string
	chain = func(pkg string, seen map[string]bool) []string {
		if c, ok := longest[pkg]; ok {
			return c
		}
		if seen[pkg] {
			t.Fatalf("import cycle through internal/%s", pkg)
		}
		seen[pkg] = true
		best := []string{pkg}
		for imp := range graph[pkg] {
			if c := chain(imp, seen); len(c)+1 > len(best) || len(c)+1 == len(best) && imp < best[1] {
				best = append([]string{pkg}, c...)
			}
		}
		delete(seen, pkg)
		longest[pkg] = best
		return best
	}
	return chain(pkg, map[string]bool{})
}

// TestImportChainIsShort: a deep chain means packages borrow names across
// floors; each link makes a change below reach further up. Every package
// is reached from cmd/cra, so its chain is the longest.
func TestImportChainIsShort(t *testing.T) {
	graph := commandImports(t)
	worst := longestChain(t, graph, "cmd/cra")
	for pkg := range graph {
		if c := longestChain(t, graph, pkg); len(c) > len(worst) {
			worst = c
		}
	}
	t.Logf("longest import chain, %d packages: %s", len(worst), strings.Join(worst, " → "))
	if len(worst) > maxImportChain {
		t.Errorf("the longest import chain has %d packages, want at most %d: %s", len(worst), maxImportChain, strings.Join(worst, " → "))
	}
}

// serverKeepsOff are the packages that carry the fleet's operations out:
// the server reaches them only through its Fleet interface, so neither it
// nor anything it imports may import them (issue 27).
var serverKeepsOff = []string{"review", "evidence", "supervise", "cleanup", "fleet", "fleet/runner"}

// TestServerStaysOverTheFleet: what 'go list -deps ./internal/server'
// lists holds none of serverKeepsOff, and the board none of the process
// runner's packages.
func TestServerStaysOverTheFleet(t *testing.T) {
	graph := internalImports(t)
	deps := func(pkg string) map[string]bool {
		seen := map[string]bool{}
		var walk func(p string)
		walk = func(p string) {
			for imp := range graph[p] {
				if !seen[imp] {
					seen[imp] = true
					walk(imp)
				}
			}
		}
		walk(pkg)
		return seen
	}
	for _, c := range []struct {
		pkg string
		off []string
	}{
		{"server", serverKeepsOff},
		{"board", []string{"gitx", "procgroup", "supervise"}},
	} {
		d := deps(c.pkg)
		if len(d) == 0 {
			t.Fatalf("internal/%s imports nothing: is the graph read?", c.pkg)
		}
		for _, p := range c.off {
			if d[p] {
				t.Errorf("internal/%s depends on internal/%s: %s", c.pkg, p, strings.Join(pathTo(graph, c.pkg, p), " → "))
			}
		}
	}
}

// pathTo returns a chain of imports from one package to another, or nil.
func pathTo(graph map[string]map[string]bool, from, to string) []string {
	if from == to {
		return []string{to}
	}
	names := make([]string, 0, len(graph[from]))
	for imp := range graph[from] {
		names = append(names, imp)
	}
	slices.Sort(names)
	for _, imp := range names {
		if rest := pathTo(graph, imp, to); rest != nil {
			return append([]string{from}, rest...)
		}
	}
	return nil
}

// maxCommandLineImports bounds the internal packages internal/cli
// imports: the command line calls the owners of the two halves (fleet,
// workspace/run) and of the training data (train) rather than wiring
// their parts, and names what it hands over as theirs (issue 27: at most
// 15).
const maxCommandLineImports = 15

func TestCommandLineImportsFew(t *testing.T) {
	imps := internalImports(t)["cli"]
	t.Logf("internal/cli imports %d internal packages", len(imps))
	if len(imps) > maxCommandLineImports {
		names := make([]string, 0, len(imps))
		for p := range imps {
			names = append(names, p)
		}
		slices.Sort(names)
		t.Errorf("internal/cli imports %d internal packages, want at most %d: %s", len(imps), maxCommandLineImports, strings.Join(names, " "))
	}
}
