package reactor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCloseRejectsLaterCalls(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	require.NoError(t, h.Close(closeCtx(t, bound)))

	var cbErr error
	var onHost bool
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil).
		OnError(func(err error) { cbErr, onHost = err, h.onHost() })
	require.ErrorIs(t, p.Err(), calls.ErrClosed)
	require.Equal(t, codes.Canceled, status.Code(p.Err()))
	require.Equal(t, calls.Failed, p.State())
	require.Nil(t, cbErr, "callback ran inside Call or OnError")

	require.True(t, readySignalled(r), "Ready signals the rejection after Close too")
	require.Equal(t, 1, h.Tick(time.Second).Delivered)
	require.Same(t, p.Err(), cbErr)
	require.True(t, onHost)
	require.EqualValues(t, 1, r.Stats().Closed)
	for _, inv := range r.Stats().Invokers {
		require.Equal(t, reactor.InvokerStopped, inv.State)
	}
}

func TestCloseLetsAdmittedCallsFinish(t *testing.T) {
	// One lane: "a" in flight, "b" queued behind it.
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 1})

	var got []string
	var offHost int
	for _, m := range []string{"a", "b"} {
		reactor.Call(r, echo, held(m), nil).
			Then(func(resp *testpb.EchoResponse) { got = append(got, resp.GetMessage()) }).
			Always(func() {
				if !h.onHost() {
					offHost++
				}
			})
	}
	g.waitEntered(t, 1)
	waitGauges(t, r, 1, 1)

	// Release the calls only once Close has started: a call submitted then fails with
	// ErrClosed at once. The probe's nil request keeps it from being admitted before that.
	released := make(chan struct{})
	go func() {
		defer close(released)
		assert.Eventually(t, func() bool {
			return errors.Is(reactor.Call(r, echo, nil, nil).Err(), calls.ErrClosed)
		}, bound, poll, "Close did not start")
		g.releaseAll()
	}()
	require.NoError(t, h.Close(closeCtx(t, bound)))
	<-released
	require.Equal(t, []string{"a", "b"}, got, "admitted calls finished and their callbacks ran before Close returned")
	require.Zero(t, offHost, "callbacks ran off the Close goroutine")
	require.EqualValues(t, 2, r.Stats().Succeeded)
	require.Zero(t, r.Stats().Pending)

	// A second Close returns the first result, and runs callbacks queued since.
	var lateErr error
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).OnError(func(err error) { lateErr = err })
	require.NoError(t, h.Close(context.Background()))
	require.ErrorIs(t, lateErr, calls.ErrClosed)
}

func TestCloseCutsOffCallsWhenContextEnds(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 1}) // never released before Close: "a" in flight, "b" queued, until cut off

	errs := map[string]error{}
	for _, m := range []string{"a", "b"} {
		reactor.Call(r, echo, held(m), nil).OnError(func(err error) { errs[m] = err })
	}
	g.waitEntered(t, 1)
	waitGauges(t, r, 1, 1)

	ctx := closeCtx(t, 100*time.Millisecond)
	err := h.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualError(t, err, "prpc: Close cut off 2 calls still running: context deadline exceeded")
	require.Len(t, errs, 2, "every callback ran before Close returned")
	for m, e := range errs {
		require.ErrorIs(t, e, calls.ErrClosed, m)
		require.ErrorIs(t, e, context.DeadlineExceeded, m)
		require.Equal(t, codes.Canceled, status.Code(e), m)
	}
	require.Eventually(t, func() bool { return g.cancelled.Load() == 1 }, bound, poll, "the server saw the in-flight call cancelled")
	require.Equal(t, []string{"a"}, g.seenMessages(), "the queued call was never sent")
	s := r.Stats()
	require.EqualValues(t, 2, s.Closed)
	require.EqualValues(t, 2, s.CutOff)
	require.Zero(t, s.InFlight)
	require.Zero(t, s.Pending)

	require.Equal(t, err, h.Close(context.Background()), "a second Close returns the first result")
}

func TestClosePanicsInsideCallback(t *testing.T) {
	requireRefusedInCallback(t, func(r *reactor.Reactor) { _ = r.Close(context.Background()) })
}

// TestNilContextPanics checks that Shutdown and Close given a nil context panic with a
// "prpc:" message that names the method and says that the reactor is still open, before they
// do anything: the reactor then serves calls, ticks, and closes as before.
func TestNilContextPanics(t *testing.T) {
	var noCtx context.Context // nil, in a variable: staticcheck rejects a nil literal
	cases := []struct {
		name string
		stop func(r *reactor.Reactor)
	}{
		{"Close", func(r *reactor.Reactor) { _ = r.Close(noCtx) }},
		{"Shutdown", func(r *reactor.Reactor) { _ = r.Shutdown(noCtx) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newReactor(t, srv, reactor.Config{})
			h := newHost(t, r)
			require.PanicsWithValue(t, "prpc: Reactor."+tc.name+" with a nil context.Context, and refused: "+
				"the reactor is still open; pass context.Background() for no deadline", func() { tc.stop(r) })
			c := h.submit(echo, echoReq("after"), nil)
			h.settle(c)
			requireEchoed(t, []*call{c})
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			require.NoError(t, h.Close(ctx))
			require.Zero(t, r.Stats().CutOff)
		})
	}
}
