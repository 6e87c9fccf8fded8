// Package callerr builds the errors of failed calls. calls.Error is defined on Error, so that
// package reactor builds one here and hands it to users as a *calls.Error by converting the
// pointer, with no exported constructor in package calls. Error's fields are unexported, so
// users of calls.Error reach none of them; calls.Error's methods read them through the
// accessors below.
//
// It also holds the kinds of a failed security handshake and the record of one
// (handshake.go), so that package dial, which classifies and records them, needs nothing of
// package calls; package reactor makes a *calls.HandshakeError of the record.
package callerr

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Kind is the condition a failure matches: each kind but None has a sentinel in package
// calls, which maps them.
type Kind uint8

// Kinds of failure, one per sentinel of package calls.
const (
	None            Kind = iota // a server status that matches no sentinel
	Closed                      // calls.ErrClosed
	Overloaded                  // calls.ErrOverloaded
	Timeout                     // calls.ErrTimeout
	Cancelled                   // calls.ErrCancelled
	TooLarge                    // calls.ErrTooLarge
	InvalidArgument             // calls.ErrInvalidArgument
	Unavailable                 // calls.ErrUnavailable
	Shed                        // calls.ErrShed
)

// NumKinds is one more than the largest Kind.
const NumKinds = int(Shed) + 1

// codeOf is the gRPC code of each kind's local failures.
var codeOf = [NumKinds]codes.Code{
	None:            codes.Unknown,
	Closed:          codes.Canceled,
	Overloaded:      codes.ResourceExhausted,
	Timeout:         codes.DeadlineExceeded,
	Cancelled:       codes.Canceled,
	TooLarge:        codes.ResourceExhausted,
	InvalidArgument: codes.InvalidArgument,
	Unavailable:     codes.Unavailable,
	Shed:            codes.ResourceExhausted,
}

// Code returns the gRPC code of the kind's failures; Unknown for None or a kind out of range.
func (k Kind) Code() codes.Code {
	if int(k) >= NumKinds {
		return codes.Unknown
	}
	return codeOf[k]
}

// MaxMessageBytes is the longest status message an error carries; a longer one is cut to
// this length, at a UTF-8 boundary, and a marker saying how many bytes were cut is appended.
const MaxMessageBytes = 4096

// Error is the state of the error of a failed call; see calls.Error. It is immutable.
type Error struct {
	kind    Kind
	method  string
	st      *status.Status
	trailer metadata.MD
	cause   error
	notSent bool
}

// New returns the error of a call of method that failed locally for the reason kind, with
// the kind's code, a message saying why and an optional cause. A kind that is None or out
// of range is a programming error and panics.
func New(kind Kind, method, message string, cause error) *Error {
	if kind == None || int(kind) >= NumKinds {
		panic(fmt.Sprintf("prpc: callerr.New: invalid kind %d", kind))
	}
	return &Error{kind: kind, method: method, st: status.New(codeOf[kind], message), cause: cause}
}

// FromStatus returns the error of a call of method that failed with err as returned by gRPC,
// and the trailer received with it. The code and message are kept, except that a code
// outside 0–16 becomes Unknown (the message names the original code) and a message longer
// than MaxMessageBytes is cut; the status details are kept. An error that carries no status
// becomes Unknown with err's text. A DeadlineExceeded status is a Timeout, an Unavailable
// status is Unavailable, and a ResourceExhausted status raised by gRPC's own message size
// limits is TooLarge; every other status is None.
func FromStatus(method string, err error, trailer metadata.MD) *Error {
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
		e.kind = Timeout
	case codes.Unavailable:
		e.kind = Unavailable
	case codes.ResourceExhausted:
		if isGRPCSizeLimit(p.Message) {
			e.kind = TooLarge
		}
	}
	return e
}

// Handshake is the cause of a call that failed because a security handshake failed: a
// *calls.HandshakeError.
type Handshake interface {
	error
	// Summary returns the classification of the failure, without its cause.
	Summary() string
}

// FromHandshake is FromStatus for a call that failed because a security handshake failed:
// the code is err's (Unavailable, so the kind is Unavailable), the message is prefixed with
// he.Summary() and cut to MaxMessageBytes as a whole, and the cause is he, which must not
// be nil.
func FromHandshake(method string, err error, trailer metadata.MD, he Handshake) *Error {
	if he == nil {
		panic("prpc: callerr.FromHandshake: nil handshake error")
	}
	e := FromStatus(method, err, trailer)
	p := e.st.Proto()
	p.Message = capMessage(he.Summary() + ": " + p.Message)
	e.st = status.FromProto(p)
	e.cause = he
	return e
}

