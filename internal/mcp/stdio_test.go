package mcp

import "testing"

func TestCountMessages(t *testing.T) {
	for _, tc := range []struct {
		line         string
		calls, answs int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, 1, 0},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, 0},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, 0, 1},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32602}}`, 0, 1},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`, 0, 0},
		{`[{"id":1,"method":"a"},{"id":2,"method":"b"},{"method":"c"}]`, 2, 0},
		{`not json`, 0, 0},
		{``, 0, 0},
	} {
		if got := countMessages([]byte(tc.line), true); got != tc.calls {
			t.Errorf("calls in %s: got %d, want %d", tc.line, got, tc.calls)
		}
		if got := countMessages([]byte(tc.line), false); got != tc.answs {
			t.Errorf("answers in %s: got %d, want %d", tc.line, got, tc.answs)
		}
	}
}
