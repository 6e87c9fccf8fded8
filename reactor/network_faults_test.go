package reactor_test

// Faults of the network and the server's pace: a blackholed connection, a slow server, a
// server stream limit.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestFaultBlackhole: the path to the server goes silent (a proxy that stops forwarding both
// ways without closing anything). Nothing tells the client, so every call settles with
// DeadlineExceeded at its own deadline: within lateBound on the real clock (and exactly on a
// manual clock, in TestFaultDeadlinesManualClock). When the path comes back, the same
// connection carries calls again.
func TestFaultBlackhole(t *testing.T) {
	leakCheck(t)
	srv := testserver.Start(t)
	proxy := testserver.StartProxy(t, srv.Addr())
	h := startHost(t, reactor.Config{Target: proxy.Addr()})
	warm := h.submit(echo, echoReq("warm"), nil)
	h.settle(warm)
	require.NoError(t, warm.err)

	proxy.Blackhole()
	timeouts := []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}
	var held []*call
	for i := range 30 {
		timeout := timeouts[i%len(timeouts)]
		held = append(held, h.submit(echo, echoReq(fmt.Sprint("held", i)), &calls.Options{Timeout: timeout}))
	}
	h.settle(held...)
	requireDeadlines(t, "blackholed", held)
	require.EqualValues(t, 1, srv.Calls(), "nothing got through the blackhole")
	h.pollFor("in-flight gauge back to 0", func() bool { return h.r.Stats().InFlight == 0 })

	proxy.Resume()
	after := h.submit(echo, echoReq("after"), nil)
	h.settle(after)
	require.NoError(t, after.err)
	require.EqualValues(t, 1, proxy.Accepted(), "the connection survived the blackhole")
}

// TestFaultBlackholeKeepalive (gated: PRPC_SLOW_TESTS=1): with Config.Keepalive and a
// server that permits its pings, a blackholed connection is declared dead after
// Keepalive.Time of silence plus Keepalive.Timeout without a ping ack, about 12 s, and its
// calls fail with Unavailable long before their 30 s deadline.
func TestFaultBlackholeKeepalive(t *testing.T) {
	if !slowTests() {
		t.Skip("set PRPC_SLOW_TESTS=1 to run: grpc-go's minimum keepalive interval is 10 s, so this takes about 12 s")
	}
	leakCheck(t)
	ka := keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 2 * time.Second}
	srv := testserver.Start(t, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}))
	proxy := testserver.StartProxy(t, srv.Addr())
	const deadline = 30 * time.Second
	h := startHost(t, reactor.Config{Target: proxy.Addr(), Keepalive: ka, MaxTimeout: time.Minute, DefaultTimeout: deadline})
	warm := h.submit(echo, echoReq("warm"), nil)
	h.settle(warm)
	require.NoError(t, warm.err)

	proxy.Blackhole()
	c := h.submit(echo, &testpb.EchoRequest{Message: "held", Block: true}, nil)
	h.bound = deadline + bound // the call waits for keepalive, not for its deadline
	h.settle(c)
	t.Logf("blackholed with keepalive: settled after %v: %v", c.latency(), c.err)
	require.Equal(t, codes.Unavailable, c.code(), "%v", c.err)
	// The last bytes read are the warm call's response, just before the call was submitted:
	// the ping goes out Time after them and the connection is closed Timeout later, about
	// 12 s. Not before Time, since nothing is declared dead before the
	// connection has been silent that long; 3 s of margin above for -race, still far below
	// the 30 s deadline.
	require.GreaterOrEqual(t, c.latency(), ka.Time)
	require.LessOrEqual(t, c.latency(), ka.Time+ka.Timeout+3*time.Second)
}

