package reactor_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// needLoopback skips the test unless every host (such as "127.0.0.2") can be listened on.
// Linux routes all of 127.0.0.0/8 to lo; other systems may have only 127.0.0.1.
func needLoopback(t *testing.T, hosts ...string) {
	t.Helper()
	for _, h := range hosts {
		lis, err := net.Listen("tcp", net.JoinHostPort(h, "0"))
		if err != nil {
			t.Skipf("needs the loopback address %s, which this system cannot bind: %v", h, err)
		}
		require.NoError(t, lis.Close())
	}
}

// backendCalls returns Stats().Backends as address → transport calls.
func backendCalls(r *reactor.Reactor) map[string]uint64 {
	out := map[string]uint64{}
	for _, b := range r.Stats().Backends {
		out[b.Addr] = b.Calls
	}
	return out
}

// requireStates checks that Stats().Backends knows the state of every backend and reports
// want.
func requireStates(t *testing.T, r *reactor.Reactor, want map[string]connectivity.State) {
	t.Helper()
	require.Len(t, r.Stats().Backends, len(want), "Stats().Backends")
	require.Equal(t, want, backendStates(r), "Stats().Backends states")
}

// TestManyBackends runs three backends on three loopback hosts behind Config.Targets:
// calls spread evenly, stopping one mid-burst fails exactly the calls in flight on it (with
// Unavailable) and no other, later calls go to the other two, and a restarted backend gets
// calls again.
func TestManyBackends(t *testing.T) {
	needLoopback(t, "127.0.0.2", "127.0.0.3")
	srvs := []*testserver.Server{
		testserver.StartOn(t, "127.0.0.1:0"),
		testserver.StartOn(t, "127.0.0.2:0"),
		testserver.StartOn(t, "127.0.0.3:0"),
	}
	addrs := []string{srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()}
	const workers, batch = 4, 8
	const lanes = workers * batch // transport calls in flight at most
	r := newReactor(t, nil, reactor.Config{
		Targets:   addrs,
		Workers:   workers,
		BatchSize: batch,
		// Far above any wait in this test (the stalled burst below waits for lanes while one
		// backend holds them all), so no call times out; the bounds of the waits catch hangs.
		MaxTimeout:     30 * time.Second,
		DefaultTimeout: 20 * time.Second,
		Backoff:        fastBackoff,
	})
	h := newHost(t, r)

	h.warmUp(srvs)
	// The subchannels' states are recorded before round_robin sees them, so a backend that
	// has served a call shows READY.
	requireStates(t, r, map[string]connectivity.State{addrs[0]: connectivity.Ready, addrs[1]: connectivity.Ready, addrs[2]: connectivity.Ready})

	// Fair share: round_robin picks the READY backends in turn, so each gets 1,000 ± 1 of
	// 3,000 calls; the ±20% margin allows for nothing but a backend leaving the picker, which
	// must not happen in this test.
	const n = 3000
	before, beforeB := serverCalls(srvs), backendCalls(r)
	requireEchoed(t, h.burst("fair", n, 256))
	got := since(serverCalls(srvs), before)
	requireFairShare(t, got, n)
	afterB := backendCalls(r)
	for i, a := range addrs {
		require.EqualValues(t, got[i], afterB[a]-beforeB[a], "Stats().Backends[%s] and the server's count disagree", a)
	}

	// Stop one backend mid-burst. Its handler holds every call it receives (and reports it),
	// so the burst stalls once all the lanes hold calls on it: at that moment exactly those
	// calls are in flight on it, and no call is in flight anywhere else.
	victim := srvs[1]
	t.Cleanup(victim.Stop) // before Close: ends the held calls if the test fails early
	entered := make(chan string, 1024)
	victim.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		entered <- req.GetMessage()
		<-ctx.Done() // until Stop cancels it
		return nil, status.FromContextError(ctx.Err()).Err()
	})
	const m = 600 // about 3 × lanes are consumed before the stall; the rest run after the stop
	var stop []*call
	for i := range m {
		stop = append(stop, h.submit(echo, echoReq("stop"+strconv.Itoa(i)), nil))
	}
	held := map[string]bool{}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for len(held) < lanes {
		select {
		case id := <-entered:
			held[id] = true
		case <-r.Ready():
			h.Tick(time.Second)
		case <-deadline.C:
			t.Fatalf("only %d of %d lanes hold calls on the stopped backend within %v", len(held), lanes, bound)
		}
	}
	atStop, atStopB := serverCalls(srvs), backendCalls(r)
	victim.Stop()
	h.settle(stop...)

	failed := 0
	for _, o := range stop {
		if held[o.id] {
			require.Error(t, o.err, "call %s was in flight on the stopped backend", o.id)
			require.Equal(t, codes.Unavailable, status.Code(o.err), "call %s: %v", o.id, o.err)
			failed++
			continue
		}
		require.NoError(t, o.err, "call %s was not in flight on the stopped backend", o.id)
		require.Equal(t, o.id, o.resp.GetMessage())
	}
	require.Equal(t, lanes, failed)
	select {
	case id := <-entered:
		t.Fatalf("call %s reached the stopped backend", id)
	default:
	}
	// The calls that ran after the stop went to the other two, about evenly (round_robin over
	// two READY backends: half each ± a few picks made while the picker changed; margin ±20%).
	after := since(serverCalls(srvs), atStop)
	require.Zero(t, after[1])
	rest := after[0] + after[2]
	require.Greater(t, rest, int64(m/2), "most of the burst ran after the stop")
	requireFairShare(t, []int64{after[0], after[2]}, int(rest))
	afterB = backendCalls(r)
	require.EqualValues(t, lanes, afterB[addrs[1]]-atStopB[addrs[1]], "Stats().Backends counts the failed calls on the stopped backend")
	for _, i := range []int{0, 2} {
		require.EqualValues(t, after[i], afterB[addrs[i]]-atStopB[addrs[i]], "Stats().Backends[%s]", addrs[i])
	}
	for _, b := range r.Stats().Backends {
		if b.Addr == addrs[1] {
			require.EqualValues(t, lanes, b.Failed[codes.Unavailable], "Stats().Backends[%s].Failed", b.Addr)
		} else {
			require.Empty(t, b.Failed, "Stats().Backends[%s].Failed", b.Addr)
		}
	}

	// Its state leaves READY (asynchronously: the calls' failures and the state change are
	// not ordered), while calls keep going to the others.
	until(t, bound, "the stopped backend's state leaves READY", func() bool {
		requireEchoed(t, h.burst("down", 30, 30))
		return backendState(t, r, addrs[1]) != connectivity.Ready
	})
	require.Equal(t, atStop[1], victim.Calls())

	// Restart it: with fastBackoff the channel reconnects within about 60 ms; bound is far
	// more.
	victim.SetHandler(nil)
	victim.Restart(t)
	start := time.Now()
	until(t, bound, "the restarted backend gets calls again", func() bool {
		requireEchoed(t, h.burst("back", 30, 30))
		return victim.Calls() > atStop[1]
	})
	t.Logf("restarted backend back in rotation after %v", time.Since(start))
	requireStates(t, r, map[string]connectivity.State{addrs[0]: connectivity.Ready, addrs[1]: connectivity.Ready, addrs[2]: connectivity.Ready})
	before = serverCalls(srvs)
	requireEchoed(t, h.burst("again", 300, 256))
	requireFairShare(t, since(serverCalls(srvs), before), 300)
}

