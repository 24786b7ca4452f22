package board

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cra-dev/cra/internal/atomicfile"
	"github.com/cra-dev/cra/internal/statedir"
)

// ErrNotFound is a task id no folder holds.
var ErrNotFound = errors.New("no such task")

// DuplicateError is a task found in more than one folder, which only a
// crash or a hand's copy leaves behind; Board.Rebuild repairs it from the
// log.
type DuplicateError struct {
	ID      string
	Folders []Folder
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("task %s is in %d folders (%s): run 'cra task rebuild' to keep the one the world log agrees with",
		e.ID, len(e.Folders), joinNames(e.Folders))
}

// Listed is one task file found by Store.List: the task, or why it could
// not be read. A malformed file is reported this way and never stops a
// listing.
type Listed struct {
	ID     string
	Folder Folder
	Task   *Task // nil when Err is set
	Err    error // names the file, the field and the fix
	// ModTime is when the file was last written; zero for stores without
	// files.
	ModTime time.Time
}

// Store keeps task files, one per task, each in one folder. It does not
// log: Board writes the world log first and then calls the store.
// Implementations are safe for concurrent use; FileStore's writes are
// atomic per file.
type Store interface {
	// Get returns the task with id and its folder: ErrNotFound when no
	// folder holds it, a *DuplicateError when several do, or the file's
	// parse error.
	Get(ctx context.Context, id string) (*Task, Folder, error)
	// List returns the tasks in folder, or in every folder when folder is
	// "", in folder order then by id. A file that cannot be read is
	// listed with its error.
	List(ctx context.Context, folder Folder) ([]Listed, error)
	// IDs returns the ids of the tasks in folder without reading them:
	// what a caller needs when it asks only which tasks are there.
	IDs(ctx context.Context, folder Folder) ([]string, error)
	// Put writes t into folder, replacing the copy there.
	Put(ctx context.Context, t *Task, folder Folder) error
	// Move moves task id from one folder to another, replacing a copy in
	// to. When from does not hold it but to does, the move was made
	// already (a rebuild following the same log) and Move returns nil;
	// when neither does, ErrNotFound.
	Move(ctx context.Context, id string, from, to Folder) error
	// Delete removes the copy of task id in folder.
	Delete(ctx context.Context, id string, folder Folder) error
	// Lock holds off every other Lock on the same board, in this process
	// and in others, until the returned function is called: Board takes it
	// around each change, whose steps (read, log, write, move) must not
	// interleave with another's. It waits until ctx ends.
	Lock(ctx context.Context) (unlock func(), err error)
	// Sweep removes what a crash may leave besides tasks, such as
	// half-written temp files older than age, and returns what it removed
	// (or would remove, with dryRun).
	Sweep(ctx context.Context, age time.Duration, dryRun bool) ([]string, error)
}

