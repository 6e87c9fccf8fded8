package reactor

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context of one transport call: it carries the call's deadline for gRPC to
// send (grpc-timeout), without a timer of its own, and is done when the reactor cuts the call
// (its deadline, a cancel, its parent context or Close) with the error that says which:
// context.DeadlineExceeded for a deadline, the call's own or its parent context's, and
// context.Canceled otherwise. So gRPC, its interceptors and stats handlers see a timeout as
// DeadlineExceeded, as they would with a context.WithDeadline, while the reactor's deadline
// heap stays the only timer: a per-call timer would add allocations and a runtime timer
// insertion and removal to every call (BenchmarkHostCostStub counts the allocations per call).
//
// Its values are those of the call's parent context (calls.Options.Context), so trace spans
// and other values travel, but for pickedKey: the slot where the balancer records the
// backend it picks for the call (see subconns.go), saving a context.WithValue per call. Its
// parent's cancellation does not reach it directly: the reactor watches the parent (admit)
// and cuts the call, with the parent's error, so that a call is cut in one place.
//
// Contexts gRPC derives from it attach through its AfterFunc method, without a goroutine, as
// they would to a context of package context.
type callCtx struct {
	parent   context.Context
	deadline time.Time
	picked   string
	done     chan struct{}
	cancel   func(error) // cancelWith, bound once: published to the call record

	mu    sync.Mutex
	err   error
	after []func() // functions to run once done; a stopped one is nil
}

// newCallCtx returns the context of a transport call with the given deadline, or the
// parent's, if earlier. A nil parent stands for context.Background.
func newCallCtx(parent context.Context, deadline time.Time) *callCtx {
	if parent == nil {
		parent = context.Background()
	} else if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c := &callCtx{parent: parent, deadline: deadline, done: make(chan struct{})}
	c.cancel = c.cancelWith
	return c
}

// Deadline returns the call's deadline.
func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed when the reactor cuts the call.
func (c *callCtx) Done() <-chan struct{} { return c.done }

// Err returns nil until the call is cut, then context.DeadlineExceeded or context.Canceled.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the picked-backend slot for pickedKey, and the parent's values otherwise.
func (c *callCtx) Value(key any) any {
	if _, ok := key.(pickedKey); ok {
		return &c.picked
	}
	return c.parent.Value(key)
}

// AfterFunc arranges for f to run once c is done, as context.AfterFunc does; package context
// calls it for every context derived from c, which so needs no goroutine. f runs on the
// goroutine that cuts the call, or on a goroutine of its own if c is done already. stop
// reports whether it stopped f from running.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	i := len(c.after)
	c.after = append(c.after, f)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil || c.after[i] == nil {
			return false
		}
		c.after[i] = nil
		return true
	}
}

// cancelWith makes c done with err, unless it is done already, and runs the functions of
// AfterFunc.
func (c *callCtx) cancelWith(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for _, f := range after {
		if f != nil {
			f()
		}
	}
}
