package reactor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/reactor"
)

// Overload never collapses: a call that can no longer finish in time is shed, never sent; a
// standing queue is served newest first; a success that waited at the backend close to its
// deadline shrinks the adaptive limit.

// teach runs one echo call on h that takes d, on the manual clock, so that the method's
// recent calls took at least d.
func teach(t *testing.T, r *reactor.Reactor, h *heldBackend, clock interface{ Advance(time.Duration) }, d time.Duration) {
	t.Helper()
	o := submitEcho(r, "teach", &calls.Options{Timeout: 4 * time.Second})
	c := h.next(t)
	clock.Advance(d)
	c.outcome <- nil
	tickUntilDelivered(t, r, []*outcome{o})
	require.NoError(t, o.err)
}

// TestShedCallsThatCannotFinish checks that a call whose time left, when a lane is free to
// send it, is less than its method's recent calls took fails at once with ErrShed, never
// sent and before its deadline, while a call with that much time is sent; and that a method
// whose calls have not succeeded for two windows sheds nothing.
func TestShedCallsThatCannotFinish(t *testing.T) {
	const took = 100 * time.Millisecond
	cases := []struct {
		name    string
		timeout time.Duration
		idle    time.Duration // the clock moves on this much after the lesson
		shed    bool
	}{
		{name: "less time than the recent calls took", timeout: took - time.Millisecond, shed: true},
		{name: "as much time", timeout: took},
		{name: "more time", timeout: 2 * took},
		{name: "a second later: the lesson still holds", timeout: took / 2, idle: time.Second, shed: true},
		{name: "two seconds later: forgotten", timeout: took / 2, idle: 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldBackend(t)
			r, clock := newLimitedReactor(t, h, 1, 2, &reactor.AdaptiveLimit{Disabled: true})
			teach(t, r, h, clock, took)
			clock.Advance(tc.idle)
			o := submitEcho(r, "x", &calls.Options{Timeout: tc.timeout})
			if !tc.shed {
				h.next(t).outcome <- nil
				tickUntilDelivered(t, r, []*outcome{o})
				require.NoError(t, o.err)
				require.Zero(t, r.Stats().Shed)
				return
			}
			tickUntilDelivered(t, r, []*outcome{o})
			require.ErrorIs(t, o.err, calls.ErrShed)
			require.False(t, errors.Is(o.err, calls.ErrTimeout), "not a deadline error: the deadline has not passed")
			require.Equal(t, codes.ResourceExhausted, status.Code(o.err))
			var ce *calls.Error
			require.ErrorAs(t, o.err, &ce)
			require.True(t, ce.NotSent())
			require.Contains(t, ce.Message(), "left before its deadline")
			select {
			case c := <-h.started:
				t.Fatalf("a shed call reached the backend: %s", c.id)
			default:
			}
			st := r.Stats()
			require.Equal(t, uint64(1), st.Shed)
			require.Equal(t, uint64(1), st.NeverSent)
			require.Equal(t, uint64(1), st.Methods[echo.Path()].Shed)
			require.Equal(t, uint64(1), st.Failed[codes.ResourceExhausted])
		})
	}
}

// TestStandingQueueServesNewestFirst checks that calls waiting for the one lane are sent in
// submission order while the queue drains, and newest first once it has not been empty for a
// while, critical calls first either way.
func TestStandingQueueServesNewestFirst(t *testing.T) {
	cases := []struct {
		name  string
		wait  time.Duration // between the first waiting calls and the last
		crit  string        // the call submitted critical, if any
		order []string
	}{
		{name: "draining: submission order", wait: 50 * time.Millisecond, order: []string{"b", "c", "d"}},
		{name: "standing: newest first", wait: 100 * time.Millisecond, order: []string{"d", "c", "b"}},
		{name: "standing: critical first", wait: 100 * time.Millisecond, crit: "b", order: []string{"b", "d", "c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldBackend(t)
			r, clock := newLimitedReactor(t, h, 1, 1, &reactor.AdaptiveLimit{Disabled: true})
			a := submitEcho(r, "a", &calls.Options{Timeout: 4 * time.Second})
			held := h.next(t)
			opts := func(id string) *calls.Options {
				return &calls.Options{Timeout: 4 * time.Second, Critical: id == tc.crit}
			}
			outs := []*outcome{a, submitEcho(r, "b", opts("b")), submitEcho(r, "c", opts("c"))}
			require.Eventually(t, func() bool { return r.Stats().Queued == 2 }, 5*time.Second, time.Millisecond)
			clock.Advance(tc.wait)
			// d's deadline is the earliest: the reactor goroutine sets its timer for it once it
			// has queued d for the lanes (the Queued gauge counts d a moment before), so that
			// the lane, released below, finds every call in the queue.
			d := opts("d")
			d.Timeout = 3 * time.Second
			outs = append(outs, submitEcho(r, "d", d))
			require.NoError(t, clock.WaitTimerBy(closeCtx(t, bound), clock.Now().Add(d.Timeout)))
			held.outcome <- nil
			var order []string
			for range tc.order {
				c := h.next(t)
				order = append(order, c.id)
				c.outcome <- nil
			}
			require.Equal(t, tc.order, order)
			tickUntilDelivered(t, r, outs)
		})
	}
}

// TestCongestedSuccessShrinksLimit checks that a success that took more than half the time
// its call had, and more than twice what the method's recent calls took, shrinks the adaptive
// limit as a drop would: the backend queued it close to failing. A success that took long but
// no more than the method's calls always take does not.
func TestCongestedSuccessShrinksLimit(t *testing.T) {
	cases := []struct {
		name      string
		floor     time.Duration // what the method's calls took before
		took      time.Duration // of a 100 ms timeout
		wantLimit int
	}{
		{name: "queued close to its deadline", floor: 10 * time.Millisecond, took: 60 * time.Millisecond, wantLimit: 3},
		{name: "half its time or less", floor: 10 * time.Millisecond, took: 50 * time.Millisecond, wantLimit: 4},
		{name: "slow, as the method always is", floor: 40 * time.Millisecond, took: 60 * time.Millisecond, wantLimit: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldBackend(t)
			r, clock := newLimitedReactor(t, h, 1, 4, nil)
			teach(t, r, h, clock, tc.floor)
			require.Equal(t, 4, r.Stats().InFlightLimit)
			o := submitEcho(r, "x", &calls.Options{Timeout: 100 * time.Millisecond})
			c := h.next(t)
			clock.Advance(tc.took)
			c.outcome <- nil
			tickUntilDelivered(t, r, []*outcome{o})
			require.NoError(t, o.err)
			// The lane gives its place back, with the call's signal, as it takes the next:
			// once no place is held, the limit has moved, or not.
			requireLimit(t, r, h, tc.wantLimit, 0)
		})
	}
}
