// Package memconn is the contract between package reactor and package reactortest's Backend,
// a connection that runs calls in memory, which package reactor cannot import (reactortest
// imports reactor).
//
// A dialled connection takes the retry policy of idempotent methods from the service config
// that reactor.New generates; a Backend has no service config, so reactor.New hands it the
// same policy with Reactor and calls the connection Reactor returns. With such a connection,
// reactor.New also accepts the settings of a connection it would dial, which a Backend
// ignores. Only a type that embeds Tag is one: an unexported method keeps the contract out of
// reactortest's API.
//
// With a clock other than the system clock, a reactor passes each call's deadline on that
// clock in the call's context (WithDeadline, DeadlineOf), for the Backend to expire its
// handlers' contexts on it.
//
// Encode and Decode treat a call's messages as gRPC's unary path does, for connections that
// run calls in memory: the Backend, and the fake connections of package reactor's tests.
package memconn

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// Retry is what a reactor retries, resolved from its Config: the paths of the methods whose
// policy is Idempotent and how their calls are retried, as in the service config reactor.New
// generates for a dialled connection. The backoff between attempts is left out: a Backend
// does not wait.
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

// conn is a connection that runs calls in memory: one that embeds a Tag.
type conn interface {
	memTag() Tag
}

// Tag, embedded in a connection type, marks it as running calls in memory. Make it with
// NewTag; its zero value marks nothing.
type Tag struct {
	forReactor func(Retry) grpc.ClientConnInterface
}

// NewTag returns a Tag whose connection serves a reactor configured with a Retry through the
// connection that forReactor returns for it.
func NewTag(forReactor func(Retry) grpc.ClientConnInterface) Tag {
	return Tag{forReactor: forReactor}
}

func (t Tag) memTag() Tag { return t }

// tagOf returns the Tag of c, or a zero Tag.
func tagOf(c grpc.ClientConnInterface) Tag {
	if m, ok := c.(conn); ok {
		return m.memTag()
	}
	return Tag{}
}

// Is reports whether c runs calls in memory: whether it embeds a Tag made by NewTag.
func Is(c grpc.ClientConnInterface) bool {
	return tagOf(c).forReactor != nil
}

// Reactor returns the connection a reactor configured with r calls: the one c's Tag returns
// for r if c runs calls in memory, c itself otherwise.
func Reactor(c grpc.ClientConnInterface, r Retry) grpc.ClientConnInterface {
	if t := tagOf(c); t.forReactor != nil {
		return t.forReactor(r)
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
// while a connection that runs calls in memory expires the handler's context on the
// reactor's clock, where the reactor times the call out.
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
