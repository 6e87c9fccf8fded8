package reactor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
)

func TestWireMetadataLowercased(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	_, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "md"}, &calls.Options{Metadata: metadata.MD{
		"X-Request-ID":  {"abc-123"},
		"Authorization": {"Bearer token"},
		"x-multi":       {"one", "two"},
		"Trace.Span_ID": {"7"},
	}})
	require.NoError(t, err)
	require.Equal(t, "abc-123", resp.GetMetadata()["x-request-id"])
	require.Equal(t, "Bearer token", resp.GetMetadata()["authorization"])
	require.Equal(t, "7", resp.GetMetadata()["trace.span_id"])

	md := srv.LastMetadata()
	require.Equal(t, []string{"abc-123"}, md.Get("x-request-id"))
	require.Equal(t, []string{"one", "two"}, md["x-multi"])
	for k := range md {
		require.Equal(t, strings.ToLower(k), k, "key %q arrived with uppercase", k)
	}
}

func TestWireBinaryMetadataRoundTrips(t *testing.T) {
	srv := testserver.Start(t)
	// The default handler echoes metadata into a proto3 string map, which cannot hold
	// arbitrary bytes; the server records the metadata before calling this handler.
	srv.SetHandler(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "bin"}, nil
	})
	r := newReactor(t, srv, reactor.Config{})
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	tests := []struct {
		name string
		key  string
		vals []string
	}{
		{"every byte", "x-data-bin", []string{string(all)}},
		{"uppercase key", "X-Blob-Bin", []string{"\r\n\x00\x7f\xff"}},
		{"several values", "x-multi-bin", []string{"\x00", "\xfe\xff", "plain"}},
		{"invalid UTF-8", "x-utf-bin", []string{"\xc3\x28"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := roundTrip(t, r, &testpb.EchoRequest{}, &calls.Options{Metadata: metadata.MD{tt.key: tt.vals}})
			require.NoError(t, err)
			require.Equal(t, tt.vals, srv.LastMetadata()[strings.ToLower(tt.key)])
		})
	}
}

func TestWireInvalidMetadataNeverSent(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 1024}})
	const secret = "Bearer s3cr3t"
	big := strings.Repeat("v", 1024)

	tests := []struct {
		name string
		md   metadata.MD
		want error
	}{
		{"colliding keys", metadata.MD{"X-Key": {secret}, "x-key": {secret}}, calls.ErrInvalidArgument},
		{"empty key", metadata.MD{"": {secret}}, calls.ErrInvalidArgument},
		{"key with space", metadata.MD{"x key": {secret}}, calls.ErrInvalidArgument},
		{"key with non-ASCII", metadata.MD{"x-clé": {secret}}, calls.ErrInvalidArgument},
		{"key with Kelvin sign", metadata.MD{"x-\u212Aey": {secret}}, calls.ErrInvalidArgument},
		{"grpc-foo", metadata.MD{"grpc-foo": {secret}}, calls.ErrInvalidArgument},
		{"grpc-timeout", metadata.MD{"grpc-timeout": {"1S"}}, calls.ErrInvalidArgument},
		{"content-type", metadata.MD{"content-type": {"application/json"}}, calls.ErrInvalidArgument},
		{"te", metadata.MD{"te": {"trailers"}}, calls.ErrInvalidArgument},
		{"connection", metadata.MD{"connection": {"close"}}, calls.ErrInvalidArgument},
		{"user-agent", metadata.MD{"user-agent": {secret}}, calls.ErrInvalidArgument},
		{"host", metadata.MD{"host": {secret}}, calls.ErrInvalidArgument},
		{":authority", metadata.MD{":authority": {secret}}, calls.ErrInvalidArgument},
		{"no values", metadata.MD{"x-empty": {}}, calls.ErrInvalidArgument},
		{"CR in value", metadata.MD{"x-v": {secret + "\r"}}, calls.ErrInvalidArgument},
		{"LF in value", metadata.MD{"x-v": {secret + "\n"}}, calls.ErrInvalidArgument},
		{"NUL in value", metadata.MD{"x-v": {secret + "\x00"}}, calls.ErrInvalidArgument},
		{"DEL in value", metadata.MD{"x-v": {secret + "\x7f"}}, calls.ErrInvalidArgument},
		{"non-ASCII in value", metadata.MD{"x-v": {secret + "é"}}, calls.ErrInvalidArgument},
		{"over MaxMetadataBytes", metadata.MD{"x-big": {secret + big}}, calls.ErrTooLarge},
		{"bin over MaxMetadataBytes", metadata.MD{"x-big-bin": {secret + big[:800]}}, calls.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Calls()
			p, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "never"}, &calls.Options{Metadata: tt.md})
			require.Nil(t, resp)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, status.Code(tt.want), status.Code(err))
			require.Equal(t, calls.Failed, p.State())
			require.Nil(t, p.Header())
			require.Nil(t, p.Trailer())
			require.NotContains(t, err.Error(), "s3cr3t", "errors must not reveal metadata values")

			// A valid call afterwards goes through, and is the only one the server saw.
			_, resp, err = roundTrip(t, r, &testpb.EchoRequest{Message: "ok"}, &calls.Options{Metadata: metadata.MD{"x-ok": {"1"}}})
			require.NoError(t, err)
			require.Equal(t, "ok", resp.GetMessage())
			require.Equal(t, before+1, srv.Calls(), "the invalid call must not reach the server")
		})
	}
}

