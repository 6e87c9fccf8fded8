// Package testserver provides an in-process gRPC backend implementing
// prpctest.TestService (see package testpb) for prpc's own tests.
//
// A Server listens on 127.0.0.1 with an ephemeral port (StartOn takes another
// loopback address). Its Echo handler can be steered per request (delay, block
// until cancelled, fail with any status code, large responses) and records what
// it saw (call count, cancellations, incoming metadata) so tests can assert on
// server-side behaviour without sleeping. WithServices serves more services
// next to TestService. A Proxy (StartProxy) sits in front of a server and can
// blackhole its traffic, for fault tests. Everything is stopped by the test's
// cleanup.
package testserver

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
)

// Response header and trailer set by the default Echo handler.
const (
	// HeaderKey is the response header key set by the default Echo handler.
	HeaderKey = "x-handler"
	// HeaderValue is the value of HeaderKey.
	HeaderValue = "echo"
	// TrailerKey is the response trailer key set by the default Echo handler.
	TrailerKey = "x-trailer"
	// TrailerValue is the value of TrailerKey.
	TrailerValue = "done"
)

// cancelledBuffer is the capacity of the channel returned by Server.Cancelled.
const cancelledBuffer = 1024

// Restart tries to re-bind the previous address for this long, in
// restartStep steps, since the port may briefly be unavailable.
const (
	restartTimeout = 2 * time.Second
	restartStep    = 10 * time.Millisecond
)

// handlerFunc is the type of a custom Echo handler installed by SetHandler.
type handlerFunc func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)

// Server is an in-process TestService server for tests. Create one with
// Start; it is stopped automatically when the test finishes. All methods are
// safe for concurrent use, except that Restart must not race with itself.
type Server struct {
	tb   testing.TB // the test passed to Start; outlives every serve goroutine
	opts []grpc.ServerOption
	addr string

	calls          atomic.Int64
	streams        atomic.Int64 // Watch and Chat streams begun
	streamSent     atomic.Int64 // responses their handlers sent
	cancelledCount atomic.Int64
	cancelled      chan struct{}
	handler        atomic.Pointer[handlerFunc]

	mdMu   sync.Mutex
	lastMD metadata.MD

	restartMu sync.Mutex // serialises Restart

	mu   sync.Mutex    // guards srv and done
	srv  *grpc.Server  // current server
	done chan struct{} // closed when the current serve goroutine returns
}

// Start starts a TestService server listening on 127.0.0.1 with an ephemeral
// port, passing opts (e.g. grpc.Creds) to grpc.NewServer. It serves in a
// background goroutine and registers a t.Cleanup that stops the server and
// waits for that goroutine to exit. It calls t.Fatal if it cannot listen.
func Start(t testing.TB, opts ...grpc.ServerOption) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: listen: %v", err)
	}
	s := &Server{
		tb:        t,
		opts:      append([]grpc.ServerOption(nil), opts...),
		addr:      lis.Addr().String(),
		cancelled: make(chan struct{}, cancelledBuffer),
	}
	s.serve(lis)
	t.Cleanup(s.Stop)
	return s
}

// serve starts a fresh grpc.Server on lis in a new goroutine.
func (s *Server) serve(lis net.Listener) {
	srv := grpc.NewServer(s.opts...)
	testpb.RegisterTestServiceServer(srv, &echoService{s: s})
	done := make(chan struct{})
	s.mu.Lock()
	s.srv, s.done = srv, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.tb.Errorf("testserver: serve %s: %v", s.addr, err)
		}
	}()
}

// current returns the current grpc.Server and its done channel.
func (s *Server) current() (*grpc.Server, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv, s.done
}

// Addr returns the address the server listens on, as "127.0.0.1:port". It
// stays the same across Restart.
func (s *Server) Addr() string { return s.addr }

// Stop stops the server immediately (grpc.Server.Stop), closing all
// connections and cancelling in-flight RPCs, and waits for the serve goroutine
// to exit. It may be called more than once.
func (s *Server) Stop() {
	srv, done := s.current()
	srv.Stop()
	<-done
}

// GracefulStop stops the server gracefully (grpc.Server.GracefulStop),
// waiting for in-flight RPCs to finish, then waits for the serve goroutine to
// exit. It may be called more than once and before the automatic cleanup.
// Note that it blocks for as long as any handler is blocked.
func (s *Server) GracefulStop() {
	srv, done := s.current()
	srv.GracefulStop()
	<-done
}

