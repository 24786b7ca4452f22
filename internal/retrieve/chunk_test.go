package retrieve

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// logShop has the function a task is about buried in a long module, and a
// short module whose docstring says the task's words in passing.
func logShop() map[string]string {
	var big strings.Builder
	big.WriteString("\"\"\"Storage.\"\"\"\n\n\n")
	for i := 0; i < 80; i++ {
		fmt.Fprintf(&big, "def store_record_%d(db, record):\n    \"\"\"Store a record in table %d.\"\"\"\n    db.insert(record, table=%d)\n    db.commit()\n    return record\n\n\n", i, i, i)
	}
	big.WriteString("def cycle(directory):\n    \"\"\"Rotate the log archives and compress the old ones.\"\"\"\n" +
		"    for archive in sorted_archives(directory):\n        compress(archive)\n    drop_oldest(directory)\n")
	return map[string]string{
		"app/storage.py": big.String(),
		"app/notes.py":   "\"\"\"Notes. To rotate the log and compress old archives, see storage.\"\"\"\n\n\ndef note(text):\n    \"\"\"Keep a note.\"\"\"\n    return text\n",
		"app/web.py":     "\"\"\"Web.\"\"\"\n\n\ndef serve(port):\n    \"\"\"Serve pages.\"\"\"\n    return port\n",
	}
}

func TestRankChunkSignal(t *testing.T) {
	f := newFixture(t, logShop())
	ctx := context.Background()
	q := Analyze("rotate and compress old log archives")
	rank := func(root string) []Candidate {
		r := NewRanker(f.kb, f.repoID)
		r.Root = root
		c, err := r.Rank(ctx, q, 10)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// File-level BM25 alone divides storage.py's one relevant function by
	// its eighty others.
	if c := rank(""); len(c) < 2 || c[0].Path != "app/notes.py" {
		for _, x := range c {
			t.Log(x.Path, x.Signals)
		}
		t.Fatalf("without the chunk signal: got %v, want the short notes.py first (the fixture no longer tests anything)", paths(c))
	}
	c := rank(f.root)
	if len(c) < 2 || c[0].Path != "app/storage.py" {
		t.Fatalf("with the chunk signal: got %v, want storage.py first", paths(c))
	}
	if c[0].Signals["chunk"] != 1 {
		t.Errorf("storage.py chunk signal: got %v, want 1 (the best definition of all)", c[0].Signals["chunk"])
	}
	if c[1].Path != "app/notes.py" || c[1].Signals["chunk"] != 0 {
		t.Errorf("second: got %s with chunk signal %v, want notes.py, whose words are in no definition, with none", c[1].Path, c[1].Signals["chunk"])
	}
}

func TestRankChunkSignalMissingFile(t *testing.T) {
	// A file indexed and then deleted keeps its other signals: no error.
	f := newFixture(t, logShop())
	r := NewRanker(f.kb, f.repoID)
	r.Root = t.TempDir() // nothing there
	c, err := r.Rank(context.Background(), Analyze("rotate and compress old log archives"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) == 0 || c[0].Signals["chunk"] != 0 {
		t.Fatalf("got %v, want candidates without a chunk signal", c)
	}
}

// TestRankChunkSignalJSTests: a JS test file's cases are calls the index
// does not define, so they are chunks of their own: test/req.fresh.js,
// whose one case about revalidation sits among thirty others and which
// defines nothing the task's words are in, had no chunk at all.
func TestRankChunkSignalJSTests(t *testing.T) {
	var cases strings.Builder
	cases.WriteString("var get = require('supertest')\n\ndescribe('req', function () {\n  describe('.fresh', function () {\n")
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&cases, "    it('should handle header %d', function (done) {\n      get(app, '/%d').expect(200, done)\n    })\n\n", i, i)
	}
	cases.WriteString("    it('should revalidate a conditional request with an etag', function (done) {\n" +
		"      get(app, '/').set('If-None-Match', etag).expect(304, done)\n    })\n  })\n})\n")
	f := newFixture(t, map[string]string{
		"test/req.fresh.js": cases.String(),
		"test/support.js":   "function noop () {}\n\nfunction app () { return noop }\n\nmodule.exports = app\n",
		"lib/view.js":       "function render (name) {\n  return name\n}\n\nmodule.exports = render\n",
	})
	c := f.rankReading(t, "revalidate a conditional request by its etag")
	byPath := candidatesByPath(c)
	fresh, ok := byPath["test/req.fresh.js"]
	if !ok || fresh.Signals["chunk"] != 1 {
		t.Fatalf("test/req.fresh.js: got %v, want the chunk signal 1 from its revalidation case", fresh.Signals)
	}
	if len(testChunks(&rankFile{path: "lib/view.js", lang: "javascript"}, []string{"it('x', function () {", "})"})) != 0 {
		t.Error("a source file's it() calls are chunks; want only a test file's")
	}
}