// FileStore is a Store over the folders of one tasks directory,
// <repo>/.clean_room/tasks.
type FileStore struct {
	dir string
	sd  statedir.Dir
	now func() time.Time

	// statChunk is how many files one goroutine of a listing stats at
	// least: the constant statChunk, fewer in tests.
	statChunk int

	dirs sync.Once // every folder made on the first write, so all six show
	// turn queues this store's Lock callers in order before they take
	// the file lock, which waits by polling (up to 100 ms between
	// tries): without it, a caller that locks again at once (a loop of
	// rebuilds) took the lock before every waiter in the process woke.
	turn chan struct{}
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns the store of the tasks directory in stateDir
// (<repo>/.clean_room); folders are made when first written.
func NewFileStore(stateDir string) *FileStore {
	sd := statedir.At(stateDir)
	return &FileStore{dir: sd.Tasks(), sd: sd, now: time.Now, turn: make(chan struct{}, 1), statChunk: statChunk}
}

// Dir returns the tasks directory.
func (s *FileStore) Dir() string { return s.dir }

// Path returns the path of task id's file in folder.
func (s *FileStore) Path(id string, folder Folder) string {
	return s.sd.TaskFile(string(folder), id)
}

// rel names a file for messages: tasks/<folder>/<id>.yaml.
func (s *FileStore) rel(id string, folder Folder) string {
	return statedir.Dir{}.TaskFile(string(folder), id)
}

// read parses task id's file in folder.
func (s *FileStore) read(id string, folder Folder) (*Task, os.FileInfo, error) {
	t, fi, _, err := s.readRaw(id, folder)
	return t, fi, err
}

// readRaw is read, with the bytes the task was parsed from. A task file
// that is a symbolic link (or anything but a regular file) is never read
// through: it could lead anywhere, a file outside the repository or
// another task's (errNotRegular).
func (s *FileStore) readRaw(id string, folder Folder) (*Task, os.FileInfo, []byte, error) {
	path := s.Path(id, folder)
	lfi, err := os.Lstat(path)
	if err != nil {
		return nil, nil, nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, nil, nil, s.notRegular(id, folder, lfi)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	if !os.SameFile(lfi, fi) {
		// Replaced between the two looks, by a link perhaps.
		return nil, nil, nil, fmt.Errorf("task file %s changed while it was opened: read it again", s.rel(id, folder))
	}
	if fi.Size() > MaxFileBytes {
		return nil, fi, nil, fmt.Errorf("task file %s is %d bytes, over the limit of %d: shorten its notes or results.output", s.rel(id, folder), fi.Size(), MaxFileBytes)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fi, nil, fmt.Errorf("read task file %s: %w", s.rel(id, folder), err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fi, nil, fmt.Errorf("task file %s: %w", s.rel(id, folder), err)
	}
	if t.ID != id {
		return nil, fi, nil, fmt.Errorf("task file %s: %w", s.rel(id, folder), &FieldError{Field: "id",
			Err: fmt.Sprintf("%q differs from the file name", t.ID), Fix: fmt.Sprintf("set id: %s or rename the file to %s.yaml", id, t.ID)})
	}
	return t, fi, data, nil
}

// readRegular returns the bytes of the regular file at path, never
// through a symbolic link, and none of a file over MaxFileBytes.
func readRegular(path string) ([]byte, error) {
	lfi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(lfi, fi) {
		return nil, fmt.Errorf("%s changed while it was opened", path)
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, MaxFileBytes)
	}
	return io.ReadAll(io.LimitReader(f, MaxFileBytes))
}

// ReadFile returns task id's file in folder, parsed and checked as Get
// checks it, with its bytes as written and its modification time: what an
// import into another store copies byte for byte.
func (s *FileStore) ReadFile(id string, folder Folder) (*Task, []byte, time.Time, error) {
	if err := CheckID(id); err != nil {
		return nil, nil, time.Time{}, err
	}
	t, fi, data, err := s.readRaw(id, folder)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	return t, data, fi.ModTime(), nil
}

// notRegular is the error of a task file that is not a regular file.
func (s *FileStore) notRegular(id string, folder Folder, fi os.FileInfo) error {
	what := "not a regular file (" + fi.Mode().Type().String() + ")"
	if fi.Mode()&fs.ModeSymlink != 0 {
		what = "a symbolic link"
	}
	return fmt.Errorf("task file %s is %s, which cra never reads through: replace it with the task's file itself, or remove it and run 'cra task rebuild' to recreate it from the world log", s.rel(id, folder), what)
}

// Get implements Store.
func (s *FileStore) Get(ctx context.Context, id string) (*Task, Folder, error) {
	if err := CheckID(id); err != nil {
		return nil, "", err
	}
	var found []Folder
	for _, f := range Folders() {
		if _, err := os.Lstat(s.Path(id, f)); err == nil {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return nil, "", fmt.Errorf("task %s: %w (see 'cra task list')", id, ErrNotFound)
	case 1:
		t, _, err := s.read(id, found[0])
		return t, found[0], err
	}
	return nil, "", &DuplicateError{ID: id, Folders: found}
}

// List implements Store. It reads the tasks through each folder's list
// index (tasks/.index.<folder>, see listIndex), reading only the files
// that changed since it was written, and writes the index back when they
// did; the index is a cache, so failing to write it fails nothing. Each
// index is decoded while the folders' files are statted, on another
// core: the two took about as long on 10,000 tasks.
func (s *FileStore) List(ctx context.Context, folder Folder) ([]Listed, error) {
	folders := Folders()
	if folder != "" {
		folders = []Folder{folder}
	}
	indexes := make([]chan *listIndex, len(folders))
	for i, f := range folders {
		indexes[i] = make(chan *listIndex, 1)
		go func() { indexes[i] <- s.loadIndex(f) }()
	}
	var out []Listed
	for i, f := range folders {
		ents, err := s.scanFolder(ctx, f)
		if err != nil {
			return nil, err
		}
		ix := <-indexes[i]
		l, changed := s.listScanned(ix, f, ents)
		if changed {
			s.saveIndex(f, ix) // best effort: the next listing reads the files again
		}
		if out == nil {
			out = l
		} else {
			out = append(out, l...)
		}
	}
	return out, nil
}

// folderEntry is a task file of a folder as scanFolder found it.
type folderEntry struct {
	name, id string // id is name without ".yaml"
	st       fileStat
	kind     entryKind
}

// statChunk is how many files one goroutine of scanFolder stats at
// least: a folder of 10,000 is statted on two cores.
const statChunk = 1024

// scanFolder returns the task files of folder, in order, each statted:
// the files named <id>.yaml, regular files and symbolic links. Their
// names are read without their types (os.File.Readdirnames: os.ReadDir
// made an entry of each), which the stat gives; a large folder is
// statted on every core.
func (s *FileStore) scanFolder(ctx context.Context, folder Folder) ([]folderEntry, error) {
	dir := s.sd.TaskFolder(string(folder))
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	slices.Sort(names) // by name, as os.ReadDir sorts: "a-b.yaml" before "a.yaml"
	out := make([]folderEntry, 0, len(names))
	for _, name := range names {
		if !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".yaml") {
			out = append(out, folderEntry{name: name, id: name[:len(name)-len(".yaml")]})
		}
	}
	stat := openFolderStatter(dir)
	defer stat.close()
	statRange := func(ents []folderEntry) {
		for i := range ents {
			if i%256 == 0 && ctx.Err() != nil {
				return
			}
			ents[i].st, ents[i].kind = stat.lstat(ents[i].name)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), (len(out)+s.statChunk-1)/s.statChunk)
	per := len(out)
	if workers > 1 {
		per = (len(out) + workers - 1) / workers
	}
	var wg sync.WaitGroup
	for start := per; start < len(out); start += per {
		wg.Go(func() { statRange(out[start:min(start+per, len(out))]) })
	}
	statRange(out[:per])
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(e folderEntry) bool { return e.kind == entryOther }), nil
}

// listIndexed lists folder through its index ix, bringing ix up to date
// with the files; changed says whether it changed any entry.
func (s *FileStore) listIndexed(ctx context.Context, ix *listIndex, folder Folder) ([]Listed, bool, error) {
	ents, err := s.scanFolder(ctx, folder)
	if err != nil {
		return nil, false, err
	}
	l, changed := s.listScanned(ix, folder, ents)
	return l, changed, nil
}

// listScanned is listIndexed of the files ents, scanned from folder.
func (s *FileStore) listScanned(ix *listIndex, folder Folder, ents []folderEntry) ([]Listed, bool) {
	start := s.now().UnixNano()
	out := make([]Listed, 0, len(ents))
	changed := false
	// kept counts the files listed whose entries stay: when as many
	// entries are left, none is an entry without a file, and no set of
	// the names seen is needed (10,000 of them cost a tenth of a listing).
	kept := 0
	f := folder
	for _, fe := range ents {
		id := fe.id
		l := Listed{ID: id, Folder: f}
		if err := CheckID(id); err != nil {
			l.Err = fmt.Errorf("task file %s: the file name is not a task id: rename it (%v)", s.rel(id, f), err)
			out = append(out, l)
			continue
		}
		old := ix.Entries[id]
		if fe.kind == entrySymlink {
			if info, err := os.Lstat(s.Path(id, f)); err == nil {
				l.Err, l.ModTime = s.notRegular(id, f, info), info.ModTime()
			} else {
				l.Err = fmt.Errorf("task file %s: %w", s.rel(id, f), err)
			}
			out = append(out, l)
			if old != nil {
				delete(ix.Entries, id)
				changed = true
			}
			continue
		}
		if fe.kind == entryRegular && old.trusted(fe.st) {
			l.Task, l.ModTime = old.Task, time.Unix(0, fe.st.MtimeNS)
			out = append(out, l)
			kept++
			continue
		}
		t, fi, err := s.read(id, f)
		l.Task, l.Err = t, err
		if fi != nil {
			l.ModTime = fi.ModTime()
		}
		out = append(out, l)
		if err != nil {
			if old != nil {
				delete(ix.Entries, id)
				changed = true
			}
			continue
		}
		e := &indexEntry{Stat: statOf(fi), ReadNS: start, Task: t}
		// A reading taken too close to the file's change is kept, but
		// read again next time; writing the index for it alone would
		// rewrite it on every listing while the file is young.
		if old == nil || old.Stat != e.Stat || e.trusted(e.Stat) {
			changed = true
		}
		ix.Entries[id] = e
		kept++
	}
	if len(ix.Entries) > kept {
		seen := make(map[string]bool, len(out))
		for _, l := range out {
			if CheckID(l.ID) == nil {
				seen[l.ID] = true
			}
		}
		for id := range ix.Entries {
			if !seen[id] {
				delete(ix.Entries, id)
				changed = true
			}
		}
	}
	return out, changed
}

// IDs returns the ids of the task files in folder, unread; file names
// that are not task ids, and symbolic links, are left out (List reports
// them).
func (s *FileStore) IDs(ctx context.Context, folder Folder) ([]string, error) {
	var out []string
	err := s.each(ctx, folder, func(id string, _ Folder) {
		if CheckID(id) == nil {
			out = append(out, id)
		}
	})
	return out, err
}

// each calls fn for every task file's name in folder (every folder when
// ""), in folder order then by name: regular files only.
func (s *FileStore) each(ctx context.Context, folder Folder, fn func(id string, f Folder)) error {
	return s.eachEntry(ctx, folder, func(id string, f Folder, d fs.DirEntry) {
		if d.Type().IsRegular() {
			fn(id, f)
		}
	})
}

// eachEntry is each with the file's directory entry, symbolic links
// included (List reports them; nothing reads through them).
func (s *FileStore) eachEntry(ctx context.Context, folder Folder, fn func(id string, f Folder, d fs.DirEntry)) error {
	folders := Folders()
	if folder != "" {
		folders = []Folder{folder}
	}
	for _, f := range folders {
		ents, err := os.ReadDir(s.sd.TaskFolder(string(f)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list tasks: %w", err)
		}
		for i, e := range ents {
			if i%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			name := e.Name()
			if !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".yaml") {
				continue
			}
			fn(strings.TrimSuffix(name, ".yaml"), f, e)
		}
	}
	return nil
}

// Put implements Store.
func (s *FileStore) Put(ctx context.Context, t *Task, folder Folder) error {
	if !folder.Valid() {
		return fmt.Errorf("put task %s: folder %q is not one of %s", t.ID, folder, joinNames(Folders()))
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("task %s: %w", t.ID, err)
	}
	data, err := Encode(t)
	if err != nil {
		return err
	}
	s.makeFolders()
	return atomicfile.Write(s.Path(t.ID, folder), data, 0o644)
}

// Lock implements Store with flock(2) on tasks/.lock, whose leading dot
// keeps it out of listings.
func (s *FileStore) Lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock board: %w", err)
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lock board: %w", ctx.Err())
	}
	f, err := lockFile(ctx, s.sd.TasksLock())
	if err != nil {
		<-s.turn
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close(); <-s.turn }) }, nil
}

