package reactor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCancelInFlightCall(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, longTimeouts(reactor.Config{}))
	h := newHost(t, r)

	var got error
	p := reactor.Call(r, echo, &testpb.EchoRequest{Block: true}, nil).OnError(func(err error) { got = err })
	require.Eventually(t, func() bool { return srv.Calls() == 1 }, bound, poll)
	p.Cancel()
	p.Cancel() // idempotent
	h.waitFor(func() bool { return got != nil })
	require.ErrorIs(t, got, calls.ErrCancelled)
	require.Equal(t, codes.Canceled, status.Code(got))
	require.Same(t, got, p.Err())
	recv(t, srv.Cancelled(), "the server seeing the call cancelled")
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, bound, poll)
	require.EqualValues(t, 1, r.Stats().Cancelled)
}

func TestCancelQueuedCall(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 1})

	results := map[string]error{}
	call := func(req *testpb.EchoRequest) *echoPromise {
		m := req.GetMessage()
		return reactor.Call(r, echo, req, nil).
			Then(func(*testpb.EchoResponse) { results[m] = nil }).
			OnError(func(err error) { results[m] = err })
	}
	call(held("a"))
	b := call(held("b"))
	g.waitEntered(t, 1)
	waitGauges(t, r, 1, 1)

	b.Cancel()
	h.waitFor(func() bool { _, ok := results["b"]; return ok })
	require.ErrorIs(t, results["b"], calls.ErrCancelled, "settled while still queued")
	require.NotContains(t, results, "a", "a is still held")

	g.release("a")
	call(&testpb.EchoRequest{Message: "c"}) // FIFO: dispatched after b would have been
	h.waitFor(func() bool { return len(results) == 3 })
	require.NoError(t, results["a"])
	require.NoError(t, results["c"])
	require.Equal(t, []string{"a", "c"}, g.seenMessages(), "the cancelled queued call was never sent")
}

func TestCancelParentContext(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state string // of the call when its context is cancelled
	}{{"in flight", "in flight"}, {"queued", "queued"}, {"already cancelled", "before Call"}} {
		t.Run(tc.name, func(t *testing.T) {
			// One lane, so that a call can be held in flight and another queued behind it.
			r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 1})

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch tc.state {
			case "before Call":
				cancel()
			case "queued":
				reactor.Call(r, echo, held("blocker"), nil) // released only when the test ends
				g.waitEntered(t, 1)
			}
			var got error
			p := reactor.Call(r, echo, held("call"), &calls.Options{Context: ctx}).
				OnError(func(err error) { got = err })
			switch tc.state {
			case "in flight":
				g.waitEntered(t, 1)
				waitGauges(t, r, 1, 0)
				cancel()
			case "queued":
				waitGauges(t, r, 1, 1)
				cancel() // settles at once, without waiting for the lane
			}
			h.waitFor(func() bool { return got != nil })
			require.ErrorIs(t, got, calls.ErrCancelled)
			require.ErrorIs(t, got, context.Canceled)
			require.Equal(t, codes.Canceled, status.Code(got))
			require.Same(t, got, p.Err())
			require.EqualValues(t, 1, r.Stats().Cancelled)
		})
	}
}

func TestCancelAfterSettlementIsNoOp(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{})
	log := &callbackLog{h: h}

	// Settled, not yet delivered.
	undelivered := reactor.Call(r, echo, held("a"), nil)
	log.attach(undelivered, "a-")
	g.waitEntered(t, 1)
	waitGauges(t, r, 1, 0)
	g.release("a")
	waitGauges(t, r, 0, 0)
	undelivered.Cancel()

	// Delivered.
	var done bool
	delivered := reactor.Call(r, echo, &testpb.EchoRequest{Message: "b"}, nil)
	log.attach(delivered, "b-")
	delivered.Always(func() { done = true })
	h.waitFor(func() bool { return done })
	delivered.Cancel()

	// A round trip after both cancels: the reactor handles events in order, so it has seen
	// them by the time this call is delivered.
	var flushed bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { flushed = true })
	h.waitFor(func() bool { return flushed })
	h.Tick(time.Second)

	for _, p := range []*echoPromise{undelivered, delivered} {
		require.Equal(t, calls.Succeeded, p.State())
		require.NoError(t, p.Err())
	}
	require.Equal(t, []string{"a-then1", "a-always1", "a-then2", "a-always2", "b-then1", "b-always1", "b-then2", "b-always2"}, log.ran)
	require.Zero(t, r.Stats().Cancelled)
	require.EqualValues(t, 3, r.Stats().Succeeded)
}

// TestCancelLongRunningCall checks that Promise.Cancel reaches a call that is still running a
// lap of the submission ring later: with MaxOutstanding 4, the quick calls submitted after a
// held one reuse its slot of the ring, and the held call's Cancel must still cut it.
func TestCancelLongRunningCall(t *testing.T) {
	_, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 2, MaxOutstanding: 4})
	long := h.submit(echo, held("long"), nil)
	g.waitEntered(t, 1)
	for round := range 3 { // three at a time, the room the held call leaves
		var quick []*call
		for i := range 3 {
			quick = append(quick, h.submit(echo, echoReq(fmt.Sprintf("quick%d.%d", round, i)), nil))
		}
		h.settle(quick...)
		requireEchoed(t, quick)
	}
	require.False(t, long.done())
	long.p.Cancel()
	h.settle(long)
	require.ErrorIs(t, long.err, calls.ErrCancelled)
}
