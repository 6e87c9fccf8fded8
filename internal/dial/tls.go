package dial

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/credentials"
)

// TLS is what the TLS credentials of reactor.TLS, MutualTLS, TLSFiles and MutualTLSFiles are
// made from: PEM in memory, or the names of the files to read it from when the reactor is
// created.
type TLS struct {
	// Roots are the PEM-encoded CA certificates to trust, read from RootsFile if it is not
	// empty; nil for the system's roots.
	Roots []byte
	// Cert and Key are the client certificate (a PEM chain, leaf first) and its private key,
	// of mutual TLS; read from CertFile and KeyFile if Files is set.
	Cert []byte
	Key  HiddenKey
	// RootsFile, CertFile and KeyFile name the files of Roots, Cert and Key.
	RootsFile, CertFile, KeyFile string
	// ServerName, if not empty, is the name the server's certificate must carry, instead of
	// the target's host.
	ServerName string
	// Mutual presents the client certificate; Files reads it and its key from their files.
	Mutual, Files bool
}

// HiddenKey holds a private key's PEM inside a closure, where reflection-based printers (fmt,
// spew, go-cmp) do not look: a closure's captured variables are not fields. Nil for no key.
type HiddenKey func() []byte

// HideKey returns keyPEM hidden, or nil if keyPEM is nil.
func HideKey(keyPEM []byte) HiddenKey {
	if keyPEM == nil {
		return nil
	}
	return func() []byte { return keyPEM }
}

// pem returns the key, or nil.
func (k HiddenKey) pem() []byte {
	if k == nil {
		return nil
	}
	return k()
}

// Transport reads the PEM files, checks every input and returns gRPC's TLS credentials: TLS 1.2
// or later, verifying the server against the roots (the system's if there are none) and, with
// Mutual, presenting the client certificate. Errors name the input at fault and its file,
// never the key's content.
func (t *TLS) Transport() (credentials.TransportCredentials, error) {
	rootsIn := pemInput{what: "roots", file: t.RootsFile}
	certIn := pemInput{what: "client certificate", file: t.CertFile}
	keyIn := pemInput{what: "client key", file: t.KeyFile}
	roots, cert, key := t.Roots, t.Cert, t.Key.pem()
	var err error
	if t.RootsFile != "" {
		if roots, err = rootsIn.read(); err != nil {
			return nil, err
		}
	}
	if t.Files {
		if cert, err = certIn.read(); err != nil {
			return nil, err
		}
		if key, err = keyIn.read(); err != nil {
			return nil, err
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if roots != nil {
		pool := x509.NewCertPool()
		if err := addPEMCerts(pool, roots, rootsIn); err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if t.Mutual {
		if len(cert) == 0 || len(key) == 0 {
			return nil, errors.New("prpc: mutual TLS needs both a client certificate and its private key")
		}
		pair, err := keyPair(cert, key, certIn, keyIn)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(cfg), nil
}

// pemInput names one PEM input of TLS credentials in errors: what it is ("roots", "client
// certificate", "client key") and the file it is read from, if any.
type pemInput struct {
	what, file string
}

// String names the input and its file: `client key file "k.pem"`, or `client key`.
func (in pemInput) String() string {
	if in.file != "" {
		return fmt.Sprintf("%s file %q", in.what, in.file)
	}
	return in.what
}

// errorf returns an error naming the input, then saying what is wrong with it.
func (in pemInput) errorf(format string, args ...any) error {
	return fmt.Errorf("prpc: TLS %s: %s", in, fmt.Sprintf(format, args...))
}

// read returns the content of the input's file.
func (in pemInput) read() ([]byte, error) {
	if in.file == "" {
		return nil, fmt.Errorf("prpc: TLS %s file name is empty", in.what)
	}
	b, err := os.ReadFile(in.file)
	if err != nil {
		return nil, fmt.Errorf("prpc: reading TLS %s: %w", in.what, err)
	}
	return b, nil
}

// addPEMCerts adds every certificate in pemBytes to pool, failing on input with no
// certificate, a PEM block that is not a certificate, a certificate that does not parse, or
// anything pemBlocks refuses.
func addPEMCerts(pool *x509.CertPool, pemBytes []byte, in pemInput) error {
	blocks, err := pemBlocks(pemBytes, in)
	if err != nil {
		return err
	}
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			return in.errorf("PEM block %d (line %d) is %q; want CERTIFICATE", i+1, b.line, b.Type)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return in.errorf("the certificate in PEM block %d (line %d) does not parse: %v", i+1, b.line, err)
		}
		pool.AddCert(cert)
	}
	return nil
}

// keyPair returns the client certificate of mutual TLS: certPEM's certificates with keyPEM's
// private key. Each input must be PEM that pemBlocks accepts, and each certificate in certPEM
// must parse; what tls.X509KeyPair then refuses (no certificate, no key, a key that does not
// parse or does not match the certificate) is named for both inputs. No error quotes the key.
func keyPair(certPEM, keyPEM []byte, certIn, keyIn pemInput) (tls.Certificate, error) {
	blocks, err := pemBlocks(certPEM, certIn)
	if err != nil {
		return tls.Certificate{}, err
	}
	for i, b := range blocks {
		if b.Type != "CERTIFICATE" {
			continue // a file holding both the certificate and its key serves as either
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return tls.Certificate{}, certIn.errorf("the certificate in PEM block %d (line %d) does not parse: %v", i+1, b.line, err)
		}
	}
	if _, err := pemBlocks(keyPEM, keyIn); err != nil {
		return tls.Certificate{}, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The errors of X509KeyPair name the problem, never the key material.
		return tls.Certificate{}, fmt.Errorf("prpc: mutual TLS: %s and %s: %w", certIn, keyIn, err)
	}
	return pair, nil
}
