package reactor_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testcerts"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCredentialsRejectedByNew(t *testing.T) {
	fx := newTLSFixture(t)
	otherKey := fx.stranger.KeyPEM
	dir := t.TempDir()
	rootsFile := writeFile(t, dir, "roots.pem", fx.ca.CertPEM)
	certFile := writeFile(t, dir, "client.pem", fx.client.CertPEM)
	missing := filepath.Join(dir, "missing.pem")

	corruptCert := []byte("-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n")

	tests := []struct {
		name  string
		creds reactor.Credentials
		want  string
	}{
		{"roots not PEM", reactor.TLS([]byte("not a certificate"), ""), "roots"},
		{"roots empty", reactor.TLS([]byte{}, ""), "roots"},
		{"roots with trailing garbage", reactor.TLS(append(append([]byte{}, fx.ca.CertPEM...), "garbage"...), ""), "roots"},
		{"roots with a key block", reactor.TLS(fx.client.KeyPEM, ""), "PRIVATE KEY"},
		{"roots with a key block after a cert", reactor.TLS(append(append([]byte{}, fx.ca.CertPEM...), fx.client.KeyPEM...), ""), "PRIVATE KEY"},
		{"roots with a corrupt certificate", reactor.TLS(corruptCert, ""), "roots"},
		{"mTLS mismatched key", reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, otherKey, ""), "client certificate"},
		{"mTLS cert without key", reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, nil, ""), "private key"},
		{"mTLS key without cert", reactor.MutualTLS(fx.ca.CertPEM, nil, fx.client.KeyPEM, ""), "certificate"},
		{"mTLS key and cert swapped", reactor.MutualTLS(fx.ca.CertPEM, fx.client.KeyPEM, fx.client.CertPEM, ""), "client certificate"},
		{"mTLS garbage key", reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, []byte("-----BEGIN PRIVATE KEY-----\nAAECAw==\n-----END PRIVATE KEY-----\n"), ""), "client certificate"},
		{"mTLS bad roots", reactor.MutualTLS([]byte("junk"), fx.client.CertPEM, fx.client.KeyPEM, ""), "roots"},
		{"TLSFiles missing roots file", reactor.TLSFiles(missing, ""), "missing.pem"},
		{"MutualTLSFiles missing roots file", reactor.MutualTLSFiles(missing, certFile, certFile, ""), "missing.pem"},
		{"MutualTLSFiles missing cert file", reactor.MutualTLSFiles(rootsFile, missing, certFile, ""), "missing.pem"},
		{"MutualTLSFiles missing key file", reactor.MutualTLSFiles(rootsFile, certFile, missing, ""), "missing.pem"},
		{"MutualTLSFiles empty key file name", reactor.MutualTLSFiles(rootsFile, certFile, "", ""), "key"},
		{"MutualTLSFiles mismatched key", reactor.MutualTLSFiles(rootsFile, certFile, writeFile(t, dir, "other.key", otherKey), ""), "client certificate"},
		{"FromTransport nil", reactor.FromTransport(nil), "nil"},
	}
	secrets := append(pemBodyLines(fx.client.KeyPEM), pemBodyLines(otherKey)...)
	require.NotEmpty(t, secrets)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := reactor.New(reactor.Config{Target: "127.0.0.1:1", Credentials: tt.creds})
			require.Error(t, err)
			require.Nil(t, r)
			t.Log(err)
			require.Contains(t, err.Error(), tt.want)
			for _, line := range secrets {
				require.NotContains(t, err.Error(), line, "the error must not quote key material")
			}
		})
	}
}

