package dial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callerr"
)

// gRPC reports every failed security handshake as Unavailable with the cause flattened into
// the message, exactly as it reports a backend that is down. To tell the two apart, NewClient
// wraps the transport credentials (every kind but reactor.Insecure) in recordingCreds, which
// classifies the real cause of each failed handshake (classify.go) and records it in the
// reactor's HandshakeLog, as a callerr.HandshakeFailure; the reactor's Stats reports it, and
// its laneError attaches it to the calls it failed, as a *calls.HandshakeError.
//
// A handshake counts as successful only when the server's first bytes arrive after it: with
// TLS 1.3 the client finishes its handshake before the server has checked the client's
// certificate, and a server that refuses it says so with an alert on the first read.

// HandshakeLog holds the most recent handshake failure of a reactor's connections. It is
// written once per connection attempt and read by the reactor's Stats and failed calls, never
// on the path of a successful call. The zero HandshakeLog, a Config.Conn's, holds no failure
// and is not plaintext.
type HandshakeLog struct {
	last atomic.Pointer[callerr.HandshakeFailure] // nil: no failure since the last success

	// plaintext: the connection's credentials are insecure, so it has no handshake to
	// record. Set by NewClient before any call; read-only after.
	plaintext bool
}

func (l *HandshakeLog) failed(he *callerr.HandshakeFailure) { l.last.Store(he) }
func (l *HandshakeLog) succeeded()                          { l.last.Store(nil) }

// Load returns the failure recorded since the last successful handshake, or nil.
func (l *HandshakeLog) Load() *callerr.HandshakeFailure { return l.last.Load() }

// Plaintext reports whether the connection's credentials are insecure (reactor.Insecure, or
// insecure transport credentials), so that it has no handshake to record; the errors of its
// failed calls then go through WithPlaintextHint.
func (l *HandshakeLog) Plaintext() bool { return l.plaintext }

// Cause returns the recorded failure if err, a call's transport error, is an Unavailable
// status whose message quotes it, that is if this failure is what failed the call; otherwise
// nil. Quoting is the only link gRPC leaves between a connection attempt and the calls it
// fails, and it keeps a stale record from labelling a later, unrelated Unavailable (a refused
// TCP connection, a server's own Unavailable status).
func (l *HandshakeLog) Cause(err error) *callerr.HandshakeFailure {
	he := l.Load()
	if he == nil {
		return nil
	}
	st, _ := status.FromError(err)
	if st.Code() != codes.Unavailable {
		return nil
	}
	msg, text := st.Message(), he.Err.Error()
	// gRPC quotes the cause with %q in "connection error: desc = …".
	if quoted := strconv.Quote(text); !strings.Contains(msg, text) && !strings.Contains(msg, quoted[1:len(quoted)-1]) {
		return nil
	}
	return he
}

// plaintextHint ends the message of a call that a plaintext connection failed before the
// server's HTTP/2 preface arrived.
const plaintextHint = "; the server may require TLS (reactor.TLS): this reactor's Credentials are plaintext"

// WithPlaintextHint returns err, a call's transport error on a plaintext connection, with
// plaintextHint added to its message if it is an Unavailable status that says the server's
// HTTP/2 preface never came. A TLS server closes a connection whose first bytes are not a
// TLS record, or answers them with a TLS alert, which grpc-go reports as a failure to read
// the preface; with no handshake on the client's side, the text is the only clue. A plaintext
// server that closes a connection at once is reported the same way, hence "may".
func WithPlaintextHint(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	if msg := st.Message(); !strings.Contains(msg, "error reading server preface") &&
		!strings.Contains(msg, "initial http2 frame from server is not a settings frame") {
		return err
	}
	p := st.Proto()
	p.Message += plaintextHint
	return status.FromProto(p).Err()
}

// recordingCreds wraps the transport credentials a reactor dials with, recording the outcome
// of each client handshake in log. Everything else passes through.
type recordingCreds struct {
	credentials.TransportCredentials
	log *HandshakeLog
}

func newRecordingCreds(tc credentials.TransportCredentials, log *HandshakeLog) credentials.TransportCredentials {
	return &recordingCreds{TransportCredentials: tc, log: log}
}

