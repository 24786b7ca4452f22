package lang

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassifyComment(t *testing.T) {
	tests := []struct {
		text      string
		kind      string
		rationale bool
	}{
		// markers
		{"TODO: retry on timeouts", CommentTodo, false},
		{"TODO retry", CommentTodo, false},
		{"todo(ann): later", CommentTodo, false},
		{"Todo: later", CommentTodo, false},
		{"@todo later", CommentTodo, false},
		{"@deprecated use g", CommentGeneral, false},
		{"TODO: remove once the API is fixed, because it leaks", CommentTodo, true},
		{"FIXME: off by one", CommentFixme, false},
		{"XXX", CommentFixme, false},
		{"XXX: not thread safe", CommentFixme, false},
		{"BUG: wraps at midnight", CommentFixme, false},
		{"HACK: sleep a little", CommentHack, false},
		{"HACK: sleep because the server is slow", CommentHack, true},
		{"KLUDGE: double parse", CommentHack, false},
		{"NOTE: the order matters", CommentNote, false},
		{"Note: keys are sorted", CommentNote, false},
		{"NB: keys are sorted", CommentNote, false},
		{"N.B. keys are sorted", CommentNote, false},
		{"WARNING: slow", CommentNote, false},
		{"NOTE: see #1234", CommentNote, false},
		// not markers
		{"todo list handling", CommentGeneral, false},
		{"TODOs are tracked elsewhere", CommentGeneral, false},
		{"Notes are stored in the DB", CommentGeneral, false},
		{"BUG_URL is set by CI", CommentGeneral, false},
		// bug references
		{"see #1234", CommentBugRef, false},
		{"Refs #12345 -- the cache bug", CommentBugRef, false},
		{"fixed in GH-12", CommentBugRef, false},
		{"JIRA-123: the old behaviour", CommentBugRef, false},
		{"tracked as PROJ2-77", CommentBugRef, false},
		{"bug 123 again", CommentBugRef, false},
		{"upstream issue #45", CommentBugRef, false},
		{"ticket 999 explains it", CommentBugRef, false},
		{"reverted in PR #7", CommentBugRef, false},
		{"b/123456789", CommentBugRef, false},
		{"see https://github.com/a/b/issues/3456", CommentBugRef, false},
		{"https://code.djangoproject.com/ticket/1234", CommentBugRef, false},
		{"https://bugs.python.org/issue1234", CommentBugRef, false},
		{"https://jira.example.com/browse/ABC-1", CommentBugRef, false},
		{"workaround for bug 4521 in the parser", CommentBugRef, true},
		{"CVE-2021-44228 mitigation", CommentBugRef, false},
		// not bug references
		{"encode as UTF-8", CommentGeneral, false},
		{"hash with SHA-256", CommentGeneral, false},
		{"dates are ISO-8601", CommentGeneral, false},
		{"colour #333333 and #fff", CommentGeneral, false},
		{"step #1", CommentGeneral, false},
		{"&#123; is a brace", CommentGeneral, false},
		{"docs at https://example.com/guide", CommentGeneral, false},
		{"X-1 is a model", CommentGeneral, false},
		// rationale
		{"stored in cents because floats lose pennies", CommentRationale, true},
		{"Retry twice so that flaky networks do not fail", CommentRationale, true},
		{"in order to keep the index small", CommentRationale, true},
		{"otherwise the lock is never released", CommentRationale, true},
		{"workaround for a kernel quirk", CommentRationale, true},
		{"We need the raw bytes here", CommentRationale, true},
		{"must run before migrations", CommentRationale, true},
		{"Note that the list is sorted", CommentRationale, true},
		{"imported here to avoid a cycle", CommentRationale, true},
		{"since the API returns strings, convert", CommentRationale, true},
		{"use a set instead of a list", CommentRationale, true},
		{"can't use os.replace on Windows", CommentRationale, true},
		{"kept for backwards compatibility", CommentRationale, true},
		{"this is intentional", CommentRationale, true},
		{"due to a race in the driver", CommentRationale, true},
		{"Why: the cache is cold at start", CommentRationale, true},
		{"This helps by avoiding the cost of a copy", CommentRationale, true},
		{"We don't want to hold onto it", CommentRationale, true},
		// since as a time, and plain descriptions
		{"since 2019 the field is required", CommentRationale, true}, // "required" is a cue
		{"deprecated since 3.2", CommentGeneral, false},
		{"unchanged since then", CommentGeneral, false},
		{"ever since the rewrite", CommentGeneral, false},
		{"available since Django 4.1", CommentGeneral, false},
		{"since the beginning of time", CommentGeneral, false},
		{"Create the user", CommentGeneral, false},
		{"Convert to string", CommentGeneral, false},
		{"Loop over the items", CommentGeneral, false},
		{"", CommentGeneral, false},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			kind, rationale := ClassifyComment(tc.text)
			if kind != tc.kind || rationale != tc.rationale {
				t.Errorf("ClassifyComment(%q) = %q, %t; want %q, %t", tc.text, kind, rationale, tc.kind, tc.rationale)
			}
		})
	}
}

