package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/reactor"
)

// The interop cases of streams, through reactor.Watch and reactor.Bidi: each message and the
// end are delivered in Tick, on the goroutine that ticks, as a game loop receives them.
var (
	streamingOutputCall = calls.MustStreamMethod[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]("/grpc.testing.TestService/StreamingOutputCall")
	streamingInputCall  = calls.MustBidiMethod[*testpb.StreamingInputCallRequest, *testpb.StreamingInputCallResponse]("/grpc.testing.TestService/StreamingInputCall")
	fullDuplexCall      = calls.MustBidiMethod[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]("/grpc.testing.TestService/FullDuplexCall")
	halfDuplexCall      = calls.MustBidiMethod[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]("/grpc.testing.TestService/HalfDuplexCall")
)

// Sizes from the interop test descriptions: the requests' payloads of client_streaming and
// ping_pong, and the responses' of server_streaming and ping_pong.
var (
	streamRequestSizes  = []int{27182, 8, 1828, 45904}
	streamResponseSizes = []int{31415, 9, 2653, 58979}
)

// aggregatedSize is the sum of streamRequestSizes, which client_streaming's response names.
const aggregatedSize = 74922

// awaitEnd ticks r the way a game loop does between frames, woken by Ready, until *ended is
// set (by a stream's OnEnd, in Tick), for at most waitBound.
func awaitEnd(r *reactor.Reactor, ended *bool) error {
	bound := time.NewTimer(waitBound)
	defer bound.Stop()
	for !*ended {
		select {
		case <-r.Ready():
			r.Tick(tickBudget)
		case <-bound.C:
			return fmt.Errorf("stream not ended after %v", waitBound)
		}
	}
	return nil
}

// checkPayload checks that a response's payload is COMPRESSABLE and all zeros; the callers
// compare the sizes.
func checkPayload(p *testpb.Payload) error {
	if p.GetType() != testpb.PayloadType_COMPRESSABLE {
		return fmt.Errorf("payload type %v, want COMPRESSABLE", p.GetType())
	}
	for _, b := range p.GetBody() {
		if b != 0 {
			return errors.New("payload body is not all zeros")
		}
	}
	return nil
}

// runServerStreaming is server_streaming: one request asks for four responses of
// streamResponseSizes; they arrive in that order, then the end, OK.
func runServerStreaming(r *reactor.Reactor) error {
	req := &testpb.StreamingOutputCallRequest{ResponseType: testpb.PayloadType_COMPRESSABLE}
	for _, n := range streamResponseSizes {
		req.ResponseParameters = append(req.ResponseParameters, &testpb.ResponseParameters{Size: int32(n)})
	}
	var got []int
	var payloadErr, endErr error
	ended := false
	reactor.Watch(r, streamingOutputCall, req, nil, calls.StreamHandler[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]{
		OnMessage: func(m *testpb.StreamingOutputCallResponse) {
			if ended {
				payloadErr = errors.New("a message after the end")
			}
			if err := checkPayload(m.GetPayload()); err != nil && payloadErr == nil {
				payloadErr = err
			}
			got = append(got, len(m.GetPayload().GetBody()))
		},
		OnEnd: func(err error) { ended, endErr = true, err },
	})
	if err := awaitEnd(r, &ended); err != nil {
		return err
	}
	if endErr != nil {
		return fmt.Errorf("the end: %w", endErr)
	}
	if payloadErr != nil {
		return payloadErr
	}
	if !slices.Equal(got, streamResponseSizes) {
		return fmt.Errorf("responses of %v bytes, want %v, in order", got, streamResponseSizes)
	}
	return nil
}

// runClientStreaming is client_streaming, through Bidi as prpc opens client-streaming
// methods: four requests of streamRequestSizes, CloseSend, then one response naming their
// aggregated size, and the end, OK.
func runClientStreaming(r *reactor.Reactor) error {
	var got []int32
	var endErr error
	ended := false
	s := reactor.Bidi(r, streamingInputCall, nil, calls.StreamHandler[*testpb.StreamingInputCallRequest, *testpb.StreamingInputCallResponse]{
		OnMessage: func(m *testpb.StreamingInputCallResponse) { got = append(got, m.GetAggregatedPayloadSize()) },
		OnEnd:     func(err error) { ended, endErr = true, err },
	})
	for _, n := range streamRequestSizes {
		if err := s.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, n)}}); err != nil {
			return fmt.Errorf("sending: %w", err)
		}
	}
	if err := s.CloseSend(); err != nil {
		return fmt.Errorf("closing the client side: %w", err)
	}
	if err := awaitEnd(r, &ended); err != nil {
		return err
	}
	if endErr != nil {
		return fmt.Errorf("the end: %w", endErr)
	}
	if len(got) != 1 || got[0] != aggregatedSize {
		return fmt.Errorf("responses %v, want one of aggregated size %d", got, aggregatedSize)
	}
	return nil
}

