package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/connectivity"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Stats.Backends shows each backend's connectivity, as gRPC's balancer sees it, and the calls
// that reached it.
func TestBackendStatsConnectivity(t *testing.T) {
	a, b := testserver.Start(t), testserver.Start(t)
	r := newReactor(t, nil, reactor.Config{
		Targets: []string{a.Addr(), b.Addr()},
		Backoff: fastBackoff,
	})
	// Bound: both connections are local; 5 s leaves room for -race on two busy cores.
	require.Eventually(t, func() bool {
		s := backendStates(r)
		return s[a.Addr()] == connectivity.Ready && s[b.Addr()] == connectivity.Ready
	}, 5*time.Second, 5*time.Millisecond)

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
	}, 5*time.Second, 5*time.Millisecond)
}

// With Config.Conn, prpc knows nothing of the backends' connectivity.
func TestBackendStatsUnknownWithConn(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{})
	require.Empty(t, backendStates(r))
}
