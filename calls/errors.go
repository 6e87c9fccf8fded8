package calls

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callerr"
)

// Sentinel errors. Every failed call's error matches at most one of them with errors.Is. A
// call that prpc failed itself matches exactly one. A call that failed with a status from
// gRPC or from the server matches ErrTimeout if the code is DeadlineExceeded, ErrUnavailable
// if it is Unavailable, ErrTooLarge if it is ResourceExhausted raised by gRPC's own message
// size limits, and none otherwise: a server's InvalidArgument, for example, does not match
// ErrInvalidArgument. status.Code works on each sentinel and on every *Error.
var (
	// ErrClosed: the reactor was closed before the call completed, or the call was submitted
	// after Close. Code Canceled.
	ErrClosed error = &sentinel{codes.Canceled, "reactor closed"}
	// ErrOverloaded: as many calls as the reactor admits were already admitted and not yet
	// delivered: MaxOutstanding, or for a call that is not critical, MaxOutstanding less
	// CriticalReserve. For a stream: reactor.Config.MaxStreams streams were open when it was
	// opened, or, from BidiStream.Send, MaxSendQueue messages were waiting to be sent. Code
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
	// ErrInvalidArgument: the call was invalid (a nil request, a request that cannot be
	// encoded, a bad timeout, bad metadata, WaitForReady with FailFast, a method not in the
	// reactor's allowlist) and was never sent. Code InvalidArgument.
	ErrInvalidArgument error = &sentinel{codes.InvalidArgument, "invalid argument"}
	// ErrUnavailable: the call failed with Unavailable, whoever raised it: gRPC could not
	// connect (connection refused, no address resolved, a failed security handshake, whose
	// cause is a *HandshakeError), the connection was lost with the call in flight, or the
	// server returned Unavailable itself. The call may or may not have run on the server.
	// Code Unavailable.
	ErrUnavailable error = &sentinel{codes.Unavailable, "unavailable"}
	// ErrShed: prpc did not send the call, because it could no longer finish in time: when a
	// lane was free to send it, the time left before its deadline was less than the method's
	// recent successful calls took (under load, it had waited in prpc's queue until then).
	// It fails at once rather than at its deadline, and was never sent (Error.NotSent). It is
	// not a deadline error: the deadline had not passed. Code ResourceExhausted.
	ErrShed error = &sentinel{codes.ResourceExhausted, "shed: too little time left to finish"}
)

type sentinel struct {
	code codes.Code
	msg  string
}

// Error returns "prpc: " and the condition.
func (s *sentinel) Error() string { return "prpc: " + s.msg }

// GRPCStatus returns the status with the sentinel's code, so status.Code works on it.
func (s *sentinel) GRPCStatus() *status.Status { return status.New(s.code, s.Error()) }

// kinds maps the kinds of internal/callerr to the sentinels they match.
var kinds = [callerr.NumKinds]error{
	callerr.Closed:          ErrClosed,
	callerr.Overloaded:      ErrOverloaded,
	callerr.Timeout:         ErrTimeout,
	callerr.Cancelled:       ErrCancelled,
	callerr.TooLarge:        ErrTooLarge,
	callerr.InvalidArgument: ErrInvalidArgument,
	callerr.Unavailable:     ErrUnavailable,
	callerr.Shed:            ErrShed,
}

// Error is the error of a failed call: every failed call's error is a *Error. It holds the
// method's path, the gRPC status with its details, the trailers the server sent with it, if
// the call asked for them, the sentinel it matches (Kind) and, for some local failures, a
// cause (Unwrap). Only package reactor makes them; an *Error is immutable and safe for
// concurrent use.
//
// A status from the server keeps its code, message and details, except that a code outside
// 0–16 becomes Unknown, its message naming the code sent, and a message longer than 4096
// bytes is cut there, at a UTF-8 boundary, with a marker saying how many bytes were cut.
type Error callerr.Error

