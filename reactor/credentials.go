package reactor

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/internal/dial"
)

// Credentials secure the connection a reactor dials. Make them with Insecure, TLS,
// MutualTLS, TLSFiles, MutualTLSFiles or FromTransport; the interface is sealed. PEM input and
// files are read and checked by New, which fails on input with no PEM block, a PEM block that
// does not decode (cut short, bad base64), text after the last block, a certificate that does
// not parse, a key that does not match its certificate, or a certificate without its key;
// nothing is checked at the first call. The error names the input (roots, client
// certificate, client key) and, for the …Files constructors, its file; text before a PEM
// block is skipped, as OpenSSL skips it.
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
	return &tlsCreds{dial.TLS{Roots: rootsPEM, ServerName: serverName}}
}

// MutualTLS is like TLS, and also presents the client certificate certPEM (a PEM chain, leaf
// first) with its private key keyPEM to the server.
func MutualTLS(rootsPEM, certPEM, keyPEM []byte, serverName string) Credentials {
	return &tlsCreds{dial.TLS{Roots: rootsPEM, Cert: certPEM, Key: dial.HideKey(keyPEM), ServerName: serverName, Mutual: true}}
}

// TLSFiles is like TLS with the roots read from the file rootsFile ("" for the system's
// roots) when New runs.
func TLSFiles(rootsFile, serverName string) Credentials {
	return &tlsCreds{dial.TLS{RootsFile: rootsFile, ServerName: serverName}}
}

// MutualTLSFiles is like MutualTLS with the PEM read from files when New runs.
func MutualTLSFiles(rootsFile, certFile, keyFile, serverName string) Credentials {
	return &tlsCreds{dial.TLS{RootsFile: rootsFile, CertFile: certFile, KeyFile: keyFile, ServerName: serverName, Mutual: true, Files: true}}
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

// tlsCreds are the credentials of TLS, MutualTLS, TLSFiles and MutualTLSFiles. The spec is a
// named field, not embedded, so that its exported methods are not the credentials'.
type tlsCreds struct {
	spec dial.TLS
}

func (t *tlsCreds) transport() (credentials.TransportCredentials, error) {
	return t.spec.Transport()
}

func (t *tlsCreds) String() string {
	if t.spec.Mutual {
		return "mutual TLS"
	}
	return "TLS"
}

// Format implements fmt.Formatter; see formatCredentials.
func (t *tlsCreds) Format(f fmt.State, verb rune) {
	name := "TLS(…)"
	switch {
	case t.spec.Mutual && t.spec.Files:
		name = "MutualTLSFiles(…)"
	case t.spec.Mutual:
		name = "MutualTLS(…)"
	case t.spec.RootsFile != "":
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
