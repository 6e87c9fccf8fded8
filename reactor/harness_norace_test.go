//go:build !race

package reactor_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
