package reactortest

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// errHeaderSent is what grpc-go's server transport returns for a header set or sent after
// the header went out.
var errHeaderSent = status.Error(codes.Internal, "transport: SendHeader called multiple times")

// errAttemptDone is the error of a header or trailer set after the handler returned.
var errAttemptDone = status.Error(codes.Internal, "reactortest: the handler has returned; the call's header and trailer are final")

// serverStream is the grpc.ServerTransportStream of one attempt of a call on a Backend: the
// server side of the call as grpc.SetHeader, grpc.SendHeader, grpc.SetTrailer and
// grpc.Method find it in the handler's context. It behaves as grpc-go's server stream of a
// unary call: headers are joined until they are sent, by SendHeader or with a response; a
// header set or sent after that fails; trailers are joined until the handler returns.
type serverStream struct {
	method string

	mu      sync.Mutex
	header  metadata.MD
	trailer metadata.MD
	sent    bool // SendHeader sent the header (a response sends it too: see finish)
	done    bool // the handler returned
}

var _ grpc.ServerTransportStream = (*serverStream)(nil)

// Method implements grpc.ServerTransportStream: the path of the call's method.
func (s *serverStream) Method() string { return s.method }

// SetHeader implements grpc.ServerTransportStream.
func (s *serverStream) SetHeader(md metadata.MD) error {
	if md.Len() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.headerErr(); err != nil {
		return err
	}
	s.header = metadata.Join(s.header, md)
	return nil
}

// SendHeader implements grpc.ServerTransportStream. It may be called once, before a response.
func (s *serverStream) SendHeader(md metadata.MD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.headerErr(); err != nil {
		return err
	}
	s.sent = true
	if md.Len() > 0 {
		s.header = metadata.Join(s.header, md)
	}
	return nil
}

// headerErr returns why the header can no longer be set or sent, or nil; with mu held.
func (s *serverStream) headerErr() error {
	switch {
	case s.done:
		return errAttemptDone
	case s.sent:
		return errHeaderSent
	}
	return nil
}

// SetTrailer implements grpc.ServerTransportStream.
func (s *serverStream) SetTrailer(md metadata.MD) error {
	if md.Len() == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errAttemptDone
	}
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// finish ends the attempt, once its handler returned (with a response if responded), and
// returns its header and trailer and whether the header went out, which commits the call:
// a response sends it, and so does an error when a header was set, as gRPC sends a header
// frame before the status then. Later calls of the stream's methods fail.
func (s *serverStream) finish(responded bool) (header, trailer metadata.MD, committed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	return s.header, s.trailer, s.sent || responded || len(s.header) > 0
}
