package testcerts_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testcerts"
)

func TestNewCA(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	other := testcerts.NewCA(t, "test CA")

	require.Equal(t, "test CA", ca.Cert.Subject.CommonName)
	require.True(t, ca.Cert.IsCA)
	require.True(t, ca.Cert.BasicConstraintsValid)
	require.Equal(t, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, ca.Cert.KeyUsage)
	require.NoError(t, ca.Cert.CheckSignatureFrom(ca.Cert), "self-signed")
	require.Equal(t, ca.Cert.PublicKey, ca.Key.Public())
	requirePEM(t, "CERTIFICATE", ca.Cert.Raw, ca.CertPEM)
	_, err := ca.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool})
	require.NoError(t, err, "the pool holds the CA")
	require.NotEqual(t, ca.Cert.SerialNumber, other.Cert.SerialNumber)
	_, err = ca.Cert.Verify(x509.VerifyOptions{Roots: other.Pool})
	require.ErrorAs(t, err, new(x509.UnknownAuthorityError), "two CAs of the same name are not the same CA")
}

func TestIssuedCertificates(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	other := testcerts.NewCA(t, "other CA")
	loopback := []net.IP{net.IPv4(127, 0, 0, 1).To4()} // as parsed
	serverAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}

	tests := []struct {
		name     string
		cert     *testcerts.Cert
		cn       string
		dnsNames []string
		ips      []net.IP
		usage    []x509.ExtKeyUsage // the certificate's extended key usages
		keyUsage x509.KeyUsage
		verifyAs []string           // names the chain verifies for (Go ignores the common name)
		rejected []x509.ExtKeyUsage // usages the chain does not verify for
	}{
		{
			name: "server for 127.0.0.1 only", cert: ca.Server(t),
			cn: "127.0.0.1", ips: loopback, usage: serverAuth, keyUsage: x509.KeyUsageDigitalSignature,
			verifyAs: []string{"127.0.0.1"}, rejected: clientAuth,
		},
		{
			name: "server with DNS names", cert: ca.Server(t, "backend.test", "other.test"),
			cn: "backend.test", dnsNames: []string{"backend.test", "other.test"}, ips: loopback, usage: serverAuth,
			keyUsage: x509.KeyUsageDigitalSignature,
			verifyAs: []string{"127.0.0.1", "backend.test", "other.test"}, rejected: clientAuth,
		},
		{
			name: "client", cert: ca.Client(t, "game-server"),
			cn: "game-server", usage: clientAuth, keyUsage: x509.KeyUsageDigitalSignature,
			verifyAs: []string{""}, rejected: serverAuth,
		},
		{
			name: "zero options: any usage, no names", cert: ca.Issue(t, "anything", testcerts.Options{}),
			cn: "anything", usage: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, keyUsage: x509.KeyUsageDigitalSignature,
			verifyAs: []string{""},
		},
		{
			name: "name only, no IP address",
			cert: ca.Issue(t, "wrong.test", testcerts.Options{DNSNames: []string{"wrong.test"}, Usage: x509.ExtKeyUsageServerAuth}),
			cn:   "wrong.test", dnsNames: []string{"wrong.test"}, usage: serverAuth, keyUsage: x509.KeyUsageDigitalSignature,
			verifyAs: []string{"wrong.test"}, rejected: clientAuth,
		},
		{
			name: "wrong usage for a server",
			cert: ca.Issue(t, "backend.test", testcerts.Options{DNSNames: []string{"backend.test"}, Usage: x509.ExtKeyUsageClientAuth}),
			cn:   "backend.test", dnsNames: []string{"backend.test"}, usage: clientAuth, keyUsage: x509.KeyUsageDigitalSignature,
			verifyAs: []string{"backend.test"}, rejected: serverAuth,
		},
		{
			name: "explicit key usage",
			cert: ca.Issue(t, "enc", testcerts.Options{Usage: x509.ExtKeyUsageServerAuth, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}),
			cn:   "enc", usage: serverAuth, keyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			verifyAs: []string{""}, rejected: clientAuth,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cert.Cert
			require.Equal(t, tt.cn, c.Subject.CommonName)
			require.Equal(t, tt.dnsNames, c.DNSNames)
			require.Equal(t, tt.ips, c.IPAddresses)
			require.Equal(t, tt.usage, c.ExtKeyUsage)
			require.Equal(t, tt.keyUsage, c.KeyUsage)
			require.False(t, c.IsCA)
			require.Equal(t, ca.Cert.Subject, c.Issuer)

			// The encodings agree with each other.
			requirePEM(t, "CERTIFICATE", c.Raw, tt.cert.CertPEM)
			block, _ := pem.Decode(tt.cert.KeyPEM)
			require.NotNil(t, block)
			require.Equal(t, "PRIVATE KEY", block.Type)
			_, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			require.NoError(t, err, "PKCS #8")
			require.Equal(t, [][]byte{c.Raw}, tt.cert.TLS.Certificate)
			pair, err := tls.X509KeyPair(tt.cert.CertPEM, tt.cert.KeyPEM)
			require.NoError(t, err, "the key matches the certificate")
			require.Equal(t, pair.PrivateKey, tt.cert.TLS.PrivateKey)

			for _, name := range tt.verifyAs {
				_, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: name, KeyUsages: tt.usage})
				require.NoError(t, err, "chain to the CA for %q", name)
				_, err = c.Verify(x509.VerifyOptions{Roots: other.Pool, DNSName: name, KeyUsages: tt.usage})
				require.ErrorAs(t, err, new(x509.UnknownAuthorityError), "another CA")
			}
			_, err = c.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "unknown.test", KeyUsages: tt.usage})
			require.ErrorAs(t, err, new(x509.HostnameError), "no other name")
			for _, usage := range tt.rejected {
				_, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{usage}})
				var invalid x509.CertificateInvalidError
				require.ErrorAs(t, err, &invalid, "usage %v", usage)
				require.Equal(t, x509.IncompatibleUsage, invalid.Reason)
			}
		})
	}
}

