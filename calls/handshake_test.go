package calls_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callerr"
)

func TestHandshakeErrorText(t *testing.T) {
	cause := x509.UnknownAuthorityError{}
	tests := []struct {
		he            calls.HandshakeError
		summary, text string
	}{
		{calls.HandshakeError{Kind: calls.HandshakeUnknownAuthority, Protocol: "tls", Err: cause},
			"TLS handshake failed: server certificate signed by unknown authority",
			"TLS handshake failed: server certificate signed by unknown authority: " + cause.Error()},
		{calls.HandshakeError{Kind: calls.HandshakeOther, Protocol: "alts", Err: errors.New("boom")},
			"ALTS handshake failed", "ALTS handshake failed: boom"},
		{calls.HandshakeError{Kind: calls.HandshakeProtocolMismatch, Err: errors.New("eof")},
			"handshake failed: server does not speak TLS with HTTP/2 (protocol mismatch)",
			"handshake failed: server does not speak TLS with HTTP/2 (protocol mismatch): eof"},
		{calls.HandshakeError{Kind: calls.HandshakeOther}, "handshake failed", "handshake failed: <nil>"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.summary, tt.he.Summary())
		require.Equal(t, tt.text, tt.he.Error())
	}
	he := &calls.HandshakeError{Kind: calls.HandshakeUnknownAuthority, Protocol: "tls", Err: cause}
	var ua x509.UnknownAuthorityError
	require.ErrorAs(t, he, &ua, "Unwrap returns Err")
}

// The error of a call that failed in a security handshake keeps code Unavailable, matches
// ErrUnavailable, and leads errors.As to the *HandshakeError and on to the TLS cause.
func TestHandshakeFailureError(t *testing.T) {
	he := &calls.HandshakeError{Kind: calls.HandshakeNameMismatch, Protocol: "tls", Err: x509.HostnameError{Host: "wrong.test"}}
	st, err := status.New(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed"`).
		WithDetails(durationpb.New(1))
	require.NoError(t, err)
	trailer := metadata.Pairs("k", "v")
	e := callError(callerr.FromHandshake("/s/M", st.Err(), trailer, he))

	require.Equal(t, codes.Unavailable, status.Code(e), "the code stays Unavailable")
	require.Equal(t, codes.Unavailable, e.Code())
	require.Equal(t, he.Summary()+`: connection error: desc = "transport: authentication handshake failed"`, e.Message())
	require.Equal(t, "prpc: /s/M: Unavailable: "+e.Message(), e.Error())
	require.Len(t, e.GRPCStatus().Details(), 1, "details kept")
	require.Equal(t, trailer, e.Trailer())
	require.Equal(t, calls.ErrUnavailable, e.Kind())
	requireMatchesOnly(t, e, calls.ErrUnavailable)
	var got *calls.HandshakeError
	require.ErrorAs(t, e, &got)
	require.Same(t, he, got)
	var hn x509.HostnameError
	require.ErrorAs(t, e, &hn, "the chain reaches the TLS cause")
}

func TestHandshakeErrorKindString(t *testing.T) {
	kinds := []calls.HandshakeErrorKind{
		calls.HandshakeOther, calls.HandshakeUnknownAuthority, calls.HandshakeNameMismatch,
		calls.HandshakeCertificateExpired, calls.HandshakeBadServerCertificate,
		calls.HandshakeClientCertificateRejected, calls.HandshakeProtocolMismatch,
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		s := k.String()
		require.NotEmpty(t, s)
		require.NotContains(t, s, "HandshakeErrorKind(", "kind %d has no name", k)
		require.False(t, seen[s], "duplicate name %q", s)
		seen[s] = true
	}
	require.Equal(t, "HandshakeErrorKind(200)", calls.HandshakeErrorKind(200).String())
}

// Package dial classifies a failed handshake into a callerr.HandshakeKind, which package
// reactor converts by value to the calls.HandshakeErrorKind users see: the two lists must
// name the same kinds in the same order, and calls has none that callerr lacks.
func TestHandshakeKindsMatchCallerr(t *testing.T) {
	tests := []struct {
		internal callerr.HandshakeKind
		public   calls.HandshakeErrorKind
	}{
		{callerr.HandshakeOther, calls.HandshakeOther},
		{callerr.HandshakeUnknownAuthority, calls.HandshakeUnknownAuthority},
		{callerr.HandshakeNameMismatch, calls.HandshakeNameMismatch},
		{callerr.HandshakeCertificateExpired, calls.HandshakeCertificateExpired},
		{callerr.HandshakeBadServerCertificate, calls.HandshakeBadServerCertificate},
		{callerr.HandshakeClientCertificateRejected, calls.HandshakeClientCertificateRejected},
		{callerr.HandshakeProtocolMismatch, calls.HandshakeProtocolMismatch},
	}
	require.Len(t, tests, callerr.NumHandshakeKinds, "a kind of callerr is missing here")
	for _, tt := range tests {
		require.Equal(t, tt.public, calls.HandshakeErrorKind(tt.internal), "%v", tt.public)
	}
	beyond := calls.HandshakeErrorKind(callerr.NumHandshakeKinds)
	require.Equal(t, fmt.Sprintf("HandshakeErrorKind(%d)", callerr.NumHandshakeKinds), beyond.String(),
		"calls has a kind that callerr lacks")
}
