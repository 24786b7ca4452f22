package cli

import (
	"strings"
	"testing"
)

// TestTerminalSafe: what an agent printed reaches the terminal as text:
// escape sequences, carriage returns, C1 controls and invalid UTF-8 are
// shown escaped; newlines, tabs and other text pass unchanged.
func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain line\n", "plain line\n"},
		{"--- FAIL:\tTestX (0.01s)\nok\n", "--- FAIL:\tTestX (0.01s)\nok\n"},
		{"naïve → done\n", "naïve → done\n"},
		{"working\x1b[1A\x1b[2K\rverified by a person\n", `working\x1b[1A\x1b[2K\rverified by a person` + "\n"},
		{"\x1b]52;c;ZWNobyBwd25lZA==\x07", `\x1b]52;c;ZWNobyBwd25lZA==\a`},
		{"csi \u009b2J", `csi \u009b2J`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		var b strings.Builder
		n, err := terminalSafe(&b).Write([]byte(tc.in))
		if err != nil || n != len(tc.in) {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", tc.in, n, err, len(tc.in))
		}
		if b.String() != tc.want {
			t.Errorf("Write(%q) wrote %q, want %q", tc.in, b.String(), tc.want)
		}
	}
}
