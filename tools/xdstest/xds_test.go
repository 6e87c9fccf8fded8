package xdstest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/reactor"
)

// unaryCall is the method every test calls; its backends are grpc-go servers.
var unaryCall = calls.MustMethod[*testgrpc.SimpleRequest, *testgrpc.SimpleResponse]("/grpc.testing.TestService/UnaryCall")

// bound bounds every wait of these tests: a run of a few hundred loopback calls, an xDS
// update reaching the client, a Close. Each takes milliseconds to a second even under -race on
// two busy cores; a run that has not finished by then is stuck.
const bound = 60 * time.Second

// newReactor starts a reactor for the xDS target with cfg, which is the default Config but
// for what the test sets and for its timeouts, and closes it when the test ends. The
// timeouts leave a wide margin for the first calls, which wait while the xDS client fetches
// the listener, route, cluster and endpoints and connects to the backends.
func newReactor(t *testing.T, cfg reactor.Config) *reactor.Reactor {
	t.Helper()
	r, err := reactor.New(withTarget(cfg))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

// withTarget returns cfg with the xDS target, plaintext credentials and the test's timeouts.
func withTarget(cfg reactor.Config) reactor.Config {
	cfg.Target = target
	cfg.Credentials = reactor.Insecure()
	cfg.MaxTimeout = 20 * time.Second
	cfg.DefaultTimeout = 10 * time.Second
	return cfg
}

// run makes n calls through r, at most window outstanding, ticking as a game loop does when
// Ready says so, and returns the errors of the calls that failed. If hook is set, it runs
// once, after `at` calls have been submitted.
func run(t *testing.T, r *reactor.Reactor, n, window, at int, hook func()) []error {
	t.Helper()
	var failed []error
	submitted, settled := 0, 0
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	for settled < n {
		for submitted < n && submitted-settled < window {
			if hook != nil && submitted == at {
				hook()
			}
			reactor.Call(r, unaryCall, &testgrpc.SimpleRequest{}, nil).
				OnError(func(err error) { failed = append(failed, err) }).
				Always(func() { settled++ })
			submitted++
		}
		select {
		case <-r.Ready():
			r.Tick(10 * time.Millisecond)
		case <-timeout.C:
			t.Fatalf("%d of %d calls settled after %v", settled, n, bound)
		}
	}
	return failed
}

// until runs step until it returns true, failing the test after bound.
func until(t *testing.T, what string, step func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !step() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
	}
}

// warmUp makes calls until each of bs has served one: the balancer connects to the
// endpoints in the background, and until it has, round robin spreads over those it has.
func warmUp(t *testing.T, r *reactor.Reactor, bs []*backend) {
	t.Helper()
	until(t, "every backend gets calls", func() bool {
		require.Empty(t, run(t, r, 30, 30, 0, nil))
		for _, n := range counts(bs) {
			if n == 0 {
				return false
			}
		}
		return true
	})
}

// requireFairShare checks that each of got is within ±20% of total/len(got) and that they
// add up to total. Round robin over connected backends gives each exactly its share of
// sequential picks; the margin covers picks that overlap a reconnect.
func requireFairShare(t *testing.T, got []int64, total int) {
	t.Helper()
	fair := float64(total) / float64(len(got))
	var sum int64
	for i, n := range got {
		require.InDelta(t, fair, float64(n), 0.2*fair, "backend %d got %d of %d calls: %v", i, n, total, got)
		sum += n
	}
	require.EqualValues(t, total, sum, "calls the backends served: %v", got)
}

// requireStates checks that Stats().Backends reports the connectivity states in want for
// the backends it names, and knows no state of any other backend.
func requireStates(t *testing.T, r *reactor.Reactor, want map[string]connectivity.State) {
	t.Helper()
	got := map[string]connectivity.State{}
	for _, b := range r.Stats().Backends {
		if b.StateKnown {
			got[b.Addr] = b.State
		}
	}
	require.Equal(t, want, got, "Stats().Backends states")
}