// core returns the error's state.
func (e *Error) core() *callerr.Error { return (*callerr.Error)(e) }

// Error returns "prpc: <method>: <code>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("prpc: %s: %s: %s", e.core().Method(), e.Code(), e.Message())
}

// Code returns the gRPC status code.
func (e *Error) Code() codes.Code { return e.core().Status().Code() }

// Message returns the status message.
func (e *Error) Message() string { return e.core().Status().Message() }

// Method returns the path of the method called.
func (e *Error) Method() string { return e.core().Method() }

// GRPCStatus returns the gRPC status, with its details, so that status.Code and
// status.FromError work on the error.
func (e *Error) GRPCStatus() *status.Status { return e.core().Status() }

// Trailer returns the trailers the server sent with a failure; nil for local failures and for
// calls that did not ask for response metadata (Options.ResponseMetadata,
// reactor.MethodPolicy.ResponseMetadata); empty if they were larger than
// limits.Limits.MaxMetadataBytes, which drops them whole. The status details travel in the
// status whether or not the trailer was asked for.
func (e *Error) Trailer() metadata.MD { return e.core().Trailer() }

// Is reports whether e matches target: the sentinel of its condition, or the same error.
func (e *Error) Is(target error) bool {
	return target != nil && target == e.Kind()
}

// Unwrap returns the cause, if any: for example the context error of a call cut off by
// Close, or of a call whose parent context was cancelled, or the *HandshakeError of a call
// that failed with Unavailable because a security handshake failed.
func (e *Error) Unwrap() error { return e.core().Cause() }

// Kind returns the sentinel the error matches, or nil for a server status that matches none.
func (e *Error) Kind() error { return kinds[e.core().Kind()] }

// NotSent reports whether the call's request certainly never left prpc and gRPC, so that no
// server can have run it and retrying it is safe even for a method that is not idempotent (a
// purchase). False means that the request may have reached a server: it may or may not have
// run there.
//
// A call is not sent when it was rejected at submission (ErrOverloaded, ErrInvalidArgument,
// ErrClosed after Close), when its deadline passed, it was cancelled or Close cut it off
// while it waited in prpc's queue for an invoker lane, when its request could not be encoded
// (ErrTooLarge, ErrInvalidArgument), and when gRPC failed it before it had a stream to a
// backend (no backend was ready, a name did not resolve, a connection could not be made),
// which prpc learns from gRPC on a connection it dialled with the service config it
// generates, for a method gRPC does not retry. A call cut while a lane ran it, a call that
// failed on a connection prpc did not dial or configure (Config.Conn, Config.ServiceConfig,
// Config.ServiceConfigLookup), a call of a method gRPC retries, and every call that failed
// with a status from the server may have been sent.
//
// For a stream's end, NotSent says the same of its request: the stream was refused when it
// was opened, was cancelled or closed before gRPC gave it a stream to a backend, or gRPC failed
// to open it without one (on a connection prpc dialled, as above).
func (e *Error) NotSent() bool { return e.core().NotSent() }

// HandshakeError is the cause of a call that failed with Unavailable because the security
// handshake of a new connection failed: the server's certificate was not trusted, the server
// refused the client's certificate, the server does not speak TLS, and so on. gRPC reports all
// of these with code Unavailable, as it does an outage; a HandshakeError tells them apart, so
// that an operator can tell "misconfigured" from "down". Find it with errors.As:
//
//	var he *calls.HandshakeError
//	if errors.As(err, &he) && he.Kind == calls.HandshakeUnknownAuthority { … }
//
// The call's error keeps code Unavailable and matches ErrUnavailable; its message starts with
// the classification. Package reactor attaches a HandshakeError to a failed call only when it
// recorded the failure itself (see reactor.Stats.LastConnError); it never carries key
// material.
type HandshakeError struct {
	// Kind classifies the failure.
	Kind HandshakeErrorKind
	// Protocol is the security protocol that failed, as gRPC's ProtocolInfo names it ("tls"
	// for prpc's own TLS credentials); empty if unknown.
	Protocol string
	// Err is the error the handshake failed with, returned by Unwrap: for TLS, a
	// *tls.CertificateVerificationError wrapping an x509 error, a tls.RecordHeaderError, a
	// *net.OpError for an alert sent by the server, …
	Err error
}

