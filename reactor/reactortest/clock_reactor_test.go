package reactortest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestManualClockTimesOutCalls follows the steps ManualClock documents to time calls out (the
// reactor has taken the calls; WaitTimerBy their earliest deadline; Advance to it) with the
// reactor's one timer as each scenario leaves it: never set; left by a completed call, due
// after the deadlines or before them; shared by several calls with one deadline.
func TestManualClockTimesOutCalls(t *testing.T) {
	// Bounds: every wait ends as soon as the reactor acts on a step; the 10 s context only
	// stops a broken step from hanging the test.
	const keeper = 5 * time.Second // the timeout of a call that keeps a left timer in place
	tests := []struct {
		name string
		// earlier is the timeout of a call answered before the held calls are made, once the
		// reactor's timer is due at its deadline; a held call with timeout keeper is made
		// before it, so that the timer stays set after it completes. 0: no such calls.
		earlier  time.Duration
		timeouts []time.Duration // of the calls the backend holds until they time out
	}{
		{"no timer before", 0, []time.Duration{2 * time.Second}},
		{"timer left due after the deadlines", 4 * time.Second, []time.Duration{time.Second, 3 * time.Second}},
		{"timer left due before the deadlines", time.Second, []time.Duration{2 * time.Second, 4 * time.Second}},
		{"one timer for calls sharing a deadline", 0, []time.Duration{time.Second, time.Second, time.Second, 4 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			clock := reactortest.NewManualClock(start)
			entered, release := make(chan struct{}, len(tc.timeouts)+2), make(chan struct{})
			b := reactortest.NewBackend()
			reactortest.Handle(b, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				entered <- struct{}{}
				if req.GetMessage() == "earlier" {
					<-release
					return &testpb.EchoResponse{}, nil
				}
				<-ctx.Done() // until the reactor times the call out
				return nil, ctx.Err()
			})
			r := reactortest.NewReactor(t, b, reactor.Config{Clock: clock})
			recv := func(what string) {
				t.Helper()
				select {
				case <-entered:
				case <-ctx.Done():
					t.Fatalf("%s: the backend did not get the call", what)
				}
			}

			timeouts := tc.timeouts
			if tc.earlier > 0 {
				timeouts = append([]time.Duration{keeper}, tc.timeouts...)
			}
			timedOut := make([]bool, len(timeouts)) // written by callbacks, on this goroutine
			call := func(i int, timeout time.Duration) {
				reactor.Call(r, echo, &testpb.EchoRequest{Message: "held"}, &calls.Options{Timeout: timeout}).
					OnError(func(err error) { timedOut[i] = errors.Is(err, calls.ErrTimeout) })
			}
			if tc.earlier > 0 {
				call(0, keeper)
				recv("keeper")
				var ok bool
				reactor.Call(r, echo, &testpb.EchoRequest{Message: "earlier"}, &calls.Options{Timeout: tc.earlier}).
					Then(func(*testpb.EchoResponse) { ok = true })
				recv("earlier")
				require.NoError(t, clock.WaitTimerBy(ctx, start.Add(tc.earlier)))
				close(release)
				for !ok {
					select {
					case <-r.Ready():
						r.Tick(time.Second)
					case <-ctx.Done():
						t.Fatal("the earlier call was not delivered")
					}
				}
				require.Equal(t, 1, clock.Timers(), "the reactor left its timer set")
			}
			for i, d := range timeouts {
				if tc.earlier == 0 || i > 0 {
					call(i, d)
					recv("held") // step 1: the reactor has taken the call
				}
			}

			deadlines := slices.Compact(slices.Sorted(slices.Values(timeouts)))
			for _, d := range deadlines {
				require.NoError(t, clock.WaitTimerBy(ctx, start.Add(d))) // step 2
				require.Equal(t, 1, clock.Timers(), "one timer, whatever the number of calls")
				clock.Set(start.Add(d)) // step 3
				want := make([]bool, len(timeouts))
				for i, to := range timeouts {
					want[i] = to <= d
				}
				for !slices.Equal(want, timedOut) {
					select {
					case <-r.Ready():
						r.Tick(time.Second)
					case <-ctx.Done():
						t.Fatalf("at %v: timed out %v, want %v", d, timedOut, want)
					}
				}
			}
			reactortest.Flush(t, r)
			require.EqualValues(t, len(timeouts), r.Stats().TimedOut)
			require.Zero(t, clock.Timers(), "no call pending, no timer")
		})
	}
}