// TestResolverTargets checks that Config.Target takes targets of gRPC's resolvers.
//
// localhost may resolve to 127.0.0.1 only or also to ::1, where the server does not listen.
// The reactor uses gRPC's default pick_first, which tries the addresses in turn and settles on
// the one that accepts, so every call succeeds either way (with round_robin, calls would fail
// on the ::1 backend). The test therefore asserts that every call succeeds and reached the
// server, whatever localhost resolves to.
func TestResolverTargets(t *testing.T) {
	srv := testserver.Start(t)
	_, port, err := net.SplitHostPort(srv.Addr())
	require.NoError(t, err)
	hosts, err := net.DefaultResolver.LookupHost(context.Background(), "localhost")
	require.NoError(t, err)
	t.Logf("localhost resolves to %v", hosts)
	for _, target := range []string{"dns:///localhost:" + port, "passthrough:///127.0.0.1:" + port} {
		t.Run(target, func(t *testing.T) {
			r := newReactor(t, nil, reactor.Config{Target: target})
			h := newHost(t, r)
			before := srv.Calls()
			requireEchoed(t, h.burst("c", 50, 50))
			require.EqualValues(t, 50, srv.Calls()-before)
			require.EqualValues(t, 50, backendCalls(r)[srv.Addr()])
		})
	}
}

