package reactor_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestTimeoutRules checks each documented timeout rule of calls.Options.Timeout on a manual
// clock: a zero or absent timeout means Config.DefaultTimeout (the call is pending 1 ms
// before it and fails with ErrTimeout at it), exactly MaxTimeout is allowed, and a negative
// timeout or one above MaxTimeout fails with ErrInvalidArgument when Call returns, naming the
// bound, and never reaches the server. The timeouts are minutes long, so gRPC's own deadline,
// on the system clock, cannot fire during the test.
func TestTimeoutRules(t *testing.T) {
	const (
		defaultTimeout = 2 * time.Minute
		maxTimeout     = 10 * time.Minute
	)
	tests := []struct {
		name    string
		opts    *calls.Options
		want    time.Duration // the timeout in effect; 0: rejected at once
		wantMsg string        // for a rejection, part of its message
	}{
		{name: "zero means DefaultTimeout", opts: &calls.Options{Timeout: 0}, want: defaultTimeout},
		{name: "nil options mean DefaultTimeout", opts: nil, want: defaultTimeout},
		{name: "options without a timeout mean DefaultTimeout", opts: &calls.Options{Metadata: metadata.Pairs("x-k", "v")}, want: defaultTimeout},
		{name: "a timeout of its own", opts: &calls.Options{Timeout: 3 * time.Minute}, want: 3 * time.Minute},
		{name: "exactly MaxTimeout is allowed", opts: &calls.Options{Timeout: maxTimeout}, want: maxTimeout},
		{name: "negative", opts: &calls.Options{Timeout: -time.Nanosecond}, wantMsg: "negative timeout -1ns"},
		{name: "most negative", opts: &calls.Options{Timeout: math.MinInt64}, wantMsg: "negative timeout"},
		{name: "just above MaxTimeout", opts: &calls.Options{Timeout: maxTimeout + time.Nanosecond}, wantMsg: "is above MaxTimeout 10m0s"},
		{name: "largest duration", opts: &calls.Options{Timeout: math.MaxInt64}, wantMsg: "is above MaxTimeout 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakCheck(t)
			srv := testserver.Start(t)
			clock := reactortest.NewManualClock(time.Now())
			h := startHost(t, reactor.Config{Target: srv.Addr(), Clock: clock, DefaultTimeout: defaultTimeout, MaxTimeout: maxTimeout})
			start := clock.Now()
			c := h.submit(echo, &testpb.EchoRequest{Message: "held", Block: true}, tt.opts)

			if tt.want == 0 {
				require.True(t, c.rejected, "rejected when Call returns")
				require.ErrorIs(t, c.p.Err(), calls.ErrInvalidArgument)
				require.Contains(t, c.p.Err().Error(), tt.wantMsg)
				require.False(t, c.done(), "callbacks run only in Tick")
				h.settle(c)
				require.ErrorIs(t, c.err, calls.ErrInvalidArgument)
				require.Equal(t, codes.InvalidArgument, c.code())
				// A valid call after it is the only one the server sees.
				probe := h.submit(echo, echoReq("probe"), nil)
				h.settle(probe)
				require.NoError(t, probe.err)
				require.EqualValues(t, 1, srv.Calls(), "the rejected call never reached the server")
				return
			}

			require.False(t, c.rejected)
			h.pollFor("call at the server", func() bool { return srv.Calls() == 1 })
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			require.NoError(t, clock.WaitTimers(ctx, 1))
			clock.Set(start.Add(tt.want - time.Millisecond))
			h.pause(10 * time.Millisecond) // a settlement would have time to show
			require.Equal(t, 1, clock.Timers(), "the deadline timer has not fired 1 ms early")
			require.False(t, c.done(), "pending 1 ms before the deadline")
			require.Equal(t, calls.Pending, c.p.State())

			clock.Set(start.Add(tt.want))
			h.settle(c)
			require.ErrorIs(t, c.err, calls.ErrTimeout)
			require.Contains(t, c.err.Error(), fmt.Sprintf("deadline exceeded after %v (timeout %v)", tt.want, tt.want))
			h.pollFor("the server saw the call cancelled", func() bool { return srv.CancelledCount() == 1 })
		})
	}
}
