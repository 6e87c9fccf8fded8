package calls

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Options are per-call options. A nil *Options means all defaults. The reactor reads an
// Options during the call that submits it and keeps no reference to the struct, nor to its
// Metadata map, which it copies: the same Options may be reused for the next call at once.
// It does keep Context and the CallOptions slice until the call completes, so the elements
// of that slice must not change meanwhile.
type Options struct {
	// Timeout bounds the call from submission to settlement. Zero means the method's policy
	// timeout, else the reactor's DefaultTimeout; a negative value, or one above the
	// reactor's MaxTimeout, fails the call with ErrInvalidArgument. The deadline travels to
	// the server (grpc-timeout) and is also enforced locally.
	Timeout time.Duration

	// Metadata is sent as request headers. Keys are case-insensitive and sent in lowercase;
	// keys that collide after lowercasing, reserved keys (grpc-*, pseudo-headers,
	// content-type, te, connection, user-agent, host, …), and non-printable-ASCII values of
	// keys not ending in "-bin" fail the call with ErrInvalidArgument. Metadata larger than
	// the reactor's MaxMetadataBytes fails it with ErrTooLarge. The map is copied at submit.
	Metadata metadata.MD

	// Context, if not nil, is the parent of the call's context: its values travel to the
	// transport (for interceptors and stats handlers), and cancelling it cancels the call,
	// which then fails with ErrCancelled. Its deadline, if earlier than the call's, also
	// applies: it is sent to the server, and the call fails with ErrTimeout when it passes.
	Context context.Context

	// CallOptions are passed to gRPC for this call, for example grpc.UseCompressor. They
	// cannot raise the reactor's size limits: prpc applies its own limits after them.
	CallOptions []grpc.CallOption

	// WaitForReady makes the call wait, up to its deadline, for the connection to become
	// ready instead of failing at once with Unavailable while the backend is unreachable.
	// A method's policy may turn it on for all its calls (reactor.MethodPolicy). It does not
	// help a call sent in the instant before the client notices that the server died: that
	// call is in flight on the dead connection and fails with Unavailable like the others.
	WaitForReady bool

	// FailFast makes the call fail at once with Unavailable while the backend is
	// unreachable, overriding a method policy's WaitForReady for this call. Setting both
	// FailFast and WaitForReady fails the call with ErrInvalidArgument.
	FailFast bool

	// Critical lets the call use the share of MaxOutstanding the reactor reserves for
	// critical calls (reactor.Config.CriticalReserve), as a method's policy may do for all its
	// calls: under overload, a player's save is then not rejected along with cosmetic reads.
	// The reactor reserves room only when its CriticalReserve is set, or some method policy
	// is critical; otherwise a critical call is rejected like any other, with an ErrOverloaded
	// error that names CriticalReserve.
	Critical bool

	// ResponseMetadata asks gRPC for the call's response header and trailer, for
	// Promise.Header, Promise.Trailer and Error.Trailer, as grpc.Header and grpc.Trailer do;
	// without it (and without the method policy's reactor.MethodPolicy.ResponseMetadata) they
	// are nil. The status code, message and details reach the error either way.
	ResponseMetadata bool
}
