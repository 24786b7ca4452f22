package board

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"
	"unsafe"
)

// The list index's file format. gob took 12 ms a thousand tasks to
// decode (one message of the whole index, copied, and a map of
// pointers built by reflection); this one is read in one pass over one
// buffer:
//
//	magic "cra-list-index\n", version (uvarint), entry count (uvarint),
//	the entries, then the CRC-32 (IEEE) of everything before it (4
//	bytes, little-endian).
//
// An entry is its id, its stat (size, mtime, ctime as varints, inode as
// a uvarint), its ReadNS (varint), then the task's fields in the order
// appendTask writes them: strings as a uvarint length and the bytes,
// ints as varints, bools as one byte, times as their MarshalBinary form
// with a length, pointers as a byte (0 nil, 1 set) before what they
// point to. A field added to Task must be added to appendTask and
// decodeTask (TestIndexCodecEveryField fails until it is) and
// indexVersion raised. The files' own bytes are not kept (version 3 kept
// them, three fifths of the file, read and summed on every listing for
// the rare caller that writes a listed task back): a task from the index
// reads its file when it is encoded (Task.document).
const indexMagic = "cra-list-index\n"

// minEntryBytes is less than any entry takes (its three times alone
// take 48 bytes), so that a count no file could hold is refused before
// anything is made for it.
const minEntryBytes = 48

var (
	// IEEE, not Castagnoli: on this machine's CPU Go sums IEEE seven
	// times as fast (2.4 against 16.7 ms for 10,000 tasks).
	crcTable = crc32.IEEETable

	errIndexDamaged = errors.New("task list index damaged")
)

