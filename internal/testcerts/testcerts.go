// Package testcerts makes throw-away certificate authorities and certificates for prpc's TLS
// tests.
//
// Every key is a fresh ECDSA P-256 key; every certificate has a random serial number and, by
// default, is valid from an hour ago until a day from now. Keys are encoded as PKCS #8
// ("PRIVATE KEY") PEM blocks. The functions take the test and call t.Fatal on any error.
package testcerts

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a self-signed certificate authority that issues certificates.
type CA struct {
	Cert    *x509.Certificate // the CA's certificate
	Key     crypto.Signer     // the CA's private key
	CertPEM []byte            // Cert as a PEM block, for roots given as bytes or files
	Pool    *x509.CertPool    // a pool holding only Cert, for tls.Config's RootCAs or ClientCAs
}

// Cert is a certificate issued by a CA, with its private key.
type Cert struct {
	Cert    *x509.Certificate // the certificate
	CertPEM []byte            // Cert as a PEM block
	KeyPEM  []byte            // the private key as a PKCS #8 PEM block
	TLS     tls.Certificate   // certificate and key, as a TLS peer presents them
}

// Options describe a certificate for CA.Issue. The zero value is a certificate for any
// extended key usage, without names, valid from an hour ago until a day from now.
type Options struct {
	DNSNames []string // DNS subject alternative names
	IPs      []net.IP // IP address subject alternative names

	// Usage is the only extended key usage: x509.ExtKeyUsageServerAuth or
	// x509.ExtKeyUsageClientAuth, for example. Its zero value is x509.ExtKeyUsageAny.
	Usage x509.ExtKeyUsage

	// NotBefore and NotAfter bound the validity: zero means an hour ago and a day from now.
	NotBefore, NotAfter time.Time

	// KeyUsage is the key usage; zero means x509.KeyUsageDigitalSignature.
	KeyUsage x509.KeyUsage
}

// NewCA makes a self-signed certificate authority with the common name cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(cn, time.Time{}, time.Time{})
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	tmpl.IsCA = true
	cert, certPEM := create(t, tmpl, tmpl, key, key)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Key: key, CertPEM: certPEM, Pool: pool}
}

// Issue makes a certificate with the common name cn, as o describes, signed by ca.
func (ca *CA) Issue(t testing.TB, cn string, o Options) *Cert {
	t.Helper()
	key := newKey(t)
	tmpl := template(cn, o.NotBefore, o.NotAfter)
	tmpl.KeyUsage = o.KeyUsage
	if tmpl.KeyUsage == 0 {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{o.Usage}
	tmpl.DNSNames = o.DNSNames
	tmpl.IPAddresses = o.IPs
	cert, certPEM := create(t, tmpl, ca.Cert, key, ca.Key)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testcerts: marshal key: %v", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("testcerts: key pair: %v", err)
	}
	return &Cert{Cert: cert, CertPEM: certPEM, KeyPEM: keyPEM, TLS: pair}
}

// Server makes a server certificate for 127.0.0.1 and the DNS names dnsNames. Its common
// name is the first DNS name, or 127.0.0.1 without one.
func (ca *CA) Server(t testing.TB, dnsNames ...string) *Cert {
	t.Helper()
	loopback := net.IPv4(127, 0, 0, 1)
	cn := loopback.String()
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	return ca.Issue(t, cn, Options{DNSNames: dnsNames, IPs: []net.IP{loopback}, Usage: x509.ExtKeyUsageServerAuth})
}

// Client makes a client certificate with the common name cn.
func (ca *CA) Client(t testing.TB, cn string) *Cert {
	t.Helper()
	return ca.Issue(t, cn, Options{Usage: x509.ExtKeyUsageClientAuth})
}

// WriteFile writes ca's certificate to the PEM file name.crt in dir and returns its path.
func (ca *CA) WriteFile(t testing.TB, dir, name string) string {
	t.Helper()
	return writeFile(t, dir, name+".crt", ca.CertPEM)
}

// WriteFiles writes c's certificate and key to the PEM files name.crt and name.key in dir
// and returns their paths.
func (c *Cert) WriteFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	return writeFile(t, dir, name+".crt", c.CertPEM), writeFile(t, dir, name+".key", c.KeyPEM)
}

// ServerTLS returns a server configuration presenting c, for TLS 1.2 and later. With
// clientCAs, it requires a client certificate and verifies it against them.
func ServerTLS(c *Cert, clientCAs *x509.CertPool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{c.TLS}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

// newKey makes an ECDSA P-256 key.
func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcerts: generate key: %v", err)
	}
	return key
}

// template returns a certificate template for cn with a random serial number, valid from
// notBefore to notAfter (zero: an hour ago, a day from now).
func template(cn string, notBefore, notAfter time.Time) *x509.Certificate {
	now := time.Now()
	if notBefore.IsZero() {
		notBefore = now.Add(-time.Hour)
	}
	if notAfter.IsZero() {
		notAfter = now.Add(24 * time.Hour)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
	}
}

// create signs tmpl, for key, with parent and parentKey, and returns the certificate parsed
// and as a PEM block.
func create(t testing.TB, tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, parentKey crypto.Signer) (*x509.Certificate, []byte) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatalf("testcerts: create certificate %q: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testcerts: parse certificate %q: %v", tmpl.Subject.CommonName, err)
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// writeFile writes b to the file name in dir, readable by its owner only, and returns its
// path.
func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatalf("testcerts: %v", err)
	}
	return p
}
