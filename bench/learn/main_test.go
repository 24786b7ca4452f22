package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cra-dev/cra/internal/learn"
	"github.com/cra-dev/cra/internal/retrieve"
)

// TestWriteGo: the generated source names every weight by its field, with
// the value fitted, and says what it was fitted to.
func TestWriteGo(t *testing.T) {
	var w retrieve.Weights
	for i, n := range append(retrieve.Signals, "prose", "test_demotion", "decl_demotion", "pair_history", "history_damping", "pair_match") {
		if err := w.Set(n, float64(i+1)/20); err != nil {
			t.Fatal(err)
		}
	}
	ex := []learn.Example{{Repo: "a/x", Commit: "1", Date: time.Unix(0, 0)}, {Repo: "b/y", Commit: "2", Date: time.Unix(0, 0)}}
	path := filepath.Join(t.TempDir(), "w.go")
	if err := writeGo(path, w, learn.FitConfig{Loss: learn.LossSoftmax, L2: 0.03}, ex); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	typ := reflect.TypeOf(w)
	for i := range typ.NumField() {
		f := typ.Field(i)
		v, _ := w.Get(strings.TrimSuffix(f.Tag.Get("json"), ",omitempty"))
		if want := fmt.Sprintf("%s: %g", f.Name, v); !strings.Contains(src, want) {
			t.Errorf("the source lacks %q:\n%s", want, src)
		}
	}
	doc := strings.ReplaceAll(src, "\n// ", " ")
	for _, want := range []string{"DO NOT EDIT", "softmax loss", "every changed code file an answer", "2 commits of 2 public repositories", "a/x, b/y"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the source lacks %q:\n%s", want, src)
		}
	}
}
