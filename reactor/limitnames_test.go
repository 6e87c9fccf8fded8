package reactor_test

import (
	"bytes"
	"context"
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
	"github.com/trixnew/prpc/reactor/reactortest"
)

// A call over one of prpc's size limits fails with ErrTooLarge and a message that names the
// field of Limits to change and its bound, through a gRPC server on loopback and through a
// reactortest.Backend alike.
func TestLimitErrorsNameTheField(t *testing.T) {
	const limit = 1024
	lim := limits.Limits{MaxRequestBytes: limit, MaxResponseBytes: limit, MaxMetadataBytes: limit}
	tests := []struct {
		name string
		req  *testpb.EchoRequest
		opts *calls.Options
		want []string
		sent bool // whether the call reaches the server
	}{
		{"request", &testpb.EchoRequest{Payload: make([]byte, limit)}, nil,
			[]string{fmt.Sprintf("request is %d bytes, over the %d-byte limit (Limits.MaxRequestBytes)", limit+3, limit)}, false},
		{"metadata", echoReq("m"), &calls.Options{Metadata: metadata.Pairs("x-big", strings.Repeat("v", limit))},
			[]string{fmt.Sprintf("metadata is %d bytes, over the %d-byte limit (Limits.MaxMetadataBytes)", len("x-big")+limit+32, limit)}, false},
		{"response", &testpb.EchoRequest{ResponseBytes: 2 * limit}, nil,
			[]string{fmt.Sprintf(", over the %d-byte limit (Limits.MaxResponseBytes): grpc: received message larger than max (", limit), "response is "}, true},
	}
	transports := []struct {
		name  string
		start func(t *testing.T) (r *reactor.Reactor, calls func() int)
	}{
		{"grpc server", func(t *testing.T) (*reactor.Reactor, func() int) {
			srv := testserver.Start(t)
			return newReactor(t, srv, reactor.Config{Limits: lim}), func() int { return int(srv.Calls()) }
		}},
		{"reactortest.Backend", func(t *testing.T) (*reactor.Reactor, func() int) {
			b := reactortest.NewBackend()
			reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return &testpb.EchoResponse{Payload: bytes.Repeat([]byte{'x'}, int(req.GetResponseBytes()))}, nil
			})
			return reactortest.NewReactor(t, b, reactor.Config{Limits: lim}), func() int { return b.Calls(echo.Path()) }
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			r, served := tr.start(t)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					before := served()
					_, resp, err := roundTrip(t, r, tt.req, tt.opts)
					require.Nil(t, resp)
					t.Log(err)
					require.ErrorIs(t, err, calls.ErrTooLarge)
					require.Equal(t, codes.ResourceExhausted, status.Code(err))
					for _, w := range tt.want {
						require.Contains(t, err.Error(), w)
					}
					if tt.sent {
						require.Equal(t, before+1, served())
					} else {
						require.Equal(t, before, served(), "a call over a limit before sending is never sent")
					}
				})
			}
		})
	}
}

// A server's refusal of a request over its own receive limit shares gRPC's message with a
// response over Limits.MaxResponseBytes. The message names Limits.MaxResponseBytes only when
// the server's bound is that limit too, and then names the server's limit as well.
func TestServerReceiveLimitIsNotNamedAsTheResponseLimit(t *testing.T) {
	const serverMax = 1 << 10
	srv := testserver.Start(t, grpc.MaxRecvMsgSize(serverMax))
	req := &testpb.EchoRequest{Payload: make([]byte, 2*serverMax)}
	tests := []struct {
		name          string
		responseLimit int
		want, notWant string
	}{
		{"another bound", 4 * serverMax, "grpc: received message larger than max", "Limits.MaxResponseBytes"},
		{"the same bound", serverMax, "the response, over Limits.MaxResponseBytes, or the request, over the server's own receive limit", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReactor(t, srv, reactor.Config{Limits: limits.Limits{MaxResponseBytes: tt.responseLimit}})
			_, _, err := roundTrip(t, r, req, nil)
			t.Log(err)
			require.ErrorIs(t, err, calls.ErrTooLarge)
			require.Contains(t, err.Error(), tt.want)
			if tt.notWant != "" {
				require.NotContains(t, err.Error(), tt.notWant)
			}
		})
	}
	require.Zero(t, srv.Calls(), "the handler never ran")
}