// isGRPCSizeLimit reports whether msg is one of grpc-go's own message-size-limit messages
// (rpc_util.go, stream.go): they are the only way to tell gRPC's limit from a server's own
// ResourceExhausted.
func isGRPCSizeLimit(msg string) bool {
	return strings.HasPrefix(msg, "grpc: received message larger than max") ||
		strings.HasPrefix(msg, "grpc: received message after decompression larger than max") ||
		strings.HasPrefix(msg, "grpc: message after decompression larger than max") ||
		strings.HasPrefix(msg, "grpc: trying to send message larger than max") ||
		strings.HasPrefix(msg, "trying to send message larger than max (")
}

// FromCallStatus is FromStatus for a call that gRPC ran with its receive limit at
// maxResponseBytes (Limits.MaxResponseBytes) and a request of requestBytes, encoded: if err
// is gRPC's refusal of a response over that limit, the message says so and names
// Limits.MaxResponseBytes, followed by gRPC's own message, and the cause is err. The code,
// the kind (TooLarge), the details and the trailer are FromStatus's.
//
// gRPC's message names only its bound, which a server's refusal of the request, over the
// server's own receive limit, shares: so err is taken for the client's refusal if gRPC's
// bound is maxResponseBytes and the size it names is not the request's, or it names none and
// the request is within the bound. If the size is the request's, or it names none and the
// request is over the bound, the message names both possible causes.
func FromCallStatus(method string, err error, trailer metadata.MD, maxResponseBytes, requestBytes int) *Error {
	e := FromStatus(method, err, trailer)
	if e.kind != TooLarge {
		return e
	}
	msg := e.st.Message()
	size, bound, after, ok := receiveLimit(msg)
	if !ok || bound != maxResponseBytes {
		return e
	}
	const either = ": the response, over Limits.MaxResponseBytes, or the request, over the server's own receive limit"
	var what string
	switch {
	case size >= 0 && size != requestBytes:
		what = fmt.Sprintf("response is %d bytes%s, over the %d-byte limit (Limits.MaxResponseBytes)", size, afterDecompression(after), bound)
	case size < 0 && requestBytes <= bound:
		what = fmt.Sprintf("response is over the %d-byte limit%s (Limits.MaxResponseBytes)", bound, afterDecompression(after))
	case size >= 0:
		what = fmt.Sprintf("a message of %d bytes%s is over a %d-byte limit%s", size, afterDecompression(after), bound, either)
	default:
		what = fmt.Sprintf("a message is over a %d-byte limit%s%s", bound, afterDecompression(after), either)
	}
	p := e.st.Proto()
	p.Message = capMessage(what + ": " + msg)
	e.st, e.cause = status.FromProto(p), err
	return e
}

func afterDecompression(after bool) string {
	if after {
		return " after decompression"
	}
	return ""
}

// receiveLimit parses one of grpc-go's receive-limit messages: the size it names (-1 if it
// names none), its bound, and whether the size is counted after decompression. ok is false
// for any other message, and for the limit of the machine's int, which no limit of prpc's
// sets.
func receiveLimit(msg string) (size, bound int, after, ok bool) {
	var n int
	var err error
	switch {
	case strings.HasPrefix(msg, "grpc: received message larger than max length allowed"):
		return 0, 0, false, false
	case strings.HasPrefix(msg, "grpc: received message larger than max ("):
		n, err = fmt.Sscanf(msg, "grpc: received message larger than max (%d vs. %d)", &size, &bound)
	case strings.HasPrefix(msg, "grpc: message after decompression larger than max ("):
		n, err = fmt.Sscanf(msg, "grpc: message after decompression larger than max (%d vs. %d)", &size, &bound)
		after = true
	case strings.HasPrefix(msg, "grpc: received message after decompression larger than max "):
		size, after = -1, true
		n, err = fmt.Sscanf(msg, "grpc: received message after decompression larger than max %d", &bound)
		n++
	default:
		return 0, 0, false, false
	}
	return size, bound, after, err == nil && n == 2
}

func capMessage(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	cut := MaxMessageBytes
	for cut > 0 && cut < len(msg) && msg[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%s…[%d bytes cut]", msg[:cut], len(msg)-cut)
}

// Kind returns the condition the error matches; None for a status that matches no sentinel.
func (e *Error) Kind() Kind { return e.kind }

// Method returns the path of the method called.
func (e *Error) Method() string { return e.method }

// Status returns the gRPC status, with its details.
func (e *Error) Status() *status.Status { return e.st }

// Trailer returns the trailer received with a failure; nil for local failures.
func (e *Error) Trailer() metadata.MD { return e.trailer }

// Cause returns the cause, or nil.
func (e *Error) Cause() error { return e.cause }

// NotSent reports whether the call's request certainly never left prpc and gRPC.
func (e *Error) NotSent() bool { return e.notSent }

// MarkNotSent records that the call's request never left prpc and gRPC, and returns e. Call
// it only on an error not handed out yet: an Error is immutable once it has been.
func (e *Error) MarkNotSent() *Error {
	e.notSent = true
	return e
}
