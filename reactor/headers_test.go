package reactor_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestHeadersAndTrailers: a call that asks for response metadata sees the server's header
// and trailer, inside its callbacks and after, on success and on failure.
func TestHeadersAndTrailers(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	withMetadata := &calls.Options{ResponseMetadata: true}

	t.Run("success", func(t *testing.T) {
		var header, trailer metadata.MD
		var p *calls.Promise[*testpb.EchoResponse]
		p = reactor.Call(r, echo, &testpb.EchoRequest{Message: "h"}, withMetadata).
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
		p = reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, withMetadata).
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

// TestResponseMetadataIsOptIn: as in grpc-go, a call gets the server's header and trailer
// only when it asks, by its options or its method's policy; otherwise Header, Trailer and
// Error.Trailer are nil, on success or failure, while its status, message and response are
// intact.
func TestResponseMetadataIsOptIn(t *testing.T) {
	// Both methods send a header and a trailer, then answer as asked.
	srv := startBoth(t, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if err := grpc.SetHeader(ctx, metadata.Pairs(testserver.HeaderKey, testserver.HeaderValue)); err != nil {
			return nil, err
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs(testserver.TrailerKey, testserver.TrailerValue)); err != nil {
			return nil, err
		}
		if c := req.GetFailCode(); c != 0 {
			st, err := status.New(codes.Code(c), req.GetFailMessage()).WithDetails(wrapperspb.String("detail"))
			if err != nil {
				return nil, err
			}
			return nil, st.Err()
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	other := reactor.MethodPolicy{Method: echoOther, ResponseMetadata: true}
	r := newReactor(t, srv, reactor.Config{Policies: []reactor.MethodPolicy{other}})
	tests := []struct {
		name   string
		method *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse]
		opts   *calls.Options
		req    *testpb.EchoRequest
		code   codes.Code
		want   bool // header and trailer captured
	}{
		{"default, success", echo, nil, &testpb.EchoRequest{Message: "h"}, codes.OK, false},
		{"default, failure", echo, nil, &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, codes.NotFound, false},
		{"per call, success", echo, &calls.Options{ResponseMetadata: true}, &testpb.EchoRequest{Message: "h"}, codes.OK, true},
		{"per call, failure", echo, &calls.Options{ResponseMetadata: true}, &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, codes.NotFound, true},
		{"per method, success", echoOther, nil, &testpb.EchoRequest{Message: "h"}, codes.OK, true},
		{"per method, failure", echoOther, nil, &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, codes.NotFound, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header, trailer metadata.MD
			var resp *testpb.EchoResponse
			var p *calls.Promise[*testpb.EchoResponse]
			p = reactor.Call(r, tt.method, tt.req, tt.opts).
				Then(func(got *testpb.EchoResponse) { resp = got }).
				Always(func() { header, trailer = p.Header(), p.Trailer() })
			waitFor(t, r, func() bool { return p.State() != calls.Pending })
			if tt.want {
				if tt.code == codes.OK {
					require.Equal(t, []string{testserver.HeaderValue}, header.Get(testserver.HeaderKey))
				}
				require.Equal(t, []string{testserver.TrailerValue}, trailer.Get(testserver.TrailerKey))
			} else {
				require.Nil(t, header)
				require.Nil(t, trailer)
			}
			if tt.code == codes.OK {
				require.NoError(t, p.Err())
				require.Equal(t, "h", resp.GetMessage())
				return
			}
			var ce *calls.Error
			require.True(t, errors.As(p.Err(), &ce))
			require.Equal(t, tt.code, ce.Code())
			require.Equal(t, "no such player", ce.Message())
			details := ce.GRPCStatus().Details()
			require.Len(t, details, 1, "the status details reach the error, asked for or not")
			require.True(t, proto.Equal(wrapperspb.String("detail"), details[0].(proto.Message)))
			if tt.want {
				require.Equal(t, []string{testserver.TrailerValue}, ce.Trailer().Get(testserver.TrailerKey))
			} else {
				require.Nil(t, ce.Trailer())
			}
		})
	}
}

// TestReceivedMetadataOverLimitDropped: a response header or trailer larger than
// MaxMetadataBytes, counted as limitcheck.MetadataSize counts (key + value + 32, "-bin" values
// after base64), is replaced whole by an empty MD, on success and on failure, and a warning
// names the method and the block but not the value; one at the limit is kept as sent. The
// call's outcome is untouched: the response arrives, a failure keeps its code, message and
// details.
func TestReceivedMetadataOverLimitDropped(t *testing.T) {
	const limit = 1024
	// pad returns metadata of key with one value, of exactly size bytes as counted.
	pad := func(key string, size int) metadata.MD {
		md := metadata.MD{key: {"SECRET-" + strings.Repeat("v", size-len(key)-32-len("SECRET-"))}}
		require.Equal(t, size, limitcheck.MetadataSize(md))
		return md
	}
	// binPad returns "x-pad-bin" metadata whose value of n raw bytes, counted after base64,
	// makes size bytes.
	binPad := func(n, size int) metadata.MD {
		md := metadata.MD{"x-pad-bin": {"SECRET-" + strings.Repeat("\x00", n-len("SECRET-"))}}
		require.Equal(t, size, limitcheck.MetadataSize(md))
		return md
	}
	small := metadata.MD{"x-small": {"s"}}
	details := wrapperspb.String("rich detail")
	failure := status.New(codes.FailedPrecondition, "not now")
	failure, err := failure.WithDetails(details)
	require.NoError(t, err)

	tests := []struct {
		name                    string
		header, trailer         metadata.MD
		fail                    bool
		keepHeader, keepTrailer bool
	}{
		{name: "both at the limit", header: pad("x-pad", limit), trailer: pad("x-pad", limit), keepHeader: true, keepTrailer: true},
		{name: "header over", header: pad("x-pad", limit+1), trailer: small, keepTrailer: true},
		{name: "trailer over", header: small, trailer: pad("x-pad", limit+1), keepHeader: true},
		{name: "both over", header: pad("x-pad", limit+1), trailer: pad("x-pad", limit+1)},
		// 737 raw bytes are 983 in base64: 9 + 983 + 32 = 1024; 738 are 984.
		{name: "bin value at the limit after base64", header: binPad(737, limit), trailer: small, keepHeader: true, keepTrailer: true},
		{name: "bin value over the limit after base64", header: binPad(738, limit+1), trailer: small, keepTrailer: true},
		{name: "failure, trailer at the limit", header: small, trailer: pad("x-pad", limit), fail: true, keepHeader: true, keepTrailer: true},
		{name: "failure, trailer over", header: small, trailer: pad("x-pad", limit+1), fail: true, keepHeader: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend := reactortest.NewBackend()
			reactortest.Handle(backend, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				require.NoError(t, grpc.SetHeader(ctx, tt.header))
				require.NoError(t, grpc.SetTrailer(ctx, tt.trailer))
				if tt.fail {
					return nil, failure.Err()
				}
				return &testpb.EchoResponse{Message: req.GetMessage()}, nil
			})
			var logs syncBuffer
			r := newReactor(t, nil, reactor.Config{
				Conn:     backend,
				Limits:   limits.Limits{MaxMetadataBytes: limit},
				Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
				Policies: []reactor.MethodPolicy{{Method: echo, ResponseMetadata: true}},
			})
			p, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "hi"}, nil)

			if tt.fail {
				var ce *calls.Error
				require.True(t, errors.As(err, &ce), "got %T %v", err, err)
				require.Equal(t, codes.FailedPrecondition, ce.Code())
				require.Equal(t, "not now", ce.Message())
				got := ce.GRPCStatus().Details()
				require.Len(t, got, 1)
				require.True(t, proto.Equal(details, got[0].(proto.Message)), "details kept: %v", got)
				require.Equal(t, p.Trailer(), ce.Trailer())
			} else {
				require.NoError(t, err)
				require.Equal(t, "hi", resp.GetMessage())
			}
			requireKept := func(what string, keep bool, sent, got metadata.MD) {
				t.Helper()
				if keep {
					require.Equal(t, sent, got, "%s within the limit is kept", what)
					require.NotContains(t, logs.String(), "block="+what)
					return
				}
				require.NotNil(t, got, "%s over the limit is replaced by an empty MD, not nil", what)
				require.Empty(t, got, "%s over the limit is dropped whole", what)
				require.Contains(t, logs.String(), "block="+what)
			}
			requireKept("header", tt.keepHeader, tt.header, p.Header())
			requireKept("trailer", tt.keepTrailer, tt.trailer, p.Trailer())
			if !tt.keepHeader || !tt.keepTrailer {
				require.Contains(t, logs.String(), "level=WARN")
				require.Contains(t, logs.String(), "MaxMetadataBytes dropped")
				require.Contains(t, logs.String(), echo.Path())
			}
			require.NotContains(t, logs.String(), "SECRET-", "the log names no value")
		})
	}
}

