package reactor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
)

func TestRequestTooLarge(t *testing.T) {
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

func TestResponseTooLarge(t *testing.T) {
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

// A request over the server's own receive limit is refused by the server's gRPC with
// ResourceExhausted and gRPC's size-limit message: it matches ErrTooLarge, as the client's
// limits do, while a server's own ResourceExhausted does not (TestServerStatus).
func TestServerSizeLimitMatchesErrTooLarge(t *testing.T) {
	const serverMax = 1 << 10
	srv := testserver.Start(t, grpc.MaxRecvMsgSize(serverMax))
	r := newReactor(t, srv, reactor.Config{})

	_, _, err := roundTrip(t, r, &testpb.EchoRequest{Payload: make([]byte, 2*serverMax)}, nil)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "got %v", err)
	require.Contains(t, err.Error(), "grpc: received message larger than max")
	require.ErrorIs(t, err, calls.ErrTooLarge)
	require.Zero(t, srv.Calls(), "the handler never ran")
}
