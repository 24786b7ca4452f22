package lang

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// genPython returns about n bytes of varied, valid Python: classes with
// methods, docstrings, comments, imports and calls.
func genPython(n int) []byte {
	var b strings.Builder
	b.WriteString("\"\"\"Generated module.\"\"\"\nimport os\nfrom .models import Base, helper\n\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `

class Model%d(Base):
    """Model number %d.

    Args:
        name (str): The name.
    """

    table = "model_%d"

    def __init__(self, name, size=%d):
        # Keep the name because save() needs it.
        self.name = name
        self.size = size

    def save(self, *args, **kwargs):
        """Save it."""
        path = os.path.join(self.table, self.name)
        for item in range(self.size):
            helper(item, path=path)  # TODO: batch these
        return super().save(*args, **kwargs)


def build_%d(values):
    result = [Model%d(v) for v in values if v]
    return {k: v for k, v in zip(values, result)}
`, i, i, i, i, i, i)
	}
	return []byte(b.String())
}

// genTS returns about n bytes of varied, valid TypeScript.
func genTS(n int) []byte {
	var b strings.Builder
	b.WriteString("import { Base, helper } from \"./base\";\nimport type { Options } from \"./options\";\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `
/**
 * Service number %d.
 * @param opts - the options
 */
export class Service%d extends Base implements Runner {
  private count: number = 0;

  constructor(private readonly opts: Options) {
    super();
  }

  // Run it, because the scheduler asks.
  async run(input: string[]): Promise<Result<number>> {
    for (const item of input) {
      this.count += helper(item, this.opts);
    }
    return new Result(this.count);
  }
}

export const make%d = (opts: Options): Service%d => new Service%d(opts);

export interface Shape%d { area(): number; name: string }
export type Id%d = string | number;
`, i, i, i, i, i, i, i)
	}
	return []byte(b.String())
}

// genGo returns about n bytes of varied, valid Go.
func genGo(n int) []byte {
	var b strings.Builder
	b.WriteString("package gen\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `
// Thing%d is a thing.
type Thing%d struct {
	Name  string
	Parts []string
}

// Join joins the parts; it exists because callers want one string.
func (t *Thing%d) Join(sep string) string {
	if len(t.Parts) == 0 {
		return fmt.Sprintf("%%s:empty", t.Name)
	}
	return strings.Join(t.Parts, sep) // TODO: cache
}
`, i, i, i)
	}
	return []byte(b.String())
}

func benchParse(b *testing.B, l Language, src []byte) {
	p := NewParser()
	defer p.Close()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(l, src); err != nil {
			b.Fatal(err)
		}
	}
}

// The generated sources are 256 KiB, about 6,000 lines: a large file.
func BenchmarkParsePython(b *testing.B)     { benchParse(b, Python, genPython(256<<10)) }
func BenchmarkParseTypeScript(b *testing.B) { benchParse(b, TypeScript, genTS(256<<10)) }
func BenchmarkParseGo(b *testing.B)         { benchParse(b, Go, genGo(256<<10)) }

// corpusFile is one source file of $CRA_LANG_CORPUS.
type corpusFile struct {
	path string
	l    Language
	src  []byte
}

// loadCorpus reads every supported file under $CRA_LANG_CORPUS, skipping
// the test or benchmark when the variable is not set.
func loadCorpus(tb testing.TB) (files []corpusFile, size int64) {
	dir := os.Getenv("CRA_LANG_CORPUS")
	if dir == "" {
		tb.Skip("set CRA_LANG_CORPUS to a directory of sources")
	}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		l, ok := Detect(path)
		if !ok {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files = append(files, corpusFile{path, l, src})
		size += int64(len(src))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Skip("no supported files")
	}
	return files, size
}

// BenchmarkParseCorpus parses every supported file under $CRA_LANG_CORPUS
// (for example a Django checkout) once per op on one goroutine.
func BenchmarkParseCorpus(b *testing.B) {
	files, size := loadCorpus(b)
	p := NewParser()
	defer p.Close()
	b.SetBytes(size)
	for b.Loop() {
		for _, f := range files {
			if _, err := p.Parse(f.l, f.src); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(files)), "files")
}

// BenchmarkParseCorpusParallel parses the files of $CRA_LANG_CORPUS with one
// Parser per goroutine, as the indexer does; an op is one file, so files/s
// on all cores is 1e9 / (ns/op).
func BenchmarkParseCorpusParallel(b *testing.B) {
	files, size := loadCorpus(b)
	b.SetBytes(size / int64(len(files)))
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		p := NewParser()
		defer p.Close()
		for pb.Next() {
			f := files[int(next.Add(1))%len(files)]
			if _, err := p.Parse(f.l, f.src); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
