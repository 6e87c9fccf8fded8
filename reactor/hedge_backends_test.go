package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestHedgeGoesToAnotherBackend checks that a hedge goes to a backend that no earlier attempt
// of its call went to, even where round_robin's turn would send it back to the first: between
// the two attempts, two calls that are not hedged (they have CallOptions) move round_robin on
// by two of the three backends.
func TestHedgeGoesToAnotherBackend(t *testing.T) {
	needLoopback(t, "127.0.0.2", "127.0.0.3")
	srvs := []*testserver.Server{
		testserver.StartOn(t, "127.0.0.1:0"),
		testserver.StartOn(t, "127.0.0.2:0"),
		testserver.StartOn(t, "127.0.0.3:0"),
	}
	r := newReactor(t, nil, longTimeouts(reactor.Config{
		Targets: []string{srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()},
		Backoff: fastBackoff,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: &reactor.HedgePolicy{
			Delay: time.Hour, NonFatalCodes: []codes.Code{codes.Unavailable},
		}}},
	}))
	h := newHost(t, r)
	h.warmUp(srvs)

	type attempt struct{ srv, previous int }
	attempts := make(chan attempt, 8)
	release := make(chan struct{})
	for i, s := range srvs {
		s.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
			if req.GetMessage() != "hedged" {
				return &testpb.EchoResponse{Message: req.GetMessage()}, nil
			}
			previous := 0
			if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("grpc-previous-rpc-attempts")) == 1 {
				previous = int(md.Get("grpc-previous-rpc-attempts")[0][0] - '0')
			}
			attempts <- attempt{i, previous}
			if previous == 0 {
				<-release
				return nil, status.Error(codes.Unavailable, "the first attempt fails")
			}
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		})
	}
	hedged := h.submit(echo, echoReq("hedged"), nil)
	first := <-attempts
	require.Zero(t, first.previous)
	plain := &calls.Options{CallOptions: []grpc.CallOption{grpc.WaitForReady(false)}}
	plains := []*call{h.submit(echo, echoReq("plain1"), plain), h.submit(echo, echoReq("plain2"), plain)}
	h.settle(plains...)
	requireEchoed(t, plains)
	close(release)
	second := <-attempts
	require.Equal(t, 1, second.previous)
	require.NotEqual(t, first.srv, second.srv, "the hedge went back to the backend of the first attempt")
	h.settle(hedged)
	requireEchoed(t, []*call{hedged})
}