func TestValidity(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	now := time.Now()
	past, future := now.Add(-48*time.Hour).Truncate(time.Second), now.Add(24*time.Hour).Truncate(time.Second)

	tests := []struct {
		name                string
		opts                testcerts.Options
		notBefore, notAfter time.Time // zero: the default, checked to within a minute
		reason              x509.InvalidReason
		valid               bool
	}{
		{name: "default", valid: true},
		{name: "expired", opts: testcerts.Options{NotBefore: past, NotAfter: past.Add(24 * time.Hour)},
			notBefore: past, notAfter: past.Add(24 * time.Hour), reason: x509.Expired},
		{name: "not yet valid", opts: testcerts.Options{NotBefore: future, NotAfter: future.Add(24 * time.Hour)},
			notBefore: future, notAfter: future.Add(24 * time.Hour), reason: x509.Expired},
		{name: "NotAfter only", opts: testcerts.Options{NotAfter: future.Add(time.Hour)},
			notAfter: future.Add(time.Hour), valid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Usage = x509.ExtKeyUsageServerAuth
			c := ca.Issue(t, "backend.test", tt.opts).Cert
			if tt.notBefore.IsZero() {
				require.WithinDuration(t, now.Add(-time.Hour), c.NotBefore, time.Minute)
			} else {
				require.True(t, tt.notBefore.Equal(c.NotBefore), "NotBefore %v", c.NotBefore)
			}
			if tt.notAfter.IsZero() {
				require.WithinDuration(t, now.Add(24*time.Hour), c.NotAfter, time.Minute)
			} else {
				require.True(t, tt.notAfter.Equal(c.NotAfter), "NotAfter %v", c.NotAfter)
			}

			_, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool})
			if tt.valid {
				require.NoError(t, err)
				return
			}
			var invalid x509.CertificateInvalidError
			require.ErrorAs(t, err, &invalid)
			require.Equal(t, tt.reason, invalid.Reason, "%v", err)
		})
	}
}

