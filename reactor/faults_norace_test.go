//go:build !race

package reactor_test

// faultRace reports whether the race detector is on.
const faultRace = false