func TestWireInvalidMetadataFailsAtSubmission(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Metadata: metadata.MD{"grpc-foo": {"x"}}})
	require.Equal(t, calls.Failed, p.State(), "the promise is failed when Call returns")
	require.ErrorIs(t, p.Err(), calls.ErrInvalidArgument)
	var got error
	p.OnError(func(err error) { got = err })
	waitFor(t, r, func() bool { return got != nil })
	require.Same(t, p.Err(), got)
}

func TestWireRequestTooLarge(t *testing.T) {
	srv := testserver.Start(t)
	const limit = 1024
	r := newReactor(t, srv, reactor.Config{Limits: limits.Limits{MaxRequestBytes: limit}})
	// Payload field: 1 tag byte, 2 length bytes, then the payload.
	atLimit := &testpb.EchoRequest{Payload: make([]byte, limit-3)}
	tests := []struct {
		name string
		req  *testpb.EchoRequest
		ok   bool
	}{
		{"at the limit", atLimit, true},
		{"one byte over", &testpb.EchoRequest{Payload: make([]byte, limit-2)}, false},
		{"far over", &testpb.EchoRequest{Payload: make([]byte, 1<<20)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Calls()
			p, _, err := roundTrip(t, r, tt.req, nil)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, before+1, srv.Calls())
				return
			}
			require.ErrorIs(t, err, calls.ErrTooLarge)
			require.Equal(t, codes.ResourceExhausted, status.Code(err))
			require.Contains(t, err.Error(), fmt.Sprint(limit))
			require.Equal(t, calls.Failed, p.State())
			require.Equal(t, before, srv.Calls(), "an oversize request must not reach the server")
		})
	}
}

func TestWireResponseTooLarge(t *testing.T) {
	srv := testserver.Start(t)
	const limit = 1024
	huge := grpc.MaxCallRecvMsgSize(1 << 30)
	tests := []struct {
		name     string
		dialOpts []grpc.DialOption
		callOpts []grpc.CallOption
	}{
		{"defaults", nil, nil},
		{"dial option raising the receive limit", []grpc.DialOption{grpc.WithDefaultCallOptions(huge)}, nil},
		{"call option raising the receive limit", nil, []grpc.CallOption{huge}},
		{"both", []grpc.DialOption{grpc.WithDefaultCallOptions(huge)}, []grpc.CallOption{huge, grpc.MaxCallSendMsgSize(1 << 30)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReactor(t, srv, reactor.Config{
				Limits:      limits.Limits{MaxResponseBytes: limit},
				DialOptions: tt.dialOpts,
			})
			// A response well under the limit (the echoed metadata adds some bytes) passes.
			_, resp, err := roundTrip(t, r, &testpb.EchoRequest{ResponseBytes: limit / 2}, &calls.Options{CallOptions: tt.callOpts})
			require.NoError(t, err)
			require.Len(t, resp.GetPayload(), limit/2)

			before := srv.Calls()
			p, resp, err := roundTrip(t, r, &testpb.EchoRequest{ResponseBytes: 2 * limit}, &calls.Options{CallOptions: tt.callOpts})
			require.Nil(t, resp)
			require.ErrorIs(t, err, calls.ErrTooLarge)
			require.Equal(t, codes.ResourceExhausted, status.Code(err))
			require.Contains(t, err.Error(), "larger than max")
			require.Equal(t, calls.Failed, p.State())
			require.Equal(t, before+1, srv.Calls(), "the server ran the call; its response was refused")
		})
	}
}

