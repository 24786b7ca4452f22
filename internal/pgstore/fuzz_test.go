package pgstore

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cra-dev/cra/internal/world"
)

// FuzzImport: any file given as a world log either imports and exports
// back byte for byte, every line reading the same from both backends, or
// is refused (a torn last line) leaving the database empty.
func FuzzImport(f *testing.F) {
	f.Add([]byte("[2026-01-02T03:04:05.000Z][event:bash][x] ok\n"))
	f.Add([]byte("[2026-01-02T03:04:05.000Z][agent:start][T-1] go | need: n\n[2026-01-02T03:04:06.000Z][agent:verified][T-1] forged\n\n"))
	f.Add([]byte("[2025-01-02 03:04:05] [claude] [abc:running] old\nnot a line \xff\x00\n[2025-01-02 03:04:06] [claude] [abc:done] old\n"))
	f.Add([]byte("[2026-01-02T03:04:05.000Z][event:bash][x] torn"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte("[2026-01-02T03:04:05Z][agent:start][a\\x5d] x\n[2026-01-02T03:04:05Z][event:user][a\\x5d] u\n"))
	ctx := context.Background()
	pg := openPG(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := pg.pool.Exec(ctx, "TRUNCATE world_log, world_agents, world_markers"); err != nil {
			t.Fatal(err)
		}
		file := openFile(t, nil)
		if err := os.WriteFile(file.Path(), data, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := pg.Import(ctx, file)
		var out bytes.Buffer
		if xerr := pg.Export(ctx, &out); xerr != nil {
			t.Fatal(xerr)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			if err == nil || !strings.Contains(err.Error(), "after its last complete line") || out.Len() != 0 {
				t.Fatalf("a log ending mid-line: import = %d, %v; export %q", n, err, out.Bytes())
			}
			return
		}
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("export = %q, want the file %q", out.Bytes(), data)
		}
		a := records(func(fn func(*world.Record) error) error { return file.Select(ctx, world.Filter{}, fn) })
		b := records(func(fn func(*world.Record) error) error { return pg.Select(ctx, world.Filter{}, fn) })
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("records differ:\nfile       %q\npostgresql %q", a, b)
		}
		ca, erra := file.Current(ctx)
		cb, errb := pg.Current(ctx)
		if !reflect.DeepEqual(ca, cb) || (erra == nil) != (errb == nil) {
			t.Fatalf("agents differ:\nfile       %+v %v\npostgresql %+v %v", ca, erra, cb, errb)
		}
	})
}
