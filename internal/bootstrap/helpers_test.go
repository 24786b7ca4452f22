package bootstrap

import "strings"

func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	return b.String()
}

// TestFilter crafts one commit per rule of seed 001 §16.4.2 and checks
// the reason Filter.Check gives each.