func TestWireHeadersAndTrailers(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})

	t.Run("success", func(t *testing.T) {
		var header, trailer metadata.MD
		var p *calls.Promise[*testpb.EchoResponse]
		p = reactor.Call(r, echo, &testpb.EchoRequest{Message: "h"}, nil).
			Then(func(*testpb.EchoResponse) { header, trailer = p.Header(), p.Trailer() })
		waitFor(t, r, func() bool { return p.State() != calls.Pending })
		require.NoError(t, p.Err())
		require.Equal(t, []string{testserver.HeaderValue}, header.Get(testserver.HeaderKey), "headers are visible inside Then")
		require.Equal(t, []string{testserver.TrailerValue}, trailer.Get(testserver.TrailerKey), "trailers are visible inside Then")
		require.Equal(t, header, p.Header())
		require.Equal(t, trailer, p.Trailer())
	})

	t.Run("failure", func(t *testing.T) {
		var trailerInCallback metadata.MD
		var p *calls.Promise[*testpb.EchoResponse]
		p = reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, nil).
			OnError(func(error) { trailerInCallback = p.Trailer() })
		waitFor(t, r, func() bool { return p.State() != calls.Pending })
		err := p.Err()
		require.Error(t, err)
		var ce *calls.Error
		require.True(t, errors.As(err, &ce))
		require.Equal(t, codes.NotFound, ce.Code())
		require.Equal(t, "no such player", ce.Message())
		require.Nil(t, ce.Kind())
		require.Equal(t, []string{testserver.TrailerValue}, ce.Trailer().Get(testserver.TrailerKey))
		require.Equal(t, []string{testserver.TrailerValue}, p.Trailer().Get(testserver.TrailerKey))
		require.Equal(t, []string{testserver.TrailerValue}, trailerInCallback.Get(testserver.TrailerKey))
	})

	t.Run("local failure has none", func(t *testing.T) {
		p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: -1})
		require.ErrorIs(t, p.Err(), calls.ErrInvalidArgument)
		var ce *calls.Error
		require.True(t, errors.As(p.Err(), &ce))
		require.Nil(t, ce.Trailer())
		require.Nil(t, p.Header())
		require.Nil(t, p.Trailer())
	})
}

// TestWireNoResponseMetadata: a method whose policy turns response metadata off gets no header
// or trailer, on success or failure, while its status, message and response are intact; the
// same server's metadata still reaches a reactor without the policy (TestWireHeadersAndTrailers).
func TestWireNoResponseMetadata(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Policies: []reactor.MethodPolicy{{Method: echo, NoResponseMetadata: true}}})
	tests := []struct {
		name string
		req  *testpb.EchoRequest
		code codes.Code
	}{
		{"success", &testpb.EchoRequest{Message: "h"}, codes.OK},
		{"failure", &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header, trailer metadata.MD
			var resp *testpb.EchoResponse
			var p *calls.Promise[*testpb.EchoResponse]
			p = reactor.Call(r, echo, tt.req, nil).
				Then(func(got *testpb.EchoResponse) { resp = got }).
				Always(func() { header, trailer = p.Header(), p.Trailer() })
			waitFor(t, r, func() bool { return p.State() != calls.Pending })
			require.Nil(t, header)
			require.Nil(t, trailer)
			if tt.code == codes.OK {
				require.NoError(t, p.Err())
				require.Equal(t, "h", resp.GetMessage())
				return
			}
			var ce *calls.Error
			require.True(t, errors.As(p.Err(), &ce))
			require.Equal(t, tt.code, ce.Code())
			require.Equal(t, "no such player", ce.Message())
			require.Nil(t, ce.Trailer())
		})
	}
}

// A request over the server's own receive limit is refused by the server's gRPC with
// ResourceExhausted and gRPC's size-limit message: it matches ErrTooLarge, as the client's
// limits do, while a server's own ResourceExhausted does not (TestWireServerStatus).
func TestWireServerSizeLimitMatchesErrTooLarge(t *testing.T) {
	const serverMax = 1 << 10
	srv := testserver.Start(t, grpc.MaxRecvMsgSize(serverMax))
	r := newReactor(t, srv, reactor.Config{})

	_, _, err := roundTrip(t, r, &testpb.EchoRequest{Payload: make([]byte, 2*serverMax)}, nil)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "got %v", err)
	require.Contains(t, err.Error(), "grpc: received message larger than max")
	require.ErrorIs(t, err, calls.ErrTooLarge)
	require.Zero(t, srv.Calls(), "the handler never ran")
}