// Restart stops the current server if it is still running, then listens again
// on the same address and serves a fresh grpc.Server with the same options,
// handler and counters. Binding is retried for up to 2 s in 10 ms steps; it
// calls t.Fatal if the address cannot be bound by then.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.restartMu.Lock()
	defer s.restartMu.Unlock()
	s.Stop()

	// Go sets SO_REUSEADDR on listening sockets on Unix, so TIME_WAIT
	// connections from the previous incarnation do not block the bind; the
	// retry covers the remaining transient failures.
	deadline := time.Now().Add(restartTimeout)
	for {
		lis, err := net.Listen("tcp", s.addr)
		if err == nil {
			s.serve(lis)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testserver: restart: listen on %s: %v", s.addr, err)
		}
		time.Sleep(restartStep)
	}
}

// Calls returns the number of Echo calls the server has received (across
// restarts), including calls handled by a custom handler.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Cancelled returns a channel (capacity 1024) that receives one value per
// Echo handler that observed its context done while waiting (block or
// delay_ms). Values beyond the capacity are dropped but still counted by
// CancelledCount.
func (s *Server) Cancelled() <-chan struct{} { return s.cancelled }

// CancelledCount returns the number of Echo handlers that observed their
// context done while waiting. It is incremented before the corresponding
// value is sent on Cancelled.
func (s *Server) CancelledCount() int64 { return s.cancelledCount.Load() }

// LastMetadata returns a copy of the incoming metadata of the most recent
// Echo call (nil before the first call). It includes pseudo-headers such as
// ":authority" if grpc-go reports them.
func (s *Server) LastMetadata() metadata.MD {
	s.mdMu.Lock()
	defer s.mdMu.Unlock()
	if s.lastMD == nil {
		return nil
	}
	return s.lastMD.Copy()
}

// SetHandler installs h as a custom Echo handler: every later Echo call is
// counted, its metadata recorded, and then h is called instead of the
// default behaviour. Passing nil restores the default behaviour. It is safe
// to call while the server is serving.
func (s *Server) SetHandler(h func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)) {
	if h == nil {
		s.handler.Store(nil)
		return
	}
	f := handlerFunc(h)
	s.handler.Store(&f)
}

// recordCancelled notes that a handler observed its context done.
func (s *Server) recordCancelled() {
	s.cancelledCount.Add(1)
	select {
	case s.cancelled <- struct{}{}:
	default:
	}
}

// echoService implements testpb.TestServiceServer on behalf of a Server.
type echoService struct {
	testpb.UnimplementedTestServiceServer
	s *Server
}

// Echo implements testpb.TestServiceServer.
func (e *echoService) Echo(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	s := e.s
	s.calls.Add(1)

	md, _ := metadata.FromIncomingContext(ctx)
	s.mdMu.Lock()
	s.lastMD = md.Copy()
	s.mdMu.Unlock()

	if h := s.handler.Load(); h != nil {
		return (*h)(ctx, req)
	}

	waited := false
	if req.GetBlock() {
		waited = true
		<-ctx.Done()
	} else if d := req.GetDelayMs(); d > 0 {
		waited = true
		timer := time.NewTimer(time.Duration(d) * time.Millisecond)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		}
	}
	if waited && ctx.Err() != nil {
		s.recordCancelled()
		return nil, status.FromContextError(ctx.Err()).Err()
	}

	if err := grpc.SetHeader(ctx, metadata.Pairs(HeaderKey, HeaderValue)); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, metadata.Pairs(TrailerKey, TrailerValue)); err != nil {
		return nil, err
	}

	if c := req.GetFailCode(); c != 0 {
		// Codes outside 0-16 are deliberately passed through unchanged.
		return nil, status.Error(codes.Code(c), req.GetFailMessage())
	}

	payload := req.GetPayload()
	if n := req.GetResponseBytes(); n > 0 {
		payload = bytes.Repeat([]byte{'x'}, int(n))
	}
	seen := make(map[string]string, len(md))
	for k, v := range md {
		if strings.HasPrefix(k, ":") || len(v) == 0 {
			continue
		}
		seen[k] = v[0]
	}
	return &testpb.EchoResponse{
		Message:  req.GetMessage(),
		Payload:  payload,
		Metadata: seen,
	}, nil
}
