package reactor

import (
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
)

// The errors of failed calls are built by package callerr and handed out as *calls.Error, the
// type users see and match with errors.As; these helpers do both, so that no *callerr.Error
// ever reaches a user.

// localError returns the error of a call of method that prpc failed itself for the reason
// kind, with a message saying why and an optional cause (returned by Unwrap).
func localError(kind callerr.Kind, method, msg string, cause error) *calls.Error {
	return (*calls.Error)(callerr.New(kind, method, msg, cause))
}

// statusError returns the error of a call of method that failed with err, as gRPC returned
// it, and the trailer received with it. gRPC ran the call with its receive limit at
// maxResponseBytes and a request of requestBytes: a response over that limit gets a message
// naming Limits.MaxResponseBytes.
func statusError(method string, err error, trailer metadata.MD, maxResponseBytes, requestBytes int) *calls.Error {
	return (*calls.Error)(callerr.FromCallStatus(method, err, trailer, maxResponseBytes, requestBytes))
}

// handshakeError is statusError for a call that failed because the security handshake f
// failed: its message starts with f's classification and its cause is f, as a
// *calls.HandshakeError.
func handshakeError(method string, err error, trailer metadata.MD, f *callerr.HandshakeFailure) *calls.Error {
	return (*calls.Error)(callerr.FromHandshake(method, err, trailer, handshakeCause(f)))
}

// handshakeCause returns the failed handshake f, as package dial recorded it, as the
// *calls.HandshakeError users see: the kinds of callerr.HandshakeKind have the values of
// calls.HandshakeErrorKind's.
func handshakeCause(f *callerr.HandshakeFailure) *calls.HandshakeError {
	return &calls.HandshakeError{Kind: calls.HandshakeErrorKind(f.Kind), Protocol: f.Protocol, Err: f.Err}
}

// markNotSent records in err, not handed out yet, that its call's request never left prpc
// and gRPC (calls.Error.NotSent).
func markNotSent(err *calls.Error) *calls.Error {
	return (*calls.Error)((*callerr.Error)(err).MarkNotSent())
}

// reasonOf classifies, for statistics, the outcome of a call a lane completed with err.
func reasonOf(err error) callcore.Reason {
	ce, ok := err.(*calls.Error)
	if !ok {
		return callcore.ReasonError
	}
	switch ce.Kind() {
	case calls.ErrTimeout:
		return callcore.ReasonTimeout
	case calls.ErrCancelled:
		return callcore.ReasonCancelled
	case calls.ErrTooLarge:
		return callcore.ReasonInvalid
	case calls.ErrShed:
		return callcore.ReasonShed
	}
	return callcore.ReasonError
}