func TestWireServerStatus(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	long := strings.Repeat("m", 10<<10)
	tests := []struct {
		name     string
		code     int32
		msg      string
		wantCode codes.Code
		wantMsg  string
		wantKind error
	}{
		{"code 99", 99, "odd", codes.Unknown, "server sent unknown status code 99: odd", nil},
		{"code 17", 17, "odd", codes.Unknown, "server sent unknown status code 17: odd", nil},
		{"10 KiB message", int32(codes.Internal), long, codes.Internal,
			long[:calls.MaxStatusMessageBytes] + fmt.Sprintf("…[%d bytes cut]", len(long)-calls.MaxStatusMessageBytes), nil},
		{"message at the cap", int32(codes.Internal), long[:calls.MaxStatusMessageBytes], codes.Internal, long[:calls.MaxStatusMessageBytes], nil},
		{"server DeadlineExceeded", int32(codes.DeadlineExceeded), "slow db", codes.DeadlineExceeded, "slow db", calls.ErrTimeout},
		{"server Unavailable", int32(codes.Unavailable), "draining", codes.Unavailable, "draining", calls.ErrUnavailable},
		{"server ResourceExhausted", int32(codes.ResourceExhausted), "quota", codes.ResourceExhausted, "quota", nil},
		{"server InvalidArgument", int32(codes.InvalidArgument), "bad xuid", codes.InvalidArgument, "bad xuid", nil},
		{"server Canceled", int32(codes.Canceled), "gone", codes.Canceled, "gone", nil},
		{"server PermissionDenied", int32(codes.PermissionDenied), "no", codes.PermissionDenied, "no", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := roundTrip(t, r, &testpb.EchoRequest{FailCode: tt.code, FailMessage: tt.msg}, nil)
			var ce *calls.Error
			require.True(t, errors.As(err, &ce), "got %T %v", err, err)
			require.Equal(t, tt.wantCode, ce.Code())
			require.Equal(t, tt.wantCode, status.Code(err))
			require.Equal(t, tt.wantMsg, ce.Message())
			require.Equal(t, tt.wantKind, ce.Kind())
			for _, s := range []error{calls.ErrTimeout, calls.ErrUnavailable, calls.ErrTooLarge, calls.ErrInvalidArgument,
				calls.ErrCancelled, calls.ErrClosed, calls.ErrOverloaded} {
				require.Equal(t, s == tt.wantKind, errors.Is(err, s), "errors.Is(err, %v)", s)
			}
			require.Equal(t, echo.Path(), ce.Method())
		})
	}
}

func TestWireMethodsAllowlist(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Methods: []calls.Descriptor{echo}})

	before := srv.Calls()
	p := reactor.Call(r, otherMethod, &testpb.EchoRequest{}, nil)
	require.Equal(t, calls.Failed, p.State())
	require.ErrorIs(t, p.Err(), calls.ErrInvalidArgument)
	require.Contains(t, p.Err().Error(), otherMethod.Path())
	require.Contains(t, p.Err().Error(), "Config.Methods")

	_, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "allowed"}, nil)
	require.NoError(t, err)
	require.Equal(t, "allowed", resp.GetMessage())
	require.Equal(t, before+1, srv.Calls())
}

func TestWireRequestEncodedOnce(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})

	t.Run("encoding failure", func(t *testing.T) {
		before := srv.Calls()
		// proto3 string fields must hold valid UTF-8.
		p, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "\xff"}, nil)
		require.Nil(t, resp)
		require.ErrorIs(t, err, calls.ErrInvalidArgument)
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		require.Contains(t, err.Error(), "encoding")
		require.NotNil(t, errors.Unwrap(err), "the encoder's error is the cause")
		require.Equal(t, calls.Failed, p.State())
		require.Equal(t, before, srv.Calls())
	})

	t.Run("later changes are not sent", func(t *testing.T) {
		req := &testpb.EchoRequest{Message: "as submitted", Payload: []byte("abc")}
		var resp *testpb.EchoResponse
		p := reactor.Call(r, echo, req, nil).Then(func(v *testpb.EchoResponse) { resp = v })
		req.Message = "changed"
		req.Payload[0] = 'X'
		waitFor(t, r, func() bool { return p.State() != calls.Pending })
		require.NoError(t, p.Err())
		require.Equal(t, "as submitted", resp.GetMessage())
		require.Equal(t, []byte("abc"), resp.GetPayload())
	})
}
