package reactor_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testCA is a throw-away certificate authority for TLS tests.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	pool    *x509.CertPool
}

// testCert is a certificate issued by a testCA, with its key, in PEM and as a tls.Certificate.
type testCert struct {
	certPEM, keyPEM []byte
	tls             tls.Certificate
}

func nextSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

// newTestCA makes a self-signed CA named cn.
func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pool:    pool,
	}
}

// issue makes a leaf certificate for cn with the given SANs and extended key usage.
func (ca *testCA) issue(t *testing.T, cn string, dns []string, ips []net.IP, usage x509.ExtKeyUsage) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	c := &testCert{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	c.tls, err = tls.X509KeyPair(c.certPEM, c.keyPEM)
	require.NoError(t, err)
	return c
}

// issueServer makes a server certificate for 127.0.0.1 and "backend.test".
func (ca *testCA) issueServer(t *testing.T) *testCert {
	return ca.issue(t, "backend.test", []string{"backend.test"}, []net.IP{net.IPv4(127, 0, 0, 1)}, x509.ExtKeyUsageServerAuth)
}

// issueClient makes a client certificate.
func (ca *testCA) issueClient(t *testing.T, cn string) *testCert {
	return ca.issue(t, cn, nil, nil, x509.ExtKeyUsageClientAuth)
}

// serverTLS returns a server TLS config presenting cert; with clientCAs it requires and
// verifies a client certificate issued by them.
func serverTLS(cert *testCert, clientCAs *x509.CertPool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert.tls}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

// pemBodyLines returns the base64 lines of every PEM block in b: the key material an error
// must never quote.
func pemBodyLines(b []byte) []string {
	var out []string
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		enc := pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: block.Bytes})
		lines := splitLines(string(enc))
		out = append(out, lines[1:len(lines)-1]...) // without BEGIN and END
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
