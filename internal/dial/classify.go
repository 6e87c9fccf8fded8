package dial

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"

	"github.com/trixnew/prpc/internal/callerr"
)

// classifyHandshake maps the error of a failed client handshake, or of the first read after
// one, to its kind. See calls.HandshakeErrorKind for the table.
func classifyHandshake(err error) callerr.HandshakeKind {
	var (
		unknownAuthority x509.UnknownAuthorityError
		noRoots          x509.SystemRootsError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		recordHeader     tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &noRoots):
		return callerr.HandshakeUnknownAuthority
	case errors.As(err, &hostname):
		return callerr.HandshakeNameMismatch
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return callerr.HandshakeCertificateExpired
	case errors.As(err, &verification), errors.As(err, &invalid):
		return callerr.HandshakeBadServerCertificate
	case errors.As(err, &recordHeader):
		return callerr.HandshakeProtocolMismatch
	case strings.Contains(err.Error(), "missing selected ALPN property"):
		// grpc-go's credentials: the server completed TLS without agreeing to HTTP/2.
		return callerr.HandshakeProtocolMismatch
	}
	if a, ok := remoteAlert(err); ok {
		switch a {
		case alertBadCertificate, alertUnsupportedCertificate, alertCertificateRevoked,
			alertCertificateExpired, alertCertificateUnknown, alertUnknownCA,
			alertAccessDenied, alertCertificateRequired:
			return callerr.HandshakeClientCertificateRejected
		case alertUnrecognizedName:
			return callerr.HandshakeNameMismatch
		case alertProtocolVersion, alertInsufficientSecurity, alertNoApplicationProtocol:
			return callerr.HandshakeProtocolMismatch
		}
		// handshake_failure (40) among others: servers send it for a missing cipher suite
		// as well as for a missing client certificate, so it stays unclassified.
	}
	return callerr.HandshakeOther
}

// TLS alerts (RFC 8446 §6) that classify a failure.
const (
	alertBadCertificate         tls.AlertError = 42
	alertUnsupportedCertificate tls.AlertError = 43
	alertCertificateRevoked     tls.AlertError = 44
	alertCertificateExpired     tls.AlertError = 45
	alertCertificateUnknown     tls.AlertError = 46
	alertUnknownCA              tls.AlertError = 48
	alertAccessDenied           tls.AlertError = 49
	alertProtocolVersion        tls.AlertError = 70
	alertInsufficientSecurity   tls.AlertError = 71
	alertUnrecognizedName       tls.AlertError = 112
	alertCertificateRequired    tls.AlertError = 116
	alertNoApplicationProtocol  tls.AlertError = 120
)

func isRemoteAlert(err error) bool {
	_, ok := remoteAlert(err)
	return ok
}

// remoteAlert returns the TLS alert the peer sent, if err reports one. crypto/tls reports a
// received alert as a *net.OpError with Op "remote error" whose Err is of an unexported type
// with the same text as tls.AlertError (the exported type is used for QUIC), so the alert is
// recognised by its text.
func remoteAlert(err error) (tls.AlertError, bool) {
	if a, ok := errors.AsType[tls.AlertError](err); ok {
		return a, true
	}
	op, ok := errors.AsType[*net.OpError](err)
	if !ok || op.Op != "remote error" || op.Err == nil {
		return 0, false
	}
	text := op.Err.Error()
	for a := range 256 {
		if tls.AlertError(a).Error() == text {
			return tls.AlertError(a), true
		}
	}
	return 0, false
}
