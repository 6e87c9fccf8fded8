package reactor_test

// Faults of the server: it is killed, restarted, or stops gracefully, or it ages its
// connections.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestFaultServerKilled: the server is stopped (grpc.Server.Stop: connections closed, no
// GOAWAY) while calls are in flight. Every call settles within 1 s of the Stop with success
// or Unavailable, and prpc retries nothing: each call reaches the server at most once. In the
// rows that restart the server at once, a retry of a call that was in flight at the Stop
// would reach the new server and be counted there; none does.
func TestFaultServerKilled(t *testing.T) {
	// Settlement normally follows the Stop by a few milliseconds: the in-flight calls fail as
	// soon as the client reads EOF, the queued ones as soon as a loopback connect is refused,
	// or succeed once the restarted server is reached (within the 60 ms of fastBackoff). A
	// second is a generous margin over that, for -race on a loaded machine.
	const settleBound = time.Second
	const slots = 4 * 16 // Workers × BatchSize
	tests := []struct {
		name      string
		calls     int
		hold      bool  // the handler holds every call until the server dies
		stopAfter int64 // stop once the server has seen this many calls
		restart   bool  // restart the server at once, answering every call
	}{
		{name: "every slot held", calls: slots, hold: true, stopAfter: slots},
		{name: "held slots and queued calls", calls: 4 * slots, hold: true, stopAfter: slots},
		// Calls queued behind a dead server fail one after another, at the rate the CPU
		// allows, which under -race on a loaded machine is slow enough that a long queue
		// would approach settleBound; 200 queued calls stay well within it.
		{name: "answering mid-burst", calls: 400, stopAfter: 200},
		{name: "every slot held, restarted at once", calls: slots, hold: true, stopAfter: slots, restart: true},
		{name: "held slots and queued calls, restarted at once", calls: 4 * slots, hold: true, stopAfter: slots, restart: true},
		{name: "answering mid-burst, restarted at once", calls: 400, stopAfter: 200, restart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			srv := testserver.Start(t)
			seen := newArrivals()
			release := make(chan struct{})
			if tt.hold {
				srv.SetHandler(hold(release, seen))
			} else {
				close(release)
				srv.SetHandler(hold(release, seen))
			}
			// Timeouts far above settleBound, so that no call can pass by timing out.
			h := startHost(t, reactor.Config{Target: srv.Addr(), Workers: 4, BatchSize: 16, DefaultTimeout: 4 * time.Second, Backoff: fastBackoff})
			for i := range tt.calls {
				h.submit(echo, echoReq(fmt.Sprint("k", i)), nil)
			}
			h.pollFor("server reached by the burst", func() bool { return srv.Calls() >= tt.stopAfter })

			stopped := time.Now()
			srv.Stop()
			before := seen.snapshot() // every call that reached the first server
			if tt.restart {
				if tt.hold {
					close(release)
				}
				srv.Restart(t)
			}
			h.settle()

			byCode, sample := tally(h.calls)
			t.Logf("outcomes %v; samples %v", byCode, sample)
			var worst time.Duration
			succeeded := 0
			for _, c := range h.calls {
				require.False(t, c.rejected, "call %d rejected at submission", c.seq)
				switch c.code() {
				case codes.OK:
					succeeded++
					require.True(t, seen.has(c.id), "call %d succeeded without reaching the server", c.seq)
				case codes.Unavailable:
					require.ErrorIs(t, c.err, calls.ErrUnavailable, "call %d", c.seq)
				default:
					t.Fatalf("call %d: want success or Unavailable, got %v", c.seq, c.err)
				}
				if tt.hold && before[c.id] {
					require.Equal(t, codes.Unavailable, c.code(), "call %d was held by the server that died", c.seq)
				}
				if c.settled.After(stopped) {
					worst = max(worst, c.settled.Sub(stopped))
				}
			}
			t.Logf("last settlement %v after Stop (bound %v)", worst, settleBound)
			require.LessOrEqual(t, worst, settleBound)

			// No retries: every arrival at a server is a distinct call.
			distinct, dups := seen.check()
			require.Empty(t, dups, "calls reached the server more than once")
			require.EqualValues(t, distinct, srv.Calls())
			switch {
			case tt.hold && !tt.restart:
				require.Zero(t, succeeded)
				// Exactly the held calls reached the server; the queued ones failed in prpc's
				// lanes against a dead address, without a second attempt anywhere.
				require.EqualValues(t, slots, srv.Calls())
			case !tt.hold:
				require.NotZero(t, succeeded, "the server answered before it was stopped")
			}
			if !tt.restart {
				require.Less(t, succeeded, tt.calls, "the server was stopped mid-burst")
			}
			h.pollFor("in-flight gauge back to 0", func() bool { return h.r.Stats().InFlight == 0 })
			require.Zero(t, h.r.Stats().Pending)
		})
	}
}

// reconnectBound bounds the time from a restart to the first successful call: a reconnect
// attempt starts at most MaxDelay × (1 + Jitter) = 60 ms after the server is back (with
// fastBackoff), and a loopback connect and HTTP/2 handshake take about a millisecond. The
// 450 ms beyond MaxDelay are a generous margin for -race on a loaded machine.
const reconnectBound = 50*time.Millisecond + 450*time.Millisecond

