package reactor_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testcerts"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func secretToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "s3cr3t-" + hex.EncodeToString(b)
}

// TestSecretsAuthorizationNeverLeaks: an authorization header never appears in a call's
// error, in prpc's log records or in Stats, whichever way the call fails. Each failed call's
// OnError callback panics with the error, so that the default OnCallbackPanic logs it (and its
// stack) through Logger.
func TestSecretsAuthorizationNeverLeaks(t *testing.T) {
	token := secretToken(t)
	bearer := "Bearer " + token
	fx := newTLSFixture(t)
	srv := testserver.Start(t)
	down := testserver.Start(t)
	down.Stop() // connection refused from now on
	badTLS := testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.otherCA.Server(t, "backend.test"), nil))))
	auth := func(extra ...string) metadata.MD {
		md := metadata.MD{"authorization": {bearer}}
		for i := 0; i+1 < len(extra); i += 2 {
			md[extra[i]] = append(md[extra[i]], extra[i+1])
		}
		return md
	}

	tests := []struct {
		name    string
		srv     *testserver.Server
		creds   reactor.Credentials
		req     *testpb.EchoRequest
		md      metadata.MD
		timeout time.Duration
		code    codes.Code
		sent    bool // the header reaches the server
	}{
		{name: "server returns an error", srv: srv, req: &testpb.EchoRequest{FailCode: int32(codes.Unauthenticated), FailMessage: "token rejected"},
			md: auth(), code: codes.Unauthenticated, sent: true},
		{name: "server too slow", srv: srv, req: &testpb.EchoRequest{DelayMs: 5000}, md: auth(), timeout: 100 * time.Millisecond,
			code: codes.DeadlineExceeded, sent: true},
		{name: "server down", srv: down, req: &testpb.EchoRequest{}, md: auth(), code: codes.Unavailable},
		{name: "TLS handshake fails", srv: badTLS, creds: reactor.TLS(fx.ca.CertPEM, ""), req: &testpb.EchoRequest{},
			md: auth(), code: codes.Unavailable},
		{name: "invalid other key", srv: srv, req: &testpb.EchoRequest{}, md: auth("bad key", "x"), code: codes.InvalidArgument},
		{name: "reserved other key", srv: srv, req: &testpb.EchoRequest{}, md: auth("grpc-token", bearer), code: codes.InvalidArgument},
		{name: "colliding key", srv: srv, req: &testpb.EchoRequest{}, md: auth("Authorization", bearer), code: codes.InvalidArgument},
		{name: "invalid value", srv: srv, req: &testpb.EchoRequest{}, md: metadata.MD{"authorization": {bearer + "\r\n"}}, code: codes.InvalidArgument},
		{name: "oversize value", srv: srv, req: &testpb.EchoRequest{}, md: metadata.MD{"authorization": {bearer + strings.Repeat("x", 64<<10)}},
			code: codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &syncBuffer{}
			r := newReactor(t, tt.srv, reactor.Config{
				Credentials: tt.creds,
				Logger:      slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Backoff:     fastBackoff,
			})
			timeout := tt.timeout
			if timeout == 0 {
				timeout = failTimeout
			}
			before := tt.srv.Calls()
			p := reactor.Call(r, echo, tt.req, &calls.Options{Timeout: timeout, Metadata: tt.md})
			p.OnError(func(err error) { panic(err) })
			waitFor(t, r, func() bool { return p.State() != calls.Pending })
			err := p.Err()
			require.Error(t, err)
			t.Log(err)
			require.Equal(t, tt.code, status.Code(err), "got %v", err)
			if tt.sent {
				require.Equal(t, []string{bearer}, tt.srv.LastMetadata().Get("authorization"), "the header was sent")
			} else {
				require.Equal(t, before, tt.srv.Calls())
			}
			r.Tick(time.Second) // nothing left, but Tick must not log the secret either
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, r.Close(ctx))

			logged := log.String()
			require.Contains(t, logged, "promise callback panicked", "the panic was logged")
			ce, ok := err.(*calls.Error)
			require.True(t, ok, "%T", err)
			for what, s := range map[string]string{
				"error":          err.Error(),
				"error %+v":      fmt.Sprintf("%+v", err),
				"error %#v":      fmt.Sprintf("%#v", err),
				"error trailer":  fmt.Sprintf("%v", ce.Trailer()),
				"status message": status.Convert(err).Message(),
				"log":            logged,
				"stats":          fmt.Sprintf("%+v", r.Stats()),
				"stats %#v":      fmt.Sprintf("%#v", r.Stats()),
			} {
				require.NotContains(t, s, token, "%s shows the authorization header", what)
			}
		})
	}
}

// keyForms returns the ways a private key could show in text: its PEM body lines, and, as fmt
// prints bytes (decimal, hex, %#v), its private scalar and the part of its PEM text that
// encodes the scalar (the start of the PEM encodes the algorithm, which certificates share).
func keyForms(t *testing.T, keyPEM []byte) []string {
	t.Helper()
	block, _ := pem.Decode(keyPEM)
	require.NotNil(t, block)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	scalar, err := key.(*ecdsa.PrivateKey).Bytes()
	require.NoError(t, err)
	forms := pemBodyLines(keyPEM)
	require.Len(t, forms[0], 64)
	for _, b := range [][]byte{scalar, []byte(forms[0][48:])} { // PKCS#8 P-256: the scalar starts at DER byte 36
		forms = append(forms, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)), strings.Trim(fmt.Sprint(b), "[]"), goBytes(b))
	}
	return forms
}

