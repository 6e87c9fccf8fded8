package reactor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Coalesced reads whose calls arrive spread over time, as a game's do: a call joins the
// transport call in progress whatever its deadline, while that transport call is young
// enough; deadlines stay exact; and every call's response is its own.

// coalescingAged is coalescing with echo's CoalesceMaxAge set to maxAge.
func coalescingAged(t *testing.T, g *gatedBackend, maxAge time.Duration) (*reactor.Reactor, *reactortest.ManualClock) {
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, g.Backend, reactor.Config{
		Clock: clk, Workers: 1, BatchSize: 4, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Coalesce: true, CoalesceMaxAge: maxAge}},
	})
	t.Cleanup(g.open)
	return r, clk
}

// TestCoalesceWhateverDeadline checks that a call joins the transport call in progress
// whether its deadline is later or earlier than the transport call's, and that a joined call
// whose deadline passes settles alone, at once, while the others go on.
func TestCoalesceWhateverDeadline(t *testing.T) {
	g := newGatedBackend(codes.OK)
	r, clk := coalescing(t, g, 0)
	first := submitEcho(r, "read", &calls.Options{Timeout: time.Second})
	g.waitEntered(t, 1)
	later := submitEcho(r, "read", &calls.Options{Timeout: 2 * time.Second})        // a later deadline
	short := submitEcho(r, "read", &calls.Options{Timeout: 100 * time.Millisecond}) // an earlier one
	waitCoalesced(t, r, echo.Path(), 2)

	clk.Advance(100 * time.Millisecond)
	tickUntilDelivered(t, r, []*outcome{short})
	require.ErrorIs(t, short.err, calls.ErrTimeout)
	var ce *calls.Error
	require.ErrorAs(t, short.err, &ce)
	require.False(t, ce.NotSent(), "a call that joined a transport call may have been sent")
	require.Nil(t, first.err)

	g.open()
	tickUntilDelivered(t, r, []*outcome{first, later})
	require.NoError(t, first.err)
	require.NoError(t, later.err)
	require.Equal(t, 1, g.Calls(echo.Path()), "one transport call served all three")
}

// TestCoalesceResendsForLaterDeadlines checks that a transport call that ends at its deadline
// fails only the calls whose deadlines have passed: the calls that joined it with later
// deadlines go on in one new transport call, with the latest of their deadlines, which a call
// made after it may join in turn.
func TestCoalesceResendsForLaterDeadlines(t *testing.T) {
	g := newGatedBackend(codes.OK)
	r, clk := coalescing(t, g, 0)
	start := clk.Now()
	first := submitEcho(r, "read", &calls.Options{Timeout: time.Second})
	g.waitEntered(t, 1)
	later := submitEcho(r, "read", &calls.Options{Timeout: 3 * time.Second})
	latest := submitEcho(r, "read", &calls.Options{Timeout: 5 * time.Second})
	waitCoalesced(t, r, echo.Path(), 2)

	clk.Advance(time.Second) // the transport call's deadline, the first call's
	tickUntilDelivered(t, r, []*outcome{first})
	require.ErrorIs(t, first.err, calls.ErrTimeout)
	require.ErrorIs(t, recv(t, g.ended, "the first transport call ending"), context.DeadlineExceeded)
	g.waitEntered(t, 1) // the resend
	require.Nil(t, later.err, "a call with a later deadline is not failed by the transport call's")
	require.Nil(t, latest.err)

	joiner := submitEcho(r, "read", &calls.Options{Timeout: 2 * time.Second})
	waitCoalesced(t, r, echo.Path(), 3)
	g.open()
	tickUntilDelivered(t, r, []*outcome{later, latest, joiner})
	for _, o := range []*outcome{later, latest, joiner} {
		require.NoError(t, o.err)
		require.Equal(t, "read", o.resp.GetMessage())
	}
	require.Equal(t, 2, g.Calls(echo.Path()), "the first transport call and one resend")
	require.Equal(t, start.Add(time.Second), clk.Now(), "nothing waited for the clock beyond the first deadline")
}

