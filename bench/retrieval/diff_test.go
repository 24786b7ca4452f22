package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseDiff(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []fileDiff
	}{
		{
			name: "git -U0: replacement, pure insertion, pure deletion",
			in: `diff --git a/src/click/core.py b/src/click/core.py
index 1111111..2222222 100644
--- a/src/click/core.py
+++ b/src/click/core.py
@@ -10,2 +10,3 @@ class Context:
-    a = 1
-    b = 2
+    a = 1
+    b = 3
+    c = 4
@@ -40,0 +42,2 @@ def f():
+    x()
+    y()
@@ -60 +63,0 @@ def g():
-    z()
`,
			want: []fileDiff{{OldPath: "src/click/core.py", NewPath: "src/click/core.py",
				Ranges: []lineRange{{10, 11}, {40, 41}, {60, 60}}}},
		},
		{
			name: "insertion at the top of the file and at line 1",
			in: `diff --git a/a.go b/a.go
--- a/a.go
+++ b/a.go
@@ -0,0 +1 @@
+// header
@@ -1,0 +3 @@
+x
`,
			want: []fileDiff{{OldPath: "a.go", NewPath: "a.go", Ranges: []lineRange{{1, 2}}}},
		},
		{
			name: "swebench patch with context lines",
			in: `diff --git a/src/sqlfluff/rules/L031.py b/src/sqlfluff/rules/L031.py
--- a/src/sqlfluff/rules/L031.py
+++ b/src/sqlfluff/rules/L031.py
@@ -211,7 +211,7 @@ def _lint_aliases_in_join(
             violation_buff = []
             to_check = list(filter(lambda x: x.alias_info, table_aliases))
 
-            # How many times does each table appear?
+            # How many times does each table appear in the FROM clause?
             table_counts = Counter(ai.table_ref.raw for ai in to_check)
 
             for alias_info in to_check:
@@ -300,3 +300,5 @@ def other():
     a
     b
+    c
+    d
     e
diff --git a/src/sqlfluff/core/new.py b/src/sqlfluff/core/new.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/src/sqlfluff/core/new.py
@@ -0,0 +1,2 @@
+def f():
+    pass
diff --git a/old.py b/old.py
deleted file mode 100644
index 4444444..0000000
--- a/old.py
+++ /dev/null
@@ -1,3 +0,0 @@
-a
-b
-c
`,
			want: []fileDiff{
				{OldPath: "src/sqlfluff/rules/L031.py", NewPath: "src/sqlfluff/rules/L031.py", Ranges: []lineRange{{214, 214}, {301, 302}}},
				{OldPath: "", NewPath: "src/sqlfluff/core/new.py", Ranges: []lineRange{{1, 1}}},
				{OldPath: "old.py", NewPath: "", Ranges: []lineRange{{1, 3}}},
			},
		},
		{
			name: "removed lines that look like headers, no newline at end",
			in: `diff --git a/notes.txt b/notes.txt
--- a/notes.txt
+++ b/notes.txt
@@ -1,3 +1,2 @@
--- a/fake
-+++ b/fake
+@@ -1 +1 @@
 tail
\ No newline at end of file
diff --git a/b.txt b/b.txt
--- a/b.txt
+++ b/b.txt
@@ -5 +5 @@
-x
+y
`,
			want: []fileDiff{
				{OldPath: "notes.txt", NewPath: "notes.txt", Ranges: []lineRange{{1, 2}}},
				{OldPath: "b.txt", NewPath: "b.txt", Ranges: []lineRange{{5, 5}}},
			},
		},
		{
			name: "binary, mode change, rename, quoted path",
			in: `diff --git a/img.png b/img.png
index 5555555..6666666 100644
Binary files a/img.png and b/img.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git a/x.py b/y.py
similarity index 100%
rename from x.py
rename to y.py
diff --git "a/caf\303\251 menu.py" "b/caf\303\251 menu.py"
--- "a/caf\303\251 menu.py"
+++ "b/caf\303\251 menu.py"
@@ -2 +2 @@
-old
+new
`,
			want: []fileDiff{
				{OldPath: "img.png", NewPath: "img.png", Binary: true},
				{OldPath: "run.sh", NewPath: "run.sh"},
				{OldPath: "x.py", NewPath: "y.py"},
				{OldPath: "café menu.py", NewPath: "café menu.py", Ranges: []lineRange{{2, 2}}},
			},
		},
		{
			name: "plain unified diff without git headers, CRLF",
			in:   "--- a/one.c\t2024-01-01 00:00:00\r\n+++ b/one.c\t2024-01-02 00:00:00\r\n@@ -3,2 +3,2 @@\r\n-a\r\n+b\r\n c\r\n--- a/two.c\n+++ b/two.c\n@@ -7,0 +8 @@\n+d\n",
			want: []fileDiff{
				{OldPath: "one.c", NewPath: "one.c", Ranges: []lineRange{{3, 3}}},
				{OldPath: "two.c", NewPath: "two.c", Ranges: []lineRange{{7, 8}}},
			},
		},
		{
			name: "git header paths with spaces",
			in: `diff --git a/my dir/f.py b/my dir/f.py
index 1..2 100644
Binary files differ
`,
			want: []fileDiff{{OldPath: "my dir/f.py", NewPath: "my dir/f.py", Binary: true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseDiff(tc.in)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(fileDiff{}), cmpopts.IgnoreFields(fileDiff{}, "markersSeen"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parseDiff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChangedRanges(t *testing.T) {
	diffs := []fileDiff{
		{OldPath: "a.py", NewPath: "a.py", Ranges: []lineRange{{5, 6}}},
		{OldPath: "", NewPath: "new.py", Ranges: []lineRange{{1, 1}}},
		{OldPath: "img.png", NewPath: "img.png", Binary: true},
		{OldPath: "a.py", NewPath: "a.py", Ranges: []lineRange{{1, 2}, {7, 9}}},
	}
	got := changedRanges(diffs)
	want := map[string][]lineRange{
		"a.py":    {{1, 2}, {5, 9}},
		"img.png": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changedRanges (-want +got):\n%s", diff)
	}
}

func TestMergeRanges(t *testing.T) {
	got := mergeRanges([]lineRange{{10, 12}, {1, 1}, {2, 3}, {11, 20}, {22, 22}})
	want := []lineRange{{1, 3}, {10, 20}, {22, 22}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mergeRanges (-want +got):\n%s", diff)
	}
}

func FuzzParseDiff(f *testing.F) {
	f.Add("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n")
	f.Add("--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+n\n")
	f.Add("@@ -0,0 +0,0 @@\n")
	f.Add("diff --git \"a/q\\\"\" b/x\n@@ -3 +3 @@\n-\n+\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range parseDiff(s) {
			for i, r := range d.Ranges {
				if r.Start < 1 || r.End < r.Start {
					t.Fatalf("bad range %v in %q", r, s)
				}
				if i > 0 && r.Start <= d.Ranges[i-1].End+1 {
					t.Fatalf("ranges not merged: %v", d.Ranges)
				}
			}
		}
	})
}
