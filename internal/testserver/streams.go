package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
)

// Watch implements testpb.TestServiceServer: it sends the responses the request asks for,
// each message the request's message followed by its index, then ends the stream with the
// request's fail_code (OK if none). It sets the same header and trailer as Echo.
func (e *echoService) Watch(req *testpb.WatchRequest, stream grpc.ServerStreamingServer[testpb.EchoResponse]) error {
	s := e.s
	s.streams.Add(1)
	ctx := stream.Context()
	if err := stream.SetHeader(metadata.Pairs(HeaderKey, HeaderValue)); err != nil {
		return err
	}
	stream.SetTrailer(metadata.Pairs(TrailerKey, TrailerValue))
	var payload []byte
	if n := req.GetPayloadBytes(); n > 0 {
		payload = bytes.Repeat([]byte{'x'}, int(n))
	}
	for i := req.GetStart(); req.GetForever() || i < req.GetStart()+req.GetCount(); i++ {
		if err := wait(ctx, time.Duration(req.GetIntervalMs())*time.Millisecond); err != nil {
			s.recordCancelled()
			return err
		}
		resp := &testpb.EchoResponse{Message: fmt.Sprintf("%s%d", req.GetMessage(), i), Payload: payload}
		if err := stream.Send(resp); err != nil {
			if ctx.Err() != nil {
				s.recordCancelled()
			}
			return err
		}
		s.streamSent.Add(1)
	}
	if c := req.GetFailCode(); c != 0 {
		return status.Error(codes.Code(c), req.GetFailMessage())
	}
	return nil
}

// Chat implements testpb.TestServiceServer: it answers each request as Echo would (its
// delay and fail_code included: a request with a fail_code ends the stream with that status),
// and ends the stream with OK once the client has closed its side.
func (e *echoService) Chat(stream grpc.BidiStreamingServer[testpb.EchoRequest, testpb.EchoResponse]) error {
	s := e.s
	s.streams.Add(1)
	ctx := stream.Context()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				s.recordCancelled()
			}
			return err
		}
		if err := wait(ctx, time.Duration(req.GetDelayMs())*time.Millisecond); err != nil {
			s.recordCancelled()
			return err
		}
		if c := req.GetFailCode(); c != 0 {
			return status.Error(codes.Code(c), req.GetFailMessage())
		}
		payload := req.GetPayload()
		if n := req.GetResponseBytes(); n > 0 {
			payload = bytes.Repeat([]byte{'x'}, int(n))
		}
		if err := stream.Send(&testpb.EchoResponse{Message: req.GetMessage(), Payload: payload}); err != nil {
			return err
		}
		s.streamSent.Add(1)
	}
}

// wait waits for d, or until ctx is done, and then returns ctx's error as a status.
func wait(ctx context.Context, d time.Duration) error {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}
	return nil
}

// Streams returns how many Watch and Chat streams the server has begun to serve.
func (s *Server) Streams() int64 { return s.streams.Load() }

// StreamSent returns how many responses the server's Watch and Chat handlers have sent.
func (s *Server) StreamSent() int64 { return s.streamSent.Load() }