// TestRankChunkSignalTopLevelCode: what a file does outside its
// definitions (setup.py's call of setup, a script's body) is a chunk too,
// and a file that defines nothing is one chunk.
func TestRankChunkSignalTopLevelCode(t *testing.T) {
	var classifiers strings.Builder
	for _, v := range []string{"3.8", "3.9", "3.10", "3.11"} {
		fmt.Fprintf(&classifiers, "        \"Programming Language :: Python :: %s\",\n", v)
	}
	f := newFixture(t, map[string]string{
		"setup.py": "import re\nfrom setuptools import setup\n\n\ndef read(fname):\n    with open(fname) as fp:\n        return fp.read()\n\n\n" +
			"setup(\n    name=\"shop\",\n    version=\"1.0\",\n    long_description=read(\"README.rst\"),\n    classifiers=[\n" + classifiers.String() +
			"    ],\n    python_requires=\">=3.8\",\n)\n",
		"run.py":      "import sys\n\nprint(\"supported interpreters\", sys.version)\nsys.exit(0)\n",
		"shop/fmt.py": "\"\"\"Formatting.\"\"\"\n\n\ndef pad(text):\n    \"\"\"Pad text.\"\"\"\n    return text\n",
	})
	c := f.rankReading(t, "Support Python 3.12 in the classifiers and supported interpreters")
	byPath := candidatesByPath(c)
	if got := byPath["setup.py"].Signals["chunk"]; got == 0 {
		t.Errorf("setup.py: got no chunk signal, want one from its call of setup (signals %v)", byPath["setup.py"].Signals)
	}
	if got := byPath["run.py"].Signals["chunk"]; got == 0 {
		t.Errorf("run.py, which defines nothing: got no chunk signal, want the whole file as one (signals %v)", byPath["run.py"].Signals)
	}
}

// TestRankChunkSignalStatementsInDefinedFile: a module mostly made of
// definitions still has chunks for the statements between them, however
// small their share: lib/request.js's getters are calls of defineGetter.
func TestRankChunkSignalStatementsInDefinedFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("'use strict'\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "/**\n * Step %d.\n */\n\nfunction step%d (value) {\n  var out = value + %d\n  out = out * 2\n  return out\n}\n\n", i, i, i)
	}
	b.WriteString("defineGetter(req, 'hostname', () => {\n  var host = this.get('X-Forwarded-Host')\n  host = host.trimRight()\n  return host\n})\n")
	f := newFixture(t, map[string]string{"lib/request.js": b.String(), "lib/view.js": "function render (name) {\n  return name\n}\n"})
	c := f.rankReading(t, "replace the deprecated trimRight of the forwarded host")
	if got := candidatesByPath(c)["lib/request.js"].Signals["chunk"]; got != 1 {
		t.Errorf("lib/request.js: got chunk signal %v, want 1 from its getter's statement", got)
	}
}

// rankReading ranks the files for task as cra retrieve does, reading the
// checkout for the chunk signal.
func (f *fixture) rankReading(t *testing.T, task string) []Candidate {
	t.Helper()
	r := NewRanker(f.kb, f.repoID)
	r.Root = f.root
	c, err := r.Rank(context.Background(), Analyze(task), 10)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
