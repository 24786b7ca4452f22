package board

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fillAll sets every exported field reachable from v to a value other
// than its zero, each a different one, so that a field the index's
// codec forgets comes back zero.
func fillAll(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d ✓", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(-*n * 1000003))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(v.Index(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2020, 1, 2, 3, 4, 5, *n, time.FixedZone("", 3600*(*n%5)))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i), n)
			}
		}
	default:
		panic(fmt.Sprintf("fillAll: no value for a %s: teach it, and the index's codec, this kind", v.Kind()))
	}
}

// TestIndexCodecEveryField: every field of a task, each set, comes back
// from the list index's file as it went in; so do a task with every
// field zero and the entries' stats. A damaged or
// truncated file, or one of another format, is refused.
func TestIndexCodecEveryField(t *testing.T) {
	full := &Task{}
	n := 0
	fillAll(reflect.ValueOf(full).Elem(), &n)
	ix := newListIndex()
	ix.Entries[full.ID] = &indexEntry{Stat: fileStat{Size: 312, MtimeNS: -5, CtimeNS: 1 << 60, Ino: 1<<64 - 1}, ReadNS: 99, Task: full}
	ix.Entries["t-00000000"] = &indexEntry{Task: &Task{}}
	data := encodeIndex(ix)
	got, err := decodeIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ix, got, cmpopts.IgnoreUnexported(Task{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the index read back differs (-wrote +read):\n%s", diff)
	}
	if !got.Entries[full.ID].Task.CreatedAt.Equal(full.CreatedAt) {
		t.Error("a time did not come back as the same instant")
	}
	for cut := range len(data) {
		if _, err := decodeIndex(data[:cut]); err == nil {
			t.Fatalf("an index cut to %d of %d bytes was read", cut, len(data))
		}
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x10
		if _, err := decodeIndex(bad); err == nil {
			t.Fatalf("an index with byte %d changed was read", i)
		}
	}
}

// FuzzDecodeIndex: whatever the list index's file holds, reading it
// returns an index or an error, never a panic; an index it returns is
// written back as the same entries.
func FuzzDecodeIndex(f *testing.F) {
	ix := newListIndex()
	task := NewTask("a title")
	task.ID = "t-0000abcd"
	ix.Entries[task.ID] = &indexEntry{Task: task}
	f.Add(encodeIndex(ix))
	f.Add([]byte(indexMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := decodeIndex(data)
		if err != nil {
			return
		}
		again, err := decodeIndex(encodeIndex(ix))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ix, again, cmpopts.IgnoreUnexported(Task{}), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("written back differently:\n%s", diff)
		}
	})
}
