package reactor_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testcerts"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// switchCreds are server credentials whose handshake can be swapped while the server runs:
// a test breaks the server's TLS, watches the client fail, then fixes it and watches the
// same reactor recover.
type switchCreds struct {
	cur atomic.Pointer[credentials.TransportCredentials]
}

func newSwitchCreds(tc credentials.TransportCredentials) *switchCreds {
	s := &switchCreds{}
	s.set(tc)
	return s
}

func (s *switchCreds) set(tc credentials.TransportCredentials) { s.cur.Store(&tc) }
func (s *switchCreds) get() credentials.TransportCredentials   { return *s.cur.Load() }

func (s *switchCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("switchCreds: server side only")
}
func (s *switchCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return s.get().ServerHandshake(c)
}
func (s *switchCreds) Info() credentials.ProtocolInfo          { return s.get().Info() }
func (s *switchCreds) Clone() credentials.TransportCredentials { return s }
func (s *switchCreds) OverrideServerName(string) error         { return nil }

var _ credentials.TransportCredentials = (*switchCreds)(nil)

// rawTLSServer completes a TLS handshake with cfg as crypto/tls does it, without gRPC's
// credentials (which always offer ALPN "h2"), then refuses the connection. It stands in for
// a TLS server that is not a gRPC server.
type rawTLSServer struct {
	credentials.TransportCredentials // for Info
	cfg                              *tls.Config
}

func (s rawTLSServer) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc := tls.Server(c, s.cfg)
	err := tc.Handshake()
	tc.Close()
	if err == nil {
		err = errors.New("rawTLSServer: not a gRPC server")
	}
	return nil, nil, err
}

