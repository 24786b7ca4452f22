package kb

import (
	"cmp"
	"context"
	"fmt"
	"slices"
)

// Dependency is a file-level dependency edge: the source file imports (or
// refers to a type of) the target file.
type Dependency struct {
	SourceID   int64  `json:"source_id"`
	SourcePath string `json:"source_path"`
	TargetID   int64  `json:"target_id"`
	TargetPath string `json:"target_path"`
	Kind       string `json:"kind"` // import or type_ref
}

const dependencySelect = `SELECT DISTINCT d.source_file_id, sf.path, d.target_file_id, tf.path, d.kind
	FROM dependencies d JOIN files sf ON sf.id = d.source_file_id JOIN files tf ON tf.id = d.target_file_id `

func scanDependency(s scanner) (Dependency, error) {
	var d Dependency
	err := s.Scan(&d.SourceID, &d.SourcePath, &d.TargetID, &d.TargetPath, &d.Kind)
	return d, err
}

// Dependencies lists the edges of a file: those it is the source of
// (Imports, ordered by target path), those it is the target of (ImportedBy,
// ordered by source path), or both, imports first.
func (k *KnowledgeBase) Dependencies(ctx context.Context, fileID int64, direction string) ([]Dependency, error) {
	if err := checkDirection(direction, Imports, ImportedBy, Both); err != nil {
		return nil, err
	}
	out := []Dependency{}
	if direction != ImportedBy {
		ds, err := queryAll(ctx, k.db, scanDependency, dependencySelect+
			`WHERE d.source_file_id = ? ORDER BY tf.path, d.kind`, fileID)
		if err != nil {
			return nil, fmt.Errorf("query imports: %w", err)
		}
		out = append(out, ds...)
	}
	if direction != Imports {
		ds, err := queryAll(ctx, k.db, scanDependency, dependencySelect+
			`WHERE d.target_file_id = ? ORDER BY sf.path, d.kind`, fileID)
		if err != nil {
			return nil, fmt.Errorf("query importers: %w", err)
		}
		out = append(out, ds...)
	}
	return out, nil
}

// DependencyGraph is a part of the dependency graph around some seed files.
type DependencyGraph struct {
	// Nodes are the files reached, seeds first, by distance then path.
	Nodes []GraphNode `json:"nodes"`
	// Edges are every dependency edge between two nodes, by source then
	// target path.
	Edges []Dependency `json:"edges"`
	// Truncated reports that NodeLimit stopped the walk before it reached
	// every file within the depth.
	Truncated bool `json:"truncated"`
}

// GraphNode is a file of a DependencyGraph.
type GraphNode struct {
	FileID   int64  `json:"file_id"`
	Path     string `json:"path"`
	Language string `json:"language"`
	Distance int    `json:"distance"` // edges from the nearest seed; 0 for a seed
}

// DependencySubgraph returns the files within depth dependency edges of the
// seeds, following edges both ways (seed 001 §12), and the edges between
// them. See DependencyWalk.
func (k *KnowledgeBase) DependencySubgraph(ctx context.Context, fileIDs []int64, depth int) (*DependencyGraph, error) {
	return k.DependencyWalk(ctx, fileIDs, Both, depth)
}

