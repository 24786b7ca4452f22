package lang

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestECMAImports(t *testing.T) {
	tests := []struct {
		src  string
		want []Import
	}{
		{`import x from "./x";`, []Import{{Path: "./x", Names: []string{"default"}, Line: 1}}},
		{`import "./side";`, []Import{{Path: "./side", Line: 1}}},
		{`import * as ns from 'ns';`, []Import{{Path: "ns", Line: 1}}},
		{`import { a, b as c } from "@/lib/ab";`, []Import{{Path: "@/lib/ab", Names: []string{"a", "b"}, Line: 1}}},
		{`import type { T } from "./t";`, []Import{{Path: "./t", Names: []string{"T"}, TypeOnly: true, Line: 1}}},
		{`import { type A, type B } from "./t";`, []Import{{Path: "./t", Names: []string{"A", "B"}, TypeOnly: true, Line: 1}}},
		{`import { type A, b } from "./t";`, []Import{{Path: "./t", Names: []string{"A", "b"}, Line: 1}}},
		{`export { x, y as z } from "./x";`, []Import{{Path: "./x", Names: []string{"x", "y"}, Line: 1}}},
		{`export * from "./all";`, []Import{{Path: "./all", Line: 1}}},
		{`export * as all from "./all";`, []Import{{Path: "./all", Line: 1}}},
		{`export type { T } from "./t";`, []Import{{Path: "./t", Names: []string{"T"}, TypeOnly: true, Line: 1}}},
		{`export { local };`, nil},
		{`const fs = require("fs");`, []Import{{Path: "fs", Line: 1}}},
		{`const m = require(name);`, nil},
		{"function f() {\n  return import(\"./lazy\");\n}", []Import{{Path: "./lazy", Line: 2}}},
		{"const p = import(`./x`);", nil},
		{`import fs = require("fs");`, []Import{{Path: "fs", Line: 1}}},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			f := parseOK(t, p, TypeScript, []byte(tc.src))
			if diff := cmp.Diff(tc.want, f.Imports, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("imports (-want +got):\n%s", diff)
			}
		})
	}
}

// symbolStrings renders symbols as "kind name parent".
func symbolStrings(f *File) []string {
	var out []string
	for _, s := range f.Symbols {
		out = append(out, s.Kind+" "+s.Name+" "+strconv.Itoa(s.Parent))
	}
	return out
}

func TestECMASymbols(t *testing.T) {
	tests := []struct {
		name string
		lang Language
		src  string
		want []string
	}{
		{"function", JavaScript, "function f() {}", []string{"function f -1"}},
		{"generator", JavaScript, "function* g() {}", []string{"function g -1"}},
		{"arrow and function expression", JavaScript, "const a = () => 1;\nlet b = function () {};\nvar c = async function* () {};",
			[]string{"function a -1", "function b -1", "function c -1"}},
		{"top-level variables only", JavaScript, "const A = 1;\nfunction f() { const local = 2; let g = () => local; }\nfor (const x of xs) {}",
			[]string{"variable A -1", "function f -1", "function g 1"}},
		{"destructuring skipped", JavaScript, "const { a, b } = obj;\nconst [c] = arr;", nil},
		{"class members", JavaScript, "class A extends B {\n  x = 1;\n  static y = () => 2;\n  #p() {}\n  get g() { return 1; }\n  m() {}\n}",
			[]string{"class A -1", "variable x 0", "method y 0", "method #p 0", "method g 0", "method m 0"}},
		{"class expression", JavaScript, "const K = class {};", []string{"class K -1"}},
		{"object literal functions", JavaScript, "const api = {\n  get() {},\n  put: async () => {},\n  n: 1,\n};",
			[]string{"variable api -1", "function get 0", "function put 0"}},
		{"commonjs", JavaScript, "module.exports.a = function () {};\nexports.b = () => {};\nmodule.exports.C = class {};\nother.d = () => {};",
			[]string{"function a -1", "function b -1", "class C -1", "function d -1"}},
		{"commonjs in a function", JavaScript, "function f() {\n  exports.g = () => {};\n  other.h = () => {};\n}",
			[]string{"function f -1", "function g 0"}},
		{"property assignments", JavaScript, "res.send = function send(body) {\n  return this;\n};\nproto.handle = function handle(req, res, out) {};\nFoo.prototype.bar = async (a) => a;\napp.K = class K {};\nx.y = 1;\nx.z = other;\nobj[name] = function () {};",
			[]string{"function send -1", "function handle -1", "function bar -1", "class K -1"}},
		{"property assignments nested", JavaScript, "methods.forEach(function (m) {\n  app[m] = function () {};\n  app.each = function each() {};\n});\nif (x) {\n  a.b = () => {};\n}\nfunction f() {\n  this.g = () => {};\n  a.h = function () {};\n}\nclass C {\n  m() { this.n = () => {}; }\n}",
			[]string{"function f -1", "class C -1", "method m 1"}},
		{"chained assignment", JavaScript, "a.b = c.d = function () {};", []string{"function d -1"}},
		{"top-level IIFE", JavaScript, "(function () {\n  lib.a = function () {};\n  function inner() {}\n})();\n(() => {\n  lib.b = () => {};\n})();\n!function () {\n  lib.c = function () {};\n}();\n(function () {\n  lib.d = function () {};\n}).call(this);",
			[]string{"function a -1", "function inner -1", "function b -1", "function c -1", "function d -1"}},
		{"nested IIFE", JavaScript, "function f() {\n  (function () {\n    lib.a = function () {};\n  })();\n}\nwrap(function () {\n  lib.b = function () {};\n});",
			[]string{"function f -1"}},
		{"ts namespace and typed", TypeScript, "namespace N {\n  util.f = (a: string): number => 1;\n}\nFoo.prototype.g = function (this: Foo): void {};",
			[]string{"function f -1", "function g -1"}},
		{"export default anonymous", JavaScript, "export default () => {};", []string{"function default -1"}},
		{"export default named", JavaScript, "export default function main() {}", []string{"function main -1"}},
		{"ts kinds", TypeScript, "export interface I { m(): void; p: string }\nexport type T = A | B;\nexport enum E { X }\ndeclare function d(): void;\nabstract class K { abstract am(): void; }",
			[]string{"interface I -1", "method m 0", "type_alias T -1", "enum E -1", "function d -1", "class K -1", "method am 5"}},
		{"namespace members", TypeScript, "namespace N {\n  export const z = 1;\n  const y = 2;\n}", []string{"variable z -1", "variable y -1"}},
		{"tsx component", TSX, "export const App = () => <div />;", []string{"function App -1"}},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := parseOK(t, p, tc.lang, []byte(tc.src))
			if diff := cmp.Diff(tc.want, symbolStrings(f), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("symbols (-want +got):\n%s", diff)
			}
		})
	}
}