// Error returns "<protocol> handshake failed: <kind>: <cause>", without the kind for
// HandshakeOther.
func (e *HandshakeError) Error() string {
	return e.Summary() + ": " + fmt.Sprint(e.Err)
}

// Summary returns the classification without the cause: "TLS handshake failed: server
// certificate signed by unknown authority", or "TLS handshake failed" for HandshakeOther.
func (e *HandshakeError) Summary() string {
	s := "handshake failed"
	if e.Protocol != "" {
		s = strings.ToUpper(e.Protocol) + " " + s
	}
	if e.Kind != HandshakeOther {
		s += ": " + e.Kind.String()
	}
	return s
}

// Unwrap returns Err.
func (e *HandshakeError) Unwrap() error { return e.Err }

// HandshakeErrorKind classifies a HandshakeError. The set is closed: a failure that fits none
// of the named kinds is HandshakeOther.
type HandshakeErrorKind uint8

// Kinds of handshake failure.
const (
	// HandshakeOther: a failure prpc does not classify (a handshake timeout, a connection
	// closed during the handshake, a non-TLS protocol's own error, …). Err says what happened.
	HandshakeOther HandshakeErrorKind = iota
	// HandshakeUnknownAuthority: the server's certificate does not chain to a trusted root
	// (x509.UnknownAuthorityError), or there are no roots to verify it with.
	HandshakeUnknownAuthority
	// HandshakeNameMismatch: the server's certificate is not valid for the name prpc
	// verified (x509.HostnameError: the target's host, or the server-name override), or the
	// server does not serve that name (TLS alert unrecognized_name).
	HandshakeNameMismatch
	// HandshakeCertificateExpired: the server's certificate (or one in its chain) has
	// expired or is not valid yet (x509.CertificateInvalidError with reason Expired; compare
	// the clocks).
	HandshakeCertificateExpired
	// HandshakeBadServerCertificate: the server's certificate failed verification for
	// another reason (wrong key usage, name constraints, …).
	HandshakeBadServerCertificate
	// HandshakeClientCertificateRejected: the server refused the client's certificate or
	// required one that was not sent (TLS alerts bad_certificate, unsupported_certificate,
	// certificate_revoked, certificate_expired, certificate_unknown, unknown_ca,
	// access_denied, certificate_required). Go's TLS client sends no certificate whose
	// issuer the server does not accept, so a certificate from the wrong CA looks like none.
	HandshakeClientCertificateRejected
	// HandshakeProtocolMismatch: the server does not speak TLS (its first bytes are not a TLS
	// record: a plaintext server), or speaks no TLS version or application protocol (ALPN
	// "h2") the client offers.
	HandshakeProtocolMismatch
)

// String describes the kind: "other", "server certificate signed by unknown authority", ….
func (k HandshakeErrorKind) String() string {
	switch k {
	case HandshakeOther:
		return "other"
	case HandshakeUnknownAuthority:
		return "server certificate signed by unknown authority"
	case HandshakeNameMismatch:
		return "server certificate not valid for the server name"
	case HandshakeCertificateExpired:
		return "server certificate expired or not yet valid"
	case HandshakeBadServerCertificate:
		return "server certificate invalid"
	case HandshakeClientCertificateRejected:
		return "server rejected the client certificate or required one"
	case HandshakeProtocolMismatch:
		return "server does not speak TLS with HTTP/2 (protocol mismatch)"
	}
	return fmt.Sprintf("HandshakeErrorKind(%d)", uint8(k))
}
