// Package calls describes unary gRPC calls as prpc runs them: method descriptors, per-call
// options, the promise a call returns, call states and the errors a call can fail with.
// Package calls knows nothing of how calls are run; package reactor runs them.
//
// # Methods
//
// A program declares each method once, at package level, with its request and response
// types and the path constant the gRPC code generator writes:
//
//	var getPlayer = calls.MustMethod[*pb.GetPlayerRequest, *pb.GetPlayerResponse](
//		pb.DataService_GetPlayer_FullMethodName)
//
// When the service's generated package is linked in, the declaration is checked against the
// service: the method must exist, be unary, and take and return those types. A *Method is
// immutable and shared by every call of the method. The code generator protoc-gen-prpc
// (github.com/trixnew/prpc/cmd/protoc-gen-prpc) writes these declarations from the .proto,
// with each service's method list, policies and a typed client.
//
// # Calls and promises
//
// reactor.Call submits a call with optional *Options and returns a *Promise at once;
// reactor.Go submits one with a single callback instead of a promise. Callbacks registered on
// the promise (Then, OnError, OnSettled, Always), and Go's callback, run on the goroutine that
// calls the reactor's Tick, Shutdown or Close, never on another goroutine and never inside the
// call that registers them. State, Err, Header and Trailer report the outcome once Tick has
// delivered it (at once for a call rejected at submission); Cancel gives up on the call.
//
// # Errors
//
// Every failed call fails with a *Error. It carries the gRPC status code users expect
// (status.Code works on it) and matches, with errors.Is, the sentinel of its condition:
// ErrTimeout, ErrUnavailable, ErrOverloaded, ErrCancelled, ErrClosed, ErrTooLarge or
// ErrInvalidArgument. Errors returned by the server keep their code, message, details and,
// when the call asked for them, trailers; codes outside 0–16 become Unknown and messages
// longer than 4096 bytes are cut. Of the server's statuses, only DeadlineExceeded,
// Unavailable and gRPC's own size limits match a sentinel (ErrTimeout, ErrUnavailable,
// ErrTooLarge). A call that failed with Unavailable because the TLS handshake failed carries
// a *HandshakeError as its cause, found with errors.As, so that a misconfiguration can be
// told from an outage. To test code that handles errors, fake the backend with package
// reactortest, whose handlers return gRPC statuses.
package calls
