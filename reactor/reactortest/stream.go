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

// serverStream is the grpc.ServerTransportStream of one attempt of a call, or of one
// stream, on a Backend: the server side of the call as grpc.SetHeader, grpc.SendHeader,
// grpc.SetTrailer and grpc.Method find it in the handler's context. It behaves as grpc-go's
// server stream: headers are joined until they are sent, by SendHeader, with a response or a
// stream's first message (sendWithMessage), or with the status if any was set; a header set
// or sent after that fails; trailers are joined until the handler returns.
type serverStream struct {
	method string
	// headerOut, for a stream, is closed once the header goes out, so that the client's
	// Header can wait for it; nil for a unary call.
	headerOut chan struct{}

	mu      sync.Mutex
	header  metadata.MD
	trailer metadata.MD
	sent    bool // the header went out (a response sends it too: see finish)
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
	if md.Len() > 0 {
		s.header = metadata.Join(s.header, md)
	}
	s.markSentLocked()
	return nil
}

// markSentLocked records that the header went out; with mu held.
func (s *serverStream) markSentLocked() {
	if !s.sent {
		s.sent = true
		if s.headerOut != nil {
			close(s.headerOut)
		}
	}
}

// sendWithMessage sends the header ahead of a stream's message, unless it went out already.
// It fails once the handler has returned.
func (s *serverStream) sendWithMessage() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errAttemptDone
	}
	s.markSentLocked()
	return nil
}

// sentHeader returns a copy of the header if it went out (empty, not nil, if it has no
// keys, as grpc-go's client has it), and nil otherwise.
func (s *serverStream) sentHeader() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sent {
		return nil
	}
	if s.header == nil {
		return metadata.MD{}
	}
	return s.header.Copy()
}

// finalTrailer returns a copy of the trailer, once the handler has returned; nil before.
func (s *serverStream) finalTrailer() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done || s.trailer == nil {
		return nil
	}
	return s.trailer.Copy()
}

// abandon ends the stream of a handler that returned after its deadline: what it did not
// send by then never goes out.
func (s *serverStream) abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
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
// a response sends it, and so does a status when a header was set, as gRPC sends a header
// frame before the status then. Later calls of the stream's methods fail.
func (s *serverStream) finish(responded bool) (header, trailer metadata.MD, committed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if responded || len(s.header) > 0 {
		s.markSentLocked()
	}
	return s.header, s.trailer, s.sent
}