// goBytes returns b as %#v prints it, without the type: "0x2d, 0x2d, …".
func goBytes(b []byte) string {
	return strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%#v", b), "[]byte{"), "}")
}

func requireNoKey(t *testing.T, forms []string, what, s string) {
	t.Helper()
	for _, f := range forms {
		require.NotContains(t, s, f, "%s shows key material", what)
	}
}

// TestSecretsCredentialsNeverShowKey: no formatting of credentials shows the private key: not
// String, not any fmt verb (%#v and %d print a struct's byte slices), not a Config or a Reactor
// holding them, not slog.
func TestSecretsCredentialsNeverShowKey(t *testing.T) {
	fx := newTLSFixture(t)
	forms := keyForms(t, fx.client.KeyPEM)
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "client.key", fx.client.KeyPEM)
	certFile := writeFile(t, dir, "client.pem", fx.client.CertPEM)
	rootsFile := writeFile(t, dir, "roots.pem", fx.ca.CertPEM)

	// The check can fail: a plain struct holding the key shows it.
	leaky := struct{ key []byte }{fx.client.KeyPEM}
	require.Contains(t, fmt.Sprintf("%#v", leaky), forms[len(forms)-1])
	require.Contains(t, fmt.Sprintf("%d", leaky), forms[len(forms)-2])

	srv := testserver.Start(t, grpc.Creds(credentials.NewTLS(testcerts.ServerTLS(fx.server, fx.ca.Pool))))
	creds := []struct {
		c      reactor.Credentials
		goForm string
	}{
		{reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, fx.client.KeyPEM, "backend.test"), "reactor.MutualTLS(…)"},
		{reactor.MutualTLSFiles(rootsFile, certFile, keyFile, ""), "reactor.MutualTLSFiles(…)"},
		{reactor.TLS(fx.ca.CertPEM, ""), "reactor.TLS(…)"},
		{reactor.TLSFiles(rootsFile, ""), "reactor.TLSFiles(…)"},
		{reactor.FromTransport(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{fx.client.TLS}, RootCAs: fx.ca.Pool})), "reactor.FromTransport(…)"},
		{reactor.Insecure(), "reactor.Insecure()"},
	}
	for _, tc := range creds {
		c := tc.c
		t.Run(tc.goForm, func(t *testing.T) {
			require.Equal(t, tc.goForm, fmt.Sprintf("%#v", c))
			require.Equal(t, c.String(), fmt.Sprintf("%v", c))
			require.Equal(t, fmt.Sprintf("%q", c.String()), fmt.Sprintf("%q", c))
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s", "%T"} {
				requireNoKey(t, forms, "credentials "+verb, fmt.Sprintf(verb, c))
			}
			cfg := reactor.Config{Target: srv.Addr(), Credentials: c, Backoff: fastBackoff}
			for _, verb := range []string{"%v", "%+v", "%#v", "%d", "%x"} {
				requireNoKey(t, forms, "Config "+verb, fmt.Sprintf(verb, cfg))
			}
			var logged bytes.Buffer
			slog.New(slog.NewTextHandler(&logged, nil)).Info("dial", "creds", c, "config", cfg)
			slog.New(slog.NewJSONHandler(&logged, nil)).Info("dial", "creds", c, "config", cfg)
			requireNoKey(t, forms, "slog", logged.String())

			r := newReactor(t, srv, cfg)
			if c != reactor.Insecure() {
				_ = tlsCall(t, r, false) // a working mTLS call, or a failing one: either way
			}
			requireNoKey(t, forms, "Stats", fmt.Sprintf("%#v", r.Stats()))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, r.Close(ctx))
			for _, verb := range []string{"%v", "%+v", "%#v"} { // after Close: fmt reads fields without atomics
				requireNoKey(t, forms, "Reactor "+verb, fmt.Sprintf(verb, r))
			}
		})
	}

	// Reflection-based printers (spew, go-cmp, debuggers) do not call Format: prpc's own
	// credentials hold the key where they do not look.
	c := reactor.MutualTLS(fx.ca.CertPEM, fx.client.CertPEM, fx.client.KeyPEM, "")
	for _, s := range reachableText(reflect.ValueOf(c), 0) {
		requireNoKey(t, forms, "a field of MutualTLS's credentials", s)
	}
	require.Contains(t, strings.Join(reachableText(reflect.ValueOf(leaky), 0), "\n"), forms[0], "the walk finds an unexported []byte field")
}

// reachableText returns every string and []byte reachable from v through pointers, interfaces,
// structs (exported fields or not), slices, arrays and maps; functions are opaque.
func reachableText(v reflect.Value, depth int) []string {
	if !v.IsValid() || depth > 20 {
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		return []string{v.String()}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return reachableText(v.Elem(), depth+1)
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			out = append(out, reachableText(v.Field(i), depth+1)...)
		}
		return out
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			for i := range b {
				b[i] = byte(v.Index(i).Uint())
			}
			return []string{string(b), hex.EncodeToString(b), strings.Trim(fmt.Sprint(b), "[]")}
		}
		var out []string
		for i := range v.Len() {
			out = append(out, reachableText(v.Index(i), depth+1)...)
		}
		return out
	case reflect.Map:
		var out []string
		for it := v.MapRange(); it.Next(); {
			out = append(out, reachableText(it.Key(), depth+1)...)
			out = append(out, reachableText(it.Value(), depth+1)...)
		}
		return out
	}
	return nil
}