// DependencyWalk walks the dependency graph breadth-first from the seed
// files for at most depth edges, following edges from importer to imported
// (Imports), the other way (ImportedBy) or both, and returns the files
// reached with their distance and every edge between them. Depth 0 returns
// the seeds alone. The walk adds at most NodeLimit files to the seeds,
// expanding the files of each distance in path order, and sets Truncated when
// it had to stop. A seed that is not in the index is ErrNotFound.
func (k *KnowledgeBase) DependencyWalk(ctx context.Context, fileIDs []int64, direction string, depth int) (*DependencyGraph, error) {
	if err := checkDirection(direction, Imports, ImportedBy, Both); err != nil {
		return nil, err
	}
	if depth < 0 {
		return nil, fmt.Errorf("dependency walk: depth %d is negative", depth)
	}
	g := &DependencyGraph{Nodes: []GraphNode{}, Edges: []Dependency{}}
	seen := map[int64]bool{}
	for _, id := range fileIDs {
		if seen[id] {
			continue
		}
		f, err := k.FileByID(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("dependency walk: %w", err)
		}
		seen[id] = true
		g.Nodes = append(g.Nodes, GraphNode{FileID: f.ID, Path: f.Path, Language: f.Language})
	}
	slices.SortFunc(g.Nodes, func(a, b GraphNode) int { return cmp.Compare(a.Path, b.Path) })

	frontier, added := g.Nodes, 0
	for dist := 1; dist <= depth && len(frontier) > 0 && !g.Truncated; dist++ {
		var next []GraphNode
	level:
		for _, n := range frontier {
			adj, err := k.adjacent(ctx, n.FileID, direction)
			if err != nil {
				return nil, err
			}
			for _, m := range adj {
				if seen[m.FileID] {
					continue
				}
				if added == k.NodeLimit {
					g.Truncated = true
					break level
				}
				seen[m.FileID] = true
				added++
				m.Distance = dist
				next = append(next, m)
			}
		}
		slices.SortFunc(next, func(a, b GraphNode) int { return cmp.Compare(a.Path, b.Path) })
		g.Nodes = append(g.Nodes, next...)
		frontier = next
	}

	// The edges among the nodes, in one query.
	ids := make([]int64, len(g.Nodes))
	for i, n := range g.Nodes {
		ids[i] = n.FileID
	}
	if len(ids) > 0 {
		marks, args := placeholders(ids)
		edges, err := queryAll(ctx, k.db, scanDependency, dependencySelect+`WHERE d.source_file_id IN (`+marks+`) AND d.target_file_id IN (`+marks+`)`, append(args, args...)...)
		if err != nil {
			return nil, fmt.Errorf("query dependency edges: %w", err)
		}
		g.Edges = edges
	}
	slices.SortFunc(g.Edges, func(a, b Dependency) int {
		return cmp.Or(cmp.Compare(a.SourcePath, b.SourcePath), cmp.Compare(a.TargetPath, b.TargetPath), cmp.Compare(a.Kind, b.Kind))
	})
	return g, nil
}

// adjacent returns the files one edge from fileID in direction, by path.
func (k *KnowledgeBase) adjacent(ctx context.Context, fileID int64, direction string) ([]GraphNode, error) {
	imports := `SELECT f.id, f.path, f.language FROM dependencies d JOIN files f ON f.id = d.target_file_id WHERE d.source_file_id = ?`
	importers := `SELECT f.id, f.path, f.language FROM dependencies d JOIN files f ON f.id = d.source_file_id WHERE d.target_file_id = ?`
	var q string
	args := []any{fileID}
	switch direction {
	case Imports:
		q = imports
	case ImportedBy:
		q = importers
	default:
		q = imports + ` UNION ` + importers
		args = append(args, fileID)
	}
	// UNION and DISTINCT drop the duplicates of import + type_ref pairs.
	ns, err := queryAll(ctx, k.db, func(s scanner) (GraphNode, error) {
		var n GraphNode
		err := s.Scan(&n.FileID, &n.Path, &n.Language)
		return n, err
	}, `SELECT DISTINCT * FROM (`+q+`) ORDER BY 2`, args...)
	if err != nil {
		return nil, fmt.Errorf("query dependency neighbours: %w", err)
	}
	return ns, nil
}

// CoChange is a file that changed in the same commits as another (seed 001
// §4.5 co_changes).
type CoChange struct {
	FileID         int64  `json:"file_id"`
	Path           string `json:"path"`
	Count          int    `json:"count"` // commits that changed both files
	LastCommitHash string `json:"last_commit_hash,omitempty"`
}

// CoChangeNeighbors lists the files that changed together with fileID in
// at least minCount commits, most often first (then by path).
func (k *KnowledgeBase) CoChangeNeighbors(ctx context.Context, fileID int64, minCount int) ([]CoChange, error) {
	return k.coChanges(ctx, fileID, minCount, -1)
}

func (k *KnowledgeBase) coChanges(ctx context.Context, fileID int64, minCount, limit int) ([]CoChange, error) {
	// Pairs are stored once with file_a_id < file_b_id: look on both sides.
	cs, err := queryAll(ctx, k.db, func(s scanner) (CoChange, error) {
		var c CoChange
		err := s.Scan(&c.FileID, &c.Path, &c.Count, &c.LastCommitHash)
		return c, err
	}, `SELECT f.id, f.path, c.count, COALESCE(c.last_commit_hash, '')
			FROM co_changes c JOIN files f ON f.id = c.file_b_id WHERE c.file_a_id = ? AND c.count >= ?
		UNION ALL
		SELECT f.id, f.path, c.count, COALESCE(c.last_commit_hash, '')
			FROM co_changes c JOIN files f ON f.id = c.file_a_id WHERE c.file_b_id = ? AND c.count >= ?
		ORDER BY 3 DESC, 2 LIMIT ?`, fileID, minCount, fileID, minCount, limit)
	if err != nil {
		return nil, fmt.Errorf("query co-changes: %w", err)
	}
	return cs, nil
}
