package reactor_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestScalePolicyTimeout checks which timeout a call gets: its Options.Timeout if set (shorter
// or longer than its method's), else its method's policy Timeout, else DefaultTimeout. A
// manual clock makes the deadlines exact; the handlers hold every call until its context
// ends, and the calls' real-time gRPC deadlines (10 s and more) are far beyond the
// milliseconds the test takes, so only the reactor's own deadlines settle them.
func TestScalePolicyTimeout(t *testing.T) {
	entered := make(chan string, 8)
	stall := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		entered <- req.GetMessage()
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	srv := testserver.Start(t, withOther(stall))
	srv.SetHandler(stall)
	clk := reactortest.NewManualClock(time.Now())
	r := newReactor(t, srv, reactor.Config{
		Clock:          clk,
		MaxTimeout:     time.Minute,
		DefaultTimeout: 10 * time.Second,
		Policies:       []reactor.MethodPolicy{{Method: echo, Timeout: 30 * time.Second}},
	})
	t.Cleanup(srv.Stop) // before Close: ends the held calls if the test fails early
	h := newHost(t, r)
	// In the order they expire, 10 s apart.
	cases := []struct {
		o       *call
		timeout time.Duration
	}{
		{h.submit(echoOther, echoReq("default"), nil), 10 * time.Second},                                  // no policy: DefaultTimeout
		{h.submit(echo, echoReq("shorter"), &calls.Options{Timeout: 20 * time.Second}), 20 * time.Second}, // overrides the policy
		{h.submit(echo, echoReq("policy"), nil), 30 * time.Second},                                        // the policy's
		{h.submit(echo, echoReq("longer"), &calls.Options{Timeout: 40 * time.Second}), 40 * time.Second},  // overrides the policy
	}
	for range cases { // all in flight: the deadlines below are the reactor's, not "never sent"
		select {
		case <-entered:
		case <-time.After(bound):
			t.Fatal("the calls did not reach the server")
		}
	}
	for i, c := range cases {
		clk.Advance(10 * time.Second)
		h.waitFor(c.o.done)
		require.ErrorIs(t, c.o.err, calls.ErrTimeout, "call %s", c.o.id)
		require.Contains(t, c.o.err.Error(), "(timeout "+c.timeout.String()+")", "call %s", c.o.id)
		// The Tick that delivered it delivered everything due at the same time: the calls
		// with later deadlines are still pending.
		for _, later := range cases[i+1:] {
			require.False(t, later.o.done(), "call %s settled at %v", later.o.id, c.timeout)
		}
	}
}

// TestScalePolicyWaitForReady checks that a method policy's WaitForReady makes its calls wait
// for a backend that comes up after they were submitted, as Options.WaitForReady does, while
// other calls fail at once with Unavailable.
func TestScalePolicyWaitForReady(t *testing.T) {
	// Reserve a port: nothing listens on it until the server starts below.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())

	r := newReactor(t, nil, reactor.Config{
		Target:   addr,
		Policies: []reactor.MethodPolicy{{Method: echo, WaitForReady: true}},
		// 5 s: far more than the fail-fast call and the reconnect (fastBackoff) take.
		DefaultTimeout: 5 * time.Second,
		Backoff:        fastBackoff,
	})
	h := newHost(t, r)
	byPolicy := h.submit(echo, echoReq("policy"), nil)
	byOption := h.submit(echoOther, echoReq("option"), &calls.Options{WaitForReady: true})
	fast := h.submit(echoOther, echoReq("fast"), nil)
	forcedFast := h.submit(echo, echoReq("forced fast"), &calls.Options{FailFast: true})
	h.waitFor(func() bool { return fast.done() && forcedFast.done() })
	require.Equal(t, codes.Unavailable, status.Code(fast.err), "the call without WaitForReady: %v", fast.err)
	require.Equal(t, codes.Unavailable, status.Code(forcedFast.err), "Options.FailFast overrides the policy: %v", forcedFast.err)
	both := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{WaitForReady: true, FailFast: true})
	require.ErrorIs(t, both.Err(), calls.ErrInvalidArgument)
	require.False(t, byPolicy.done(), "the call whose method waits for ready settled: %v", byPolicy.err)
	require.False(t, byOption.done(), "the call with Options.WaitForReady settled: %v", byOption.err)

	srv := testserver.StartOn(t, addr, withOther(func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}))
	h.settle()
	require.NoError(t, byPolicy.err)
	require.NoError(t, byOption.err)
	require.EqualValues(t, 1, srv.Calls(), "the Echo call reached the server once")
}
