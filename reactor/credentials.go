package reactor

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Credentials secure the connection a reactor dials. Make them with Insecure, TLS,
// MutualTLS, TLSFiles, MutualTLSFiles or FromTransport; the interface is sealed. PEM input and
// files are read and checked by New, which fails on malformed PEM, a key that does not match
// its certificate, or a certificate without its key; nothing is checked at the first call.
// prpc never skips certificate verification and never falls back to plaintext.
//
// With any credentials but Insecure, the reactor records why a handshake failed, which gRPC
// reports as Unavailable like an outage: see Stats.LastConnError and calls.HandshakeError.
// No formatting of Credentials (String, any fmt verb, %#v included) shows key material.
type Credentials interface {
	// String names the kind of credentials ("insecure", "TLS", "mutual TLS", "transport
	// credentials"), never their content.
	String() string
	transport() (credentials.TransportCredentials, error)
}

// Insecure returns credentials for a plaintext connection, for a backend on loopback or a
// trusted private network.
func Insecure() Credentials { return insecureCreds{} }

// TLS returns credentials for a TLS connection that verifies the server against rootsPEM, the
// PEM-encoded CA certificates to trust (nil: the system's roots). serverName, if not empty,
// is the name the server's certificate must carry, instead of the target's host.
func TLS(rootsPEM []byte, serverName string) Credentials {
	return &tlsCreds{roots: rootsPEM, serverName: serverName}
}

// MutualTLS is like TLS, and also presents the client certificate certPEM (a PEM chain, leaf
// first) with its private key keyPEM to the server.
func MutualTLS(rootsPEM, certPEM, keyPEM []byte, serverName string) Credentials {
	return &tlsCreds{roots: rootsPEM, cert: certPEM, key: hideKey(keyPEM), serverName: serverName, mutual: true}
}

// TLSFiles is like TLS with the roots read from the file rootsFile ("" for the system's
// roots) when New runs.
func TLSFiles(rootsFile, serverName string) Credentials {
	return &tlsCreds{rootsFile: rootsFile, serverName: serverName}
}

// MutualTLSFiles is like MutualTLS with the PEM read from files when New runs.
func MutualTLSFiles(rootsFile, certFile, keyFile, serverName string) Credentials {
	return &tlsCreds{rootsFile: rootsFile, certFile: certFile, keyFile: keyFile, serverName: serverName, mutual: true, files: true}
}

// FromTransport wraps gRPC transport credentials made elsewhere, for what the other
// constructors do not offer (ALTS, custom verification, certificate rotation, …).
func FromTransport(tc credentials.TransportCredentials) Credentials {
	return transportCreds{tc}
}

type insecureCreds struct{}

func (insecureCreds) transport() (credentials.TransportCredentials, error) {
	return insecure.NewCredentials(), nil
}
func (insecureCreds) String() string { return "insecure" }

// Format implements fmt.Formatter; see formatCredentials.
func (c insecureCreds) Format(f fmt.State, verb rune) { formatCredentials(f, verb, c, "Insecure()") }

type transportCreds struct {
	tc credentials.TransportCredentials
}

func (t transportCreds) transport() (credentials.TransportCredentials, error) {
	if t.tc == nil {
		return nil, errors.New("prpc: FromTransport was given nil transport credentials")
	}
	return t.tc, nil
}
func (t transportCreds) String() string { return "transport credentials" }

// Format implements fmt.Formatter; see formatCredentials.
func (t transportCreds) Format(f fmt.State, verb rune) {
	formatCredentials(f, verb, t, "FromTransport(…)")
}

type tlsCreds struct {
	roots, cert                  []byte
	key                          hiddenKey
	rootsFile, certFile, keyFile string
	serverName                   string
	mutual, files                bool
}

func (t *tlsCreds) String() string {
	if t.mutual {
		return "mutual TLS"
	}
	return "TLS"
}

// Format implements fmt.Formatter; see formatCredentials.
func (t *tlsCreds) Format(f fmt.State, verb rune) {
	name := "TLS(…)"
	switch {
	case t.mutual && t.files:
		name = "MutualTLSFiles(…)"
	case t.mutual:
		name = "MutualTLS(…)"
	case t.rootsFile != "":
		name = "TLSFiles(…)"
	}
	formatCredentials(f, verb, t, name)
}

// formatCredentials formats c as its String for every verb and flag, except %#v, which
// prints "reactor." and the constructor's name. The credential types implement
// fmt.Formatter with it so that no formatting of credentials, or of a Config holding them,
// shows the PEM they hold: without it, %#v and %d print the struct's byte slices.
func formatCredentials(f fmt.State, verb rune, c Credentials, constructor string) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, "reactor."+constructor)
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), c.String())
}

// hiddenKey holds a private key's PEM inside a closure, where reflection-based printers (fmt,
// spew, go-cmp) do not look: a closure's captured variables are not fields. Nil for no key.
type hiddenKey func() []byte

func hideKey(keyPEM []byte) hiddenKey {
	if keyPEM == nil {
		return nil
	}
	return func() []byte { return keyPEM }
}

// pem returns the key, or nil.
func (k hiddenKey) pem() []byte {
	if k == nil {
		return nil
	}
	return k()
}

func (t *tlsCreds) transport() (credentials.TransportCredentials, error) {
	roots, cert, key := t.roots, t.cert, t.key.pem()
	var err error
	if t.rootsFile != "" {
		if roots, err = readPEMFile("roots", t.rootsFile); err != nil {
			return nil, err
		}
	}
	if t.files {
		if cert, err = readPEMFile("certificate", t.certFile); err != nil {
			return nil, err
		}
		if key, err = readPEMFile("key", t.keyFile); err != nil {
			return nil, err
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.serverName}
	if roots != nil {
		pool := x509.NewCertPool()
		if err := addPEMCerts(pool, roots); err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if t.mutual {
		if len(cert) == 0 || len(key) == 0 {
			return nil, errors.New("prpc: mutual TLS needs both a client certificate and its private key")
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The error of X509KeyPair names the problem, never the key material.
			return nil, fmt.Errorf("prpc: mutual TLS client certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(cfg), nil
}

func readPEMFile(what, path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("prpc: TLS %s file name is empty", what)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("prpc: reading TLS %s: %w", what, err)
	}
	return b, nil
}

// addPEMCerts adds every certificate in pemBytes to pool, failing on anything that is not a
// valid certificate, or on input with no certificate at all.
func addPEMCerts(pool *x509.CertPool, pemBytes []byte) error {
	n := 0
	for rest := pemBytes; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return errors.New("prpc: TLS roots: trailing data that is not PEM")
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("prpc: TLS roots: unexpected PEM block %q, want CERTIFICATE", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return fmt.Errorf("prpc: TLS roots: certificate %d: %w", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return errors.New("prpc: TLS roots: no PEM certificate found")
	}
	return nil
}
