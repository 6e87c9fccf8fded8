package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/reactor"
)

// The peers -peer names.
const (
	peerGRPC    = "grpc-go"
	peerConnect = "connect"
)

// connectCases are the cases run against the connect-go peer: grpc-go's cases (the connect
// peer serves EmptyCall too, and answers methods it does not serve with its HTTP mux's 404,
// which gRPC reads as Unimplemented), status_details, which grpc-go's TestService cannot
// serve, and unimplemented_stream, on a method grpc-go's TestService serves.
var connectCases = append(grpcCases[:len(grpcCases):len(grpcCases)],
	interopCase{"status_details", runStatusDetails},
	interopCase{"unimplemented_stream", runUnimplementedStream},
)

// connectHeaderTimeout bounds how long the connect peer waits for a request's headers.
const connectHeaderTimeout = 10 * time.Second

// startConnect serves the interop TestService's EmptyCall, UnaryCall, StreamingOutputCall,
// StreamingInputCall and FullDuplexCall with connect-go's generic handlers over the
// grpc_testing messages, on 127.0.0.1:0, over HTTP/2 cleartext (net/http's own, with prior
// knowledge, as gRPC's plaintext clients speak it), and returns its address and a function
// that closes the server and its connections and waits for it to stop.
//
// The handlers behave as grpc-go's interop server does where the interop test descriptions
// ask it (payloads of zeros of the sizes asked for, the echoed metadata, the status asked
// for), and in one way of their own: an error carries the EchoStatus it was asked for as a
// status detail, which status_details checks.
func startConnect() (string, func(), error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	const svc = "/grpc.testing.TestService/"
	mux := http.NewServeMux()
	mux.Handle(svc+"EmptyCall", connect.NewUnaryHandler(svc+"EmptyCall", connectEmptyCall))
	mux.Handle(svc+"UnaryCall", connect.NewUnaryHandler(svc+"UnaryCall", connectUnaryCall))
	mux.Handle(svc+"StreamingOutputCall", connect.NewServerStreamHandler(svc+"StreamingOutputCall", connectStreamingOutputCall))
	mux.Handle(svc+"StreamingInputCall", connect.NewClientStreamHandler(svc+"StreamingInputCall", connectStreamingInputCall))
	mux.Handle(svc+"FullDuplexCall", connect.NewBidiStreamHandler(svc+"FullDuplexCall", connectFullDuplexCall))

	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols, ReadHeaderTimeout: connectHeaderTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	return lis.Addr().String(), func() { _ = srv.Close(); <-done }, nil
}

// echoMetadata copies the interop metadata from a request's headers to a response's: the
// initial value to the header and the binary trailing value to the trailer, both as they
// came on the wire (the binary one still in base64), as grpc-go's interop server echoes them.
func echoMetadata(request, header, trailer http.Header) {
	if v := request.Get(initialMetadataKey); v != "" {
		header.Set(initialMetadataKey, v)
	}
	if v := request.Get(trailingMetadataKey); v != "" {
		trailer.Set(trailingMetadataKey, v)
	}
}

// echoError returns the error st asks for, nil if st asks for none (code OK). The error
// carries st as a status detail.
func echoError(st *testpb.EchoStatus) error {
	if st.GetCode() == 0 {
		return nil
	}
	err := connect.NewError(connect.Code(st.GetCode()), errors.New(st.GetMessage()))
	detail, derr := connect.NewErrorDetail(st)
	if derr != nil {
		return connect.NewError(connect.CodeInternal, derr)
	}
	err.AddDetail(detail)
	return err
}

// payload returns a COMPRESSABLE payload of size zeros, the only type the interop cases ask
// for.
func payload(size int32) *testpb.Payload {
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, size)}
}

// sendResponses sends a response for each of params, after its interval, until ctx ends.
func sendResponses(ctx context.Context, params []*testpb.ResponseParameters, send func(*testpb.StreamingOutputCallResponse) error) error {
	for _, p := range params {
		if us := p.GetIntervalUs(); us > 0 {
			t := time.NewTimer(time.Duration(us) * time.Microsecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return connect.NewError(connect.CodeCanceled, ctx.Err())
			case <-t.C:
			}
		}
		if err := send(&testpb.StreamingOutputCallResponse{Payload: payload(p.GetSize())}); err != nil {
			return err
		}
	}
	return nil
}

func connectEmptyCall(context.Context, *connect.Request[testpb.Empty]) (*connect.Response[testpb.Empty], error) {
	return connect.NewResponse(&testpb.Empty{}), nil
}

func connectUnaryCall(ctx context.Context, req *connect.Request[testpb.SimpleRequest]) (*connect.Response[testpb.SimpleResponse], error) {
	// The call's own header and trailer, rather than the response's, so that the echo
	// travels on an error too, as grpc-go's SendHeader and SetTrailer make it.
	if info, ok := connect.CallInfoForHandlerContext(ctx); ok {
		echoMetadata(req.Header(), info.ResponseHeader(), info.ResponseTrailer())
	}
	if err := echoError(req.Msg.GetResponseStatus()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&testpb.SimpleResponse{Payload: payload(req.Msg.GetResponseSize())}), nil
}

func connectStreamingOutputCall(ctx context.Context, req *connect.Request[testpb.StreamingOutputCallRequest], stream *connect.ServerStream[testpb.StreamingOutputCallResponse]) error {
	echoMetadata(req.Header(), stream.ResponseHeader(), stream.ResponseTrailer())
	if err := sendResponses(ctx, req.Msg.GetResponseParameters(), stream.Send); err != nil {
		return err
	}
	return echoError(req.Msg.GetResponseStatus())
}

func connectStreamingInputCall(_ context.Context, stream *connect.ClientStream[testpb.StreamingInputCallRequest]) (*connect.Response[testpb.StreamingInputCallResponse], error) {
	var sum int32
	for stream.Receive() {
		sum += int32(len(stream.Msg().GetPayload().GetBody()))
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: sum}), nil
}

func connectFullDuplexCall(ctx context.Context, stream *connect.BidiStream[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	echoMetadata(stream.RequestHeader(), stream.ResponseHeader(), stream.ResponseTrailer())
	for {
		req, err := stream.Receive()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := echoError(req.GetResponseStatus()); err != nil {
			return err
		}
		if err := sendResponses(ctx, req.GetResponseParameters(), stream.Send); err != nil {
			return err
		}
	}
}

// runStatusDetails is status_code_and_message with the status's details: the connect peer
// fails with the EchoStatus it is asked for and carries it as a detail, which prpc hands the
// caller in the error's status (status.Convert), unasked, as it hands every status's details.
func runStatusDetails(r *reactor.Reactor) error {
	echo := &testpb.EchoStatus{Code: int32(codes.Unknown), Message: statusMessage}
	_, err := await(r, reactor.Call(r, unaryCall, &testpb.SimpleRequest{ResponseStatus: echo}, nil))
	if err := requireStatus(err, codes.Unknown, statusMessage); err != nil {
		return err
	}
	details := status.Convert(err).Details()
	if len(details) != 1 {
		return fmt.Errorf("details %v, want one, the EchoStatus", details)
	}
	got, ok := details[0].(*testpb.EchoStatus)
	if !ok || !proto.Equal(got, echo) {
		return fmt.Errorf("detail %T %v, want the EchoStatus %v", details[0], details[0], echo)
	}
	return nil
}
