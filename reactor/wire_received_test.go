package reactor_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestWireReceivedMetadataOverLimitDropped: a response header or trailer larger than
// MaxMetadataBytes, counted as limits.MetadataSize counts (key + value + 32, "-bin" values
// after base64), is replaced whole by an empty MD, on success and on failure, and a warning
// names the method and the block but not the value; one at the limit is kept as sent. The
// call's outcome is untouched: the response arrives, a failure keeps its code, message and
// details.
func TestWireReceivedMetadataOverLimitDropped(t *testing.T) {
	const limit = 1024
	// pad returns metadata of key with one value, of exactly size bytes as counted.
	pad := func(key string, size int) metadata.MD {
		md := metadata.MD{key: {"SECRET-" + strings.Repeat("v", size-len(key)-limits.HeaderEntryOverhead-len("SECRET-"))}}
		require.Equal(t, size, limits.MetadataSize(md))
		return md
	}
	// binPad returns "x-pad-bin" metadata whose value of n raw bytes, counted after base64,
	// makes size bytes.
	binPad := func(n, size int) metadata.MD {
		md := metadata.MD{"x-pad-bin": {"SECRET-" + strings.Repeat("\x00", n-len("SECRET-"))}}
		require.Equal(t, size, limits.MetadataSize(md))
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
				require.NoError(t, reactortest.SetHeader(ctx, tt.header))
				require.NoError(t, reactortest.SetTrailer(ctx, tt.trailer))
				if tt.fail {
					return nil, failure.Err()
				}
				return &testpb.EchoResponse{Message: req.GetMessage()}, nil
			})
			var logs syncBuffer
			r := newReactor(t, nil, reactor.Config{
				Conn:   backend,
				Limits: limits.Limits{MaxMetadataBytes: limit},
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
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
