package cli

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/board"
	"github.com/cra-dev/cra/internal/fleet"
)

// fillFields sets every exported field of the struct v points at to a
// value that is not zero, pointers to structs filled the same way: a
// field added to a task's types is then set, and written by
// encoding/json, whether or not the hand-written encoder knows it.
func fillFields(v reflect.Value, n *int) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString("value " + string(rune('a'+*n%26)))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(*n))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"t-00000001", "t-00000002"}))
		case reflect.Struct:
			if f.Type() == reflect.TypeFor[time.Time]() {
				f.Set(reflect.ValueOf(time.Date(2026, 11, 28, 20, 0, *n, 5000, time.UTC)))
			} else {
				fillFields(f, n)
			}
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			if p.Elem().Kind() == reflect.Struct {
				fillFields(p.Elem(), n)
			} else {
				p.Elem().SetInt(int64(*n))
			}
			f.Set(p)
		default:
			panic("fillFields: a field of kind " + f.Kind().String() + ": teach fillFields and appendTaskJSON")
		}
	}
}

// sameAsEncodingJSON fails unless encodeTaskList writes tasks as
// encodeJSONArray does, byte for byte.
func sameAsEncodingJSON(t *testing.T, tasks []taskJSON) {
	t.Helper()
	var want, got bytes.Buffer
	if err := encodeJSONArray(&want, tasks); err != nil {
		t.Fatal(err)
	}
	if err := encodeTaskList(&got, tasks); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("encodeTaskList wrote\n%s\nencoding/json\n%s", got.String(), want.String())
	}
}

// TestTaskJSONEveryField: a task with every field set, one with none, and
// tasks whose strings need escaping are written as encoding/json writes
// them.
func TestTaskJSONEveryField(t *testing.T) {
	full := &fleet.Task{}
	n := 0
	fillFields(reflect.ValueOf(full).Elem(), &n)
	exit := 0
	tricky := fleet.NewTask(`<b>"quoted" & \escaped\</b>`)
	tricky.Need = "ünïcödé, \u2028 and \x00\x1f\x7f"
	tricky.Notes = "line one\nline\ttwo\r\n\xff\xfe invalid"
	tricky.Files = []string{"a&b.go", "ok.go"}
	tricky.Results = &board.Results{ExitCode: &exit, Usage: &board.Usage{}}
	tricky.Merged = &board.Merge{}
	tricky.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600+1800))
	empty := &fleet.Task{Results: &board.Results{}}
	sameAsEncodingJSON(t, []taskJSON{{Task: full, Folder: fleet.Pending}, {Task: empty}, {Task: tricky, Folder: fleet.FailedBlocked}})
	sameAsEncodingJSON(t, []taskJSON{})
	sameAsEncodingJSON(t, []taskJSON{{Task: fleet.NewTask("one")}})
}

// TestTaskJSONBadTime: a time encoding/json refuses is refused the same.
func TestTaskJSONBadTime(t *testing.T) {
	task := fleet.NewTask("far")
	task.UpdatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	var want, got bytes.Buffer
	werr := encodeJSONArray(&want, []taskJSON{{Task: task}})
	gerr := encodeTaskList(&got, []taskJSON{{Task: task}})
	if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
		t.Fatalf("encoding/json: %v; encodeTaskList: %v", werr, gerr)
	}
}

// FuzzTaskJSON: any strings and numbers in a task's fields are written
// as encoding/json writes them.
func FuzzTaskJSON(f *testing.F) {
	f.Add("title", "need", "notes", "t-00000001", "output", int64(3), int64(1700000000123))
	f.Add("<&>", "\u2028\u2029", "\xff", "", "\x00", int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, title, need, notes, after, output string, runs, ms int64) {
		task := fleet.NewTask(title)
		task.Need, task.Notes, task.Runs = need, notes, int(runs)
		if after != "" {
			task.After = []string{after, title}
		}
		task.CreatedAt = time.UnixMilli(ms).UTC()
		if output != "" {
			task.Results = &board.Results{Output: output, DurationMS: runs, Usage: &board.Usage{Model: output, Input: ms}}
		}
		sameAsEncodingJSON(t, []taskJSON{{Task: task, Folder: fleet.Folder(after)}, {Task: fleet.NewTask(need)}})
	})
}