// makeFolders makes the six folders, best effort: a write makes its own
// folder anyway, and the others are for people looking.
func (s *FileStore) makeFolders() {
	s.dirs.Do(func() {
		for _, f := range Folders() {
			os.MkdirAll(s.sd.TaskFolder(string(f)), 0o755)
		}
	})
}

// Move implements Store: one rename, so a crash leaves the file in one
// folder or the other.
func (s *FileStore) Move(ctx context.Context, id string, from, to Folder) error {
	if !from.Valid() || !to.Valid() {
		return fmt.Errorf("move task %s: folders %q and %q must be among %s", id, from, to, joinNames(Folders()))
	}
	if from == to {
		return nil
	}
	dst := s.Path(id, to)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("move task %s: %w", id, err)
	}
	if err := os.Rename(s.Path(id, from), dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Lstat(dst); serr == nil {
				return nil // moved already, by a rebuild that read the same log
			}
			return fmt.Errorf("move task %s: not in %s: %w", id, from, ErrNotFound)
		}
		return fmt.Errorf("move task %s: %w", id, err)
	}
	syncDir(filepath.Dir(dst))
	syncDir(filepath.Dir(s.Path(id, from)))
	return nil
}

// Delete implements Store.
func (s *FileStore) Delete(ctx context.Context, id string, folder Folder) error {
	if err := os.Remove(s.Path(id, folder)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete task %s: not in %s: %w", id, folder, ErrNotFound)
		}
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	syncDir(s.sd.TaskFolder(string(folder)))
	return nil
}

// Sweep implements Store: it removes the temp files atomicfile.Write
// leaves when the process dies between creating and renaming them
// (".<id>.yaml.tmp…"), once they are older than age, since a younger one
// may be another process's write in flight. The names are relative to the
// tasks directory's parent.
func (s *FileStore) Sweep(ctx context.Context, age time.Duration, dryRun bool) ([]string, error) {
	var out []string
	cutoff := s.now().Add(-age)
	for _, f := range Folders() {
		dir := s.sd.TaskFolder(string(f))
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("sweep tasks: %w", err)
		}
		for _, e := range ents {
			name := e.Name()
			if !e.Type().IsRegular() || !strings.HasPrefix(name, ".") || !strings.Contains(name, ".yaml.tmp") {
				continue
			}
			info, err := e.Info()
			if err != nil || info.ModTime().After(cutoff) {
				continue
			}
			if !dryRun {
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return out, fmt.Errorf("sweep tasks: %w", err)
				}
			}
			out = append(out, filepath.Join(statedir.Dir{}.TaskFolder(string(f)), name))
		}
	}
	slices.Sort(out)
	return out, nil
}

// syncDir makes a rename in dir durable, best effort (as atomicfile does).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
