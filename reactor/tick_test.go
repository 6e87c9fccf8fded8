package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Tick behaviour.

func TestTickDeliversInCompletionOrder(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 3})
	var order []string
	settleInOrder(t, r, g, func(m string) { order = append(order, m) }, []string{"a", "b", "c"}, []string{"c", "a", "b"})

	rep := h.Tick(time.Second)
	require.Equal(t, []string{"c", "a", "b"}, order, "delivered in completion order, not submission order")
	require.Equal(t, reactor.TickReport{Delivered: 3, Remaining: 0, Elapsed: rep.Elapsed}, rep)
}

func TestTickDeliversOnlyWhatWasReadyWhenItStarted(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{})

	var bRan bool
	var bSettled bool // B's completion was queued for Tick while A's callback still ran
	settleInOrder(t, r, g, func(string) {
		// A's callback submits B and waits, inside this Tick, until B is waiting for Tick.
		reactor.Call(r, echo, held("b"), nil).Then(func(*testpb.EchoResponse) { bRan = true })
		select {
		case <-g.entered:
		case <-time.After(bound):
			return // bSettled stays false
		}
		inFlight := eventually(func() bool { return r.Stats().InFlight == 1 })
		g.release("b")
		bSettled = inFlight && eventually(func() bool { return r.Stats().InFlight == 0 })
	}, []string{"a"}, []string{"a"})

	rep := h.Tick(time.Hour)
	require.True(t, bSettled, "B did not settle while A's callback ran")
	require.False(t, bRan, "a call submitted by a callback was delivered in the same Tick")
	require.Equal(t, 1, rep.Delivered)
	require.Equal(t, 0, rep.Remaining, "calls settled after Tick started are not its leftovers")

	rep = h.Tick(time.Hour)
	require.True(t, bRan, "B is delivered by the next Tick")
	require.Equal(t, 1, rep.Delivered)
}

func TestTickNonPositiveBudgetDeliversExactlyOne(t *testing.T) {
	for _, budget := range []time.Duration{0, -time.Second} {
		t.Run(budget.String(), func(t *testing.T) {
			r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 3})
			var order []string
			msgs := []string{"a", "b", "c"}
			settleInOrder(t, r, g, func(m string) { order = append(order, m) }, msgs, msgs)

			for i := range msgs {
				drainReady(r)
				rep := h.Tick(budget)
				require.Equal(t, 1, rep.Delivered, "Tick %d", i)
				require.Equal(t, len(msgs)-i-1, rep.Remaining, "Tick %d", i)
				require.Equal(t, msgs[:i+1], order, "leftovers keep their order")
				require.Equal(t, rep.Remaining > 0, readySignalled(r), "Ready is signalled again for leftovers only")
			}
			require.Equal(t, reactor.TickReport{}, h.Tick(budget), "idle")
		})
	}
}

func TestTickBudgetWithManualClock(t *testing.T) {
	clock := reactortest.NewManualClock(time.Now())
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 4, Clock: clock})

	// The budget is 10 ms of the manual clock: the first callback spends 4 ms, still within
	// it; the second 7 more, 11 ms in all, beyond it.
	spend := map[string]time.Duration{"1": 4 * time.Millisecond, "2": 7 * time.Millisecond}
	var order []string
	msgs := []string{"1", "2", "3", "4"}
	settleInOrder(t, r, g, func(m string) {
		order = append(order, m)
		clock.Advance(spend[m])
	}, msgs, msgs)

	drainReady(r)
	rep := h.Tick(10 * time.Millisecond)
	require.Equal(t, []string{"1", "2"}, order, "Tick stops after the callback that spent the budget")
	require.Equal(t, reactor.TickReport{Delivered: 2, Remaining: 2, Elapsed: 11 * time.Millisecond}, rep)
	require.True(t, readySignalled(r), "Ready is signalled again for the leftovers")

	rep = h.Tick(10 * time.Millisecond)
	require.Equal(t, msgs, order, "leftovers are delivered in order by the next Tick")
	require.Equal(t, reactor.TickReport{Delivered: 2, Remaining: 0, Elapsed: 0}, rep)
	require.False(t, readySignalled(r))
}

func TestTickPanicsWhenReentered(t *testing.T) {
	requireRefusedInCallback(t, func(r *reactor.Reactor) { r.Tick(time.Second) })
}

func TestTickPanicsWhenConcurrent(t *testing.T) {
	r, g, _ := startGated(t, reactor.Config{})

	inside, hold, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	settleInOrder(t, r, g, func(string) {
		close(inside)
		<-hold
	}, []string{"a"}, []string{"a"})
	go func() {
		defer close(done)
		r.Tick(time.Second)
	}()
	recv(t, inside, "the other goroutine's Tick running the callback")
	requirePrpcPanic(t, func() { r.Tick(time.Second) })
	requirePrpcPanic(t, func() { _ = r.Close(context.Background()) })
	close(hold)
	<-done
	require.Equal(t, reactor.TickReport{}, r.Tick(time.Second), "usable again once the other Tick returned")
}

func TestTickIdleAllocatesNothing(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	require.Zero(t, testing.AllocsPerRun(1000, func() { r.Tick(time.Millisecond) }), "fresh reactor")

	var n int
	for range 10 {
		reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { n++ })
	}
	h.waitFor(func() bool { return n == 10 })
	require.Zero(t, testing.AllocsPerRun(1000, func() { r.Tick(time.Millisecond) }), "after deliveries")
}

// Wake-ups.
