// Package knowledge owns the knowledge store, docs/knowledge/ in the
// repository (seed 003 "Knowledge Store"), and its injection into prompts
// as the ## PROJECT KNOWLEDGE section (seed 003 "Knowledge Injection into
// Prompts", "Knowledge Relevance Selection").
//
// The store is Markdown documents under conventions/, design/, lessons/
// and domain/, beside an _index.md summary. People seed it (seed 003 "User
// Knowledge Seeding") and the supervisor agents are to write it; agents
// read it through Load: convention documents always, the others by how
// many of the task's terms they share, each document whole, within a
// token budget (MaxTokens, seed 003's ~2k). A document marked
// "_Status: deprecated_" is left out, and so is each document's
// changelog.
//
// Documents are in seed 003's format (Doc, Parse, Render): a title, who
// last updated it after which task, its status, Rules, Examples,
// Rationale and a Changelog. Store reads and writes them: each
// supervisor only in its own folders (Supervisor.Folders), never over a
// person's document; promote and deprecate change a status line in place.
package knowledge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cra-dev/cra/internal/terms"
	"github.com/cra-dev/cra/internal/tokens"
)

// Dir is the knowledge store inside the repository (seed 003):
// conventions/, design/, lessons/, domain/ and _index.md, written by
// people and by the supervisors.
const Dir = "docs/knowledge"

// MaxTokens is the share of a prompt the ## PROJECT KNOWLEDGE section
// may take (seed 003: "token budget for knowledge injection:
// ~2k tokens").
const MaxTokens = 2000

// Section is the ## PROJECT KNOWLEDGE section of a prompt.
type Section struct {
	// Text is the section's body: each document under a ### heading.
	Text string `json:"-"`
	// Docs are the documents included, Skipped those that did not fit,
	// both relative to the knowledge directory.
	Docs    []string `json:"docs"`
	Skipped []string `json:"skipped,omitempty"`
	Tokens  int      `json:"tokens"`
}

// Load selects the knowledge documents for task from
// repo/docs/knowledge (seed 003 "user knowledge seeding", "knowledge
// relevance selection"): convention documents first, since they always
// apply, then the others by how many of the task's terms they share; each
// whole, while they fit in maxTokens. Deprecated documents and _index.md
// are left out. A repository without the directory has no knowledge:
// (nil, nil); one whose store's path holds a symbolic link is refused
// (CheckDir).
func Load(repo, task string, maxTokens int) (*Section, error) {
	if err := CheckDir(repo); err != nil {
		return nil, err
	}
	dir := filepath.Join(repo, filepath.FromSlash(Dir))
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) || err == nil && !st.IsDir() {
		return nil, nil
	}
	type doc struct {
		rel, text  string
		convention bool
		score      int
	}
	taskTerms := map[string]bool{}
	for _, t := range terms.Unique(task) {
		taskTerms[t] = true
	}
	var docs []doc
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".md") || d.Name() == "_index.md" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := strings.TrimSpace(withoutChangelog(string(data)))
		if text == "" || deprecated(text) {
			return nil
		}
		rel = filepath.ToSlash(rel)
		d2 := doc{rel: rel, text: text, convention: strings.HasPrefix(rel, "conventions/")}
		for _, t := range terms.Unique(path.Base(rel) + " " + text) {
			if taskTerms[t] {
				d2.score++
			}
		}
		docs = append(docs, d2)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Dir, err)
	}
	sort.SliceStable(docs, func(i, j int) bool {
		a, b := docs[i], docs[j]
		if a.convention != b.convention {
			return a.convention
		}
		if a.score != b.score {
			return a.score > b.score
		}
		return a.rel < b.rel
	})
	k := &Section{Docs: []string{}}
	var b strings.Builder
	for _, d := range docs {
		part := "### " + d.rel + "\n" + d.text + "\n\n"
		cost := tokens.Estimate(part)
		if k.Tokens+cost > maxTokens {
			if b.Len() == 0 && maxTokens > 0 {
				// The first document alone is too long: its head, said so.
				note := fmt.Sprintf("\n… (cut to fit: read %s/%s)\n\n", Dir, d.rel)
				keep := max(0, maxTokens*4-len(note)-len(d.rel)-5)
				part = "### " + d.rel + "\n" + strings.ToValidUTF8(d.text[:min(keep, len(d.text))], "") + note
				cost = tokens.Estimate(part)
				b.WriteString(part)
				k.Tokens += cost
				k.Docs = append(k.Docs, d.rel)
				continue
			}
			k.Skipped = append(k.Skipped, d.rel)
			continue
		}
		b.WriteString(part)
		k.Tokens += cost
		k.Docs = append(k.Docs, d.rel)
	}
	k.Text = strings.TrimSpace(b.String())
	return k, nil
}

// deprecated reports whether a knowledge document says it no longer
// applies: its status line, above its first section (seed 003:
// "_Status: deprecated_"), not a rule that speaks of deprecation.
func deprecated(text string) bool {
	return Parse(text).Status == Deprecated
}