func TestCredentialsTLS(t *testing.T) {
	fx := newTLSFixture(t)
	tlsServer := testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.server, nil))))
	plainServer := testserver.Start(t)
	dir := t.TempDir()
	rootsFile := writeFile(t, dir, "roots.pem", fx.ca.CertPEM)
	bothRoots := append(append([]byte{}, fx.otherCA.CertPEM...), fx.ca.CertPEM...)

	tests := []struct {
		name  string
		srv   *testserver.Server
		creds reactor.Credentials
		ok    bool
		cause string // for a failure: part of the flattened cause in the message
	}{
		{"TLS with roots", tlsServer, reactor.TLS(fx.ca.CertPEM, ""), true, ""},
		{"TLS with several roots", tlsServer, reactor.TLS(bothRoots, ""), true, ""},
		{"TLS server name override", tlsServer, reactor.TLS(fx.ca.CertPEM, "backend.test"), true, ""},
		{"TLSFiles", tlsServer, reactor.TLSFiles(rootsFile, "backend.test"), true, ""},
		{"FromTransport", tlsServer, reactor.FromTransport(credentials.NewClientTLSFromCert(fx.ca.Pool, "")), true, ""},
		{"wrong server name", tlsServer, reactor.TLS(fx.ca.CertPEM, "wrong.test"), false, "not wrong.test"},
		{"unknown CA", tlsServer, reactor.TLS(fx.otherCA.CertPEM, ""), false, "unknown authority"},
		{"system roots", tlsServer, reactor.TLSFiles("", ""), false, "unknown authority"},
		{"plaintext client to TLS server", tlsServer, reactor.Insecure(), false, "server preface"},
		{"TLS client to plaintext server", plainServer, reactor.TLS(fx.ca.CertPEM, ""), false, "does not look like a TLS handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.srv.Calls()
			r := newReactor(t, tt.srv, reactor.Config{Credentials: tt.creds})
			err := tlsCall(t, r, false)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, before+1, tt.srv.Calls())
				return
			}
			require.Error(t, err)
			t.Log(err)
			require.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
			require.Contains(t, err.Error(), tt.cause)
			require.Equal(t, before, tt.srv.Calls(), "the call must not reach the handler")
		})
	}
}

func TestCredentialsMutualTLS(t *testing.T) {
	fx := newTLSFixture(t)
	srv := testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.server, fx.ca.Pool))))
	dir := t.TempDir()
	rootsFile := writeFile(t, dir, "roots.pem", fx.ca.CertPEM)
	certFile := writeFile(t, dir, "client.pem", fx.client.CertPEM)
	keyFile := writeFile(t, dir, "client.key", fx.client.KeyPEM)

	tests := []struct {
		name  string
		creds reactor.Credentials
		ok    bool
		cause string
	}{
		{"valid client certificate", reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, fx.client.KeyPEM, ""), true, ""},
		{"valid client certificate, name override", reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, fx.client.KeyPEM, "backend.test"), true, ""},
		{"valid client certificate from files", reactor.MutualTLSFiles(rootsFile, certFile, keyFile, ""), true, ""},
		// With TLS 1.3 the client finishes its handshake before the server refuses it, so
		// the flattened cause varies ("certificate required", a broken pipe, EOF).
		{"no client certificate", reactor.TLS(fx.ca.CertPEM, ""), false, ""},
		{"client certificate from another CA", reactor.MutualTLS(fx.ca.CertPEM, fx.stranger.CertPEM, fx.stranger.KeyPEM, ""), false, ""},
		{"valid client certificate, unknown server CA", reactor.MutualTLS(fx.otherCA.CertPEM, fx.client.CertPEM, fx.client.KeyPEM, ""), false, "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Calls()
			r := newReactor(t, srv, reactor.Config{Credentials: tt.creds})
			err := tlsCall(t, r, false)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, before+1, srv.Calls())
				return
			}
			require.Error(t, err)
			t.Log(err)
			require.Equal(t, codes.Unavailable, status.Code(err), "got %v", err)
			require.Contains(t, err.Error(), tt.cause)
			require.Equal(t, before, srv.Calls(), "the call must not reach the handler")
		})
	}
}

func TestCredentialsString(t *testing.T) {
	require.Equal(t, "insecure", reactor.Insecure().String())
	require.Equal(t, "TLS", reactor.TLS(nil, "").String())
	require.Equal(t, "mutual TLS", reactor.MutualTLS(nil, []byte("c"), []byte("k"), "").String())
	require.Equal(t, "TLS", reactor.TLSFiles("a", "").String())
	require.Equal(t, "mutual TLS", reactor.MutualTLSFiles("a", "b", "c", "").String())
	// String never shows key material.
	require.False(t, strings.Contains(reactor.MutualTLS(nil, []byte("c"), []byte("SECRETKEY"), "").String(), "SECRETKEY"))
}