// TestFaultSlowServer: a call whose deadline (100 ms) comes before the server's answer
// (500 ms) settles with DeadlineExceeded at its deadline, within lateBound on the real clock
// (and exactly on a manual clock, in TestFaultDeadlinesManualClock), and the server sees its
// context cancelled (the testserver records that only when the context ends before the
// 500 ms delay).
func TestFaultSlowServer(t *testing.T) {
	leakCheck(t)
	const timeout, delay = 100 * time.Millisecond, 500
	srv := testserver.Start(t)
	h := startHost(t, reactor.Config{Target: srv.Addr()})
	warm := h.submit(echo, echoReq("warm"), nil)
	h.settle(warm)
	require.NoError(t, warm.err)

	const n = 8 // every slot of the default 2 × 4
	var slow []*call
	for i := range n {
		slow = append(slow, h.submit(echo, &testpb.EchoRequest{Message: fmt.Sprint("slow", i), DelayMs: delay}, &calls.Options{Timeout: timeout}))
	}
	h.settle(slow...)
	requireDeadlines(t, "slow server", slow)
	h.pollFor("every handler saw its context cancelled", func() bool { return srv.CancelledCount() == n })
	h.pollFor("in-flight gauge back to 0", func() bool { return h.r.Stats().InFlight == 0 })
	require.EqualValues(t, 1+n, srv.Calls())
}

