package world

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Position is a place between lines of the log: the byte offset where a
// line starts and the number of lines before it.
type Position struct {
	Offset int64 `json:"offset"`
	Line   int64 `json:"line"`
}

// Record is one line as read: where it is, its text and its entry, or the
// reason it is malformed.
type Record struct {
	Line   int64 // 1-based line number; 0 when unknown
	Offset int64 // byte offset of the line's start
	// Raw is the line without its newline. It is valid only during the
	// callback that receives it.
	Raw   []byte
	Entry Entry
	Err   *LineError // non-nil for a malformed line; Entry is then zero
	// Skipped is set on an agent entry the log's fold ignores, because
	// the lifecycle forbids it where it stands (see Log.Skipped). Every
	// reader of the log (Select, Tail, Follow, Scan, Check) sets it, so
	// that none takes such an entry for what happened.
	Skipped *TransitionError
}

// parseRecord parses raw into a record at start.
func parseRecord(raw []byte, start Position, tooLong bool) Record {
	r := Record{Line: start.Line + 1, Offset: start.Offset, Raw: raw}
	if tooLong {
		r.Err = &LineError{Line: r.Line, Err: fmt.Errorf("longer than %d bytes", MaxLineBytes)}
		return r
	}
	e, err := ParseLine(raw)
	if err != nil {
		r.Err = &LineError{Line: r.Line, Err: err}
		return r
	}
	r.Entry = e
	return r
}

// lineReader reads complete lines from a position. It is one-shot: at the
// end it has consumed a trailing partial line from its buffer, so a reader
// of a growing file makes a new one from pos.
type lineReader struct {
	r   *bufio.Reader
	pos Position // start of the next line
	buf []byte
}

func newLineReader(f io.ReaderAt, from Position) *lineReader {
	sr := io.NewSectionReader(f, from.Offset, math.MaxInt64-from.Offset)
	return &lineReader{r: bufio.NewReaderSize(sr, 256<<10), pos: from}
}

// next returns the next complete line without its newline and where it
// starts. After the last complete line it returns io.EOF, leaving a line
// without newline (one being written, or torn) unread. A line longer than
// MaxLineBytes comes back cut short with tooLong set.
func (lr *lineReader) next() (line []byte, start Position, tooLong bool, err error) {
	start = lr.pos
	lr.buf = lr.buf[:0]
	var n int64
	for {
		chunk, err := lr.r.ReadSlice('\n')
		n += int64(len(chunk))
		switch {
		case err == nil:
			lr.pos.Offset += n
			lr.pos.Line++
			if tooLong {
				return lr.buf, start, true, nil
			}
			if len(lr.buf) == 0 {
				return chunk[:len(chunk)-1], start, false, nil
			}
			lr.buf = append(lr.buf, chunk...)
			return lr.buf[:len(lr.buf)-1], start, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(lr.buf)+len(chunk) > MaxLineBytes {
				tooLong = true
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		default:
			return nil, start, false, err
		}
	}
}

// scanFile calls fn for every non-empty complete line of f from pos, in
// order; pre, when set, skips lines it rejects before they are parsed. It
// returns the position after the last complete line read.
func scanFile(ctx context.Context, f io.ReaderAt, from Position, pre func([]byte) bool, fn func(*Record) error) (Position, error) {
	lr := newLineReader(f, from)
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return lr.pos, err
			}
		}
		line, start, tooLong, err := lr.next()
		if err == io.EOF {
			return lr.pos, nil
		}
		if err != nil {
			return start, fmt.Errorf("read world log: %w", err)
		}
		if len(line) == 0 || (pre != nil && !tooLong && !pre(line)) {
			continue
		}
		rec := parseRecord(line, start, tooLong)
		if err := fn(&rec); err != nil {
			return lr.pos, err
		}
	}
}

// Scan calls fn for each non-empty line of the log from position from to
// the last complete line, malformed ones included (Record.Err says why)
// and skipped ones marked (Record.Skipped), and returns the position after it. A line still being written is left
// for a later call.
func (l *Log) Scan(ctx context.Context, from Position, fn func(*Record) error) (Position, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return from, fmt.Errorf("open world log: %w", err)
	}
	defer f.Close()
	mk := l.marks(ctx, f)
	return scanFile(ctx, f, from, nil, func(r *Record) error {
		if err := mk.mark(r); err != nil {
			return err
		}
		return fn(r)
	})
}

// tailBytes is how much of the log before a position an index or marker
// keeps to check, cheaply, that the log it describes is still there.
const tailBytes = 64

// tailAt returns up to tailBytes bytes of f before off.
func tailAt(f io.ReaderAt, off int64) ([]byte, error) {
	n := min(off, tailBytes)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off-n); err != nil {
		return nil, fmt.Errorf("read world log: %w", err)
	}
	return b, nil
}

// countLines returns the number of newlines in f before off.
func countLines(ctx context.Context, f io.ReaderAt, off int64) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for pos := int64(0); pos < off; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		m := int(min(int64(len(buf)), off-pos))
		k, err := f.ReadAt(buf[:m], pos)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		pos += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read world log: %w", err)
		}
	}
	return n, nil
}

// open opens the log for reading with its file info.
func (l *Log) open() (*os.File, os.FileInfo, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, nil, fmt.Errorf("open world log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat world log: %w", err)
	}
	return f, fi, nil
}

// completeEnd returns the offset after the last newline of f, whose size
// is size: the end of its complete lines.
func completeEnd(f io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, fmt.Errorf("read world log: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// scanBackward calls fn for the complete lines of f that end at or before
// end (a line boundary), newest first, until fn returns false. Empty lines
// are skipped. A line longer than MaxLineBytes comes back cut short to its
// first MaxLineBytes or less, with tooLong set, as lineReader gives it: a damaged stretch of the file
// costs its length in reading, not in memory, and each byte is copied
// once.
func scanBackward(ctx context.Context, f io.ReaderAt, end int64, fn func(off int64, line []byte, tooLong bool) bool) error {
	const chunk = 64 << 10
	// cur holds the bytes read so far of the line being assembled, in
	// file order: each new chunk read goes in front. Past MaxLineBytes,
	// its last pieces go, keeping the line's start.
	var cur [][]byte
	curLen, cut := 0, false
	emit := func(off int64) bool {
		line, tooLong := bytes.Join(cur, nil), cut
		cur, curLen, cut = cur[:0], 0, false
		return len(line) == 0 || fn(off, line, tooLong)
	}
	pos := end
	for pos > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(chunk), pos)
		b := make([]byte, int(n))
		if _, err := f.ReadAt(b, pos-n); err != nil {
			return fmt.Errorf("read world log: %w", err)
		}
		j := len(b)
		if pos == end {
			j-- // the newline that ends the last line
		}
		pos -= n
		for {
			i := bytes.LastIndexByte(b[:j], '\n')
			if part := b[i+1 : j]; len(part) > 0 {
				cur = append([][]byte{part}, cur...)
				curLen += len(part)
				for curLen > MaxLineBytes && len(cur) > 1 {
					curLen -= len(cur[len(cur)-1])
					cur, cut = cur[:len(cur)-1], true
				}
			}
			if i < 0 {
				break
			}
			if !emit(pos + int64(i) + 1) {
				return nil
			}
			j = i
		}
	}
	if curLen > 0 {
		emit(0)
	}
	return nil
}
