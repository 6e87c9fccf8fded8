package reactor_test

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testcerts"
	"github.com/trixnew/prpc/reactor"
)

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

// failTimeout is the timeout of TLS calls expected to fail: a TLS failure on loopback is
// reported as Unavailable within milliseconds, so 2 s is a wide margin under -race, and a
// regression (a call waiting for its deadline instead) still shows quickly.
const failTimeout = 2 * time.Second

// tlsFixture holds the certificates of the TLS tests.
type tlsFixture struct {
	ca, otherCA              *testcerts.CA
	server, client, stranger *testcerts.Cert // stranger: a client certificate from otherCA
}

// newTLSFixture makes a CA with a server and a client certificate, and another CA with a
// client certificate of its own.
func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	ca := testcerts.NewCA(t, "prpc test CA")
	other := testcerts.NewCA(t, "prpc other CA")
	return &tlsFixture{
		ca:       ca,
		otherCA:  other,
		server:   ca.Server(t, "backend.test"),
		client:   ca.Client(t, "game-server"),
		stranger: other.Client(t, "intruder"),
	}
}

// writeFile writes b to dir/name, readable by the owner only, and returns its path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// tlsCall makes one Echo call on r with failTimeout and, if waitForReady is set,
// WaitForReady, and returns its error once delivered; a call that succeeds must get its echo.
// A handshake failure fails a call without WaitForReady at once; with it, the call waits for
// a reconnect.
func tlsCall(t *testing.T, r *reactor.Reactor, waitForReady bool) error {
	t.Helper()
	_, resp, err := roundTrip(t, r, echoReq("secure"), &calls.Options{Timeout: failTimeout, WaitForReady: waitForReady})
	if err != nil {
		return err
	}
	require.Equal(t, "secure", resp.GetMessage())
	return nil
}