// TestBackendStateHostTargets checks that a backend given by host name in
// Config.Targets is one row of Stats().Backends, with both its state and its calls.
// (Addresses are usually names in production: "data-1.internal:50051".)
func TestBackendStateHostTargets(t *testing.T) {
	srv := testserver.Start(t)
	_, port, err := net.SplitHostPort(srv.Addr())
	require.NoError(t, err)
	named := net.JoinHostPort("localhost", port)
	r := newReactor(t, nil, reactor.Config{Targets: []string{named}})
	h := newHost(t, r)
	requireEchoed(t, h.burst("c", 10, 10))
	b := r.Stats().Backends
	require.Len(t, b, 1, "one backend, one row: %+v", b)
	require.Contains(t, []string{named, srv.Addr()}, b[0].Addr)
	require.EqualValues(t, 10, b[0].Calls)
	require.True(t, b[0].StateKnown)
	require.Equal(t, connectivity.Ready, b[0].State)
}

// Stats.Backends shows each backend's connectivity, as gRPC's balancer sees it, and the calls
// that reached it.
func TestBackendStatsConnectivity(t *testing.T) {
	a, b := testserver.Start(t), testserver.Start(t)
	r := newReactor(t, nil, reactor.Config{
		Targets: []string{a.Addr(), b.Addr()},
		Backoff: fastBackoff,
	})
	require.Eventually(t, func() bool {
		s := backendStates(r)
		return s[a.Addr()] == connectivity.Ready && s[b.Addr()] == connectivity.Ready
	}, bound, poll)

	done := 0
	for range 20 {
		reactor.Call(r, echo, &testpb.EchoRequest{Message: "x"}, nil).Always(func() { done++ })
	}
	waitFor(t, r, func() bool { return done == 20 })
	var calls uint64
	for _, be := range r.Stats().Backends {
		require.Contains(t, []string{a.Addr(), b.Addr()}, be.Addr)
		require.NotZero(t, be.Calls, "round_robin sends calls to %s", be.Addr)
		calls += be.Calls
	}
	require.EqualValues(t, 20, calls)

	b.Stop()
	require.Eventually(t, func() bool {
		s := backendStates(r)
		return s[a.Addr()] == connectivity.Ready && s[b.Addr()] != connectivity.Ready
	}, bound, poll)
}

// With Config.Conn, prpc knows nothing of the backends' connectivity.
func TestBackendStatsUnknownWithConn(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{})
	require.Empty(t, backendStates(r))
}

// backendRows returns Stats().Backends as address → row, leaving out the rows of addresses
// the balancer lists that have no calls.
func backendRows(r *reactor.Reactor) map[string]reactor.BackendStats {
	out := map[string]reactor.BackendStats{}
	for _, b := range r.Stats().Backends {
		if b.Calls > 0 || b.Addr == reactor.RemovedBackendsAddr {
			out[b.Addr] = b
		}
	}
	return out
}

// sumCalls returns the sum of the rows' Calls.
func sumCalls(rows map[string]reactor.BackendStats) uint64 {
	var n uint64
	for _, b := range rows {
		n += b.Calls
	}
	return n
}

