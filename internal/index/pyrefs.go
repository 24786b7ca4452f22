package index

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
)

// Confidence of a resolved Python reference, by how it was resolved. The
// order matters more than the values: a name bound in the caller's own
// scope beats one reached through an import, which beats a guess by name.
const (
	confLocal      = 1.0  // defined in the caller's file at module level or nested in the caller
	confSelf       = 0.95 // self.m() / cls.m() to a method of the enclosing class
	confImported   = 0.9  // a module-level name of a file the caller's file imports
	confQualified  = 0.7  // mod.f() where f is module-level in an imported file
	confMember     = 0.5  // x.m() where m is a method of one of at most three classes in the caller's or imported files
	confUniqueName = 0.4  // the only definition of that name in the repository
	confFewNames   = 0.2  // one of two or three definitions of that name
	maxGuessDefs   = 3
)

type pySym struct {
	id, file, parent int64
	name, kind       string
}

type pyRef struct {
	file, caller     int64
	name, qual, kind string
}

// resolvePythonRefs rebuilds symbol_references for the Python files whose
// references may resolve differently after this run (see
// affectedPythonFiles). seed 001 §19: Python symbol-level edges are a Must.
func (w *writer) resolvePythonRefs(ctx context.Context, ch *changes) error {
	if !ch.first && len(ch.pyContent) == 0 && len(ch.removed) == 0 && len(ch.importers) == 0 {
		return nil
	}
	syms, err := w.pythonSymbols(ctx)
	if err != nil {
		return err
	}
	byName := map[string][]*pySym{}
	byID := make(map[int64]*pySym, len(syms))
	for _, s := range syms {
		byName[s.name] = append(byName[s.name], s)
		byID[s.id] = s
	}
	affected, err := w.affectedPythonFiles(ctx, ch, byName)
	if err != nil || len(affected) == 0 {
		return err
	}
	imports, err := w.importTargets(ctx)
	if err != nil {
		return err
	}
	ids := make([]int64, 0, len(affected))
	for id := range affected {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for chunk := range slices.Chunk(ids, 500) {
		args, marks := inArgs(chunk)
		if _, err := w.tx.ExecContext(ctx, `DELETE FROM symbol_references WHERE caller_symbol_id IN
			(SELECT id FROM symbols WHERE file_id IN (`+marks+`))`, args...); err != nil {
			return fmt.Errorf("reset symbol references: %w", err)
		}
		refs, err := w.pythonRefs(ctx, marks, args)
		if err != nil {
			return err
		}
		type key struct{ caller, callee int64 }
		best := map[key]struct {
			kind string
			conf float64
		}{}
		var order []key
		for _, r := range refs {
			for _, c := range resolveRef(r, byName, byID, imports[r.file]) {
				k := key{r.caller, c.id}
				prev, seen := best[k]
				if !seen {
					order = append(order, k)
				}
				if !seen || c.conf > prev.conf {
					best[k] = struct {
						kind string
						conf float64
					}{r.kind, c.conf}
				}
			}
		}
		ins := w.batch("symbol_references", "caller_symbol_id", "callee_symbol_id", "reference_kind", "confidence")
		for _, k := range order {
			b := best[k]
			if err := ins.add(ctx, k.caller, k.callee, b.kind, b.conf); err != nil {
				return fmt.Errorf("write symbol references: %w", err)
			}
		}
		if err := ins.flush(ctx); err != nil {
			return fmt.Errorf("write symbol references: %w", err)
		}
	}
	return nil
}

type candidateRef struct {
	id   int64
	conf float64
}

// resolveRef returns the definitions a reference may point at, with their
// confidence, trying the resolutions from the most to the least certain
// and stopping at the first that finds any.
func resolveRef(r pyRef, byName map[string][]*pySym, byID map[int64]*pySym, imported map[int64]bool) []candidateRef {
	defs := byName[r.name]
	if len(defs) == 0 {
		return nil
	}
	var out []candidateRef
	pick := func(conf float64, ok func(*pySym) bool) bool {
		for _, d := range defs {
			if d.id != r.caller && ok(d) {
				out = append(out, candidateRef{d.id, conf})
			}
		}
		return len(out) > 0
	}
	switch r.qual {
	case "self", "cls":
		if cls := enclosingClass(r.caller, byID); cls != 0 && pick(confSelf, func(d *pySym) bool { return d.parent == cls }) {
			return out
		}
	case "":
		if pick(confLocal, func(d *pySym) bool {
			return d.file == r.file && (d.parent == 0 || d.parent == r.caller)
		}) {
			return out
		}
		if pick(confImported, func(d *pySym) bool { return d.parent == 0 && imported[d.file] }) {
			return out
		}
	default:
		if pick(confQualified, func(d *pySym) bool { return d.parent == 0 && imported[d.file] }) {
			return out
		}
	}
	if r.qual != "" && pick(confMember, func(d *pySym) bool {
		p := byID[d.parent]
		return p != nil && p.kind != lang.KindFunction && p.kind != lang.KindMethod && (d.file == r.file || imported[d.file])
	}) {
		if len(out) <= maxGuessDefs {
			return out
		}
		out = out[:0] // x.save() with many save methods in reach: no evidence which
	}
	// A guess by name only, when the name is rare enough to mean something:
	// unique for any use, at most maxGuessDefs for calls and inheritance.
	n := len(defs)
	if strings.HasPrefix(r.name, "__") || n > maxGuessDefs || (n > 1 && r.kind == lang.RefName) {
		return nil
	}
	conf := confFewNames
	if n == 1 {
		conf = confUniqueName
	}
	pick(conf, func(*pySym) bool { return true })
	return out
}

func enclosingClass(id int64, byID map[int64]*pySym) int64 {
	for s := byID[id]; s != nil; s = byID[s.parent] {
		switch s.kind {
		case lang.KindClass, lang.KindEnum, lang.KindInterface:
			return s.id
		}
	}
	return 0
}

// affectedPythonFiles lists the Python files whose references must be
// resolved again. A reference resolves through its own file, the files its
// file imports, and — for a guess by name — the repository-wide count of
// definitions of that name. So after a change the affected files are: the
// changed files, the files that import a changed, new or deleted file, and
// the files that use a name whose definition count was or is low enough
// for a guess.
func (w *writer) affectedPythonFiles(ctx context.Context, ch *changes, byName map[string][]*pySym) (map[int64]bool, error) {
	out := map[int64]bool{}
	addRows := func(q string, args ...any) error {
		rows, err := w.tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("find affected files: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			out[id] = true
		}
		return rows.Err()
	}
	if ch.first {
		return out, addRows(`SELECT id FROM files WHERE repo_id = ? AND language = 'python'`, w.repoID)
	}
	for _, id := range ch.pyContent {
		out[id] = true
	}
	for chunk := range slices.Chunk(ch.content, 500) {
		args, marks := inArgs(chunk)
		if err := addRows(`SELECT DISTINCT d.source_file_id FROM dependencies d JOIN files f ON f.id = d.source_file_id
			WHERE f.language = 'python' AND d.target_file_id IN (`+marks+`)`, args...); err != nil {
			return nil, err
		}
	}
	for id := range ch.importers {
		out[id] = true // deleted rows of non-Python importers are harmless: they have no name_refs with symbols
	}
	var names []string
	for _, m := range []map[string]int{ch.removed, ch.added} {
		for n := range m {
			now := len(byName[n])
			before := now - ch.added[n] + ch.removed[n]
			if min(now, before) <= maxGuessDefs && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	for chunk := range slices.Chunk(names, 500) {
		args, marks := inArgs(chunk)
		if err := addRows(`SELECT DISTINCT r.file_id FROM name_refs r JOIN files f ON f.id = r.file_id
			WHERE f.language = 'python' AND r.symbol_id IS NOT NULL AND r.name IN (`+marks+`)`, args...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (w *writer) pythonSymbols(ctx context.Context) ([]*pySym, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT s.id, s.file_id, COALESCE(s.parent_symbol_id, 0), s.name, s.kind
		FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.repo_id = ? AND f.language = 'python' ORDER BY s.id`, w.repoID)
	if err != nil {
		return nil, fmt.Errorf("read symbols: %w", err)
	}
	defer rows.Close()
	var out []*pySym
	for rows.Next() {
		s := &pySym{}
		if err := rows.Scan(&s.id, &s.file, &s.parent, &s.name, &s.kind); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// importTargets maps each file to the set of files it imports.
func (w *writer) importTargets(ctx context.Context) (map[int64]map[int64]bool, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT d.source_file_id, d.target_file_id FROM dependencies d
		JOIN files f ON f.id = d.source_file_id WHERE f.repo_id = ? AND f.language = 'python'`, w.repoID)
	if err != nil {
		return nil, fmt.Errorf("read dependencies: %w", err)
	}
	defer rows.Close()
	out := map[int64]map[int64]bool{}
	for rows.Next() {
		var s, t int64
		if err := rows.Scan(&s, &t); err != nil {
			return nil, err
		}
		if out[s] == nil {
			out[s] = map[int64]bool{}
		}
		out[s][t] = true
	}
	return out, rows.Err()
}

func (w *writer) pythonRefs(ctx context.Context, marks string, args []any) ([]pyRef, error) {
	rows, err := w.tx.QueryContext(ctx, `SELECT file_id, symbol_id, name, qualifier, kind FROM name_refs
		WHERE symbol_id IS NOT NULL AND file_id IN (`+marks+`) ORDER BY file_id, line, symbol_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("read references: %w", err)
	}
	defer rows.Close()
	var out []pyRef
	for rows.Next() {
		var r pyRef
		if err := rows.Scan(&r.file, &r.caller, &r.name, &r.qual, &r.kind); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func inArgs[T any](vals []T) ([]any, string) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return args, strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")
}
