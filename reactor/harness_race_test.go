//go:build race

package reactor_test

// raceEnabled reports whether the race detector is on. Under it every synchronisation costs
// time in proportion to the number of goroutines, which matters to tests that run thousands.
const raceEnabled = true
