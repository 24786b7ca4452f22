package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/cra-dev/cra/internal/lang"
	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// markDecl marks the candidates of examples extracted before
// learn.Row.Decl existed: a source file (not a test) that only declares
// types as it stood at the example's parent (lang.DeclarationOnly over
// lang.DeclarationKinds of the blob's parse, as the index reads them). Nothing at HEAD is read: each example's tree is its parent's.
// Each blob is parsed once.
func markDecl(ctx context.Context, clone string, examples []learn.Example) (marked int, err error) {
	cat := exec.CommandContext(ctx, "git", "-C", clone, "cat-file", "--batch")
	in, err := cat.StdinPipe()
	if err != nil {
		return 0, err
	}
	outPipe, err := cat.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cat.Start(); err != nil {
		return 0, fmt.Errorf("git cat-file: %w", err)
	}
	defer func() {
		in.Close()
		if werr := cat.Wait(); werr != nil && err == nil {
			err = fmt.Errorf("git cat-file: %w", werr)
		}
	}()
	out := bufio.NewReader(outPipe)
	read := func(blob string) ([]byte, error) {
		if _, err := fmt.Fprintln(in, blob); err != nil {
			return nil, err
		}
		head, err := out.ReadString('\n')
		if err != nil {
			return nil, err
		}
		f := strings.Fields(head)
		if len(f) != 3 {
			return nil, fmt.Errorf("git cat-file %s: %q", blob, strings.TrimSpace(head))
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, err
		}
		data := make([]byte, n+1) // and the newline
		if _, err := io.ReadFull(out, data); err != nil {
			return nil, err
		}
		return data[:n], nil
	}
	p := lang.NewParser()
	defer p.Close()
	decl := map[string]bool{} // by blob
	for ei := range examples {
		e := &examples[ei]
		tree, err := exec.CommandContext(ctx, "git", "-C", clone, "ls-tree", "-r", "--full-tree", e.Parent).Output()
		if err != nil {
			return marked, fmt.Errorf("ls-tree %.12s: %w", e.Parent, err)
		}
		blobs := map[string]string{}
		for _, line := range strings.Split(string(tree), "\n") {
			meta, path, ok := strings.Cut(line, "\t")
			if f := strings.Fields(meta); ok && len(f) == 3 && f[1] == "blob" {
				blobs[path] = f[2]
			}
		}
		for ci := range e.Candidates {
			c := &e.Candidates[ci]
			c.Decl = false
			l, ok := lang.Detect(c.Path)
			if !c.Code || !ok || !lang.Parsed(string(l)) || retrieve.IsTestPath(c.Path) || blobs[c.Path] == "" {
				continue
			}
			b := blobs[c.Path]
			d, seen := decl[b]
			if !seen {
				src, err := read(b)
				if err != nil {
					return marked, err
				}
				pf, err := p.Parse(l, src)
				if err != nil {
					return marked, fmt.Errorf("%s at %.12s: %w", c.Path, e.Parent, err)
				}
				d = lang.DeclarationOnly(lang.DeclarationKinds(pf))
				decl[b] = d
			}
			c.Decl = d
			if d {
				marked++
			}
		}
	}
	return marked, nil
}
