package reactor

import (
	"context"
	"time"
)

// callCtx is the context of one transport call: cancellable, and carrying the call's deadline
// for gRPC to send (grpc-timeout), without a timer of its own. The reactor's deadline heap
// already settles the call at its deadline and then cancels this context, so a per-call timer
// (context.WithDeadline) would only duplicate it, adding allocations and a runtime timer
// insertion and removal to every call (BenchmarkHostCostStub counts the allocations per call).
//
// Done, Err and Value are those of the embedded cancellable context, so gRPC's own child
// contexts attach to it without a goroutine. If the parent's deadline is earlier, Deadline
// reports the parent's, and the parent's expiry cancels the call through the embedded context.
//
// It also carries its cancel function, and, under pickedKey, the slot where the balancer
// records the backend it picks for the call (see subconns.go), saving a context.WithValue per
// call. The call record holds it as its Ctx while the call is in flight.
type callCtx struct {
	context.Context // from context.WithCancel(parent)
	cancel          context.CancelFunc
	deadline        time.Time
	picked          string
}

// newCallCtx returns the context of a transport call with the given deadline.
func newCallCtx(parent context.Context, deadline time.Time) *callCtx {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithCancel(parent)
	return &callCtx{Context: ctx, cancel: cancel, deadline: deadline}
}

// Deadline returns the call's deadline.
func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Value returns the picked-backend slot for pickedKey, and the parent's values otherwise.
func (c *callCtx) Value(key any) any {
	if _, ok := key.(pickedKey); ok {
		return &c.picked
	}
	return c.Context.Value(key)
}
