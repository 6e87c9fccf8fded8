// Package calls describes unary gRPC calls as prpc runs them: method descriptors, per-call
// options, the promise a call returns, call states and the errors a call can fail with.
//
// Package calls knows nothing of how calls are run; package reactor runs them. A typical
// program declares its methods once, at package level:
//
//	var getPlayer = calls.MustMethod[*pb.GetPlayerRequest, *pb.GetPlayerResponse](
//		pb.DataService_GetPlayer_FullMethodName)
//
// When the service's generated package is linked in, the declaration is checked against the
// service: the method must exist, be unary, and take and return those types.
//
// and submits calls with reactor.Call, which returns a *Promise at once. Callbacks
// registered on the promise run on the goroutine that calls the reactor's Tick, never on
// another goroutine and never inside the call that registers them.
//
// # Errors
//
// Every failed call fails with a *Error. It carries the gRPC status code users expect
// (status.Code works on it) and matches, with errors.Is, the sentinel of its condition:
// ErrTimeout, ErrUnavailable, ErrOverloaded, ErrCancelled, ErrClosed, ErrTooLarge or
// ErrInvalidArgument. Errors returned by the server keep their code, message, details and
// trailers; codes outside 0–16 become Unknown and messages longer than MaxStatusMessageBytes
// are cut. Of the server's statuses, only DeadlineExceeded, Unavailable and gRPC's own size
// limits match a sentinel (ErrTimeout, ErrUnavailable, ErrTooLarge). A call that failed with
// Unavailable because the TLS handshake failed carries a *HandshakeError as its cause, found
// with errors.As, so that a misconfiguration can be told from an outage.
package calls
