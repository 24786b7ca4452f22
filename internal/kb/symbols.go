package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Symbol is one definition extracted from a file (seed 001 §4.5 symbols).
type Symbol struct {
	ID        int64  `json:"id"`
	FileID    int64  `json:"file_id"`
	Path      string `json:"path"` // the file's path
	Name      string `json:"name"`
	Kind      string `json:"kind"` // function, class, method, interface, type_alias, enum, variable
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Signature string `json:"signature,omitempty"`
	ParentID  int64  `json:"parent_id,omitempty"` // enclosing symbol; 0 at top level
	Parent    string `json:"parent,omitempty"`    // enclosing symbol's name
}

// QualifiedName is Parent.Name, or Name for a top-level symbol.
func (s Symbol) QualifiedName() string {
	if s.Parent == "" {
		return s.Name
	}
	return s.Parent + "." + s.Name
}

const symbolCols = `s.id, s.file_id, f.path, s.name, s.kind, s.start_line, s.end_line,
	COALESCE(s.signature, ''), COALESCE(s.parent_symbol_id, 0), COALESCE(p.name, '')`

const symbolFrom = ` FROM symbols s JOIN files f ON f.id = s.file_id
	LEFT JOIN symbols p ON p.id = s.parent_symbol_id `

func scanSymbol(s scanner) (Symbol, error) {
	var v Symbol
	err := s.Scan(&v.ID, &v.FileID, &v.Path, &v.Name, &v.Kind, &v.StartLine, &v.EndLine, &v.Signature, &v.ParentID, &v.Parent)
	return v, err
}

// SymbolsForFile lists a file's symbols in source order; a non-empty kind
// keeps only that kind.
func (k *KnowledgeBase) SymbolsForFile(ctx context.Context, fileID int64, kind string) ([]Symbol, error) {
	ss, err := queryAll(ctx, k.db, scanSymbol, `SELECT `+symbolCols+symbolFrom+`
		WHERE s.file_id = ? AND (? = '' OR s.kind = ?) ORDER BY s.start_line, s.id`, fileID, kind, kind)
	if err != nil {
		return nil, fmt.Errorf("query symbols: %w", err)
	}
	return ss, nil
}

// SearchSymbolsByName finds the symbols of a repository by name, ignoring
// ASCII case. A pattern with '*' is a glob over the whole name ('*' matches
// any run of characters: "Store*" is a prefix search, "*Store" a suffix
// search, "*" everything); results come by name, then path. Any other
// pattern matches as a substring, ranked exact matches first, then
// prefixes, then the rest, so a caller that wants only exact matches takes
// the leading ones whose name equals the pattern.
//
// A non-empty kind keeps only that symbol kind. limit caps the results;
// limit <= 0 means SymbolLimit.
func (k *KnowledgeBase) SearchSymbolsByName(ctx context.Context, repoID int64, pattern, kind string, limit int) ([]Symbol, error) {
	if pattern == "" {
		return nil, errors.New("search symbols: empty pattern: pass a name, a part of one, or a glob like 'Store*'")
	}
	if limit <= 0 {
		limit = k.SymbolLimit
	}
	var like, rank string
	var rankArgs []any
	if strings.Contains(pattern, "*") {
		like = strings.ReplaceAll(escapeLike(pattern), "*", "%")
	} else {
		like = "%" + escapeLike(pattern) + "%"
		rank = `CASE WHEN s.name = ? COLLATE NOCASE THEN 0 WHEN s.name LIKE ? ESCAPE '\' THEN 1 ELSE 2 END, `
		rankArgs = []any{pattern, escapeLike(pattern) + "%"}
	}
	args := append([]any{repoID, like, kind, kind}, rankArgs...)
	ss, err := queryAll(ctx, k.db, scanSymbol, `SELECT `+symbolCols+symbolFrom+`
		WHERE f.repo_id = ? AND s.name LIKE ? ESCAPE '\' AND (? = '' OR s.kind = ?)
		ORDER BY `+rank+`lower(s.name), s.name, f.path, s.start_line, s.id
		LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("search symbols: %w", err)
	}
	return ss, nil
}

// escapeLike escapes the LIKE metacharacters of s for ESCAPE '\'.
func escapeLike(s string) string { return likeEscaper.Replace(s) }

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// SymbolNeighbor is a symbol linked to another by a reference edge (seed
// 001 §4.5 symbol_references, resolved for Python only in the MVP).
type SymbolNeighbor struct {
	Symbol        Symbol  `json:"symbol"`    // the neighbour, with its file path
	Direction     string  `json:"direction"` // Callers: it references the queried symbol; Callees: the queried symbol references it
	ReferenceKind string  `json:"reference_kind"`
	Confidence    float64 `json:"confidence"`
}

// SymbolNeighbors returns the symbols that reference symbolID (Callers),
// that it references (Callees), or both (callers first), strongest
// confidence first.
// Non-empty kinds keeps only those reference kinds.
func (k *KnowledgeBase) SymbolNeighbors(ctx context.Context, symbolID int64, direction string, kinds []string) ([]SymbolNeighbor, error) {
	if err := checkDirection(direction, Callers, Callees, Both); err != nil {
		return nil, err
	}
	out := []SymbolNeighbor{}
	for _, dir := range []string{Callers, Callees} {
		if direction != Both && direction != dir {
			continue
		}
		// For callers the neighbour is the caller of an edge whose callee
		// is the symbol, and the other way round.
		near, far := "r.caller_symbol_id", "r.callee_symbol_id"
		if dir == Callees {
			near, far = far, near
		}
		q := `SELECT ` + symbolCols + `, r.reference_kind, r.confidence
			FROM symbol_references r JOIN symbols s ON s.id = ` + near + `
			JOIN files f ON f.id = s.file_id LEFT JOIN symbols p ON p.id = s.parent_symbol_id
			WHERE ` + far + ` = ?`
		args := []any{symbolID}
		if len(kinds) > 0 {
			ph, kargs := placeholders(kinds)
			q += ` AND r.reference_kind IN (` + ph + `)`
			args = append(args, kargs...)
		}
		q += ` ORDER BY r.confidence DESC, f.path, s.start_line, s.id, r.reference_kind`
		ns, err := queryAll(ctx, k.db, func(sc scanner) (SymbolNeighbor, error) {
			n := SymbolNeighbor{Direction: dir}
			v := &n.Symbol
			err := sc.Scan(&v.ID, &v.FileID, &v.Path, &v.Name, &v.Kind, &v.StartLine, &v.EndLine, &v.Signature,
				&v.ParentID, &v.Parent, &n.ReferenceKind, &n.Confidence)
			return n, err
		}, q, args...)
		if err != nil {
			return nil, fmt.Errorf("query symbol %s: %w", dir, err)
		}
		out = append(out, ns...)
	}
	return out, nil
}

// Docstring is the documentation of a module or a symbol.
type Docstring struct {
	ID           int64  `json:"id"`
	FileID       int64  `json:"file_id"`
	SymbolID     int64  `json:"symbol_id,omitempty"` // 0 for the module docstring
	Symbol       string `json:"symbol,omitempty"`    // the symbol's qualified name
	Content      string `json:"content"`
	Format       string `json:"format,omitempty"`        // google, numpy, sphinx, jsdoc, godoc, plain
	ParsedFields string `json:"parsed_fields,omitempty"` // JSON, as the indexer extracted it
}

// DocstringsForFile lists a file's docstrings: the module's first, then the
// symbols' in source order.
func (k *KnowledgeBase) DocstringsForFile(ctx context.Context, fileID int64) ([]Docstring, error) {
	ds, err := queryAll(ctx, k.db, func(sc scanner) (Docstring, error) {
		var d Docstring
		err := sc.Scan(&d.ID, &d.FileID, &d.SymbolID, &d.Symbol, &d.Content, &d.Format, &d.ParsedFields)
		return d, err
	}, `SELECT d.id, d.file_id, COALESCE(d.symbol_id, 0), `+qualifiedName+`,
			d.content, COALESCE(d.format, ''), COALESCE(d.parsed_fields, '')
		FROM docstrings d LEFT JOIN symbols s ON s.id = d.symbol_id LEFT JOIN symbols p ON p.id = s.parent_symbol_id
		WHERE d.file_id = ? ORDER BY d.symbol_id IS NOT NULL, s.start_line, d.id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("query docstrings: %w", err)
	}
	return ds, nil
}

