package reactor_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// Helpers of the scale tests (many backends, call policies, per-method stats).

// otherService serves TestService's Echo under another service name (prpctest.Other), so a
// test has a second method path, echoOther, on the same server.
type otherService struct {
	testpb.UnimplementedTestServiceServer
	fn echoFunc
}

func (o *otherService) Echo(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return o.fn(ctx, req)
}

// withOther makes a testserver serve fn as echoOther ("/prpctest.Other/Echo").
func withOther(fn echoFunc) grpc.ServerOption {
	return testserver.WithServices(func(r grpc.ServiceRegistrar) {
		desc := testpb.TestService_ServiceDesc
		desc.ServiceName = "prpctest.Other"
		r.RegisterService(&desc, &otherService{fn: fn})
	})
}

// needLoopback skips the test unless every host (such as "127.0.0.2") can be listened on.
// Linux routes all of 127.0.0.0/8 to lo; other systems may have only 127.0.0.1.
func needLoopback(t *testing.T, hosts ...string) {
	t.Helper()
	for _, h := range hosts {
		lis, err := net.Listen("tcp", net.JoinHostPort(h, "0"))
		if err != nil {
			t.Skipf("needs the loopback address %s, which cannot be bound here: %v", h, err)
		}
		require.NoError(t, lis.Close())
	}
}

// serverCalls returns each server's Echo count.
func serverCalls(srvs []*testserver.Server) []int64 {
	out := make([]int64, len(srvs))
	for i, s := range srvs {
		out[i] = s.Calls()
	}
	return out
}

// since returns now − before, element-wise.
func since(now, before []int64) []int64 {
	out := make([]int64, len(now))
	for i := range now {
		out[i] = now[i] - before[i]
	}
	return out
}

// backendCalls returns Stats().Backends as address → transport calls.
func backendCalls(r *reactor.Reactor) map[string]uint64 {
	out := map[string]uint64{}
	for _, b := range r.Stats().Backends {
		out[b.Addr] = b.Calls
	}
	return out
}

// backendState returns the connectivity state Stats().Backends reports for addr, failing the
// test if it reports none.
func backendState(t *testing.T, r *reactor.Reactor, addr string) connectivity.State {
	t.Helper()
	for _, b := range r.Stats().Backends {
		if b.Addr == addr {
			require.True(t, b.StateKnown, "Stats().Backends[%s].StateKnown", addr)
			return b.State
		}
	}
	t.Fatalf("Stats().Backends has no %s: %+v", addr, r.Stats().Backends)
	return 0
}

// requireStates checks the states Stats().Backends reports, and that it reports no other
// backend.
func requireStates(t *testing.T, r *reactor.Reactor, want map[string]connectivity.State) {
	t.Helper()
	got := map[string]connectivity.State{}
	for _, b := range r.Stats().Backends {
		require.True(t, b.StateKnown, "Stats().Backends[%s].StateKnown", b.Addr)
		got[b.Addr] = b.State
	}
	require.Equal(t, want, got, "Stats().Backends states")
}

// requireFairShare checks that each of counts is within ±20% of total/len(counts).
func requireFairShare(t *testing.T, counts []int64, total int) {
	t.Helper()
	fair := float64(total) / float64(len(counts))
	var sum int64
	for i, c := range counts {
		require.InDelta(t, fair, float64(c), 0.2*fair, "backend %d got %d of %d calls (fair share %.0f ± 20%%): %v", i, c, total, fair, counts)
		sum += c
	}
	require.EqualValues(t, total, sum, "calls counted by the servers: %v", counts)
}
