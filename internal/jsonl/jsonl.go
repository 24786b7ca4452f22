// Package jsonl keeps append-only files of JSON records, one a line: the
// recycler's per-task review histories and the supervisors' run log. A
// record is appended whole and synced; a line torn by a crash is ended
// before the next record, and skipped, never fatal, when read.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Append writes v as one line at the end of the file at path, making the
// file and its directory when needed, and syncs it. When the file ends
// mid-line (a crash during an earlier append), that line is ended first,
// so this record stays whole.
func Append(path string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return AppendLine(path, line)
}

// AppendLine writes line, one record already encoded, as Append writes
// a record. A line that is empty or holds a newline is refused: it would
// be no record, or two.
func AppendLine(path string, line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return errors.New("the record is empty: append one JSON object")
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("the record holds a newline: encode it on one line")
	}
	line = slices.Clip(line) // the appends below never write into the caller's array
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	_, werr := f.Write(append(line, '\n'))
	return errors.Join(werr, f.Sync(), f.Close())
}

// Read returns the records of the file at path, oldest first, and how
// many lines could not be read (see Decode). A missing file has none.
func Read[T any](path string, valid func(*T) bool) ([]T, int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return Decode(f, valid)
}

// Decode reads records from r, one JSON object a line. A blank line is
// skipped; a line that does not decode, or whose record valid refuses
// (nil accepts every record), is skipped and counted.
func Decode[T any](r io.Reader, valid func(*T) bool) ([]T, int, error) {
	var out []T
	bad := 0
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		out, bad = decodeLine(line, valid, out, bad)
		if errors.Is(err, io.EOF) {
			return out, bad, nil
		}
		if err != nil {
			return out, bad, fmt.Errorf("read %d records: %w", len(out), err)
		}
	}
}

// DecodeLines reads records from lines, one JSON object each, as Decode
// reads the lines of a file: a blank line is skipped, a bad one counted.
func DecodeLines[T any](lines [][]byte, valid func(*T) bool) ([]T, int) {
	var out []T
	bad := 0
	for _, line := range lines {
		out, bad = decodeLine(line, valid, out, bad)
	}
	return out, bad
}

// decodeLine adds line's record to out, or counts it in bad.
func decodeLine[T any](line []byte, valid func(*T) bool, out []T, bad int) ([]T, int) {
	if line = bytes.TrimSpace(line); len(line) == 0 {
		return out, bad
	}
	var v T
	if json.Unmarshal(line, &v) == nil && (valid == nil || valid(&v)) {
		return append(out, v), bad
	}
	return out, bad + 1
}

// ReadLines returns the lines of the file at path, without their
// newlines, for DecodeLines. A missing file has none.
func ReadLines(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSuffix(data, []byte{'\n'})
	if len(data) == 0 {
		return nil, nil
	}
	return bytes.Split(data, []byte{'\n'}), nil
}