// TestFaultServerRestart: while the server is down, fail-fast calls fail with Unavailable in
// under 100 ms; once it is back on the same port, calls succeed again within the backoff
// bound.
func TestFaultServerRestart(t *testing.T) {
	// Fail-fast calls against a port nobody listens on fail as soon as the loopback connect is
	// refused, within about a millisecond; 100 ms is a wide margin for -race.
	const failFast = 100 * time.Millisecond
	leakCheck(t)
	srv := testserver.Start(t)
	h := startHost(t, reactor.Config{Target: srv.Addr(), Backoff: fastBackoff, DefaultTimeout: 3 * time.Second})
	warm := h.submit(echo, echoReq("warm"), nil)
	h.settle(warm)
	require.NoError(t, warm.err)

	srv.Stop()
	// Spread the calls over a few reconnect attempts (10–60 ms apart), so that some meet the
	// channel in TRANSIENT_FAILURE and some while it tries again.
	var worst time.Duration
	for i := range 30 {
		c := h.submit(echo, echoReq(fmt.Sprint("down", i)), nil)
		h.settle(c)
		require.Equal(t, codes.Unavailable, c.code(), "call %d while down: %v", i, c.err)
		require.ErrorIs(t, c.err, calls.ErrUnavailable, "a refused connection matches ErrUnavailable")
		worst = max(worst, c.latency())
		h.pause(5 * time.Millisecond)
	}
	t.Logf("down: worst submit-to-settlement %v (bound %v); sample %v", worst, failFast, h.calls[1].err)
	require.Less(t, worst, failFast)

	srv.Restart(t)
	back := time.Now()
	probes := 0
	for {
		c := h.submit(echo, echoReq(fmt.Sprint("probe", probes)), nil)
		probes++
		h.settle(c)
		if c.err == nil {
			break
		}
		require.Equal(t, codes.Unavailable, c.code(), "probe %d: %v", probes, c.err)
		require.Less(t, time.Since(back), reconnectBound, "no successful call within the backoff bound of the restart")
		h.pause(2 * time.Millisecond)
	}
	recovered := time.Since(back)
	t.Logf("back: first success %v after the restart, %d probes (bound %v)", recovered, probes, reconnectBound)
	require.Less(t, recovered, reconnectBound)

	after := make([]*call, 0, 50)
	for i := range 50 {
		after = append(after, h.submit(echo, echoReq(fmt.Sprint("after", i)), nil))
	}
	h.settle(after...)
	for _, c := range after {
		require.NoError(t, c.err)
	}
	// prpc retried nothing: every call that reached the server did so once.
	require.EqualValues(t, 1+1+len(after), srv.Calls()) // warm, the successful probe, after
}

// TestFaultServerRestartWaitForReady: with calls.Options.WaitForReady, calls submitted while
// the server is down wait for it, and succeed once it is back; if it never comes back, they
// fail with ErrTimeout at their deadline.
func TestFaultServerRestartWaitForReady(t *testing.T) {
	tests := []struct {
		name        string
		timeout     time.Duration
		downFor     time.Duration // how long after submitting to restart; 0: never
		wantSuccess bool
	}{
		{name: "back before the deadline", timeout: 3 * time.Second, downFor: 150 * time.Millisecond, wantSuccess: true},
		{name: "never back", timeout: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			srv := testserver.Start(t)
			h := startHost(t, reactor.Config{Target: srv.Addr(), Backoff: fastBackoff})
			warm := h.submit(echo, echoReq("warm"), nil)
			h.settle(warm)
			require.NoError(t, warm.err)
			srv.Stop()
			if tt.downFor == 0 {
				// Never back: keep the port from another test's server, in this process or
				// another package's, which the calls would otherwise reach.
				holdPort(t, srv.Addr())
			}
			// WaitForReady covers the wait for a connection, not a call already sent on one
			// that is dying: a call submitted in the millisecond before the client reads the
			// EOF goes out on the dead connection and fails with Unavailable, as any call in
			// flight does (it may have reached the server). So wait until the client knows.
			h.pollFor("the client noticed the server is gone", func() bool { return h.r.Stats().State != connectivity.Ready })

			opts := &calls.Options{WaitForReady: true, Timeout: tt.timeout}
			var waiting []*call
			for i := range 20 {
				waiting = append(waiting, h.submit(echo, echoReq(fmt.Sprint("wfr", i)), opts))
			}
			if tt.downFor > 0 {
				h.pause(tt.downFor)
				for _, c := range waiting {
					require.False(t, c.done(), "call %d settled while the server was down: %v", c.seq, c.err)
				}
				srv.Restart(t)
				back := time.Now()
				h.settle(waiting...)
				var last time.Time
				for _, c := range waiting {
					require.NoError(t, c.err)
					last = maxTime(last, c.settled)
				}
				t.Logf("all %d waiting calls succeeded %v after the restart (bound %v)", len(waiting), last.Sub(back), reconnectBound)
				require.Less(t, last.Sub(back), reconnectBound)
				require.EqualValues(t, 1+len(waiting), srv.Calls())
				return
			}
			h.settle(waiting...)
			requireDeadlines(t, "never back", waiting)
			require.EqualValues(t, 1, srv.Calls())
		})
	}
}