// headerCase is one oversized response: what the server sends, and what the call that
// gets it must see.
type headerCase struct {
	name string
	code codes.Code
	// header and trailer are what the misbehaving HTTP/2 server answers the bad call with,
	// besides its content-type and its grpc-status, code.
	header, trailer map[string]string
	// grpcErr is the error a grpc-go handler returns for the bad call (nil: not a case for it).
	grpcErr error
	// check inspects the bad call's error and promise.
	check func(t *testing.T, ce *calls.Error, p *calls.Promise[*testpb.EchoResponse])
}

// headerCases are the oversized responses a real server may send: a stack trace in the
// status message, rich error details, and a great many response headers. Each is under
// MaxReceivedHeaderBytes' default and far over MaxMetadataBytes' default.
func headerCases(t *testing.T) []headerCase {
	t.Helper()
	const traceBytes = 100 << 10
	trace := strings.Repeat("at game.(*World).Save(world.go:42) ", traceBytes/35+1)[:traceBytes]
	wantTrace := trace[:maxStatusMessage] + fmt.Sprintf("…[%d bytes cut]", traceBytes-maxStatusMessage)
	checkTrace := func(t *testing.T, ce *calls.Error, _ *calls.Promise[*testpb.EchoResponse]) {
		require.Equal(t, wantTrace, ce.Message(), "the message arrives, cut at 4096 bytes")
	}

	const detailsBytes = 64 << 10
	detail := wrapperspb.Bytes([]byte(strings.Repeat("d", detailsBytes)))
	rich, err := status.New(codes.PermissionDenied, "not your chest").WithDetails(detail)
	require.NoError(t, err)
	richBin, err := proto.Marshal(rich.Proto())
	require.NoError(t, err)
	require.Greater(t, len(richBin), detailsBytes)
	checkDetails := func(t *testing.T, ce *calls.Error, p *calls.Promise[*testpb.EchoResponse]) {
		require.Equal(t, "not your chest", ce.Message())
		got := ce.GRPCStatus().Details()
		require.Len(t, got, 1, "details within the received limit are kept")
		require.True(t, proto.Equal(detail, got[0].(proto.Message)), "the details arrive intact")
		// The trailer carries grpc-status-details-bin too, over MaxMetadataBytes: dropped.
		require.NotNil(t, p.Trailer())
		require.Empty(t, p.Trailer(), "a trailer over MaxMetadataBytes is dropped")
		require.Equal(t, p.Trailer(), ce.Trailer())
	}

	const manyHeaders = 2000
	many := make(map[string]string, manyHeaders)
	for i := range manyHeaders {
		many[fmt.Sprintf("x-h-%04d", i)] = "v"
	}
	return []headerCase{
		{
			name:    "100 KiB grpc-message",
			code:    codes.FailedPrecondition,
			trailer: map[string]string{"grpc-message": trace}, // printable ASCII but '%': sent as is
			grpcErr: status.Error(codes.FailedPrecondition, trace),
			check:   checkTrace,
		},
		{
			name: "64 KiB grpc-status-details-bin",
			code: codes.PermissionDenied,
			trailer: map[string]string{
				"grpc-message":            "not your chest",
				"grpc-status-details-bin": base64.RawStdEncoding.EncodeToString(richBin),
			},
			grpcErr: rich.Err(),
			check:   checkDetails,
		},
		{
			name:    "2,000 response headers",
			code:    codes.Aborted,
			header:  many,
			trailer: map[string]string{"grpc-message": "conflict"},
			check: func(t *testing.T, ce *calls.Error, p *calls.Promise[*testpb.EchoResponse]) {
				require.Equal(t, "conflict", ce.Message())
				require.Equal(t, metadata.MD{}, p.Header(), "a header over MaxMetadataBytes is dropped whole")
			},
		},
	}
}

