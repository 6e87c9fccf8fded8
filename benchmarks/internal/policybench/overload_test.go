package policybench

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// TestOverloadCases checks the cases' names, what each mode sets in reactor.Config, and how
// the report labels it.
func TestOverloadCases(t *testing.T) {
	type want struct {
		name, config, lanes string
		workers, batch      int
		limit               *reactor.AdaptiveLimit
	}
	var got []want
	for _, c := range OverloadCases(DefaultOverload()) {
		cfg := c.reactorConfig("127.0.0.1:1")
		require.Equal(t, c.Timeout, cfg.DefaultTimeout, c.Name())
		got = append(got, want{c.Name(), c.ConfigText(), c.Lanes(), cfg.Workers, cfg.BatchSize, cfg.AdaptiveLimit})
	}
	var modes []want
	for _, backend := range []string{"serves-cancelled", "drops-cancelled"} {
		modes = append(modes,
			want{backend + "/default", "defaults", "4×8", 0, 0, nil},
			want{backend + "/adaptive", "AdaptiveLimit{}", "4×8", 0, 0, &reactor.AdaptiveLimit{}},
			want{backend + "/fixed-4", "Workers 1, BatchSize 4, AdaptiveLimit{Disabled: true}", "1×4", 1, 4, &reactor.AdaptiveLimit{Disabled: true}})
	}
	require.Equal(t, modes, got, "the cases of BenchmarkOverload, in order")
	require.Panics(t, func() { OverloadConfig{Mode: Mode(9)}.reactorConfig("") })
}

func TestFieldsText(t *testing.T) {
	require.Equal(t, "{}", fieldsText(reflect.ValueOf(reactor.AdaptiveLimit{})))
	require.Equal(t, "{Floor: 2, Backoff: 0.5}", fieldsText(reflect.ValueOf(reactor.AdaptiveLimit{Floor: 2, Backoff: 0.5})))
}

// TestOverloadPerTick checks that a phase must make whole calls per tick for whole ticks.
func TestOverloadPerTick(t *testing.T) {
	c := DefaultOverload()
	for _, tc := range []struct {
		p    Phase
		want int
	}{
		{Phase{400, time.Second}, 20},
		{Phase{100, 100 * time.Millisecond}, 5},
		{Phase{110, time.Second}, 0},            // 5.5 a tick
		{Phase{400, 75 * time.Millisecond}, 0},  // 1.5 ticks
		{Phase{0, time.Second}, 0},              // no load
		{Phase{400, 0}, 0},                      // no time
		{Phase{-100, time.Second}, 0},           // a negative rate
		{Phase{100, -10 * time.Millisecond}, 0}, // a negative time
	} {
		n, err := c.perTick(tc.p, "Overload")
		require.Equal(t, tc.want, n, "%+v", tc.p)
		if tc.want == 0 {
			require.ErrorContains(t, err, "overload Overload", "%+v", tc.p)
		} else {
			require.NoError(t, err)
		}
	}
	bad := c.Short()
	bad.Recovery.Rate = 150
	_, err := RunOverload(bad)
	require.ErrorContains(t, err, "overload Recovery")
}

// TestOutcomeOf classifies the errors the scenario's calls can fail with.
func TestOutcomeOf(t *testing.T) {
	closed, overloaded := reactorErrors(t)
	for _, tc := range []struct {
		err     error
		want    outcome
		notSent bool
	}{
		{nil, outcomeOK, false},
		{fmt.Errorf("wrapped: %w", calls.ErrTimeout), outcomeTimeout, false},
		{overloaded, outcomeRefused, true},
		{calls.ErrOverloaded, outcomeRefused, true},
		{calls.ErrShed, outcomeShed, true},
		{closed, outcomeFailed, true},
		{errors.New("something else"), outcomeFailed, false},
		{status.Error(codes.Internal, "server"), outcomeFailed, false},
	} {
		o, notSent := outcomeOf(tc.err)
		require.Equal(t, tc.want, o, "%v", tc.err)
		require.Equal(t, tc.notSent, notSent, "%v", tc.err)
	}
}

// reactorErrors returns the errors a reactor fails calls with when it is closed and when it
// refuses them, each a *calls.Error that reports the call never sent.
func reactorErrors(t *testing.T) (closed, overloaded error) {
	t.Helper()
	r, err := reactor.New(reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure(), MaxOutstanding: 1})
	require.NoError(t, err)
	req := &testpb.EchoRequest{Message: "m"}
	discard := func(*testpb.EchoResponse, error) {}
	require.NoError(t, reactor.Go(r, echo, req, nil, discard))
	overloaded = reactor.Go(r, echo, req, nil, discard)
	require.ErrorIs(t, overloaded, calls.ErrOverloaded)
	require.NoError(t, r.Close(context.Background()))
	closed = reactor.Go(r, echo, req, nil, discard)
	require.ErrorIs(t, closed, calls.ErrClosed)
	return closed, overloaded
}

