package reactortest

import (
	"context"
	"sync"
	"time"

	"github.com/trixnew/prpc/internal/memconn"
)

// clockContext is the context of a Backend handler whose call's deadline is on a ManualClock,
// as a server's handler context is on the server's clock: its Deadline is the call's deadline
// on that clock, and it is done, with context.DeadlineExceeded, as soon as Advance or Set
// move the clock to it or past it (before they fire any timer), or with its parent's error
// when its parent, the call's context, is done first. It is not a timer of the clock:
// Timers, WaitTimers and WaitTimerBy do not count it.
//
// Package context attaches the contexts derived from it through its AfterFunc method,
// without a goroutine of their own, and they end with it, with its error. A handler gets a
// context.WithCancel child of it, so that context.Cause finds the error too.
type clockContext struct {
	parent     context.Context
	clock      *ManualClock
	at         time.Time
	done       chan struct{}
	stopParent func() bool // the context.AfterFunc on parent; nil if at had passed already

	mu     sync.Mutex
	err    error
	afters map[*afterFunc]struct{} // registered by AfterFunc and not run or stopped yet
}

// afterFunc is a func registered by clockContext.AfterFunc; a pointer tells it apart.
type afterFunc struct{ f func() }

// handlerContext returns the context of a handler whose call's deadline is at on c, derived
// from parent, and a func that detaches it from c and from parent, to call once the handler
// has returned. A context whose deadline is not after Now is done already.
func (c *ManualClock) handlerContext(parent context.Context, at time.Time) (*clockContext, func()) {
	x := &clockContext{parent: parent, clock: c, at: at, done: make(chan struct{})}
	c.mu.Lock()
	if !at.After(c.now) {
		c.mu.Unlock()
		x.finish(context.DeadlineExceeded)
		return x, func() {}
	}
	if c.expiring == nil {
		c.expiring = make(map[*clockContext]struct{})
	}
	c.expiring[x] = struct{}{}
	c.mu.Unlock()
	x.stopParent = context.AfterFunc(parent, func() { x.cancel(parent.Err()) })
	return x, func() {
		c.forget(x)
		x.stopParent()
	}
}

// forget stops the clock from expiring x.
func (c *ManualClock) forget(x *clockContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.expiring, x)
}

// expireLocked ends, with context.DeadlineExceeded, every handler context whose deadline is
// at or before target. The funcs they run (see clockContext.AfterFunc) are package context's
// cancellations, which never call the clock, so it holds the clock's mutex while they run.
func (c *ManualClock) expireLocked(target time.Time) {
	for x := range c.expiring {
		if !x.at.After(target) {
			delete(c.expiring, x)
			x.finish(context.DeadlineExceeded)
		}
	}
}

// cancel ends x with err, its parent's error, unless it has ended already.
func (x *clockContext) cancel(err error) {
	x.clock.forget(x) // first, without x.mu: the clock takes x.mu under its own mutex
	x.finish(err)
}

// finish ends x with err unless it has ended already, and runs the funcs registered by
// AfterFunc, on the calling goroutine and without x.mu (they call Err).
func (x *clockContext) finish(err error) {
	x.mu.Lock()
	if x.err != nil {
		x.mu.Unlock()
		return
	}
	x.err = err
	close(x.done)
	afters := x.afters
	x.afters = nil
	x.mu.Unlock()
	for a := range afters {
		a.f()
	}
}

// Deadline returns the call's deadline on the ManualClock.
func (x *clockContext) Deadline() (time.Time, bool) { return x.at, true }

// Done returns a channel closed when x ends.
func (x *clockContext) Done() <-chan struct{} { return x.done }

// Err returns nil until x ends, then context.DeadlineExceeded if the clock reached the
// deadline first, or the parent's error.
func (x *clockContext) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// Value returns the parent's values, except the call's deadline on the reactor's clock,
// which is not the deadline of calls the handler makes.
func (x *clockContext) Value(key any) any {
	if _, ok := key.(memconn.DeadlineKey); ok {
		return nil
	}
	return x.parent.Value(key)
}

// AfterFunc arranges for f to run once x ends, and returns a func that stops it, reporting
// whether it did. It is the method by which package context attaches a context derived from
// x without a goroutine: f runs on the goroutine that ends x, or on a goroutine of its own if
// x has ended already (package context calls AfterFunc with a mutex held that f takes).
func (x *clockContext) AfterFunc(f func()) func() bool {
	a := &afterFunc{f: f}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil {
		go f()
		return func() bool { return false }
	}
	if x.afters == nil {
		x.afters = make(map[*afterFunc]struct{})
	}
	x.afters[a] = struct{}{}
	return func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		_, pending := x.afters[a]
		delete(x.afters, a)
		return pending
	}
}

// String describes x, as package context's contexts describe themselves.
func (x *clockContext) String() string {
	return "reactortest.ManualClock deadline context(" + x.at.String() + ")"
}
