package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// healthServers starts n test servers that also serve grpc.health.v1, each reporting
// SERVING until the test changes its health.Server.
func healthServers(t *testing.T, n int) (healths []*health.Server, srvs []*testserver.Server, addrs []string) {
	t.Helper()
	for range n {
		hs := health.NewServer()
		s := testserver.Start(t, testserver.WithServices(func(r grpc.ServiceRegistrar) {
			healthpb.RegisterHealthServer(r, hs)
		}))
		healths = append(healths, hs)
		srvs = append(srvs, s)
		addrs = append(addrs, s.Addr())
	}
	return healths, srvs, addrs
}

// TestHealthCheck checks Config.HealthCheck: a backend whose grpc.health.v1 service
// reports NOT_SERVING gets no calls until it reports SERVING again.
func TestHealthCheck(t *testing.T) {
	healths, srvs, addrs := healthServers(t, 2)
	r := newReactor(t, nil, reactor.Config{
		Targets:     addrs,
		HealthCheck: true,
		Backoff:     fastBackoff,
	})
	h := newHost(t, r)
	bothServe := func() bool {
		before := serverCalls(srvs)
		requireEchoed(t, h.burst("both", 20, 20))
		got := since(serverCalls(srvs), before)
		return got[0] > 0 && got[1] > 0
	}
	until(t, bound, "both backends get calls", bothServe)

	// NOT_SERVING: once the client has seen it (a burst of 20 that round_robin would split
	// 10/10 goes wholly to the other backend), no later call reaches it. Every call succeeds
	// meanwhile: the backend still serves the calls picked before the picker changed.
	healths[0].SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	until(t, bound, "calls leave the NOT_SERVING backend", func() bool {
		before := serverCalls(srvs)
		requireEchoed(t, h.burst("leave", 20, 20))
		return since(serverCalls(srvs), before)[0] == 0
	})
	before := serverCalls(srvs)
	requireEchoed(t, h.burst("only", 200, 64))
	require.Equal(t, []int64{0, 200}, since(serverCalls(srvs), before), "calls per backend while the first is NOT_SERVING")

	// SERVING again: it gets calls again, and then its fair share (±20%).
	healths[0].SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	until(t, bound, "the backend gets calls again once SERVING", bothServe)
	before = serverCalls(srvs)
	requireEchoed(t, h.burst("spread", 200, 64))
	requireFairShare(t, since(serverCalls(srvs), before), 200)
}

// TestBackendStateHealth checks that Stats().Backends does not report READY a backend
// that gets no calls because its health service reports NOT_SERVING (Config.HealthCheck):
// its backend is as unusable as one that is down.
func TestBackendStateHealth(t *testing.T) {
	healths, srvs, addrs := healthServers(t, 2)
	r := newReactor(t, nil, reactor.Config{Targets: addrs, HealthCheck: true})
	h := newHost(t, r)
	until(t, bound, "both backends get calls", func() bool {
		requireEchoed(t, h.burst("both", 20, 20))
		return srvs[0].Calls() > 0 && srvs[1].Calls() > 0
	})
	healths[0].SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	until(t, bound, "calls leave the NOT_SERVING backend", func() bool {
		before := srvs[0].Calls()
		requireEchoed(t, h.burst("leave", 20, 20))
		return srvs[0].Calls() == before
	})
	// The health state reaches the balancer with the same update that took the backend out
	// of the picker, so no wait is needed; the bound covers a lagging implementation.
	until(t, 2*time.Second, "the NOT_SERVING backend's state leaves READY", func() bool {
		requireEchoed(t, h.burst("state", 20, 20))
		return backendState(t, r, addrs[0]) != connectivity.Ready
	})
	require.Equal(t, connectivity.Ready, backendState(t, r, addrs[1]))
}
