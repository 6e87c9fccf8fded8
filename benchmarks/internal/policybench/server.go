package policybench

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
)

// echo is the test service's Echo, the only method the scenarios call.
var echo = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

// Handler serves one Echo call of a Server.
type Handler func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)

// Server is a gRPC server of the test service on a loopback port of its own, in this
// process, whose Echo calls handler and counts the calls it received and those its handler
// is serving. It is safe for concurrent use.
type Server struct {
	srv     *grpc.Server
	addr    string
	handler Handler
	calls   atomic.Int64
	active  atomic.Int64  // the Echo calls being served
	done    chan struct{} // closed when Serve returns
	err     error         // what Serve returned, read after done
}

// StartServer starts a Server whose Echo calls are served by handler.
func StartServer(handler Handler) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{srv: grpc.NewServer(), addr: lis.Addr().String(), handler: handler, done: make(chan struct{})}
	testpb.RegisterTestServiceServer(s.srv, echoService{s: s})
	go func() {
		defer close(s.done)
		s.err = s.srv.Serve(lis)
	}()
	return s, nil
}

// Addr returns the address the server listens on, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Calls returns the number of Echo calls the server has received.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Serving returns the number of Echo calls whose handler has not returned yet.
func (s *Server) Serving() int64 { return s.active.Load() }

// Kill stops the server abruptly, as a backend's process dies: it closes its listener and
// every connection at once, without waiting for the calls being served, whose clients see
// their connection break (Unavailable), then returns what serving failed with, if anything.
// Stop may follow it and returns at once.
func (s *Server) Kill() error {
	s.srv.Stop()
	return s.served()
}

// Stop stops the server gracefully: it refuses new calls, waits until every handler has
// returned, then returns what serving failed with, if anything.
func (s *Server) Stop() error {
	s.srv.GracefulStop()
	return s.served()
}

// served waits until Serve has returned and returns its error, nil if the server was stopped
// before it began to serve.
func (s *Server) served() error {
	<-s.done
	if errors.Is(s.err, grpc.ErrServerStopped) {
		return nil
	}
	return s.err
}

// echoService implements the test service for a Server.
type echoService struct {
	testpb.UnimplementedTestServiceServer
	s *Server
}

// Echo implements testpb.TestServiceServer.
func (e echoService) Echo(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	e.s.calls.Add(1)
	e.s.active.Add(1)
	defer e.s.active.Add(-1)
	return e.s.handler(ctx, req)
}

// delay waits d or until ctx is done, whichever comes first, and reports whether it waited d
// whole.
func delay(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Watch implements testpb.TestServiceServer: it sends req.Count messages, each with the
// request's message, as fast as the stream's flow control lets it, then ends the stream OK.
func (e echoService) Watch(req *testpb.WatchRequest, stream grpc.ServerStreamingServer[testpb.EchoResponse]) error {
	resp := &testpb.EchoResponse{Message: req.GetMessage()}
	for range req.GetCount() {
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}
