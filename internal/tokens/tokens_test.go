package tokens

import "testing"

func TestEstimate(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"12345", 2},
		{"ü", 1}, // bytes, not characters: two bytes
		{"abcdefgh", 2},
	}
	for _, tc := range tests {
		if got := Estimate(tc.text); got != tc.want {
			t.Errorf("Estimate(%q): got %d, want %d", tc.text, got, tc.want)
		}
	}
}
