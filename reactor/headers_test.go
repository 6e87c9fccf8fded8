package reactor_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// headerCase is one oversized response: what the server sends, and what the call that
// gets it must see.
type headerCase struct {
	name string
	code codes.Code
	// h2 answers the bad call on the misbehaving HTTP/2 server (nil: not a case for it).
	h2 func(w http.ResponseWriter)
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
	wantTrace := trace[:calls.MaxStatusMessageBytes] + fmt.Sprintf("…[%d bytes cut]", traceBytes-calls.MaxStatusMessageBytes)
	checkTrace := func(t *testing.T, ce *calls.Error, _ *calls.Promise[*testpb.EchoResponse]) {
		require.Equal(t, wantTrace, ce.Message(), "the message arrives, cut at MaxStatusMessageBytes")
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
			name: "100 KiB grpc-message",
			code: codes.FailedPrecondition,
			h2: func(w http.ResponseWriter) {
				h2Reply(w, nil, nil, map[string]string{
					"grpc-status":  strconv.Itoa(int(codes.FailedPrecondition)),
					"grpc-message": trace, // printable ASCII but '%': sent as is
				})
			},
			grpcErr: status.Error(codes.FailedPrecondition, trace),
			check:   checkTrace,
		},
		{
			name: "64 KiB grpc-status-details-bin",
			code: codes.PermissionDenied,
			h2: func(w http.ResponseWriter) {
				h2Reply(w, nil, nil, map[string]string{
					"grpc-status":             strconv.Itoa(int(codes.PermissionDenied)),
					"grpc-message":            "not your chest",
					"grpc-status-details-bin": base64.RawStdEncoding.EncodeToString(richBin),
				})
			},
			grpcErr: rich.Err(),
			check:   checkDetails,
		},
		{
			name: "2,000 response headers",
			code: codes.Aborted,
			h2: func(w http.ResponseWriter) {
				h2Reply(w, many, nil, map[string]string{
					"grpc-status":  strconv.Itoa(int(codes.Aborted)),
					"grpc-message": "conflict",
				})
			},
			check: func(t *testing.T, ce *calls.Error, p *calls.Promise[*testpb.EchoResponse]) {
				require.Equal(t, "conflict", ce.Message())
				require.Equal(t, metadata.MD{}, p.Header(), "a header over MaxMetadataBytes is dropped whole")
			},
		},
	}
}

// TestFaultOversizedResponseFailsOnlyItsCall: a server that ignores the client's advertised
// header list limit answers one call with an oversized header or trailer block while 100 good
// calls are in flight on the same connection, held by the server until the bad call has
// settled. The bad call keeps its status code, and every good call succeeds on the one
// connection: the block, under MaxReceivedHeaderBytes, costs neither the connection nor them.
func TestFaultOversizedResponseFailsOnlyItsCall(t *testing.T) {
	const good = 100
	for _, tt := range headerCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			srv := newH2Server(t, tt.h2)
			// 128 lanes: every good call and the bad one are in flight at once.
			h := startHost(t, reactor.Config{Target: srv.addr, Workers: 4, BatchSize: 32, DefaultTimeout: 4 * time.Second})
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

// TestFaultOversizedStatusFromGRPCServer: a grpc-go server honours the header list limit the
// client advertises and, rather than send a trailer over it, resets the stream with Internal,
// losing the real status. Under MaxReceivedHeaderBytes, a 100 KiB status message arrives with
// its real code, cut at MaxStatusMessageBytes, and 64 KiB of details arrive whole.
func TestFaultOversizedStatusFromGRPCServer(t *testing.T) {
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
			h := startHost(t, reactor.Config{Target: srv.Addr()})
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
