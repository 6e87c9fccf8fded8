package reactor_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/reactor"
)

// corruptBase64 returns b, a PEM block, with a byte of its second line replaced by one that is
// not base64.
func corruptBase64(b []byte) []byte {
	out := bytes.Clone(b)
	out[bytes.IndexByte(out, '\n')+2] = '*'
	return out
}

// TLS input that New refuses gets an error saying what is wrong with it — no PEM block, a block
// cut short or with bad base64, text after the last block, a certificate that does not parse,
// a key that does not match its certificate — and naming the input (roots, client certificate,
// client key) and, for the …Files constructors, the file. No error quotes key material.
func TestCredentialsErrorsNameInputAndFault(t *testing.T) {
	fx := newTLSFixture(t)
	dir := t.TempDir()
	caPEM, certPEM, keyPEM := fx.ca.CertPEM, fx.client.CertPEM, fx.client.KeyPEM
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	caLines := bytes.Count(caPEM, []byte{'\n'})

	truncated := caPEM[:len(caPEM)/2]
	badBase64 := corruptBase64(caPEM)
	badDER := []byte("-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n")
	escaped := bytes.ReplaceAll(caPEM, []byte{'\n'}, []byte(`\n`))
	file := func(name string, b []byte) string { return writeFile(t, dir, name, b) }
	roots, cert, key := file("roots.pem", caPEM), file("client.pem", certPEM), file("client.key", keyPEM)
	truncFile, badKeyFile := file("trunc.pem", truncated), file("bad.key", corruptBase64(keyPEM))
	otherKeyFile, junkFile := file("other.key", fx.stranger.KeyPEM), file("junk.pem", []byte("junk\n"))

	tests := []struct {
		name  string
		creds reactor.Credentials
		want  string
	}{
		{"garbage", reactor.TLS([]byte("not a certificate\n"), ""),
			`prpc: TLS roots: no PEM block found (no line starts with "-----BEGIN ")`},
		{"empty", reactor.TLS([]byte{}, ""),
			"prpc: TLS roots: no PEM block found (the input is empty)"},
		{"truncated certificate", reactor.TLS(truncated, ""),
			"prpc: TLS roots: PEM block 1 (line 1, CERTIFICATE) has no END line: is it cut short?"},
		{"truncated second certificate", reactor.TLS(join(caPEM, truncated), ""),
			fmt.Sprintf("prpc: TLS roots: PEM block 2 (line %d, CERTIFICATE) has no END line: is it cut short?", caLines+1)},
		{"bad base64", reactor.TLS(badBase64, ""),
			"prpc: TLS roots: PEM block 1 (line 1) is malformed: its base64 does not decode: illegal base64 data at input byte 1"},
		{"bad base64 before a good block", reactor.TLS(join(badBase64, caPEM), ""),
			"prpc: TLS roots: PEM block 1 (line 1) is malformed: its base64 does not decode"},
		{"mismatched END line", reactor.TLS(bytes.Replace(caPEM, []byte("END CERTIFICATE"), []byte("END X509 CRL"), 1), ""),
			"prpc: TLS roots: PEM block 1 (line 1) is malformed: its END line does not match its BEGIN line"},
		{"escaped line breaks", reactor.TLS(escaped, ""),
			`prpc: TLS roots: PEM block 1 (line 1) has no END line: it holds the characters \n where line breaks belong`},
		{"trailing garbage", reactor.TLS(join(caPEM, []byte("\n\ngarbage\n")), ""),
			fmt.Sprintf("prpc: TLS roots: the text after the last PEM block, from line %d, is not PEM", caLines+3)},
		{"certificate that does not parse", reactor.TLS(badDER, ""),
			"prpc: TLS roots: the certificate in PEM block 1 (line 1) does not parse: x509: malformed certificate"},
		{"key in the roots", reactor.TLS(join(caPEM, keyPEM), ""),
			fmt.Sprintf(`prpc: TLS roots: PEM block 2 (line %d) is "PRIVATE KEY"; want CERTIFICATE`, caLines+1)},
		{"mTLS truncated certificate", reactor.MutualTLS(caPEM, certPEM[:len(certPEM)/2], keyPEM, ""),
			"prpc: TLS client certificate: PEM block 1 (line 1, CERTIFICATE) has no END line: is it cut short?"},
		{"mTLS certificate that does not parse", reactor.MutualTLS(caPEM, badDER, keyPEM, ""),
			"prpc: TLS client certificate: the certificate in PEM block 1 (line 1) does not parse: x509: malformed certificate"},
		{"mTLS key with bad base64", reactor.MutualTLS(caPEM, certPEM, corruptBase64(keyPEM), ""),
			"prpc: TLS client key: PEM block 1 (line 1) is malformed: its base64 does not decode"},
		{"mTLS garbage key", reactor.MutualTLS(caPEM, certPEM, []byte("junk"), ""),
			"prpc: TLS client key: no PEM block found"},
		{"mTLS mismatched key", reactor.MutualTLS(caPEM, certPEM, fx.stranger.KeyPEM, ""),
			"prpc: mutual TLS: client certificate and client key: tls: private key does not match public key"},
		{"TLSFiles garbage", reactor.TLSFiles(junkFile, ""),
			fmt.Sprintf(`prpc: TLS roots file %q: no PEM block found`, junkFile)},
		{"TLSFiles truncated certificate", reactor.TLSFiles(truncFile, ""),
			fmt.Sprintf(`prpc: TLS roots file %q: PEM block 1 (line 1, CERTIFICATE) has no END line`, truncFile)},
		{"MutualTLSFiles truncated roots", reactor.MutualTLSFiles(truncFile, cert, key, ""),
			fmt.Sprintf(`prpc: TLS roots file %q: PEM block 1 (line 1, CERTIFICATE) has no END line`, truncFile)},
		{"MutualTLSFiles truncated certificate", reactor.MutualTLSFiles(roots, truncFile, key, ""),
			fmt.Sprintf(`prpc: TLS client certificate file %q: PEM block 1 (line 1, CERTIFICATE) has no END line`, truncFile)},
		{"MutualTLSFiles key with bad base64", reactor.MutualTLSFiles(roots, cert, badKeyFile, ""),
			fmt.Sprintf(`prpc: TLS client key file %q: PEM block 1 (line 1) is malformed: its base64 does not decode`, badKeyFile)},
		{"MutualTLSFiles mismatched key", reactor.MutualTLSFiles(roots, cert, otherKeyFile, ""),
			fmt.Sprintf(`prpc: mutual TLS: client certificate file %q and client key file %q: tls: private key does not match public key`, cert, otherKeyFile)},
	}
	secrets := append(pemBodyLines(keyPEM), pemBodyLines(fx.stranger.KeyPEM)...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := reactor.New(reactor.Config{Target: "127.0.0.1:1", Credentials: tt.creds})
			require.Nil(t, r)
			require.Error(t, err)
			t.Log(err)
			require.True(t, strings.HasPrefix(err.Error(), tt.want), "got  %v\nwant %s…", err, tt.want)
			for _, line := range secrets {
				require.NotContains(t, err.Error(), line, "the error must not quote key material")
			}
		})
	}
}

// Text before and between PEM blocks is skipped, as OpenSSL skips it: CA bundles describe each
// certificate there.
func TestCredentialsAcceptTextBetweenPEMBlocks(t *testing.T) {
	fx := newTLSFixture(t)
	bundle := bytes.Join([][]byte{
		[]byte("# prpc test CA\n"), fx.ca.CertPEM,
		[]byte("\nprpc other CA\n=============\n"), fx.otherCA.CertPEM,
	}, nil)
	r, err := reactor.New(reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.TLS(bundle, "")})
	require.NoError(t, err)
	require.NoError(t, r.Close(t.Context()))
}