func TestWriteFiles(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	dir := t.TempDir()

	tests := []struct {
		name string
		cert *testcerts.Cert
	}{
		{name: "server", cert: ca.Server(t, "dataservice.test")},
		{name: "client", cert: ca.Client(t, "game-server")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certFile, keyFile := tt.cert.WriteFiles(t, dir, tt.name)
			require.Equal(t, filepath.Join(dir, tt.name+".crt"), certFile)
			require.Equal(t, filepath.Join(dir, tt.name+".key"), keyFile)
			requireFile(t, certFile, tt.cert.CertPEM)
			requireFile(t, keyFile, tt.cert.KeyPEM)
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			require.NoError(t, err)
			require.Equal(t, tt.cert.TLS.Certificate, pair.Certificate)
		})
	}

	caFile := ca.WriteFile(t, dir, "ca")
	require.Equal(t, filepath.Join(dir, "ca.crt"), caFile)
	requireFile(t, caFile, ca.CertPEM)
	b, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b))
	require.True(t, pool.Equal(ca.Pool))
}

func TestServerTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "test CA")
	other := testcerts.NewCA(t, "other CA")
	server := ca.Server(t, "backend.test")
	client := ca.Client(t, "game-server")
	stranger := other.Client(t, "intruder")

	tests := []struct {
		name       string
		clientCAs  *x509.CertPool
		clientCert *testcerts.Cert // nil: none
		clientAuth tls.ClientAuthType
		ok         bool
	}{
		{name: "TLS", clientAuth: tls.NoClientCert, ok: true},
		{name: "TLS, client certificate ignored", clientCert: client, clientAuth: tls.NoClientCert, ok: true},
		{name: "mTLS", clientCAs: ca.Pool, clientCert: client, clientAuth: tls.RequireAndVerifyClientCert, ok: true},
		{name: "mTLS, no client certificate", clientCAs: ca.Pool, clientAuth: tls.RequireAndVerifyClientCert},
		{name: "mTLS, client certificate from another CA", clientCAs: ca.Pool, clientCert: stranger, clientAuth: tls.RequireAndVerifyClientCert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testcerts.ServerTLS(server, tt.clientCAs)
			require.Equal(t, []tls.Certificate{server.TLS}, cfg.Certificates)
			require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)
			require.Equal(t, tt.clientAuth, cfg.ClientAuth)
			require.Equal(t, tt.clientCAs, cfg.ClientCAs)

			clientCfg := &tls.Config{RootCAs: ca.Pool, ServerName: "backend.test", MinVersion: tls.VersionTLS12}
			if tt.clientCert != nil {
				clientCfg.Certificates = []tls.Certificate{tt.clientCert.TLS}
			}
			serverErr, clientErr := handshake(t, cfg, clientCfg)
			if tt.ok {
				require.NoError(t, serverErr)
				require.NoError(t, clientErr)
			} else {
				require.Error(t, serverErr)
			}
		})
	}
}

// handshake runs a TLS handshake over loopback TCP and returns the server's error and the
// client's. With TLS 1.3 the client's handshake completes before the server checks its
// certificate: a rejected client shows in the server's error.
func handshake(t *testing.T, serverCfg, clientCfg *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		done <- tls.Server(conn, serverCfg).Handshake()
	}()
	conn, clientErr := tls.Dial("tcp", ln.Addr().String(), clientCfg)
	if clientErr == nil {
		conn.Close()
	}
	return <-done, clientErr
}

// requirePEM checks that b is exactly one PEM block of type typ holding der.
func requirePEM(t *testing.T, typ string, der, b []byte) {
	t.Helper()
	block, rest := pem.Decode(b)
	require.NotNil(t, block)
	require.Equal(t, typ, block.Type)
	require.True(t, bytes.Equal(der, block.Bytes))
	require.Empty(t, rest)
}

// requireFile checks that the file path holds want and only its owner can read it.
func requireFile(t *testing.T, path string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, b)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}
