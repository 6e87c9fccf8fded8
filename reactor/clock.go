package reactor

import "time"

// Clock is a source of time. The reactor reads it for deadlines, Tick budgets and latencies,
// and sets its one timer with it, for local deadlines and the next attempts of hedged calls.
// SystemClock is the default; package reactortest has a manual one for deterministic tests.
//
// With a manual clock, the deadline sent to the server is still computed on the system clock
// from the time a call has left, so gRPC's own deadline fires only after that much real time
// (a reactortest.Backend keeps it on the manual clock for its handlers).
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once, d after now.
	NewTimer(d time.Duration) Timer
}

// Timer is a timer made by a Clock, with the semantics of *time.Timer since Go 1.23: after
// Stop or Reset returns, no stale value is received from C.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Reset makes the timer fire d after now; it reports whether the timer was active.
	Reset(d time.Duration) bool
	// Stop stops the timer; it reports whether the timer was active.
	Stop() bool
}

// SystemClock returns the clock of package time.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time        { return t.t.C }
func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }
func (t systemTimer) Stop() bool                 { return t.t.Stop() }

// A call record keeps its times as nanoseconds since the reactor's epoch, the clock's time
// when New ran: an int64 is a third of a time.Time, and compares and subtracts at once.

// nanos returns t as nanoseconds since the reactor's epoch.
func (r *Reactor) nanos(t time.Time) int64 { return int64(t.Sub(r.epoch)) }

// now returns the clock's current time as nanoseconds since the reactor's epoch. On the
// system clock it reads only the monotonic clock: time.Now reads the wall clock too, a second
// clock read that every Call, Go and delivery by Tick would pay for.
func (r *Reactor) now() int64 {
	if r.system {
		return int64(time.Since(r.epoch))
	}
	return r.nanos(r.clock.Now())
}

// timeAt returns the time ns nanoseconds after the reactor's epoch.
func (r *Reactor) timeAt(ns int64) time.Time { return r.epoch.Add(time.Duration(ns)) }
