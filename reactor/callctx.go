package reactor

import (
	"context"
	"time"

	"github.com/trixnew/prpc/internal/dial"
	"github.com/trixnew/prpc/internal/donectx"
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
// and other values travel, but for dial.PickedKey: the slot where the balancer records the
// backend it picks for the call, saving a context.WithValue per call. Its
// parent's cancellation does not reach it directly: the reactor watches the parent (admit)
// and cuts the call, with the parent's error, so that a call is cut in one place.
//
// Contexts gRPC derives from it attach through its AfterFunc method (donectx.State), without
// a goroutine, as they would to a context of package context.
type callCtx struct {
	donectx.State
	parent   context.Context
	deadline time.Time
	pick     dial.Pick
	attempt  int  // which attempt of its flight it is, from 1 (hedge.go); 0 outside a flight
	lost     bool // another attempt decided the flight and cancelled this one; under its flight table's lock
}

// newCallCtx returns the context of a transport call with the given deadline, or the
// parent's, if earlier. A nil parent stands for context.Background.
func newCallCtx(parent context.Context, deadline time.Time) *callCtx {
	if parent == nil {
		parent = context.Background()
	} else if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &callCtx{parent: parent, deadline: deadline}
}

// Deadline returns the call's deadline.
func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Value returns the pick slot for dial.PickedKey, and the parent's values otherwise.
func (c *callCtx) Value(key any) any {
	if _, ok := key.(dial.PickedKey); ok {
		return &c.pick
	}
	return c.parent.Value(key)
}