// backendCalls returns Stats().Backends as address → calls.
func backendCalls(r *reactor.Reactor) map[string]uint64 {
	out := map[string]uint64{}
	for _, b := range r.Stats().Backends {
		out[b.Addr] = b.Calls
	}
	return out
}

// TestXDSSpread: with the default Config and an xds:/// target, prpc's calls are balanced as
// the control plane says (round robin over the cluster's three endpoints, each within ±20%
// of its share of 300 calls), none fails, and Stats.Backends counts each backend's calls as
// the backends do and reports each one Ready. A plain grpc-go client over the same mesh spreads its calls the same way.
func TestXDSSpread(t *testing.T) {
	bs := startBackends(t, 3)
	cp.set(t, mesh{endpoints: bs})
	r := newReactor(t, reactor.Config{})
	warmUp(t, r, bs)

	const total = 300
	before := counts(bs)
	require.Empty(t, run(t, r, total, 30, 0, nil))
	requireFairShare(t, since(counts(bs), before), total)
	stats := backendCalls(r)
	for _, b := range bs {
		require.EqualValues(t, b.calls.Load(), stats[b.addr], "Stats.Backends[%s].Calls", b.addr)
	}
	requireStates(t, r, map[string]connectivity.State{
		bs[0].addr: connectivity.Ready, bs[1].addr: connectivity.Ready, bs[2].addr: connectivity.Ready,
	})

	t.Run("grpc-go reference", func(t *testing.T) {
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer cc.Close()
		client := testgrpc.NewTestServiceClient(cc)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		call := func() {
			_, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
			require.NoError(t, err)
		}
		before := counts(bs)
		until(t, "every backend gets grpc-go's calls", func() bool {
			call()
			for _, n := range since(counts(bs), before) {
				if n == 0 {
					return false
				}
			}
			return true
		})
		before = counts(bs)
		for range total {
			call()
		}
		requireFairShare(t, since(counts(bs), before), total)
	})
}

// TestXDSEndpointRemoved: an endpoint removed from the control plane's snapshot while 600
// calls run fails none of them; once the client has the update, the removed backend gets no
// more calls and the other two share them, and Stats no longer knows its state.
func TestXDSEndpointRemoved(t *testing.T) {
	bs := startBackends(t, 3)
	cp.set(t, mesh{endpoints: bs})
	r := newReactor(t, reactor.Config{})
	warmUp(t, r, bs)

	failed := run(t, r, 600, 30, 200, func() { cp.set(t, mesh{endpoints: bs[:2]}) })
	require.Empty(t, failed, "calls failed while an endpoint was removed")
	until(t, "the removed endpoint gets no calls", func() bool {
		before := counts(bs)
		require.Empty(t, run(t, r, 30, 30, 0, nil))
		return since(counts(bs), before)[2] == 0
	})
	const total = 150
	before, removed := counts(bs), backendCalls(r)[bs[2].addr]
	require.Empty(t, run(t, r, total, 30, 0, nil))
	got := since(counts(bs), before)
	require.Zero(t, got[2], "calls on the removed endpoint: %v", got)
	requireFairShare(t, got[:2], total)
	require.Equal(t, removed, backendCalls(r)[bs[2].addr], "Stats.Backends of the removed endpoint")
	requireStates(t, r, map[string]connectivity.State{bs[0].addr: connectivity.Ready, bs[1].addr: connectivity.Ready})
}