// ClientHandshake runs the wrapped handshake, records a failure, and returns the connection
// wrapped so that its first read settles the outcome. The wrapped credentials' results,
// errors included, are returned unchanged.
func (c *recordingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		// A cancelled handshake was cut short by gRPC (the reactor closing, the address
		// going away): it says nothing about the server.
		if !errors.Is(ctx.Err(), context.Canceled) {
			c.log.failed(c.classify(err))
		}
		return conn, info, err
	}
	if _, ok := conn.(readyReader); ok {
		// gRPC reads such a connection (ALTS's) without calling Read; wrapping it would
		// cost that optimisation. The handshake it completed counts as the outcome.
		c.log.succeeded()
		return conn, info, nil
	}
	w := newWatchedConn(conn, c)
	if sc, ok := conn.(syscall.Conn); ok { // keep channelz's socket options
		return &watchedSyscallConn{watchedConn: w, sysConn: sc}, info, nil
	}
	return w, info, nil
}

// UsesXDS forwards grpc-go's optional interface of xDS credentials, which its xDS balancers
// look for on the channel's credentials.
func (c *recordingCreds) UsesXDS() bool {
	x, ok := c.TransportCredentials.(interface{ UsesXDS() bool })
	return ok && x.UsesXDS()
}

// Clone returns a copy that records in the same log.
func (c *recordingCreds) Clone() credentials.TransportCredentials {
	return newRecordingCreds(c.TransportCredentials.Clone(), c.log)
}

func (c *recordingCreds) classify(err error) *callerr.HandshakeFailure {
	return &callerr.HandshakeFailure{
		Kind:     classifyHandshake(err),
		Protocol: c.Info().SecurityProtocol,
		Err:      err,
	}
}

// readyReader is grpc-go's optional interface for reads that do not pin memory
// (internal/transport/readyreader.Reader).
type readyReader interface {
	ReadOnReady(bufSize int, pool mem.BufferPool) (b *[]byte, n int, err error)
}

// watchedConn is a connection whose handshake is settled by its first read: data means the
// server accepted the connection, a TLS alert means it refused it. Its cost is one atomic load
// per Read, on gRPC's reader goroutine, and nothing on a Write that succeeds.
type watchedConn struct {
	net.Conn
	creds   *recordingCreds
	pending atomic.Bool   // the first read has not returned yet
	settled chan struct{} // closed when it has
	refusal error         // the server's alert on the first read, if any; set before settled is closed
}

func newWatchedConn(conn net.Conn, creds *recordingCreds) *watchedConn {
	w := &watchedConn{Conn: conn, creds: creds, settled: make(chan struct{})}
	w.pending.Store(true)
	return w
}

func (w *watchedConn) Read(b []byte) (int, error) {
	n, err := w.Conn.Read(b)
	if w.pending.Load() && (n > 0 || err != nil) && w.pending.CompareAndSwap(true, false) {
		switch {
		case n > 0:
			w.creds.log.succeeded()
		case isRemoteAlert(err):
			w.refusal = err
			w.creds.log.failed(w.creds.classify(err))
		}
		// Any other error (EOF, a reset) is a connection failure gRPC reports as such, not a
		// verdict on the handshake: the log keeps what it had.
		close(w.settled)
	}
	return n, err
}

// refusalWait bounds how long a failed write before the server's first bytes waits for the
// first read to say why. The read normally returns at once, as soon as the broken connection
// is seen; the bound only keeps an unexpected case from stalling gRPC.
const refusalWait = 250 * time.Millisecond

// Write returns the error of a write as it is, except for one that fails before the server's
// first bytes because the server refused the connection: a TLS 1.3 server that refuses the
// client's certificate sends an alert and closes, and gRPC, writing its preface, may see the
// broken pipe before it reads the alert. The error then names the alert too, so that gRPC's
// message, and the call's, say why.
func (w *watchedConn) Write(b []byte) (int, error) {
	n, err := w.Conn.Write(b)
	if err != nil {
		select {
		case <-w.settled:
		default:
			t := time.NewTimer(refusalWait)
			select {
			case <-w.settled:
			case <-t.C:
				return n, err
			}
			t.Stop()
		}
		if w.refusal != nil {
			err = fmt.Errorf("%w (the server refused the connection: %w)", err, w.refusal)
		}
	}
	return n, err
}

type sysConn = syscall.Conn

// watchedSyscallConn is a watchedConn that keeps the syscall.Conn of the connection it wraps.
type watchedSyscallConn struct {
	*watchedConn
	sysConn
}
