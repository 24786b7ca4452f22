package knowledge

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/lazyre"
)

// Supervisor names one of seed 003's three supervisor agents, the
// writers of the store besides people.
type Supervisor string

// The supervisors (seed 003, "Supervisor Agents").
const (
	CodeStyle    Supervisor = "code_style"
	Design       Supervisor = "design"
	Internaliser Supervisor = "internaliser"
)

// Supervisors returns the three, in the order they run.
func Supervisors() []Supervisor { return []Supervisor{CodeStyle, Design, Internaliser} }

// ParseSupervisor reads a supervisor's name, saying which exist.
func ParseSupervisor(s string) (Supervisor, error) {
	if v := Supervisor(s); slices.Contains(Supervisors(), v) {
		return v, nil
	}
	return "", fmt.Errorf("%q is not a supervisor: use code_style, design or internaliser", s)
}

// Folders returns the store's folders s owns (seed 003, "Supervisor
// Scope Boundaries"): code_style conventions/, design design/, the
// internaliser lessons/ and domain/.
func (s Supervisor) Folders() []string {
	switch s {
	case CodeStyle:
		return []string{"conventions"}
	case Design:
		return []string{"design"}
	case Internaliser:
		return []string{"lessons", "domain"}
	}
	return nil
}

// IndexName is the store's summary, written by cleanup (seed 000), not
// by a supervisor.
const IndexName = "_index.md"

// ErrOutside is a write a supervisor may not make: outside its own
// folders (seed 003: "A supervisor must not write to another
// supervisor's directories").
var ErrOutside = errors.New("outside the supervisor's folders")

// ErrPersonDoc is a supervisor's write over a document a person wrote:
// people's documents are honoured, never rewritten by a supervisor.
var ErrPersonDoc = errors.New("a person's document")

// ErrBadPath is a document path that does not name a Markdown file inside
// the store.
var ErrBadPath = errors.New("not a document path inside " + Dir)

var pathPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*\.md$`)

// MaxPath bounds a document path.
const MaxPath = 200

// CheckPath returns an error wrapping ErrBadPath unless rel is a
// slash-separated path of a .md file inside the store: relative, no ".."
// or "." segment, no hidden or odd characters, not _index.md.
func CheckPath(rel string) error {
	switch {
	case len(rel) > MaxPath:
		return fmt.Errorf("%q: %w: at most %d characters", rel[:40]+"…", ErrBadPath, MaxPath)
	case !pathPattern().MatchString(rel) || path.Clean(rel) != rel || slices.Contains(strings.Split(rel, "/"), ".."):
		return fmt.Errorf("%q: %w: use a relative path like conventions/errors.md (letters, digits, '.', '_', '-')", rel, ErrBadPath)
	case path.Base(rel) == IndexName:
		return fmt.Errorf("%q: %w: the index is cleanup's", rel, ErrBadPath)
	}
	return nil
}

// CanWrite returns nil when supervisor s may write document rel: a valid
// path (CheckPath) in one of its folders; otherwise an error wrapping
// ErrBadPath or ErrOutside.
func (s Supervisor) CanWrite(rel string) error {
	if err := CheckPath(rel); err != nil {
		return err
	}
	first, _, _ := strings.Cut(rel, "/")
	if !strings.Contains(rel, "/") || !slices.Contains(s.Folders(), first) {
		return fmt.Errorf("%s may not write %s: %w (%s)", s, rel, ErrOutside, strings.Join(s.Folders(), "/, ")+"/")
	}
	return nil
}

// Store is the knowledge store of one repository, Root/docs/knowledge.
type Store struct {
	// Root is the repository.
	Root string
	// Now stamps changelog entries; nil is time.Now.
	Now func() time.Time
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return filepath.Join(s.Root, filepath.FromSlash(Dir)) }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Listed is one document of the store.
type Listed struct {
	Path   string `json:"path"` // relative to the store, slash-separated
	Title  string `json:"title"`
	Status Status `json:"status"` // EffectiveStatus
	// By is the "_Last updated by_" name; "" for a document that does not
	// say (a person's).
	By          string `json:"updated_by,omitempty"`
	AfterTask   string `json:"after_task,omitempty"`
	NeedsReview bool   `json:"needs_review,omitempty"`
	// Person says no supervisor wrote it last.
	Person bool `json:"person"`
}

// List returns every document of the store (Markdown files under it, not
// _index.md), by path. A store that does not exist has none; one whose
// path holds a symbolic link is refused (CheckDir).
func (s *Store) List() ([]Listed, error) {
	if err := CheckDir(s.Root); err != nil {
		return nil, err
	}
	dir := s.Dir()
	var out []Listed
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return filepath.SkipAll
			}
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() || !strings.EqualFold(filepath.Ext(p), ".md") || d.Name() == IndexName {
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
		doc := Parse(string(data))
		title := doc.Title
		if title == "" {
			title = strings.TrimSuffix(d.Name(), filepath.Ext(d.Name()))
		}
		out = append(out, Listed{Path: filepath.ToSlash(rel), Title: title, Status: doc.EffectiveStatus(),
			By: doc.UpdatedBy, AfterTask: doc.AfterTask, NeedsReview: doc.NeedsReview, Person: !bySupervisor(doc)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", Dir, err)
	}
	return out, nil
}

// bySupervisor reports whether a supervisor last wrote d.
func bySupervisor(d *Doc) bool {
	_, err := ParseSupervisor(d.UpdatedBy)
	return err == nil
}

// CheckDir returns an error wrapping ErrBadPath when a directory on the
// store's path in repository root (docs/, docs/knowledge/) is a symbolic
// link: a committed link would send every write out of the repository.
// A store that does not exist yet passes.
func CheckDir(root string) error {
	p := root
	for _, part := range strings.Split(Dir, "/") {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // missing: made as a directory when first written
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w: %s is a symbolic link, which could lead out of the repository: replace it with a directory", Dir, ErrBadPath, p)
		}
	}
	return nil
}

// file returns the absolute path of rel after checking it, and refuses a
// path through a symbolic link, which could lead out of the store, the
// store's own directories included.
func (s *Store) file(rel string) (string, error) {
	if err := CheckPath(rel); err != nil {
		return "", err
	}
	if err := CheckDir(s.Root); err != nil {
		return "", err
	}
	dir := s.Dir()
	p := dir
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%q: %w: %s is a symbolic link", rel, ErrBadPath, p)
		}
	}
	return p, nil
}

// Read returns document rel and its text; an error wrapping
// fs.ErrNotExist when there is none.
func (s *Store) Read(rel string) (*Doc, string, error) {
	p, err := s.file(rel)
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("read %s/%s: %w", Dir, rel, err)
	}
	return Parse(string(data)), string(data), nil
}

// Empty reports whether the store has no document: a supervisor's run
// is then a bootstrap run (seed 003, "Cold Start").
func (s *Store) Empty() (bool, error) {
	l, err := s.List()
	return len(l) == 0, err
}

// Written is what Put did to one document.
type Written struct {
	Path string `json:"path"`
	// Change is "created", or which parts changed ("rules, examples");
	// "" when the document was already as given.
	Change string `json:"change"`
	Status Status `json:"status"`
}

// Put writes document rel as supervisor by, after task afterTask, in
// seed 003's format: d's title, rules, examples, rationale and review
// flag. A new document is provisional; an update keeps the status unless
// its rules change, which makes it provisional again, but a deprecated
// document stays deprecated: only a person deprecates, and only a person
// takes it back ('cra knowledge promote'). The changelog
// carries over with an entry for this change. The write is refused
// (nothing written) outside the supervisor's folders (ErrOutside), for a
// bad path (ErrBadPath), over a person's document (ErrPersonDoc), and
// when the rules exceed MaxRules.
func (s *Store) Put(by Supervisor, rel string, d *Doc, afterTask string) (Written, error) {
	w := Written{Path: rel}
	if err := by.CanWrite(rel); err != nil {
		return w, err
	}
	if n := len([]rune(strings.TrimSpace(d.Rules))); n > MaxRules {
		return w, fmt.Errorf("%s: the rules are %d characters: at most %d", rel, n, MaxRules)
	}
	p, err := s.file(rel)
	if err != nil {
		return w, err
	}
	next := &Doc{Title: strings.TrimSpace(d.Title), UpdatedBy: string(by), AfterTask: afterTask, Status: Provisional,
		NeedsReview: d.NeedsReview, Rules: strings.TrimSpace(d.Rules), Good: strings.TrimSpace(d.Good),
		Bad: strings.TrimSpace(d.Bad), Rationale: strings.TrimSpace(d.Rationale)}
	if next.Title == "" {
		next.Title = strings.TrimSuffix(path.Base(rel), ".md")
	}
	data, err := os.ReadFile(p)
	switch {
	case err == nil:
		old := Parse(string(data))
		if !bySupervisor(old) {
			return w, fmt.Errorf("%s was written by a person: %w, left as written (a person may deprecate it with 'cra knowledge deprecate')", rel, ErrPersonDoc)
		}
		var changed []string
		for _, c := range []struct{ name, a, b string }{
			{"title", old.Title, next.Title}, {"rules", old.Rules, next.Rules},
			{"examples", old.Good + "\x00" + old.Bad, next.Good + "\x00" + next.Bad}, {"rationale", old.Rationale, next.Rationale},
		} {
			if strings.TrimSpace(c.a) != strings.TrimSpace(c.b) {
				changed = append(changed, c.name)
			}
		}
		if old.NeedsReview != next.NeedsReview {
			changed = append(changed, "review flag")
		}
		if len(changed) == 0 {
			w.Status = old.EffectiveStatus()
			return w, nil
		}
		if !slices.Contains(changed, "rules") && old.Status.Valid() || old.Status == Deprecated {
			next.Status = old.Status // a person deprecated it: no rewrite brings it back
		}
		next.Extra, next.Changelog = old.Extra, old.Changelog
		w.Change = strings.Join(changed, ", ") + " changed"
	case errors.Is(err, fs.ErrNotExist):
		w.Change = "created"
	default:
		return w, fmt.Errorf("read %s/%s: %w", Dir, rel, err)
	}
	next.Changelog = append(next.Changelog, ChangelogEntry(s.now(), string(by), afterTask, w.Change))
	w.Status = next.Status
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return w, fmt.Errorf("write %s/%s: %w", Dir, rel, err)
	}
	if err := atomicfile.Write(p, []byte(next.Render()), 0o644); err != nil {
		return w, fmt.Errorf("write %s/%s: %w", Dir, rel, err)
	}
	return w, nil
}

// SetStatus sets document rel's status, as 'cra knowledge promote' and
// 'deprecate' do, and clears its review flag: a person has looked. Only
// the status line changes (it is added after the title when missing) and
// a changelog entry is appended; the rest of the document, a person's
// wording included, stays as written. by names who did it, why what for.
func (s *Store) SetStatus(rel string, to Status, by, why string) (*Doc, error) {
	if !to.Valid() {
		return nil, fmt.Errorf("status %q: use provisional, established or deprecated", to)
	}
	p, err := s.file(rel)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w (see 'cra knowledge list')", Dir, rel, err)
	}
	text := setStatusText(string(data), to, ChangelogEntry(s.now(), by, "", statusChange(to, why)))
	if err := atomicfile.Write(p, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("write %s/%s: %w", Dir, rel, err)
	}
	return Parse(text), nil
}

func statusChange(to Status, why string) string {
	s := "status " + string(to)
	if why = strings.TrimSpace(why); why != "" {
		s += ": " + why
	}
	return s
}

// setStatusText edits text in place: the status line replaced or added,
// the review flag removed, entry appended to the changelog.
func setStatusText(text string, to Status, entry string) string {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	status := "_Status: " + string(to) + "_"
	var out []string
	done, inSections := false, false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "## ") {
			inSections = true
		}
		if !inSections && reviewLine().MatchString(t) {
			continue
		}
		if !inSections && !done && statusLine().MatchString(t) {
			out, done = append(out, status), true
			continue
		}
		out = append(out, l)
	}
	if !done {
		at := 0
		for i, l := range out {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, "## ") {
				break
			}
			if strings.HasPrefix(t, "# ") || updatedByLine().MatchString(t) {
				at = i + 1
			}
		}
		ins := []string{status}
		if at == 0 || (at < len(out) && strings.HasPrefix(strings.TrimSpace(out[at-1]), "# ")) {
			ins = []string{"", status}
			if at == 0 {
				ins = []string{status, ""}
			}
		}
		out = slices.Insert(out, at, ins...)
	}
	// The changelog: append to its section, or add one at the end.
	for i, l := range out {
		if !strings.EqualFold(strings.TrimSpace(l), "## changelog") {
			continue
		}
		end := len(out)
		for j := i + 1; j < len(out); j++ {
			if strings.HasPrefix(strings.TrimSpace(out[j]), "## ") {
				end = j
				break
			}
		}
		last := end
		for last > i+1 && strings.TrimSpace(out[last-1]) == "" {
			last--
		}
		out = slices.Insert(out, last, "- "+entry)
		return strings.Join(out, "\n")
	}
	body := strings.TrimRight(strings.Join(out, "\n"), "\n")
	return body + "\n\n## Changelog\n\n- " + entry + "\n"
}
