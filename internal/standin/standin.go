// Package standin is the seam between package reactor and a grpc.ClientConnInterface,
// passed as reactor.Config.Conn, that stands in for the connection reactor.New would dial:
// one that has no service config and no transport of its own, and so takes from the reactor
// what a dialled connection would take from it. Package reactor recognises such a connection
// by a capability, an unexported method that only a type embedding Mark has, and names no
// implementation; reactortest's Backend is the one there is.
//
// A dialled connection takes the retry policy of idempotent methods from the service config
// that reactor.New generates; a stand-in has no service config, so reactor.New hands it the
// same policy with For and calls the connection For returns. With a stand-in, reactor.New
// also accepts the settings of a connection it would dial, checked as for one, which the
// stand-in ignores; and an xDS Target with it is the production target of a test, not
// dialled.
//
// With a clock other than the system clock, a reactor passes each call's deadline on that
// clock in the call's context (WithDeadline, DeadlineOf), whatever its Conn, for a
// connection that runs handlers itself to expire their contexts on it.
package standin

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// Retry is what a reactor retries, resolved from its Config: the paths of the methods whose
// policy is Idempotent and how their calls are retried, as in the service config reactor.New
// generates for a dialled connection. The backoff between attempts is left out: a stand-in
// need not wait.
type Retry struct {
	// Idempotent holds the paths ("/pkg.Service/Method") of the methods that may be
	// retried; empty means that no call is.
	Idempotent map[string]bool
	// MaxAttempts is the number of attempts of a call, the first included.
	MaxAttempts int
	// RetryableCodes are the codes that allow a retry.
	RetryableCodes []codes.Code
	// ThrottleMaxTokens and ThrottleTokenRatio configure retry throttling, as in gRPC's
	// service config.
	ThrottleMaxTokens  int
	ThrottleTokenRatio float64
}

// standIn is the capability of a stand-in: only a type that embeds a Mark has its method.
type standIn interface {
	standInMark() Mark
}

// Mark, embedded in a connection type, makes it a stand-in for a dialled connection. Make it
// with NewMark; its zero value marks nothing.
type Mark struct {
	forReactor func(Retry) grpc.ClientConnInterface
}

// NewMark returns a Mark whose connection serves a reactor configured with a Retry through
// the connection that forReactor returns for it.
func NewMark(forReactor func(Retry) grpc.ClientConnInterface) Mark {
	return Mark{forReactor: forReactor}
}

func (m Mark) standInMark() Mark { return m }

// markOf returns the Mark of c, or a zero Mark.
func markOf(c grpc.ClientConnInterface) Mark {
	if s, ok := c.(standIn); ok {
		return s.standInMark()
	}
	return Mark{}
}

// Is reports whether c stands in for a dialled connection: whether it embeds a Mark made by
// NewMark.
func Is(c grpc.ClientConnInterface) bool {
	return markOf(c).forReactor != nil
}

// For returns the connection a reactor configured with r calls: the one c's Mark returns for
// r if c is a stand-in, c itself otherwise.
func For(c grpc.ClientConnInterface, r Retry) grpc.ClientConnInterface {
	if m := markOf(c); m.forReactor != nil {
		return m.forReactor(r)
	}
	return c
}

// Clock is what Deadline keeps of a reactor's Config.Clock (a reactor.Clock, which this
// package cannot name).
type Clock interface {
	Now() time.Time
}

// Deadline is a call's deadline on its reactor's clock. A reactor whose clock is not the
// system clock passes it in the context of each call (WithDeadline): that context's own
// Deadline is on the system clock, the time the call has left from now, for gRPC to send,
// while a connection that runs handlers itself expires the handler's context on the
// reactor's clock, where the reactor times the call out. Such a connection reports the
// handler's deadline on the system clock, as the call's context does: the time left until At
// on Clock when the handler starts, from the system clock's time then, since At may be
// decades from the system clock's time.
type Deadline struct {
	Clock Clock     // the reactor's Config.Clock
	At    time.Time // on Clock: the instant the reactor times the call out
}

// DeadlineKey is the context key of a call's Deadline. A context derived for a handler may
// answer nil for it, so that calls the handler makes do not inherit its caller's deadline.
type DeadlineKey struct{}

// WithDeadline returns ctx carrying d as the call's deadline on its reactor's clock.
func WithDeadline(ctx context.Context, d Deadline) context.Context {
	return context.WithValue(ctx, DeadlineKey{}, d)
}

// DeadlineOf returns the call's deadline on its reactor's clock that ctx carries, if any.
func DeadlineOf(ctx context.Context) (Deadline, bool) {
	d, ok := ctx.Value(DeadlineKey{}).(Deadline)
	return d, ok
}
