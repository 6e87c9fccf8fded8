package callerr

// HandshakeKind classifies a failed security handshake. Its kinds are those of
// calls.HandshakeErrorKind, which documents them, with the same values, so that package
// reactor converts one to the other; package dial classifies a failure into one.
type HandshakeKind uint8

// Kinds of handshake failure, one per calls.HandshakeErrorKind.
const (
	HandshakeOther                     HandshakeKind = iota // calls.HandshakeOther
	HandshakeUnknownAuthority                               // calls.HandshakeUnknownAuthority
	HandshakeNameMismatch                                   // calls.HandshakeNameMismatch
	HandshakeCertificateExpired                             // calls.HandshakeCertificateExpired
	HandshakeBadServerCertificate                           // calls.HandshakeBadServerCertificate
	HandshakeClientCertificateRejected                      // calls.HandshakeClientCertificateRejected
	HandshakeProtocolMismatch                               // calls.HandshakeProtocolMismatch
)

// NumHandshakeKinds is one more than the largest HandshakeKind.
const NumHandshakeKinds = int(HandshakeProtocolMismatch) + 1

// HandshakeFailure is a failed security handshake as package dial records it: the state of
// a calls.HandshakeError, whose fields it has, and which package reactor makes of it for
// Stats and for the calls it failed. It is immutable once recorded.
type HandshakeFailure struct {
	// Kind classifies the failure.
	Kind HandshakeKind
	// Protocol is the security protocol that failed, as gRPC's ProtocolInfo names it; empty
	// if unknown.
	Protocol string
	// Err is the error the handshake failed with.
	Err error
}