// TestCoalesceResendDeadline checks that the resend carries the latest deadline of the calls
// it serves: it ends when that passes, failing them all, each no earlier than its own.
func TestCoalesceResendDeadline(t *testing.T) {
	g := newGatedBackend(codes.OK)
	r, clk := coalescing(t, g, 0)
	first := submitEcho(r, "read", &calls.Options{Timeout: time.Second})
	g.waitEntered(t, 1)
	later := submitEcho(r, "read", &calls.Options{Timeout: 2 * time.Second})
	latest := submitEcho(r, "read", &calls.Options{Timeout: 3 * time.Second})
	waitCoalesced(t, r, echo.Path(), 2)
	clk.Advance(time.Second)
	g.waitEntered(t, 1) // the resend
	tickUntilDelivered(t, r, []*outcome{first})

	clk.Advance(time.Second)
	tickUntilDelivered(t, r, []*outcome{later})
	require.ErrorIs(t, later.err, calls.ErrTimeout)
	require.Nil(t, latest.err, "the resend runs on for the call whose deadline is later")
	clk.Advance(time.Second)
	tickUntilDelivered(t, r, []*outcome{latest})
	require.ErrorIs(t, latest.err, calls.ErrTimeout)
	require.Equal(t, 2, g.Calls(echo.Path()), "no resend once every call's deadline passed")
}

// TestCoalesceMaxAge checks that a call joins a transport call only while it is at most
// CoalesceMaxAge old, and otherwise sends its own, which the calls after it join.
func TestCoalesceMaxAge(t *testing.T) {
	cases := []struct {
		name    string
		maxAge  time.Duration
		elapsed time.Duration // between the first call and the next two
		backend int
	}{
		{name: "young enough", maxAge: 100 * time.Millisecond, elapsed: 100 * time.Millisecond, backend: 1},
		{name: "too old", maxAge: 100 * time.Millisecond, elapsed: 101 * time.Millisecond, backend: 2},
		{name: "the default", elapsed: 500 * time.Millisecond, backend: 1},
		{name: "past the default", elapsed: 501 * time.Millisecond, backend: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatedBackend(codes.OK)
			r, clk := coalescingAged(t, g, tc.maxAge)
			outs := []*outcome{submitEcho(r, "read", nil)}
			g.waitEntered(t, 1)
			clk.Advance(tc.elapsed)
			outs = append(outs, submitEcho(r, "read", nil))
			g.waitEntered(t, tc.backend-1)
			outs = append(outs, submitEcho(r, "read", nil))
			waitCoalesced(t, r, echo.Path(), uint64(3-tc.backend))
			g.open()
			tickUntilDelivered(t, r, outs)
			for i, o := range outs {
				require.NoError(t, o.err, "call %d", i)
			}
			require.Equal(t, tc.backend, g.Calls(echo.Path()))
		})
	}
}

// TestCoalescedResponsesAreOwn checks that every call a transport call serves gets a message
// of its own, unchanged by the callbacks of the others, which change theirs as soon as Tick
// runs them, while the lane settles the rest: under -race, a message shared or copied after
// the first call was settled is a data race, and a changed message fails the check.
func TestCoalescedResponsesAreOwn(t *testing.T) {
	const rounds, n = 5, 64
	for round := range rounds {
		g := newGatedBackend(codes.OK)
		r, _ := coalescing(t, g, n)
		var changed []string
		delivered := 0
		callback := func(resp *testpb.EchoResponse, err error) {
			delivered++
			if err != nil || resp.GetMessage() != "read" {
				changed = append(changed, fmt.Sprint(resp.GetMessage(), err))
				return
			}
			resp.Message = "changed by its caller" // the caller's own message, to do with as it likes
		}
		reactor.Go(r, echo, &testpb.EchoRequest{Message: "read"}, nil, callback)
		g.waitEntered(t, 1)
		for range n - 1 {
			reactor.Go(r, echo, &testpb.EchoRequest{Message: "read"}, nil, callback)
		}
		waitCoalesced(t, r, echo.Path(), n-1)
		g.open()
		// Tick runs the first callbacks while the lane may still be settling the others.
		require.Eventually(t, func() bool { r.Tick(0); return delivered == n }, 5*time.Second, 10*time.Microsecond)
		require.Empty(t, changed, "round %d: callbacks saw a response another caller changed, or an error", round)
		require.Equal(t, 1, g.Calls(echo.Path()))
	}
}
