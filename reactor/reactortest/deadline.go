package reactortest

import (
	"context"
	"time"

	"github.com/trixnew/prpc/internal/donectx"
	"github.com/trixnew/prpc/internal/standin"
)

// clockContext is the context of a Backend handler whose call's deadline is on a ManualClock,
// as a server's handler context is on the server's clock: it is done, with
// context.DeadlineExceeded, as soon as Advance or Set move the clock to the call's deadline or
// past it (before they fire any timer), or with its parent's error when its parent, the call's
// context, is done first. It is not a timer of the clock: Timers, WaitTimers and WaitTimerBy
// do not count it.
//
// Its Deadline is on the system clock, as every user of a context reads it (net.Dialer, gRPC
// clients, database drivers): the time the call had left on the ManualClock when the handler
// started, from the system clock's time then. It does not move with the ManualClock, and
// reaching it on the system clock ends nothing: only the ManualClock does.
//
// Package context attaches the contexts derived from it through its AfterFunc method,
// without a goroutine of their own, and they end with it, with its error. A handler gets a
// context.WithCancel child of it, so that context.Cause finds the error too.
type clockContext struct {
	donectx.State
	parent     context.Context
	clock      *ManualClock
	at         time.Time   // on clock: the call's deadline, where the context ends
	wall       time.Time   // on the system clock: what Deadline reports
	stopParent func() bool // the context.AfterFunc on parent; nil if at had passed already
}

// handlerContext returns the context of a handler whose call's deadline is at on c, derived
// from parent, and a func that detaches it from c and from parent, to call once the handler
// has returned. Its Deadline is the system clock's time now plus the time left until at on
// c. A context whose deadline is not after Now is done already.
func (c *ManualClock) handlerContext(parent context.Context, at time.Time) (*clockContext, func()) {
	x := &clockContext{parent: parent, clock: c, at: at}
	c.mu.Lock()
	x.wall = time.Now().Add(at.Sub(c.now)) // under the mutex: the time left cannot change meanwhile
	if !at.After(c.now) {
		c.mu.Unlock()
		x.End(context.DeadlineExceeded)
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
// at or before target. The funcs they run (see donectx.State.AfterFunc) are package context's
// cancellations, which never call the clock, so it holds the clock's mutex while they run.
func (c *ManualClock) expireLocked(target time.Time) {
	for x := range c.expiring {
		if !x.at.After(target) {
			delete(c.expiring, x)
			x.End(context.DeadlineExceeded)
		}
	}
}

// cancel ends x with err, its parent's error, unless it has ended already.
func (x *clockContext) cancel(err error) {
	x.clock.forget(x) // first: the clock ends x under its own mutex
	x.End(err)
}

// Deadline returns the handler's deadline on the system clock: the time the call had left on
// the ManualClock when the handler started, from then.
func (x *clockContext) Deadline() (time.Time, bool) { return x.wall, true }

// Value returns the parent's values, except the call's deadline on the reactor's clock,
// which is not the deadline of calls the handler makes.
func (x *clockContext) Value(key any) any {
	if _, ok := key.(standin.DeadlineKey); ok {
		return nil
	}
	return x.parent.Value(key)
}

// String describes x, as package context's contexts describe themselves.
func (x *clockContext) String() string {
	return "reactortest.ManualClock deadline context(" + x.at.String() + " on the ManualClock, " + x.wall.Round(0).String() + " on the system clock)"
}
