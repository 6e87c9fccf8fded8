//go:build !linux

package threadcpu

import "time"

// Now is not available on this OS: ok is always false.
func Now() (d time.Duration, ok bool) { return 0, false }