// issueCert makes a certificate for 127.0.0.1 and "backend.test" with the extended key usage
// usage, valid from notBefore to notAfter (zero: testcerts' defaults).
func issueCert(t *testing.T, ca *testcerts.CA, usage x509.ExtKeyUsage, notBefore, notAfter time.Time) *testcerts.Cert {
	t.Helper()
	return ca.Issue(t, "backend.test", testcerts.Options{
		DNSNames: []string{"backend.test"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usage: usage, NotBefore: notBefore, NotAfter: notAfter,
	})
}

// TestHandshakeFailuresAreClassified: each TLS misconfiguration fails a call with Unavailable,
// as gRPC reports it, and with a *calls.HandshakeError of the right kind that Stats reports
// too; once the server is fixed, the same reactor reconnects and the successful handshake
// clears it.
func TestHandshakeFailuresAreClassified(t *testing.T) {
	fx := newTLSFixture(t)
	good := credentials.NewTLS(testcerts.ServerTLS(fx.server, nil))
	now := time.Now()
	expired := issueCert(t, fx.ca, x509.ExtKeyUsageServerAuth, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	notYetValid := issueCert(t, fx.ca, x509.ExtKeyUsageServerAuth, now.Add(24*time.Hour), now.Add(48*time.Hour))
	expiredClient := issueCert(t, fx.ca, x509.ExtKeyUsageClientAuth, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	clientUsage := issueCert(t, fx.ca, x509.ExtKeyUsageClientAuth, time.Time{}, time.Time{})
	wrongTestCert := fx.ca.Issue(t, "wrong.test", testcerts.Options{DNSNames: []string{"wrong.test"}, Usage: x509.ExtKeyUsageServerAuth})
	bothCAs := x509.NewCertPool()
	bothCAs.AddCert(fx.ca.Cert)
	bothCAs.AddCert(fx.otherCA.Cert)
	mTLS12 := testcerts.ServerTLS(fx.server, fx.ca.Pool)
	mTLS12.MaxVersion = tls.VersionTLS12
	tlsCfg := func(c *tls.Config, nextProtos ...string) *tls.Config {
		c = c.Clone()
		c.NextProtos = nextProtos
		return c
	}

	tests := []struct {
		name   string
		broken credentials.TransportCredentials // the server's credentials while misconfigured
		fixed  credentials.TransportCredentials // and once fixed
		client reactor.Credentials
		kind   calls.HandshakeErrorKind
		cause  string // part of the recorded cause's text
	}{
		{
			name:   "unknown CA",
			broken: credentials.NewTLS(testcerts.ServerTLS(fx.otherCA.Server(t, "backend.test"), nil)),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeUnknownAuthority, cause: "unknown authority",
		},
		{
			name:   "wrong server name",
			broken: good,
			fixed:  credentials.NewTLS(testcerts.ServerTLS(wrongTestCert, nil)),
			client: reactor.TLS(fx.ca.CertPEM, "wrong.test"),
			kind:   calls.HandshakeNameMismatch, cause: "not wrong.test",
		},
		{
			name:   "IP SAN missing",
			broken: credentials.NewTLS(testcerts.ServerTLS(wrongTestCert, nil)),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeNameMismatch, cause: "127.0.0.1",
		},
		{
			name:   "expired server certificate",
			broken: credentials.NewTLS(testcerts.ServerTLS(expired, nil)),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeCertificateExpired, cause: "expired",
		},
		{
			name:   "server certificate not yet valid",
			broken: credentials.NewTLS(testcerts.ServerTLS(notYetValid, nil)),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeCertificateExpired, cause: "not yet valid",
		},
		{
			name:   "server certificate for client auth only",
			broken: credentials.NewTLS(testcerts.ServerTLS(clientUsage, nil)),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeBadServerCertificate, cause: "key usage",
		},
		{
			name:   "plaintext server, TLS client",
			broken: insecure.NewCredentials(),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeProtocolMismatch, cause: "does not look like a TLS handshake",
		},
		{
			name:   "TLS server without ALPN",
			broken: rawTLSServer{good, tlsCfg(testcerts.ServerTLS(fx.server, nil))},
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeProtocolMismatch, cause: "ALPN",
		},
		{
			name:   "TLS server speaking HTTP/1.1 only",
			broken: rawTLSServer{good, tlsCfg(testcerts.ServerTLS(fx.server, nil), "http/1.1")},
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeProtocolMismatch, cause: "no application protocol",
		},
		{
			// TLS 1.3: the client's handshake succeeds; the server's alert arrives on the
			// first read.
			name:   "mTLS, no client certificate",
			broken: credentials.NewTLS(testcerts.ServerTLS(fx.server, fx.ca.Pool)),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeClientCertificateRejected, cause: "certificate required",
		},
		{
			// TLS 1.2: the server's alert fails the client's handshake itself. Go's TLS 1.2
			// server sends handshake_failure, which servers also send for no cipher suite in
			// common: recorded, not classified.
			name:   "mTLS 1.2, no client certificate",
			broken: credentials.NewTLS(mTLS12),
			fixed:  good, client: reactor.TLS(fx.ca.CertPEM, ""),
			kind: calls.HandshakeOther, cause: "handshake failure",
		},
		{
			name:   "mTLS, expired client certificate",
			broken: credentials.NewTLS(testcerts.ServerTLS(fx.server, fx.ca.Pool)),
			fixed:  good, client: reactor.MutualTLS(fx.ca.CertPEM, expiredClient.CertPEM, expiredClient.KeyPEM, ""),
			kind: calls.HandshakeClientCertificateRejected, cause: "expired certificate",
		},
		{
			name:   "mTLS 1.2, expired client certificate",
			broken: credentials.NewTLS(mTLS12),
			fixed:  good, client: reactor.MutualTLS(fx.ca.CertPEM, expiredClient.CertPEM, expiredClient.KeyPEM, ""),
			kind: calls.HandshakeClientCertificateRejected, cause: "expired certificate",
		},
		{
			// Go's client does not send a certificate the server's CAs did not issue, so
			// this is "certificate required" again, as the server sees it.
			name:   "mTLS, client certificate from another CA",
			broken: credentials.NewTLS(testcerts.ServerTLS(fx.server, fx.ca.Pool)),
			fixed:  credentials.NewTLS(testcerts.ServerTLS(fx.server, bothCAs)),
			client: reactor.MutualTLS(fx.ca.CertPEM, fx.stranger.CertPEM, fx.stranger.KeyPEM, ""),
			kind:   calls.HandshakeClientCertificateRejected, cause: "certificate required",
		},
		{
			// The wrapper records for FromTransport credentials too.
			name:   "FromTransport, unknown CA",
			broken: credentials.NewTLS(testcerts.ServerTLS(fx.otherCA.Server(t, "backend.test"), nil)),
			fixed:  good, client: reactor.FromTransport(credentials.NewClientTLSFromCert(fx.ca.Pool, "")),
			kind: calls.HandshakeUnknownAuthority, cause: "unknown authority",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newSwitchCreds(tt.broken)
			srv := testserver.Start(t, grpc.Creds(sc))
			r := newReactor(t, srv, reactor.Config{Credentials: tt.client, Backoff: fastBackoff})

			err := tlsCall(t, r, false)
			require.Error(t, err)
			t.Log(err)
			require.Equal(t, codes.Unavailable, status.Code(err), "the code stays Unavailable")
			require.ErrorIs(t, err, calls.ErrUnavailable, "a failed handshake matches ErrUnavailable")
			var he *calls.HandshakeError
			require.ErrorAs(t, err, &he, "the call's error carries the handshake failure")
			require.Equal(t, tt.kind, he.Kind, "kind of %v", he)
			require.Equal(t, "tls", he.Protocol)
			require.Contains(t, he.Err.Error(), tt.cause)
			require.True(t, strings.HasPrefix(err.(*calls.Error).Message(), he.Summary()+": "), "the message starts with the classification: %v", err)
			require.NotErrorIs(t, err, calls.ErrTimeout)
			require.Zero(t, srv.Calls(), "the call must not reach the handler")

			st := r.Stats()
			require.Equal(t, he.Error(), st.LastConnError)
			require.Equal(t, tt.kind, st.LastConnErrorKind)

			sc.set(tt.fixed)
			require.NoError(t, tlsCall(t, r, true), "the same reactor recovers once the server is fixed")
			st = r.Stats()
			require.Empty(t, st.LastConnError, "a successful handshake clears the failure")
			require.Equal(t, calls.HandshakeOther, st.LastConnErrorKind)
			require.Equal(t, int64(1), srv.Calls())
		})
	}
}

// A plaintext client cannot see a TLS server's handshake: there is none on its side, and
// prpc does not wrap Insecure credentials. The server closes the connection when the client's
// HTTP/2 preface is not a TLS record, and the client reports it as a broken connection:
// Unavailable, no HandshakeError, no LastConnError (TestPlaintextToTLSServerHint checks the
// hint its message gets).
func TestHandshakePlaintextClientToTLSServer(t *testing.T) {
	fx := newTLSFixture(t)
	sc := newSwitchCreds(credentials.NewTLS(testcerts.ServerTLS(fx.server, nil)))
	srv := testserver.Start(t, grpc.Creds(sc))
	r := newReactor(t, srv, reactor.Config{Credentials: reactor.Insecure(), Backoff: fastBackoff})

	err := tlsCall(t, r, false)
	require.Error(t, err)
	t.Log(err)
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.ErrorIs(t, err, calls.ErrUnavailable, "a connection the server closed matches ErrUnavailable")
	var he *calls.HandshakeError
	require.False(t, errors.As(err, &he), "nothing recorded for Insecure credentials")
	require.Empty(t, r.Stats().LastConnError)

	sc.set(insecure.NewCredentials())
	require.NoError(t, tlsCall(t, r, true))
	require.Empty(t, r.Stats().LastConnError)
}

// TestPlaintextToTLSServerHint: a call that a plaintext reactor fails against a TLS server,
// which gRPC reports as a failure to read the server's HTTP/2 preface, says that the server
// may require TLS and names reactor.TLS, whichever way the credentials are plaintext; the
// code and sentinel stay gRPC's. A refused connection and a TLS reactor's failed handshake
// get no such hint.
func TestPlaintextToTLSServerHint(t *testing.T) {
	fx := newTLSFixture(t)
	tlsServer := func(t *testing.T) *testserver.Server {
		return testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.server, nil))))
	}
	stopped := func(t *testing.T) *testserver.Server {
		srv := testserver.Start(t)
		srv.Stop()
		return srv
	}
	tests := []struct {
		name     string
		server   func(t *testing.T) *testserver.Server
		creds    reactor.Credentials
		wantHint bool
	}{
		{"Insecure to TLS server", tlsServer, reactor.Insecure(), true},
		{"FromTransport(insecure) to TLS server", tlsServer, reactor.FromTransport(insecure.NewCredentials()), true},
		{"Insecure to stopped server", stopped, reactor.Insecure(), false},
		{"TLS with another CA to TLS server", tlsServer, reactor.TLS(fx.otherCA.CertPEM, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReactor(t, tt.server(t), reactor.Config{Credentials: tt.creds, Backoff: fastBackoff})
			err := tlsCall(t, r, false)
			t.Log(err)
			require.Equal(t, codes.Unavailable, status.Code(err))
			require.ErrorIs(t, err, calls.ErrUnavailable)
			if tt.wantHint {
				require.Contains(t, err.Error(), "server preface", "gRPC's own text is kept")
				require.Contains(t, err.Error(), "the server may require TLS (reactor.TLS)")
				require.Contains(t, status.Convert(err).Message(), "reactor.TLS", "the status carries the hint too")
			} else {
				require.NotContains(t, err.Error(), "require TLS")
			}
		})
	}
}