// TestOversizedResponseFailsOnlyItsCall: a server that ignores the client's advertised
// header list limit answers one call with an oversized header or trailer block while 100 good
// calls are in flight on the same connection, held by the server until the bad call has
// settled. The bad call keeps its status code, and every good call succeeds on the one
// connection: the block, under MaxReceivedHeaderBytes, costs neither the connection nor them.
func TestOversizedResponseFailsOnlyItsCall(t *testing.T) {
	const good = 100
	for _, tt := range headerCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			srv := newH2Server(t, func(w http.ResponseWriter) {
				trailer := maps.Clone(tt.trailer)
				trailer["grpc-status"] = strconv.Itoa(int(tt.code))
				h2Reply(w, tt.header, nil, trailer)
			})
			// 128 lanes: every good call and the bad one are in flight at once.
			h := startHost(t, reactor.Config{Target: srv.addr, Workers: 4, BatchSize: 32, DefaultTimeout: 4 * time.Second,
				Policies: []reactor.MethodPolicy{{Method: echo, ResponseMetadata: true}}})
			for i := range good {
				h.submit(echo, echoReq(fmt.Sprint("good", i)), nil)
			}
			h.pollFor("good calls held by the server", func() bool { return srv.good.Load() == good })

			bad := h.submit(echo, echoReq(h2Bad), nil)
			h.settle(bad)
			for _, c := range h.calls[:good] {
				require.False(t, c.done(), "good call %d settled while the server held it: %v", c.seq, c.err)
			}
			srv.releaseGood()
			h.settle()

			var ce *calls.Error
			require.True(t, errors.As(bad.err, &ce), "got %T %v", bad.err, bad.err)
			require.Equal(t, tt.code, ce.Code(), "the oversized call keeps its status code: %v", bad.err)
			tt.check(t, ce, bad.p)
			byCode, sample := tally(h.calls[:good])
			require.Equal(t, map[codes.Code]int{codes.OK: good}, byCode, "zero good calls fail; samples %v", sample)
			for _, c := range h.calls[:good] {
				require.Equal(t, c.id, c.resp.GetMessage())
			}
			require.EqualValues(t, 1, srv.conns.Load(), "every call ran on the one connection")
		})
	}
}

