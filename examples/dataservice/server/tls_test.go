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
	"github.com/trixnew/prpc/internal/testcerts"
)

func TestTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "ca")
	certFile, keyFile := ca.Server(t).WriteFiles(t, t.TempDir(), "server")
	srv := startServer(t, Options{TLSCertFile: certFile, TLSKeyFile: keyFile})

	creds := credentials.NewTLS(&tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12})
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
		other := testcerts.NewCA(t, "other")
		creds := credentials.NewTLS(&tls.Config{RootCAs: other.Pool, MinVersion: tls.VersionTLS12})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	certFile, keyFile := ca.Server(t).WriteFiles(t, dir, "server")
	clientLeaf := ca.Client(t, "game-server")
	srv := startServer(t, Options{
		TLSCertFile:  certFile,
		TLSKeyFile:   keyFile,
		ClientCAFile: ca.WriteFile(t, dir, "ca"),
	})

	t.Run("client with certificate", func(t *testing.T) {
		creds := credentials.NewTLS(&tls.Config{
			RootCAs:      ca.Pool,
			Certificates: []tls.Certificate{clientLeaf.TLS},
			MinVersion:   tls.VersionTLS12,
		})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: ServiceName})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	})
	t.Run("client without certificate is refused", func(t *testing.T) {
		creds := credentials.NewTLS(&tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
	t.Run("client certificate from another CA is refused", func(t *testing.T) {
		stranger := testcerts.NewCA(t, "other-ca").Client(t, "stranger")
		creds := credentials.NewTLS(&tls.Config{
			RootCAs:      ca.Pool,
			Certificates: []tls.Certificate{stranger.TLS},
			MinVersion:   tls.VersionTLS12,
		})
		hc := healthpb.NewHealthClient(dial(t, srv.Addr(), creds))
		_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{})
		require.Equal(t, codes.Unavailable, status.Code(err), "error: %v", err)
	})
}