func TestCleanComment(t *testing.T) {
	tests := []struct{ raw, want string }{
		{"# hello", "hello"},
		{"#hello  ", "hello"},
		{"## section", "section"},
		{"#: attribute doc", "attribute doc"},
		{"// hello", "hello"},
		{"/// triple", "triple"},
		{"/* inline */", "inline"},
		{"/**\n * Doc line one.\n *\n *     indented code\n */", "Doc line one.\n\n    indented code"},
		{"/*\n   plain block\n   second\n*/", "plain block\nsecond"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			if got := cleanComment([]byte(tc.raw)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSkipComment(t *testing.T) {
	tests := []struct {
		raw  string
		line int
		skip bool
	}{
		{"#!/usr/bin/env python3", 1, true},
		{"#!not a shebang", 5, false},
		{"# -*- coding: utf-8 -*-", 1, true},
		{"# vim: set ft=python:", 3, true},
		{"# type: ignore[attr-defined]", 9, true},
		{"# noqa: E501", 9, true},
		{"# pylint: disable=invalid-name", 9, true},
		{"# pragma: no cover", 9, true},
		{"# fmt: off", 9, true},
		{"//go:build linux", 1, true},
		{"//go:generate stringer -type=Kind", 3, true},
		{"// go: see the docs", 3, false},
		{"//line foo.go:10", 3, true},
		{"// line 10 is special", 3, false},
		{"//export Callback", 3, true},
		{"//nolint:errcheck", 3, true},
		{"// nolint", 3, true},
		{"// +build linux", 1, true},
		{"// eslint-disable-next-line no-console", 3, true},
		{"/* eslint-disable */", 3, true},
		{"/* global window, document */", 3, true},
		{"// @ts-ignore", 3, true},
		{"// @ts-expect-error wrong types upstream", 3, true},
		{"// prettier-ignore", 3, true},
		{"/* istanbul ignore next */", 3, true},
		{"/// <reference path=\"a.d.ts\" />", 1, true},
		{"/* @internal */", 3, true},
		{"# ----------", 3, true},
		{"// ==========", 3, true},
		{"#", 3, true},
		{"# a real comment", 3, false},
		{"# Ex: call it twice", 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			raw := []byte(tc.raw)
			if got := skipComment(raw, cleanComment(raw), tc.line); got != tc.skip {
				t.Errorf("got %t, want %t", got, tc.skip)
			}
		})
	}
}

// TestCommentRows checks how comments become rows: merging of consecutive
// full-line comments, a new row at a marker, trailing comments alone,
// pragmas dropped, and the enclosing symbol.
func TestCommentRows(t *testing.T) {
	src := `# Module comment one
# module comment two.

def f():
    # We retry because the first call
    # often times out.
    x = 1  # trailing note
    # TODO: make it async
    # and faster.
    # FIXME: leaks
    y = 2  # type: ignore
    return x
        # odd indentation


class C:
    # Fields come first.
    a = 1
`
	p := NewParser()
	defer p.Close()
	f := parseOK(t, p, Python, []byte(src))
	want := []Comment{
		{Line: 1, Symbol: -1, Content: "Module comment one\nmodule comment two.", Kind: CommentGeneral},
		{Line: 5, Symbol: 0, Content: "We retry because the first call\noften times out.", Kind: CommentRationale, IsRationale: true},
		{Line: 7, Symbol: 0, Content: "trailing note", Kind: CommentGeneral},
		{Line: 8, Symbol: 0, Content: "TODO: make it async\nand faster.", Kind: CommentTodo},
		{Line: 10, Symbol: 0, Content: "FIXME: leaks", Kind: CommentFixme},
		{Line: 13, Symbol: 0, Content: "odd indentation", Kind: CommentGeneral},
		{Line: 17, Symbol: 1, Content: "Fields come first.", Kind: CommentGeneral},
	}
	if diff := cmp.Diff(want, f.Comments); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
}