// TestFaultGracefulStop: calls in flight when the server stops gracefully (GOAWAY, then it
// waits for its handlers) all succeed; calls submitted after the GOAWAY with WaitForReady
// wait for the restarted server and succeed too. Zero failures, and each call reaches a
// server exactly once.
func TestFaultGracefulStop(t *testing.T) {
	leakCheck(t)
	srv := testserver.Start(t)
	release := make(chan struct{})
	seen := newArrivals()
	srv.SetHandler(hold(release, seen))
	// 64 slots: the held calls take half, so the later calls go to gRPC at once.
	h := startHost(t, reactor.Config{Target: srv.Addr(), Workers: 2, BatchSize: 32, Backoff: fastBackoff, DefaultTimeout: 4 * time.Second})

	const inFlight = 32
	for i := range inFlight {
		h.submit(echo, echoReq(fmt.Sprint("held", i)), nil)
	}
	h.pollFor("held calls at the server", func() bool { return srv.Calls() == inFlight })

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.GracefulStop() // returns once the held calls have been answered
	}()
	// The client leaves READY when the GOAWAY arrives; the held calls keep their streams.
	h.pollFor("GOAWAY noticed", func() bool { return h.r.Stats().State != connectivity.Ready })

	var later []*call
	for i := range 16 {
		later = append(later, h.submit(echo, echoReq(fmt.Sprint("later", i)), &calls.Options{WaitForReady: true}))
	}
	// They wait for a connection: the listener is closed and the old connection is draining.
	h.pollFor("later calls handed to gRPC", func() bool {
		return h.r.Stats().InFlight == inFlight+len(later) || slices.ContainsFunc(later, (*call).done)
	})
	h.pause(50 * time.Millisecond)
	for _, c := range later {
		require.False(t, c.done(), "call %d settled while the server was stopping: %v", c.seq, c.err)
	}
	close(release)
	recv(t, stopped, "GracefulStop returning once its handlers were released")
	h.settle(h.calls[:inFlight]...)
	srv.Restart(t)
	h.settle()

	byCode, sample := tally(h.calls)
	require.Equal(t, map[codes.Code]int{codes.OK: len(h.calls)}, byCode, "zero failures; samples %v", sample)
	distinct, dups := seen.check()
	require.Empty(t, dups)
	require.Equal(t, len(h.calls), distinct)
	require.EqualValues(t, len(h.calls), srv.Calls())
	for _, c := range later {
		require.Equal(t, c.id, c.resp.GetMessage())
	}
}

// connCounter is a server stats handler that counts the connections the server accepts.
type connCounter struct{ n atomic.Int64 }

func (c *connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (c *connCounter) HandleRPC(context.Context, stats.RPCStats) {}
func (c *connCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *connCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnBegin); ok {
		c.n.Add(1)
	}
}

// TestFaultMaxConnectionAge: a server that ends every connection after 200 ms (GOAWAY, then
// MaxConnectionAgeGrace for the streams in flight), under steady load for 1 s: zero failures,
// across several connections.
func TestFaultMaxConnectionAge(t *testing.T) {
	leakCheck(t)
	conns := &connCounter{}
	srv := testserver.Start(t,
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: 200 * time.Millisecond, MaxConnectionAgeGrace: 2 * time.Second}),
		grpc.StatsHandler(conns),
	)
	h := startHost(t, reactor.Config{Target: srv.Addr(), Workers: 2, BatchSize: 16, Backoff: fastBackoff, DefaultTimeout: 4 * time.Second})

	const load = 32 // calls kept outstanding
	end := time.Now().Add(time.Second)
	for time.Now().Before(end) {
		for h.outstanding() < load {
			h.submit(echo, &testpb.EchoRequest{Message: fmt.Sprint("m", len(h.calls)), DelayMs: 2}, nil)
		}
		select {
		case <-h.r.Ready():
		case <-time.After(poll):
		}
		h.Tick(tickBudget)
	}
	h.settle()

	byCode, sample := tally(h.calls)
	t.Logf("%d calls over %d connections", len(h.calls), conns.n.Load())
	require.Equal(t, map[codes.Code]int{codes.OK: len(h.calls)}, byCode, "zero failures; samples %v", sample)
	// MaxConnectionAge has ±10% jitter: 1 s of load spans at least 4 connections; 3 leaves a
	// margin for a slow start under -race. Fewer would mean the fault was not exercised.
	require.GreaterOrEqual(t, conns.n.Load(), int64(3))
	require.EqualValues(t, len(h.calls), srv.Calls(), "each call reached the server once")
}

// holdPort listens on addr, a stopped server's, until the test ends, accepting nothing: a
// client's connection attempts wait for an HTTP/2 handshake that never comes, and no other
// server can take the port meanwhile.
func holdPort(t *testing.T, addr string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
}
