//go:build !unix

package index

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
