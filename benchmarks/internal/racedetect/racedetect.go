// Package racedetect tells whether the binary was built with the race detector (-race), for
// the benchmarks' tests that must skip what the detector reports in code they do not own.
package racedetect

// CoalesceRace is why the tests skip coalesced calls under the race detector: it reports a
// race in package reactor, whose laneState.join reads a call's Ops after the call has joined
// a flight, when the flight's lane may already have settled the call and the host recycled
// its record.
const CoalesceRace = "the race detector reports reactor's laneState.join reading a joined call's Ops after it joined its flight (reactor/coalesce.go)"