// An outage after a handshake failure is reported as an outage: the recorded failure stays in
// Stats until a handshake succeeds, but is not attached to calls that failed for another
// reason.
func TestHandshakeFailureNotBlamedForOutage(t *testing.T) {
	fx := newTLSFixture(t)
	sc := newSwitchCreds(credentials.NewTLS(testcerts.ServerTLS(fx.otherCA.Server(t, "backend.test"), nil)))
	srv := testserver.Start(t, grpc.Creds(sc))
	r := newReactor(t, srv, reactor.Config{Credentials: reactor.TLS(fx.ca.CertPEM, ""), Backoff: fastBackoff})

	err := tlsCall(t, r, false)
	var he *calls.HandshakeError
	require.ErrorAs(t, err, &he)
	require.Equal(t, calls.HandshakeUnknownAuthority, he.Kind)

	srv.Stop()
	// Reconnect attempts now fail before any handshake (connection refused). Wait until the
	// failure a call reports is that one, not the handshake's; each try fails at once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = tlsCall(t, r, false)
		require.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
		if !strings.Contains(err.Error(), "unknown authority") {
			break
		}
		require.True(t, time.Now().Before(deadline), "still failing with the handshake error: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	t.Log(err)
	require.ErrorIs(t, err, calls.ErrUnavailable, "a refused connection matches ErrUnavailable")
	require.False(t, errors.As(err, &he), "an outage is not blamed on the old handshake failure: %v", err)
	require.Contains(t, r.Stats().LastConnError, "unknown authority", "kept until a handshake succeeds")
	require.Equal(t, calls.HandshakeUnknownAuthority, r.Stats().LastConnErrorKind)

	sc.set(credentials.NewTLS(testcerts.ServerTLS(fx.server, nil)))
	srv.Restart(t)
	require.NoError(t, tlsCall(t, r, true))
	require.Empty(t, r.Stats().LastConnError)
}

// With several backends, one misconfigured, the others keep serving: a failure is recorded,
// but a call that fails on a healthy backend for its own reason is not blamed on it.
func TestHandshakeFailureOfAnotherBackend(t *testing.T) {
	fx := newTLSFixture(t)
	good := testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.server, nil))))
	bad := testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.otherCA.Server(t, "backend.test"), nil))))
	res := manual.NewBuilderWithScheme("hs")
	res.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: good.Addr()}, {Addr: bad.Addr()}}})
	r := newReactor(t, nil, reactor.Config{
		Target:        "hs:///backends",
		Credentials:   reactor.TLS(fx.ca.CertPEM, "backend.test"),
		DialOptions:   []grpc.DialOption{grpc.WithResolvers(res)},
		ServiceConfig: `{"loadBalancingConfig": [{"round_robin": {}}]}`,
		Backoff:       fastBackoff,
	})

	require.NoError(t, tlsCall(t, r, true), "the good backend serves")
	// The bad backend fails every attempt, every 60 ms at most (fastBackoff); the good one
	// connected once.
	deadline := time.Now().Add(10 * time.Second)
	for r.Stats().LastConnErrorKind != calls.HandshakeUnknownAuthority {
		require.True(t, time.Now().Before(deadline), "no handshake failure recorded: %+v", r.Stats())
		time.Sleep(10 * time.Millisecond)
	}
	p := reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.Unavailable), FailMessage: "maintenance"}, &calls.Options{Timeout: failTimeout})
	waitFor(t, r, func() bool { return p.State() != calls.Pending })
	t.Log(p.Err())
	require.Equal(t, codes.Unavailable, status.Code(p.Err()))
	require.ErrorIs(t, p.Err(), calls.ErrUnavailable, "the server's own Unavailable matches ErrUnavailable")
	var he *calls.HandshakeError
	require.False(t, errors.As(p.Err(), &he), "the server's own Unavailable is not a handshake failure: %v", p.Err())
	require.Equal(t, "prpc: /prpctest.TestService/Echo: Unavailable: maintenance", p.Err().Error())
	require.Equal(t, int64(2), good.Calls())
	require.Zero(t, bad.Calls())
}
