package reactor

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
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
	rootsIn := pemInput{what: "roots", file: t.rootsFile}
	certIn := pemInput{what: "client certificate", file: t.certFile}
	keyIn := pemInput{what: "client key", file: t.keyFile}
	roots, cert, key := t.roots, t.cert, t.key.pem()
	var err error
	if t.rootsFile != "" {
		if roots, err = rootsIn.read(); err != nil {
			return nil, err
		}
	}
	if t.files {
		if cert, err = certIn.read(); err != nil {
			return nil, err
		}
		if key, err = keyIn.read(); err != nil {
			return nil, err
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.serverName}
	if roots != nil {
		pool := x509.NewCertPool()
		if err := addPEMCerts(pool, roots, rootsIn); err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if t.mutual {
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

// pemBlock is a decoded PEM block and the line of its BEGIN line, counted from 1.
type pemBlock struct {
	*pem.Block
	line int
}

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
)

// pemBlocks returns the PEM blocks in data, in order. Text before a block is skipped, as
// pem.Decode and OpenSSL skip it (bundles often describe each certificate there), but the
// error names what is wrong, the input and the line, with none of the block's content, if
// data holds no block, if a block does not decode (no END line, base64 that does not decode,
// or anything else pem.Decode refuses: it would skip such a block silently), or if text
// follows the last block.
func pemBlocks(data []byte, in pemInput) ([]pemBlock, error) {
	var blocks []pemBlock
	for off := 0; ; {
		start := nextPEMLine(data, off, pemBegin)
		if start < 0 {
			if len(bytes.TrimSpace(data[off:])) == 0 {
				break
			}
			if len(blocks) == 0 {
				return nil, in.errorf("no PEM block found (no line starts with %q)", pemBegin)
			}
			text := off + len(data[off:]) - len(bytes.TrimLeft(data[off:], " \t\r\n"))
			return nil, in.errorf("the text after the last PEM block, from line %d, is not PEM", lineOf(data, text))
		}
		line := lineOf(data, start)
		end := nextPEMLine(data, start+1, pemEnd)
		if next := nextPEMLine(data, start+1, pemBegin); end < 0 || next >= 0 && next < end {
			hint := "is it cut short?"
			if bytes.Contains(data[start:], []byte(`\n`)) {
				hint = `it holds the characters \n where line breaks belong`
			}
			return nil, in.errorf("PEM block %d (line %d%s) has no END line: %s", len(blocks)+1, line, pemType(data[start:lineEnd(data, start)]), hint)
		}
		after := lineEnd(data, end)
		block, _ := pem.Decode(data[start:after])
		if block == nil {
			return nil, in.errorf("PEM block %d (line %d) is malformed: %s", len(blocks)+1, line, pemFault(data[start:after]))
		}
		blocks = append(blocks, pemBlock{block, line})
		off = after
	}
	if len(blocks) == 0 {
		return nil, in.errorf("no PEM block found (the input is empty)")
	}
	return blocks, nil
}

// nextPEMLine returns the offset of the first line of data, at or after off, that starts with
// prefix, or -1.
func nextPEMLine(data []byte, off int, prefix []byte) int {
	for off < len(data) {
		if bytes.HasPrefix(data[off:], prefix) && (off == 0 || data[off-1] == '\n') {
			return off
		}
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return -1
}

// lineEnd returns the offset just after the line that holds offset off, newline included.
func lineEnd(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}

// lineOf returns the line, counted from 1, that holds offset off.
func lineOf(data []byte, off int) int {
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// pemType returns ", " and the type named by a block's BEGIN line, or "" if the line is not
// well formed or the type is not of capital letters, digits and spaces (at most 40): a
// malformed line may hold what it should not show.
func pemType(beginLine []byte) string {
	typ, _ := bytes.CutPrefix(bytes.TrimSpace(beginLine), pemBegin)
	typ, ok := bytes.CutSuffix(typ, []byte("-----"))
	if !ok || len(typ) == 0 || len(typ) > 40 {
		return ""
	}
	for _, c := range typ {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ' ') {
			return ""
		}
	}
	return ", " + string(typ)
}

// pemFault says why pem.Decode refused block, which runs from its BEGIN line to its END line,
// without quoting its content.
func pemFault(block []byte) string {
	lines := bytes.Split(bytes.TrimRight(block, "\r\n"), []byte{'\n'})
	typ, _ := bytes.CutPrefix(bytes.TrimSpace(lines[0]), pemBegin)
	typ, ok := bytes.CutSuffix(typ, []byte("-----"))
	if !ok {
		return "its BEGIN line does not end in -----"
	}
	if want := append(append(append([]byte(nil), pemEnd...), typ...), "-----"...); !bytes.Equal(bytes.TrimSpace(lines[len(lines)-1]), want) {
		return "its END line does not match its BEGIN line"
	}
	var body []byte
	for _, l := range lines[1 : len(lines)-1] {
		if bytes.Contains(l, []byte{':'}) {
			return "it does not decode (its headers may be malformed)"
		}
		body = append(body, bytes.TrimSpace(l)...)
	}
	if _, err := base64.StdEncoding.DecodeString(string(body)); err != nil {
		return "its base64 does not decode: " + err.Error()
	}
	return "it does not decode"
}