// TestFaultServerStreamLimit: a server that allows 10 concurrent streams, 40 calls at once
// with room for all of them in prpc (Workers × BatchSize = 64): prpc hands all 40 to gRPC,
// the extra ones wait inside gRPC for a stream, and that wait counts against their deadline.
// With 200 ms handlers and a 500 ms deadline two waves finish, the rest time out; every call
// settles once and the in-flight gauge returns to 0.
func TestFaultServerStreamLimit(t *testing.T) {
	leakCheck(t)
	const (
		limit   = 10
		n       = 40
		work    = 200 * time.Millisecond
		timeout = 500 * time.Millisecond
	)
	srv := testserver.Start(t, grpc.MaxConcurrentStreams(limit))
	var active, peak atomic.Int32
	srv.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		now := active.Add(1)
		defer active.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		if req.GetMessage() == "warm" {
			return &testpb.EchoResponse{Message: "warm"}, nil
		}
		timer := time.NewTimer(work)
		defer timer.Stop()
		select {
		case <-timer.C:
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	h := startHost(t, reactor.Config{Target: srv.Addr(), Workers: 4, BatchSize: 16})
	// The client learns the limit from the server's SETTINGS frame, which a ready connection
	// has received.
	warm := h.submit(echo, echoReq("warm"), nil)
	h.settle(warm)
	require.NoError(t, warm.err)

	var burst []*call
	for i := range n {
		burst = append(burst, h.submit(echo, echoReq(fmt.Sprint("c", i)), &calls.Options{Timeout: timeout}))
	}
	// All 40 are in gRPC's hands, none waits in prpc. This holds from dispatch (a few ms) to
	// the first completions (200 ms): a margin of about 190 ms to observe it.
	h.pollFor("all calls handed to gRPC", func() bool {
		st := h.r.Stats()
		return st.InFlight == n && st.Queued == 0
	})
	h.settle(burst...)

	byCode, sample := tally(burst)
	t.Logf("outcomes %v (samples %v); server saw %d calls, at most %d at once", byCode, sample, srv.Calls()-1, peak.Load())
	require.EqualValues(t, limit, peak.Load(), "the server ran at most %d handlers, and was saturated", limit)
	ok := byCode[codes.OK]
	// A success needs its turn at a stream and 200 ms of work before 500 ms: at most two
	// waves of 10 (400 ms) fit, a third (600 ms) cannot. The first wave ends at about
	// 200 ms, 300 ms before the deadline, so at least 10 succeed.
	require.GreaterOrEqual(t, ok, limit)
	require.LessOrEqual(t, ok, 2*limit)
	require.Equal(t, n-ok, byCode[codes.DeadlineExceeded], "every other call timed out")
	var late []*call
	for _, c := range burst {
		if c.err != nil {
			late = append(late, c)
		}
	}
	requireDeadlines(t, "stream limit", late)
	// Some calls never got a stream: they waited inside gRPC until their deadline.
	require.Less(t, srv.Calls()-1, int64(n))
	h.pollFor("in-flight gauge back to 0", func() bool { return h.r.Stats().InFlight == 0 })
	require.Zero(t, h.r.Stats().Pending)
}

// TestFaultDeadlinesManualClock proves the deadline precision of the faults above exactly, on
// a manual clock: calls that wait on a blackholed connection, on a server that never answers,
// and inside gRPC behind a server's stream limit are all still pending 1 ms before their
// deadline and settle with ErrTimeout at it. The timeouts are minutes long, so gRPC's own
// deadline, which runs on the system clock, cannot fire first: what settles them is the
// reactor's deadline timer.
func TestFaultDeadlinesManualClock(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the reactor's target and a condition that holds once every call has
		// reached the place where it waits.
		setup func(t *testing.T, h func() *host, n int) (target string, reached func() bool)
		req   *testpb.EchoRequest
	}{
		{
			name: "blackholed connection",
			setup: func(t *testing.T, h func() *host, n int) (string, func() bool) {
				srv := testserver.Start(t)
				proxy := testserver.StartProxy(t, srv.Addr())
				proxy.Blackhole() // the connection itself cannot even be set up
				return proxy.Addr(), func() bool { return h().r.Stats().InFlight == n }
			},
			req: &testpb.EchoRequest{Message: "held"},
		},
		{
			name: "server never answers",
			setup: func(t *testing.T, h func() *host, n int) (string, func() bool) {
				srv := testserver.Start(t)
				return srv.Addr(), func() bool { return srv.Calls() == int64(n) }
			},
			req: &testpb.EchoRequest{Message: "held", Block: true},
		},
		{
			name: "queued inside gRPC behind the stream limit",
			setup: func(t *testing.T, h func() *host, n int) (string, func() bool) {
				srv := testserver.Start(t, grpc.MaxConcurrentStreams(2))
				return srv.Addr(), func() bool { return srv.Calls() == 2 && h().r.Stats().InFlight == n }
			},
			req: &testpb.EchoRequest{Message: "held", Block: true},
		},
	}
	timeouts := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}
	const n = 9
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			var h *host
			target, reached := tt.setup(t, func() *host { return h }, n)
			clock := reactortest.NewManualClock(time.Now())
			h = startHost(t, reactor.Config{Target: target, Clock: clock, MaxTimeout: 10 * time.Minute, Workers: 2, BatchSize: 8})
			start := clock.Now()
			for i := range n {
				h.submit(echo, tt.req, &calls.Options{Timeout: timeouts[i%len(timeouts)]})
			}
			h.pollFor("calls waiting", reached)
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			for _, d := range timeouts {
				require.NoError(t, clock.WaitTimers(ctx, 1))
				clock.Set(start.Add(d - time.Millisecond))
				h.pause(10 * time.Millisecond) // a late settlement would have time to show
				require.Equal(t, 1, clock.Timers(), "the reactor's deadline timer has not fired")
				for _, c := range h.calls {
					require.Equal(t, c.timeout < d, c.done(), "call %d (timeout %v) at %v", c.seq, c.timeout, d-time.Millisecond)
				}
				clock.Set(start.Add(d))
				var due []*call
				for _, c := range h.calls {
					if c.timeout == d {
						due = append(due, c)
					}
				}
				h.settle(due...)
				for _, c := range h.calls {
					require.Equal(t, c.timeout <= d, c.done(), "call %d (timeout %v) at %v", c.seq, c.timeout, d)
				}
				for _, c := range due {
					require.ErrorIs(t, c.err, calls.ErrTimeout)
					require.Contains(t, c.err.Error(), fmt.Sprintf("deadline exceeded after %v (timeout %v)", d, d))
				}
			}
			h.pollFor("in-flight gauge back to 0", func() bool { return h.r.Stats().InFlight == 0 })
		})
	}
}