// DocstringsOf returns the docstrings of symbolIDs by symbol id; a symbol
// without one is absent. It serves a symbol search that shows each
// definition's documentation without reading every docstring of its file.
func (k *KnowledgeBase) DocstringsOf(ctx context.Context, symbolIDs []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(symbolIDs))
	if len(symbolIDs) == 0 {
		return out, nil
	}
	ph, args := placeholders(symbolIDs)
	ds, err := scanAll(ctx, k.db, func(r *sql.Rows, c *SymbolComment) error {
		return r.Scan(&c.SymbolID, &c.Content)
	}, `SELECT symbol_id, content FROM docstrings WHERE symbol_id IN (`+ph+`) ORDER BY symbol_id, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("query docstrings: %w", err)
	}
	for _, d := range ds {
		if _, ok := out[d.SymbolID]; !ok {
			out[d.SymbolID] = d.Content
		}
	}
	return out, nil
}

// qualifiedName is the SQL of Symbol.QualifiedName over s and its parent p,
// or ” without a symbol.
const qualifiedName = `CASE WHEN s.id IS NULL THEN '' WHEN p.id IS NULL THEN s.name ELSE p.name || '.' || s.name END`

// Comment is an inline comment.
type Comment struct {
	ID          int64  `json:"id"`
	FileID      int64  `json:"file_id"`
	SymbolID    int64  `json:"symbol_id,omitempty"` // innermost enclosing symbol; 0 at module level
	Symbol      string `json:"symbol,omitempty"`    // its qualified name
	Line        int    `json:"line"`
	Content     string `json:"content"`
	Kind        string `json:"kind,omitempty"` // todo, fixme, hack, note, bug_ref, rationale, general
	IsRationale bool   `json:"is_rationale"`
}

// RationaleComments lists the comments of a file that explain why (seed 001
// §4.5 is_rationale), in line order.
func (k *KnowledgeBase) RationaleComments(ctx context.Context, fileID int64) ([]Comment, error) {
	cs, err := queryAll(ctx, k.db, func(sc scanner) (Comment, error) {
		var c Comment
		err := sc.Scan(&c.ID, &c.FileID, &c.SymbolID, &c.Symbol, &c.Line, &c.Content, &c.Kind, &c.IsRationale)
		return c, err
	}, `SELECT c.id, c.file_id, COALESCE(c.symbol_id, 0), `+qualifiedName+`,
			c.line, c.content, COALESCE(c.kind, ''), c.is_rationale != 0
		FROM inline_comments c LEFT JOIN symbols s ON s.id = c.symbol_id LEFT JOIN symbols p ON p.id = s.parent_symbol_id
		WHERE c.file_id = ? AND c.is_rationale = 1 ORDER BY c.line, c.id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("query rationale comments: %w", err)
	}
	return cs, nil
}