// TestXDSRouteRetryPolicy: the route's retry_policy decides the retries under xDS, and the
// generated-style policy (the method Idempotent, with a timeout) is accepted and adds none.
// With a backend failing every call with Unavailable, calls fail without a retry policy
// (and are not said to be NotSent), and none fails once the route retries on unavailable.
func TestXDSRouteRetryPolicy(t *testing.T) {
	bs := startBackends(t, 3)
	cp.set(t, mesh{endpoints: bs})
	r := newReactor(t, reactor.Config{Policies: []reactor.MethodPolicy{
		{Method: unaryCall, Idempotent: true, Timeout: 5 * time.Second},
	}})
	warmUp(t, r, bs)

	bs[0].failing.Store(true)
	failed := run(t, r, 60, 30, 0, nil)
	require.NotEmpty(t, failed, "no call failed on the failing backend without a retry policy")
	for _, err := range failed {
		require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		var ce *calls.Error
		require.True(t, errors.As(err, &ce))
		require.False(t, ce.NotSent(), "NotSent of %v", err)
	}

	cp.set(t, mesh{endpoints: bs, retry: &routev3.RetryPolicy{RetryOn: "unavailable", NumRetries: wrapperspb.UInt32(4)}})
	until(t, "the route's retry policy reaches the client", func() bool {
		return len(run(t, r, 30, 1, 0, nil)) == 0
	})
	// One call at a time: round robin then sends each retry to the next endpoint, a
	// healthy one. With calls in parallel their picks interleave, and a call whose every
	// attempt lands on the failing endpoint (about one in 3^5 with 5 attempts) fails,
	// retries and all, as it would with prpc's own retries over Config.Targets.
	const total = 300
	before := counts(bs)
	failed = run(t, r, total, 1, 0, nil)
	require.Empty(t, failed, "calls failed despite the route's retry policy")
	got := since(counts(bs), before)
	require.Positive(t, got[0], "the failing backend got no attempts: %v", got)
	require.EqualValues(t, total, got[1]+got[2], "successful attempts: %v", got)
}

// TestXDSSettings: with an xds:/// target, New rejects each setting the control plane owns,
// naming the setting and its xDS counterpart, and accepts the policies a generated
// …Policies() sets (Idempotent methods, timeouts) and the policies' other fields, with which
// calls succeed.
func TestXDSSettings(t *testing.T) {
	bs := startBackends(t, 1)
	cp.set(t, mesh{endpoints: bs})
	tests := []struct {
		name string
		cfg  reactor.Config
		want []string // the error's substrings; nil if New must accept cfg
	}{
		{"LoadBalancing", reactor.Config{LoadBalancing: "round_robin"}, []string{"Config.LoadBalancing", "cluster's lb_policy"}},
		{"HealthCheck", reactor.Config{HealthCheck: true}, []string{"Config.HealthCheck", "EDS health status"}},
		{"HealthCheckService", reactor.Config{HealthCheck: true, HealthCheckService: "s"}, []string{"Config.HealthCheckService", "EDS health status"}},
		{"Retry", reactor.Config{Retry: reactor.RetryPolicy{MaxAttempts: 4}, Policies: []reactor.MethodPolicy{{Method: unaryCall, Idempotent: true}}},
			[]string{"Config.Retry", "route's retry_policy"}},
		{"ServiceConfig", reactor.Config{ServiceConfig: `{"loadBalancingConfig":[{"round_robin":{}}]}`}, []string{"Config.ServiceConfig"}},

		{"generated-style policies", reactor.Config{Policies: []reactor.MethodPolicy{
			{Method: unaryCall, Idempotent: true, Timeout: 3 * time.Second, Critical: true, ResponseMetadata: true, WaitForReady: true},
		}}, nil},
		{"ServiceConfigLookup", reactor.Config{ServiceConfigLookup: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want != nil {
				r, err := reactor.New(withTarget(tt.cfg))
				if err == nil {
					require.NoError(t, r.Close(context.Background()))
				}
				require.Error(t, err)
				for _, w := range append(tt.want, fmt.Sprintf("%q", target)) {
					require.ErrorContains(t, err, w)
				}
				return
			}
			r := newReactor(t, tt.cfg)
			require.Empty(t, run(t, r, 3, 3, 0, nil))
		})
	}
}
