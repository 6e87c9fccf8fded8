package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestTickStopsAtItsBudget checks that a Tick overruns its budget by one callback at most, and
// that once it has seen its budget spent it delivers nothing more, not even the rejections
// waiting after the settled calls. The simulation found both broken when Tick read the clock
// only every few deliveries while callbacks were cheap: a cheap callback let the next, dear
// ones run unchecked, and a Tick that ran out of budget in such a batch went on to deliver
// waiting rejections.
func TestTickStopsAtItsBudget(t *testing.T) {
	const (
		budget   = 64 * time.Millisecond
		cost     = 900 * time.Microsecond // cheap: under a 64th of the budget
		settled  = 100
		rejected = 10
	)
	clock := reactortest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: clock})
	ran, rejections := 0, 0
	for range settled {
		require.NoError(t, reactor.Go(r, echo, &testpb.EchoRequest{}, nil, func(*testpb.EchoResponse, error) {
			ran++
			clock.Advance(cost)
		}))
	}
	require.Eventually(t, func() bool {
		s := r.Stats()
		return s.Pending == settled && s.InFlight == 0 && s.Queued == 0
	}, 10*time.Second, time.Millisecond, "every call settled, waiting for Tick")
	for range rejected {
		require.Error(t, reactor.Go(r, echo, nil, nil, func(*testpb.EchoResponse, error) { rejections++ }))
	}

	start := clock.Now()
	rep := r.Tick(budget)
	elapsed := clock.Now().Sub(start)
	require.Zero(t, rejections, "a rejection was delivered after the budget was spent")
	require.Less(t, ran, settled, "the budget ran out before every call was delivered")
	require.Equal(t, ran, rep.Delivered)
	require.LessOrEqual(t, elapsed, budget+cost, "an overrun of one callback at most")
	require.Equal(t, settled-ran+rejected, rep.Remaining)
}
