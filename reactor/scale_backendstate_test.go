package reactor_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestScaleBackendStateHostTargets checks that a backend given by host name in
// Config.Targets is one row of Stats().Backends, with both its state and its calls.
// (Addresses are usually names in production: "data-1.internal:50051".)
func TestScaleBackendStateHostTargets(t *testing.T) {
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

// TestScaleBackendStateHealth checks that Stats().Backends does not report READY a backend
// that gets no calls because its health service reports NOT_SERVING (Config.HealthCheck):
// its backend is as unusable as one that is down.
func TestScaleBackendStateHealth(t *testing.T) {
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
