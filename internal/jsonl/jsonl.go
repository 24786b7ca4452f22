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
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var v T
			if json.Unmarshal(line, &v) == nil && (valid == nil || valid(&v)) {
				out = append(out, v)
			} else {
				bad++
			}
		}
		if errors.Is(err, io.EOF) {
			return out, bad, nil
		}
		if err != nil {
			return out, bad, fmt.Errorf("read %d records: %w", len(out), err)
		}
	}
}
