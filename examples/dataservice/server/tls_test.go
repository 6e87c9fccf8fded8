package server

import (
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

func TestTLS(t *testing.T) {
	cert := issueCert(t, "server", serverCert, nil) // self-signed
	srv := startServer(t, Options{TLSCertFile: cert.certFile, TLSKeyFile: cert.keyFile})

	creds := credentials.NewTLS(&tls.Config{RootCAs: cert.pool(), MinVersion: tls.VersionTLS12})
	client := networkpb.NewDataServiceClient(dial(t, srv.Addr(), creds))
	saved, err := client.SavePlayer(t.Context(), &networkpb.SavePlayerRequest{Player: &networkpb.Player{Xuid: "tls"}})
	require.NoError(t, err)
	require.EqualValues(t, 1, saved.GetVersion())

	t.Run("plaintext client is refused", func(t *testing.T) {
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), nil))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
	t.Run("untrusted server is refused", func(t *testing.T) {
		other := issueCert(t, "other", serverCert, nil)
		creds := credentials.NewTLS(&tls.Config{RootCAs: other.pool(), MinVersion: tls.VersionTLS12})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
}

func TestMutualTLS(t *testing.T) {
	ca := issueCert(t, "ca", caCert, nil)
	serverLeaf := issueCert(t, "server", serverCert, ca)
	clientLeaf := issueCert(t, "game-server", clientCert, ca)
	srv := startServer(t, Options{
		TLSCertFile:  serverLeaf.certFile,
		TLSKeyFile:   serverLeaf.keyFile,
		ClientCAFile: ca.certFile,
	})

	t.Run("client with certificate", func(t *testing.T) {
		creds := credentials.NewTLS(&tls.Config{
			RootCAs:      ca.pool(),
			Certificates: []tls.Certificate{clientLeaf.tlsCertificate()},
			MinVersion:   tls.VersionTLS12,
		})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: ServiceName})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	})
	t.Run("client without certificate is refused", func(t *testing.T) {
		creds := credentials.NewTLS(&tls.Config{RootCAs: ca.pool(), MinVersion: tls.VersionTLS12})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
	t.Run("client certificate from another CA is refused", func(t *testing.T) {
		otherCA := issueCert(t, "other-ca", caCert, nil)
		stranger := issueCert(t, "stranger", clientCert, otherCA)
		creds := credentials.NewTLS(&tls.Config{
			RootCAs:      ca.pool(),
			Certificates: []tls.Certificate{stranger.tlsCertificate()},
			MinVersion:   tls.VersionTLS12,
		})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
}