func TestECMASignatures(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"export async function f<T>(a: T): Promise<T> {}", "export async function f<T>(a: T): Promise<T>"},
		{"res.send = function send(body) {\n  return this;\n};", "res.send = function send(body)"},
		{"@Component({})\nexport class C extends B implements I {}", "export class C extends B implements I"},
		{"export const f = async (a: number): Promise<void> => {};", "export const f = async (a: number): Promise<void> =>"},
		{"let a = 1, b = 2;", "let a = 1"},
		{"type U =\n  | A\n  | B;", "type U = | A | B"},
		{"export interface I<T> extends J {\n  x: T;\n}", "export interface I<T> extends J"},
		{"function f(\n  a: number, // first\n  b: string,\n) {}", "function f(a: number, b: string,)"},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			f := parseOK(t, p, TypeScript, []byte(tc.src))
			if len(f.Symbols) == 0 {
				t.Fatal("no symbols")
			}
			if got := f.Symbols[0].Signature; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestECMAReferences(t *testing.T) {
	tests := []struct {
		name string
		lang Language
		src  string
		want []string
	}{
		{"calls", JavaScript, "function f() { g(); a.b.c(); this.m(); new K(); new ns.L(); super.x(); }",
			[]string{"0 call g", "0 call c a.b", "0 call m this", "0 call K", "0 call L ns", "0 call x super"}},
		{"js inheritance", JavaScript, "class A extends mod.Base {}", []string{"0 inherit Base mod"}},
		{"ts inheritance", TypeScript, "class A<T> extends Base<Item> implements I, ns.J, K<T> {}\ninterface X extends Y, Z<W> {}",
			[]string{"0 inherit Base", "0 name Item", "0 inherit I", "0 inherit J ns", "0 inherit K", "1 inherit Y", "1 inherit Z", "1 name W"}},
		{"mixin", TypeScript, "class A extends mixin(B) {}", []string{"0 call mixin"}},
		{"type names", TypeScript, "function f<T>(a: Foo, b: ns.Bar<T>): Promise<Baz[]> { return a as Qux; }",
			[]string{"0 name Foo", "0 name Bar ns", "0 name Promise", "0 name Baz", "0 name Qux"}},
		{"no plain identifiers", TypeScript, "const x = y + z;", nil},
		{"methods of literals skipped", JavaScript, "function f() { return 'a,b'.split(',').concat([1].map(g)); }", []string{"0 call concat 'a,b'.split(',')"}},
		{"jsx", TSX, "const App = () => <Layout><ui.Button /><div /></Layout>;", []string{"0 name Layout", "0 name Button ui"}},
		{"require is an import, not a call", JavaScript, "const a = require('a');", nil},
	}
	p := NewParser()
	defer p.Close()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := parseOK(t, p, tc.lang, []byte(tc.src))
			if diff := cmp.Diff(tc.want, refStrings(f), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("references (-want +got):\n%s", diff)
			}
		})
	}
}

func TestECMADocstrings(t *testing.T) {
	src := `/** Module doc. */

import x from "x";

/** Doc of f. */
// eslint-disable-next-line no-unused-vars
export function f() {}

/* not jsdoc */
function g() {}

/** Detached. */

function h() {}

class C {
  /** Doc of m. */
  m() {}
}
`
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, JavaScript, []byte(src))
	var got []string
	for _, d := range f.Docstrings {
		got = append(got, strconv.Itoa(d.Symbol)+" "+d.Content)
	}
	want := []string{"-1 Module doc.", "0 Doc of f.", "4 Doc of m."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docstrings (-want +got):\n%s", diff)
	}
	var comments []string
	for _, c := range f.Comments {
		comments = append(comments, c.Content)
	}
	if diff := cmp.Diff([]string{"not jsdoc", "Detached."}, comments); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
}