// pruneClock is the start of the manual clocks of the tests of removed backend rows.
var pruneClock = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// TestBackendRowsRemoved: with a resolver whose addresses change, as a mesh's do on each
// deploy, the row of a backend the balancer no longer connects to stays in Stats.Backends for
// BackendIdleGrace after its last call, on the reactor's clock, and is then folded into the
// RemovedBackendsAddr row, so that the sum of Calls does not change; the backends still listed
// keep their rows however idle. Listed again, the address gets a new row counting from zero.
func TestBackendRowsRemoved(t *testing.T) {
	srvs := []*testserver.Server{testserver.Start(t), testserver.Start(t), testserver.Start(t)}
	a, b, c := srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()
	state := func(addrs ...string) resolver.State {
		s := resolver.State{}
		for _, addr := range addrs {
			s.Addresses = append(s.Addresses, resolver.Address{Addr: addr})
		}
		return s
	}
	rb := manual.NewBuilderWithScheme("prunetest")
	rb.InitialState(state(a, b))
	clock := reactortest.NewManualClock(pruneClock)
	r := newReactor(t, nil, longTimeouts(reactor.Config{
		Target:        "prunetest:///mesh",
		DialOptions:   []grpc.DialOption{grpc.WithResolvers(rb)},
		LoadBalancing: "round_robin",
		Clock:         clock,
		Backoff:       fastBackoff,
	}))
	h := newHost(t, r)
	h.warmUp(srvs[:2])

	// The deploy: a leaves, c comes. Once the balancer has dropped a, a burst sends it
	// nothing (its calls stop before its state goes, so both are checked).
	rb.UpdateState(state(b, c))
	until(t, bound, "a dropped, c in rotation", func() bool {
		before := backendCalls(r)[a]
		requireEchoed(t, h.burst("deploy", 30, 30))
		states := backendStates(r)
		_, listed := states[a]
		return !listed && states[c] == connectivity.Ready && backendCalls(r)[a] == before
	})
	start := backendRows(r) // the calls so far, seen at the clock's start
	require.Positive(t, start[a].Calls)
	require.NotContains(t, start, reactor.RemovedBackendsAddr)

	clock.Advance(reactor.BackendIdleGrace - time.Nanosecond)
	require.Equal(t, start, backendRows(r), "rows removed within the grace")

	clock.Advance(time.Nanosecond)
	rows := backendRows(r)
	require.NotContains(t, rows, a, "a's row outlived the grace")
	require.Equal(t, start[a].Calls, rows[reactor.RemovedBackendsAddr].Calls, "the removed row's calls")
	require.Empty(t, rows[reactor.RemovedBackendsAddr].Failed)
	require.False(t, rows[reactor.RemovedBackendsAddr].StateKnown)
	require.Equal(t, start[b], rows[b], "b, listed, keeps its row")
	require.Equal(t, start[c], rows[c], "c, listed, keeps its row")
	require.Equal(t, sumCalls(start), sumCalls(rows), "the sum of Calls")

	// a comes back: a new row, counting a's calls from now on.
	rb.UpdateState(state(a, b, c))
	served := srvs[0].Calls()
	until(t, bound, "a back in rotation", func() bool {
		requireEchoed(t, h.burst("back", 30, 30))
		return srvs[0].Calls() > served
	})
	rows = backendRows(r)
	require.EqualValues(t, srvs[0].Calls()-served, rows[a].Calls, "a's new row")
	require.Equal(t, start[a].Calls, rows[reactor.RemovedBackendsAddr].Calls, "the removed row's calls")
}

// TestBackendRowsUnknownConnectivity: where prpc does not see which addresses the balancer
// connects to (Config.Conn, Config.ServiceConfig), an address the resolver no longer lists
// keeps its row however long it is idle, while the rows are few.
func TestBackendRowsUnknownConnectivity(t *testing.T) {
	const serviceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`
	tests := []struct {
		name string
		cfg  func(t *testing.T, rb *manual.Resolver) reactor.Config
	}{
		{"Config.ServiceConfig", func(_ *testing.T, rb *manual.Resolver) reactor.Config {
			return reactor.Config{Target: "prunetest:///mesh", DialOptions: []grpc.DialOption{grpc.WithResolvers(rb)}, ServiceConfig: serviceConfig}
		}},
		{"Config.Conn", func(t *testing.T, rb *manual.Resolver) reactor.Config {
			cc, err := grpc.NewClient("prunetest:///mesh", grpc.WithResolvers(rb),
				grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(serviceConfig))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, cc.Close()) })
			return reactor.Config{Conn: cc}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testserver.Start(t), testserver.Start(t)
			rb := manual.NewBuilderWithScheme("prunetest")
			rb.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: a.Addr()}}})
			cfg := tc.cfg(t, rb)
			cfg.Clock = reactortest.NewManualClock(pruneClock)
			clock := cfg.Clock.(*reactortest.ManualClock)
			r := newReactor(t, nil, longTimeouts(cfg))
			h := newHost(t, r)
			requireEchoed(t, h.burst("a", 10, 10))

			rb.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: b.Addr()}}})
			until(t, bound, "calls go to b", func() bool {
				before := a.Calls()
				requireEchoed(t, h.burst("b", 10, 10))
				return a.Calls() == before
			})
			start := backendRows(r)
			require.Len(t, start, 2, "a's and b's rows")
			require.False(t, start[a.Addr()].StateKnown)

			clock.Advance(100 * reactor.BackendIdleGrace)
			require.Equal(t, start, backendRows(r), "rows removed though few")
		})
	}
}