// TestOversizedStatusFromGRPCServer: a grpc-go server honours the header list limit the
// client advertises and, rather than send a trailer over it, resets the stream with Internal,
// losing the real status. Under MaxReceivedHeaderBytes, a 100 KiB status message arrives with
// its real code, cut at 4096 bytes, and 64 KiB of details arrive whole.
func TestOversizedStatusFromGRPCServer(t *testing.T) {
	for _, tt := range headerCases(t) {
		if tt.grpcErr == nil {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			srv := testserver.Start(t)
			srv.SetHandler(func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				if req.GetMessage() == h2Bad {
					return nil, tt.grpcErr
				}
				return &testpb.EchoResponse{Message: req.GetMessage()}, nil
			})
			h := startHost(t, reactor.Config{Target: srv.Addr(), Policies: []reactor.MethodPolicy{{Method: echo, ResponseMetadata: true}}})
			bad := h.submit(echo, echoReq(h2Bad), nil)
			after := h.submit(echo, echoReq("after"), nil)
			h.settle()

			var ce *calls.Error
			require.True(t, errors.As(bad.err, &ce), "got %T %v", bad.err, bad.err)
			require.Equal(t, tt.code, ce.Code(), "the real code arrives: %v", bad.err)
			tt.check(t, ce, bad.p)
			require.NoError(t, after.err)
		})
	}
}
