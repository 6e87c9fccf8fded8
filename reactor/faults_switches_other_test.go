//go:build !linux

package reactor_test

// faultThreadSwitches is not available outside Linux: every Tick overrun then counts as a
// failure.
func faultThreadSwitches() (s faultSwitches, ok bool) { return s, false }
