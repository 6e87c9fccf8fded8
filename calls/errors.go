package calls

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Every failed call's error matches exactly one of them with errors.Is, or
// none for a plain gRPC status from the server (other than DeadlineExceeded, which always
// matches ErrTimeout). status.Code works on each sentinel and on every *Error.
var (
	// ErrClosed: the reactor was closed before the call completed, or the call was submitted
	// after Close. Code Canceled.
	ErrClosed error = &sentinel{codes.Canceled, "reactor closed"}
	// ErrOverloaded: MaxOutstanding calls were already admitted and not yet delivered. Code
	// ResourceExhausted.
	ErrOverloaded error = &sentinel{codes.ResourceExhausted, "too many outstanding calls"}
	// ErrTimeout: the call's deadline passed, whether the reactor, gRPC or the server noticed
	// first. Code DeadlineExceeded.
	ErrTimeout error = &sentinel{codes.DeadlineExceeded, "deadline exceeded"}
	// ErrCancelled: Promise.Cancel was called, or the call's parent context was cancelled.
	// Code Canceled.
	ErrCancelled error = &sentinel{codes.Canceled, "call cancelled"}
	// ErrTooLarge: the request, its metadata or the response exceeded a size limit. Code
	// ResourceExhausted.
	ErrTooLarge error = &sentinel{codes.ResourceExhausted, "message too large"}
	// ErrInvalidArgument: the call was invalid (a nil request, a bad timeout or bad metadata,
	// a method not in the reactor's allowlist) and was never sent. Code InvalidArgument.
	ErrInvalidArgument error = &sentinel{codes.InvalidArgument, "invalid argument"}
)

// MaxStatusMessageBytes is the longest status message a call's error carries; a longer one
// from the server is cut to this length, and a marker is appended.
const MaxStatusMessageBytes = 4096

type sentinel struct {
	code codes.Code
	msg  string
}

// Error returns "prpc: " and the condition.
func (s *sentinel) Error() string { return "prpc: " + s.msg }

// GRPCStatus returns the status with the sentinel's code, so status.Code works on it.
func (s *sentinel) GRPCStatus() *status.Status { return status.New(s.code, s.Error()) }

// Error is the error of a failed call.
type Error struct {
	kind    error // the sentinel it matches, or nil
	method  string
	st      *status.Status
	trailer metadata.MD
	cause   error
}

// NewError returns the error of a call of method that failed locally for the reason kind,
// which must be one of the sentinels of this package, with a message saying why and an
// optional cause (returned by Unwrap). Package reactor uses it; it is exported for fakes and
// test doubles.
func NewError(kind error, method, message string, cause error) *Error {
	s, ok := kind.(*sentinel)
	if !ok {
		panic(fmt.Sprintf("prpc: NewError: %v is not a prpc sentinel error", kind))
	}
	return &Error{kind: kind, method: method, st: status.New(s.code, message), cause: cause}
}

// StatusError returns the error of a call of method that failed with err as returned by gRPC,
// and the trailers received with it. The code and message are kept except that a code outside
// 0–16 becomes Unknown and a message longer than MaxStatusMessageBytes is cut; the status
// details are kept. A DeadlineExceeded status matches ErrTimeout; a ResourceExhausted status
// raised by gRPC's own message size limits matches ErrTooLarge.
func StatusError(method string, err error, trailer metadata.MD) *Error {
	st, _ := status.FromError(err)
	p := st.Proto()
	if p.Code < 0 || p.Code > int32(codes.Unauthenticated) {
		p.Message = fmt.Sprintf("server sent unknown status code %d: %s", p.Code, p.Message)
		p.Code = int32(codes.Unknown)
	}
	p.Message = capMessage(p.Message)
	e := &Error{method: method, st: status.FromProto(p), trailer: trailer}
	switch codes.Code(p.Code) {
	case codes.DeadlineExceeded:
		e.kind = ErrTimeout
	case codes.ResourceExhausted:
		if isGRPCSizeLimit(p.Message) {
			e.kind = ErrTooLarge
		}
	}
	return e
}

// isGRPCSizeLimit reports whether msg is one of grpc-go's own message-size-limit messages
// (rpc_util.go): they are the only way to tell gRPC's limit from a server's own
// ResourceExhausted.
func isGRPCSizeLimit(msg string) bool {
	return strings.HasPrefix(msg, "grpc: received message larger than max") ||
		strings.HasPrefix(msg, "grpc: received message after decompression larger than max") ||
		strings.HasPrefix(msg, "grpc: trying to send message larger than max")
}

func capMessage(msg string) string {
	if len(msg) <= MaxStatusMessageBytes {
		return msg
	}
	cut := MaxStatusMessageBytes
	for cut > 0 && cut < len(msg) && msg[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s…[%d bytes cut]", msg[:cut], len(msg)-cut)
}

// Error returns "prpc: <method>: <code>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("prpc: %s: %s: %s", e.method, e.st.Code(), e.st.Message())
}

// Code returns the gRPC status code.
func (e *Error) Code() codes.Code { return e.st.Code() }

// Message returns the status message.
func (e *Error) Message() string { return e.st.Message() }

// Method returns the path of the method called.
func (e *Error) Method() string { return e.method }

// GRPCStatus returns the gRPC status, with its details, so that status.Code and
// status.FromError work on the error.
func (e *Error) GRPCStatus() *status.Status { return e.st }

// Trailer returns the trailers the server sent with a failure; nil for local failures.
func (e *Error) Trailer() metadata.MD { return e.trailer }

// Is reports whether e matches target: the sentinel of its condition, or the same error.
func (e *Error) Is(target error) bool {
	return target == e.kind && target != nil
}

// Unwrap returns the cause, if any: for example the context error of a call cut off by
// Close, or of a call whose parent context was cancelled.
func (e *Error) Unwrap() error { return e.cause }

// Kind returns the sentinel the error matches, or nil for a server status that matches none.
func (e *Error) Kind() error { return e.kind }
