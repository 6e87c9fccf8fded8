package reactor_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// Helpers of the scale tests (many backends, call policies, per-method stats).

// echoFunc is the signature of an Echo handler.
type echoFunc func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)

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

// outcome is what a call delivered; its callbacks run on the test goroutine (inside Tick).
type outcome struct {
	id      string
	resp    *testpb.EchoResponse
	err     error
	settled int // how many times a callback ran: exactly once when all is well
}

// tracker collects the outcomes of the calls a test submits.
type tracker struct {
	outs    []*outcome
	settled int
}

// track registers callbacks on p that record its outcome under id.
func (tr *tracker) track(id string, p *calls.Promise[*testpb.EchoResponse]) *outcome {
	o := &outcome{id: id}
	tr.outs = append(tr.outs, o)
	p.Then(func(resp *testpb.EchoResponse) {
		o.resp = resp
		o.settled++
		tr.settled++
	}).OnError(func(err error) {
		o.err = err
		o.settled++
		tr.settled++
	})
	return o
}

// call submits one call of m with request id and tracks it.
func (tr *tracker) call(r *reactor.Reactor, m *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse], id string, opts *calls.Options) *outcome {
	return tr.track(id, reactor.Call(r, m, &testpb.EchoRequest{Message: id}, opts))
}

// drain ticks r until every tracked call has settled, then checks each settled exactly once.
func (tr *tracker) drain(t *testing.T, r *reactor.Reactor) {
	t.Helper()
	waitFor(t, r, func() bool { return tr.settled >= len(tr.outs) })
	for _, o := range tr.outs {
		require.Equal(t, 1, o.settled, "call %s settled %d times", o.id, o.settled)
	}
}

// requireAllSucceeded fails the test if a tracked call failed or echoed the wrong message.
func (tr *tracker) requireAllSucceeded(t *testing.T) {
	t.Helper()
	for _, o := range tr.outs {
		require.NoError(t, o.err, "call %s", o.id)
		require.Equal(t, o.id, o.resp.GetMessage(), "call %s got another call's response", o.id)
	}
}

// burst submits n Echo calls, keeping at most window outstanding, and ticks until all have
// settled. The window keeps each call's wait for a free lane far below its timeout.
func burst(t *testing.T, r *reactor.Reactor, prefix string, n, window int) *tracker {
	t.Helper()
	tr := &tracker{}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for tr.settled < n {
		for len(tr.outs) < n && len(tr.outs)-tr.settled < window {
			tr.call(r, echo, prefix+strconv.Itoa(len(tr.outs)), nil)
		}
		select {
		case <-r.Ready():
			r.Tick(time.Second)
		case <-deadline.C:
			t.Fatalf("burst %s: %d of %d calls settled within %v", prefix, tr.settled, n, bound)
		}
	}
	for _, o := range tr.outs {
		require.Equal(t, 1, o.settled, "call %s settled %d times", o.id, o.settled)
	}
	return tr
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