// encodeIndex is ix in the index's file format.
func encodeIndex(ix *listIndex) []byte {
	b := make([]byte, 0, 64+len(ix.Entries)*256)
	b = append(b, indexMagic...)
	b = binary.AppendUvarint(b, uint64(ix.Version))
	b = binary.AppendUvarint(b, uint64(len(ix.Entries)))
	for id, e := range ix.Entries {
		b = appendString(b, id)
		b = binary.AppendVarint(b, e.Stat.Size)
		b = binary.AppendVarint(b, e.Stat.MtimeNS)
		b = binary.AppendVarint(b, e.Stat.CtimeNS)
		b = binary.AppendUvarint(b, e.Stat.Ino)
		b = binary.AppendVarint(b, e.ReadNS)
		b = appendTask(b, e.Task)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeIndex reads what encodeIndex wrote; anything else (another
// version, a truncated or damaged file) is an error. The entries'
// strings share data, which the caller must not change.
func decodeIndex(data []byte) (*listIndex, error) {
	if len(data) < len(indexMagic)+4 || string(data[:len(indexMagic)]) != indexMagic {
		return nil, errIndexDamaged
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, errIndexDamaged
	}
	// The strings share body's bytes, which nothing writes after the
	// file is read: a copy of 10,000 tasks' strings took as long as
	// decoding them.
	d := &decoder{b: body, s: unsafe.String(unsafe.SliceData(body), len(body)), i: len(indexMagic)}
	ix := &listIndex{Version: int(d.uvarint())}
	n := d.uvarint()
	if d.bad || ix.Version != indexVersion || n > uint64(len(body)-d.i)/minEntryBytes {
		return nil, errIndexDamaged
	}
	ix.Entries = make(map[string]*indexEntry, n)
	entries := make([]indexEntry, n)
	tasks := make([]Task, n)
	for k := range entries {
		id := d.str()
		e := &entries[k]
		e.Stat.Size = d.varint()
		e.Stat.MtimeNS = d.varint()
		e.Stat.CtimeNS = d.varint()
		e.Stat.Ino = d.uvarint()
		e.ReadNS = d.varint()
		e.Task = &tasks[k]
		d.task(e.Task)
		if d.bad {
			return nil, errIndexDamaged
		}
		ix.Entries[id] = e
	}
	if d.bad || d.i != len(body) || len(ix.Entries) != len(entries) {
		return nil, errIndexDamaged
	}
	return ix, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendTime(b []byte, t time.Time) []byte {
	m, err := t.MarshalBinary()
	if err != nil { // a zone offset not in whole minutes: kept as UTC
		m, _ = t.UTC().MarshalBinary()
	}
	return appendString(b, string(m))
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(ss))+1)
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// appendTask appends t's fields; decoder.task reads them back in the
// same order.
func appendTask(b []byte, t *Task) []byte {
	for _, s := range []string{t.ID, t.Title, t.Description, t.Need, t.Type, string(t.Kind), string(t.Priority), t.Milestone, t.Source, t.Rationale} {
		b = appendString(b, s)
	}
	b = appendStrings(b, t.Files)
	b = appendStrings(b, t.After)
	b = appendString(b, t.Agent)
	b = appendBool(b, t.NoChange)
	b = appendBool(b, t.TestsMayChange)
	b = appendTime(b, t.CreatedAt)
	b = appendTime(b, t.UpdatedAt)
	for _, n := range []int{t.Runs, t.ConsecutiveCompletionClaims, t.ConsecutiveFailures, t.EndpointFailures} {
		b = binary.AppendVarint(b, int64(n))
	}
	b = appendTime(b, t.RetryAfter)
	b = appendBool(b, t.ProcessorAutoRequeue)
	b = appendString(b, t.Notes)
	b = appendBool(b, t.Results != nil)
	if r := t.Results; r != nil {
		b = appendString(b, r.Output)
		b = appendBool(b, r.ExitCode != nil)
		if r.ExitCode != nil {
			b = binary.AppendVarint(b, int64(*r.ExitCode))
		}
		b = appendTime(b, r.StartedAt)
		b = appendTime(b, r.FinishedAt)
		b = binary.AppendVarint(b, r.DurationMS)
		for _, s := range []string{r.Branch, r.Host, r.Commit, r.DiffStat, r.Validation} {
			b = appendString(b, s)
		}
		b = appendBool(b, r.TimedOut)
		b = appendString(b, r.Classification)
		b = appendBool(b, r.Usage != nil)
		if u := r.Usage; u != nil {
			b = appendString(b, u.Model)
			b = binary.AppendVarint(b, u.Input)
			b = binary.AppendVarint(b, u.Output)
			b = binary.AppendVarint(b, u.Cached)
		}
	}
	b = appendBool(b, t.Merged != nil)
	if m := t.Merged; m != nil {
		b = appendString(b, m.Into)
		b = appendString(b, m.Commit)
		b = appendBool(b, m.Squash)
		b = appendTime(b, m.At)
	}
	return b
}

// decoder reads the index's values from b (and s, the same bytes as a
// string, so that strings are slices of one copy); bad is set on the
// first value that does not fit, after which every read returns zero.
type decoder struct {
	b   []byte
	s   string
	i   int
	bad bool
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

func (d *decoder) varint() int64 {
	if d.bad {
		return 0
	}
	v, n := binary.Varint(d.b[d.i:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

func (d *decoder) int() int { return int(d.varint()) }

// span returns the bounds of the next length-prefixed value.
func (d *decoder) span() (int, int) {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)-d.i) {
		d.bad = true
		return 0, 0
	}
	start := d.i
	d.i += int(n)
	return start, d.i
}

func (d *decoder) str() string {
	i, j := d.span()
	return d.s[i:j]
}

func (d *decoder) bool() bool {
	if d.bad || d.i >= len(d.b) || d.b[d.i] > 1 {
		d.bad = true
		return false
	}
	d.i++
	return d.b[d.i-1] == 1
}

func (d *decoder) time() time.Time {
	i, j := d.span()
	var t time.Time
	if !d.bad && t.UnmarshalBinary(d.b[i:j]) != nil {
		d.bad = true
	}
	return t
}

func (d *decoder) strings() []string {
	n := d.uvarint()
	if n == 0 || d.bad {
		return nil
	}
	if n-1 > uint64(len(d.b)-d.i) {
		d.bad = true
		return nil
	}
	ss := make([]string, n-1)
	for k := range ss {
		ss[k] = d.str()
	}
	return ss
}

// task reads a task's fields into t.
func (d *decoder) task(t *Task) {
	for _, p := range []*string{&t.ID, &t.Title, &t.Description, &t.Need, &t.Type, (*string)(&t.Kind), (*string)(&t.Priority), &t.Milestone, &t.Source, &t.Rationale} {
		*p = d.str()
	}
	t.Files = d.strings()
	t.After = d.strings()
	t.Agent = d.str()
	t.NoChange = d.bool()
	t.TestsMayChange = d.bool()
	t.CreatedAt = d.time()
	t.UpdatedAt = d.time()
	for _, p := range []*int{&t.Runs, &t.ConsecutiveCompletionClaims, &t.ConsecutiveFailures, &t.EndpointFailures} {
		*p = d.int()
	}
	t.RetryAfter = d.time()
	t.ProcessorAutoRequeue = d.bool()
	t.Notes = d.str()
	if d.bool() {
		r := &Results{}
		r.Output = d.str()
		if d.bool() {
			code := d.int()
			r.ExitCode = &code
		}
		r.StartedAt = d.time()
		r.FinishedAt = d.time()
		r.DurationMS = d.varint()
		for _, p := range []*string{&r.Branch, &r.Host, &r.Commit, &r.DiffStat, &r.Validation} {
			*p = d.str()
		}
		r.TimedOut = d.bool()
		r.Classification = d.str()
		if d.bool() {
			u := &Usage{}
			u.Model = d.str()
			u.Input = d.varint()
			u.Output = d.varint()
			u.Cached = d.varint()
			r.Usage = u
		}
		t.Results = r
	}
	if d.bool() {
		m := &Merge{}
		m.Into = d.str()
		m.Commit = d.str()
		m.Squash = d.bool()
		m.At = d.time()
		t.Merged = m
	}
}