// runPingPong is ping_pong: a full-duplex stream where the client sends a request (payload of
// streamRequestSizes[i], asking for a response of streamResponseSizes[i]), waits for its
// response (delivered in Tick, where it sends the next), four times, then closes its side;
// the responses arrive in order, then the end, OK.
func runPingPong(r *reactor.Reactor) error {
	ping := func(i int) *testpb.StreamingOutputCallRequest {
		return &testpb.StreamingOutputCallRequest{
			ResponseType:       testpb.PayloadType_COMPRESSABLE,
			ResponseParameters: []*testpb.ResponseParameters{{Size: int32(streamResponseSizes[i])}},
			Payload:            &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, streamRequestSizes[i])},
		}
	}
	var s *calls.BidiStream[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]
	var got []int
	var streamErr, endErr error
	ended := false
	s = reactor.Bidi(r, fullDuplexCall, nil, calls.StreamHandler[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]{
		OnMessage: func(m *testpb.StreamingOutputCallResponse) {
			got = append(got, len(m.GetPayload().GetBody()))
			if err := checkPayload(m.GetPayload()); err != nil && streamErr == nil {
				streamErr = err
			}
			var err error
			if len(got) < len(streamResponseSizes) {
				err = s.Send(ping(len(got)))
			} else {
				err = s.CloseSend()
			}
			if err != nil && streamErr == nil {
				streamErr = fmt.Errorf("after response %d: %w", len(got), err)
			}
		},
		OnEnd: func(err error) { ended, endErr = true, err },
	})
	if err := s.Send(ping(0)); err != nil {
		return fmt.Errorf("sending: %w", err)
	}
	if err := awaitEnd(r, &ended); err != nil {
		return err
	}
	if endErr != nil {
		return fmt.Errorf("the end, after responses of %v bytes: %w", got, endErr)
	}
	if streamErr != nil {
		return streamErr
	}
	if !slices.Equal(got, streamResponseSizes) {
		return fmt.Errorf("responses of %v bytes, want %v, in order", got, streamResponseSizes)
	}
	return nil
}

// duplexStream is a full-duplex method of the TestService (FullDuplexCall, HalfDuplexCall).
type duplexStream = calls.BidiMethod[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]

// exchange opens a stream of m with opts, sends reqs, closes the client's side and ticks r
// until the end; it returns the handle, the sizes of the responses' payloads in the order
// received, and the end's error, or err if a step failed.
func exchange(r *reactor.Reactor, m *duplexStream, opts *calls.StreamOptions, reqs ...*testpb.StreamingOutputCallRequest) (
	s *calls.BidiStream[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse], got []int, endErr, err error) {
	ended := false
	s = reactor.Bidi(r, m, opts, calls.StreamHandler[*testpb.StreamingOutputCallRequest, *testpb.StreamingOutputCallResponse]{
		OnMessage: func(m *testpb.StreamingOutputCallResponse) { got = append(got, len(m.GetPayload().GetBody())) },
		OnEnd:     func(err error) { ended, endErr = true, err },
	})
	for _, req := range reqs {
		if err := s.Send(req); err != nil {
			return s, got, nil, fmt.Errorf("sending: %w", err)
		}
	}
	if err := s.CloseSend(); err != nil {
		return s, got, nil, fmt.Errorf("closing the client side: %w", err)
	}
	if err := awaitEnd(r, &ended); err != nil {
		return s, got, nil, err
	}
	return s, got, endErr, nil
}

// runEmptyStream is empty_stream: a full-duplex stream the client closes at once ends OK
// without a response.
func runEmptyStream(r *reactor.Reactor) error {
	_, got, endErr, err := exchange(r, fullDuplexCall, nil)
	switch {
	case err != nil:
		return err
	case endErr != nil:
		return fmt.Errorf("the end: %w", endErr)
	case len(got) != 0:
		return fmt.Errorf("%d responses, want none", len(got))
	}
	return nil
}

// runCustomMetadataStream is custom_metadata's full-duplex half: a stream opened with the
// metadata custom_metadata sends and ResponseMetadata, one request asking for a response of
// largeResponseSize, CloseSend; the response, the end OK, and the echoed header and trailer
// on the stream once it has ended.
func runCustomMetadataStream(r *reactor.Reactor) error {
	md := metadata.Pairs(initialMetadataKey, initialMetadataValue, trailingMetadataKey, trailingMetadataValue)
	s, got, endErr, err := exchange(r, fullDuplexCall, &calls.StreamOptions{Metadata: md, ResponseMetadata: true},
		&testpb.StreamingOutputCallRequest{
			ResponseType:       testpb.PayloadType_COMPRESSABLE,
			ResponseParameters: []*testpb.ResponseParameters{{Size: largeResponseSize}},
			Payload:            &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, largeRequestSize)},
		})
	switch {
	case err != nil:
		return err
	case endErr != nil:
		return fmt.Errorf("the end: %w", endErr)
	case !slices.Equal(got, []int{largeResponseSize}):
		return fmt.Errorf("responses of %v bytes, want [%d]", got, largeResponseSize)
	}
	return requireEcho(s.Header(), s.Trailer())
}

// runStatusCodeAndMessageStream is status_code_and_message's full-duplex half: a request
// asking the server to fail with a status, CloseSend; the stream ends with that code and
// exactly that message, without a response. Neither server sends a message before the
// status: grpc-go answers with trailers only, connect-go with a header and then trailers.
func runStatusCodeAndMessageStream(r *reactor.Reactor) error {
	_, got, endErr, err := exchange(r, fullDuplexCall, nil,
		&testpb.StreamingOutputCallRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.Unknown), Message: statusMessage}})
	switch {
	case err != nil:
		return err
	case len(got) != 0:
		return fmt.Errorf("%d responses, want none", len(got))
	}
	return requireStatus(endErr, codes.Unknown, statusMessage)
}

// runUnimplementedStream is unimplemented_method for a stream, against the connect peer:
// HalfDuplexCall, which it does not serve (its mux answers 404; grpc-go's TestService serves
// it), opened with Bidi and closed at once, ends without a message with Unimplemented, and
// its end does not claim that the request was never sent, since the server answered it.
func runUnimplementedStream(r *reactor.Reactor) error {
	_, got, endErr, err := exchange(r, halfDuplexCall, nil)
	switch {
	case err != nil:
		return err
	case len(got) != 0:
		return fmt.Errorf("%d messages, want none", len(got))
	}
	return requireAnswered(endErr, codes.Unimplemented)
}