// TestOverloadBackend checks each backend's handling of a call whose client gave up while it
// waited for a worker, and of a call still waiting when the run ends.
func TestOverloadBackend(t *testing.T) {
	cfg := DefaultOverload()
	cfg.Workers, cfg.Service = 1, time.Millisecond
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	req := &testpb.EchoRequest{Message: "m"}

	t.Run("drops-cancelled", func(t *testing.T) {
		cfg.ServesCancelled = false
		b := newOverloadBackend(cfg)
		b.workers <- struct{}{} // the worker is busy
		_, err := b.handle(gone, req)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, b.executions.Load())
	})
	t.Run("serves-cancelled", func(t *testing.T) {
		cfg.ServesCancelled = true
		b := newOverloadBackend(cfg)
		b.workers <- struct{}{}
		done := make(chan error, 1)
		go func() {
			_, err := b.handle(gone, req)
			done <- err
		}()
		<-b.workers // the worker frees: the cancelled call takes it
		require.NoError(t, <-done)
		require.Equal(t, int64(1), b.executions.Load())
		require.Equal(t, int64(1), b.wasted.Load(), "served after its client gave up")

		_, err := b.handle(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, int64(2), b.executions.Load())
		require.Equal(t, int64(1), b.wasted.Load(), "a call served in time is not wasted")
	})
	for _, serves := range []bool{false, true} {
		cfg.ServesCancelled = serves
		t.Run(cfg.Backend()+"/stopped", func(t *testing.T) {
			b := newOverloadBackend(cfg)
			b.workers <- struct{}{}
			done := make(chan error, 1)
			go func() {
				_, err := b.handle(context.Background(), req)
				done <- err
			}()
			close(b.stop)
			require.Equal(t, codes.Unavailable, status.Code(<-done))
			require.Zero(t, b.executions.Load())
		})
	}
}

// TestRunOverload runs every case in short and checks that its figures add up: the host
// submits exactly the calls its phases ask for; each settles once, as a success or a timeout
// (prpc as it is sheds none and refuses none at this load); the goodput by bucket adds up to
// the successes; the backend executes no more calls than it received and wastes no more than
// it executes; the limit is reported under AdaptiveLimit and not with fixed lanes.
func TestRunOverload(t *testing.T) {
	for _, cfg := range OverloadCases(DefaultOverload().Short()) {
		t.Run(cfg.Name(), func(t *testing.T) {
			res, err := RunOverload(cfg)
			require.NoError(t, err)
			recovery := int64(cfg.Recovery.Rate) * int64(cfg.Recovery.For) / int64(time.Second)
			require.Equal(t, int64(cfg.Overload.Rate)*int64(cfg.Overload.For)/int64(time.Second)+recovery, res.Submitted)
			require.Equal(t, recovery, res.Recovery)
			require.Zero(t, res.Failed, "calls fail only by timing out, being shed or refused")
			require.Equal(t, res.Submitted, res.OK+res.Timeouts+res.Shed+res.Refused+res.Failed, "every call settles once")
			require.Equal(t, res.OK, res.OverloadOK+res.RecoveryOK)
			require.LessOrEqual(t, res.RecoveryOK, res.Recovery)
			require.LessOrEqual(t, res.NeverSent, res.Timeouts+res.Shed+res.Refused)
			require.Len(t, res.OKBy, 5, "five tenths of a second")
			var byBucket int64
			for _, n := range res.OKBy {
				byBucket += n
			}
			require.Equal(t, res.OK, byBucket)
			require.InDelta(t, float64(res.OKBy[0])*10, res.GoodputBy()[0], 1e-9)
			require.InDelta(t, float64(res.OverloadOK)/cfg.Overload.For.Seconds(), res.Goodput(), 1e-9)
			require.LessOrEqual(t, res.Executions, res.Submitted)
			require.LessOrEqual(t, res.Wasted, res.Executions)
			require.LessOrEqual(t, res.OK, res.Executions, "every success was executed")
			if res.Executions > 0 {
				require.InDelta(t, float64(res.Wasted)/float64(res.Executions), res.WastedShare(), 1e-9)
			}
			switch cfg.Mode {
			case ModeAdaptive:
				require.Positive(t, res.Limit)
			case ModeFixed:
				require.Zero(t, res.Limit)
			}
			if res.OverloadOK > 0 {
				require.Positive(t, res.P50)
				require.LessOrEqual(t, res.P50, res.P99)
			}
		})
	}
}
