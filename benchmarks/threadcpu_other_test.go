//go:build !linux

package benchmarks

import "time"

// threadCPUTime is not available on this OS.
func threadCPUTime() (time.Duration, bool) { return 0, false }
