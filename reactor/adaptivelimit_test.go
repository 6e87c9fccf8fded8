package reactor_test

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// heldBackend is a reactortest.Backend whose Echo calls each wait for the test to decide
// their outcome, and which counts the calls it runs at once: what a backend sees of the
// adaptive limit.
type heldBackend struct {
	*reactortest.Backend
	started chan heldCall // each call, as it starts
	stop    chan struct{} // closed at the end of the test: every call still held succeeds
	running atomic.Int32
	peak    atomic.Int32 // the most calls run at once since the last resetPeak
}

// heldCall is a call the heldBackend runs: send its outcome, nil for success.
type heldCall struct {
	id      string
	outcome chan error
}

func newHeldBackend(t *testing.T) *heldBackend {
	h := &heldBackend{Backend: reactortest.NewBackend(), started: make(chan heldCall, 256), stop: make(chan struct{})}
	reactortest.Handle(h.Backend, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		n := h.running.Add(1)
		defer h.running.Add(-1)
		for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
		}
		c := heldCall{id: req.GetMessage(), outcome: make(chan error, 1)}
		h.started <- c
		select {
		case err := <-c.outcome:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-h.stop:
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	return h
}

// next returns the next call the backend starts.
func (h *heldBackend) next(t *testing.T) heldCall {
	t.Helper()
	select {
	case c := <-h.started:
		return c
	case <-time.After(reactortest.FlushTimeout):
		t.Fatal("no call started")
		return heldCall{}
	}
}

// resetPeak starts counting the peak from the calls running now.
func (h *heldBackend) resetPeak() { h.peak.Store(h.running.Load()) }

// advanceTo moves clock to at once the reactor has set its timer for a deadline at or before
// it, so that the calls due by then time out.
func advanceTo(t *testing.T, clock *reactortest.ManualClock, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), reactortest.FlushTimeout)
	defer cancel()
	require.NoError(t, clock.WaitTimerBy(ctx, at))
	clock.Set(at)
}

// newLimitedReactor returns a reactor on h with the given lanes and adaptive limit, on a
// manual clock, so that no call times out unless the test moves it; every call still held
// succeeds before the reactor closes at the end of the test.
func newLimitedReactor(t *testing.T, h *heldBackend, workers, batch int, limit *reactor.AdaptiveLimit) (*reactor.Reactor, *reactortest.ManualClock) {
	clock := reactortest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	r := reactortest.NewReactor(t, h.Backend, reactor.Config{Clock: clock, Workers: workers, BatchSize: batch, AdaptiveLimit: limit})
	t.Cleanup(func() { close(h.stop) }) // before Close, which NewReactor registered first
	return r, clock
}

// requireLimit waits until the limit is want, lanes hold places places (a lane gives its
// place back just after its call is queued for Tick) and the backend runs as many calls.
func requireLimit(t *testing.T, r *reactor.Reactor, h *heldBackend, want, places int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return r.Stats().InFlightLimit == want && reactor.LimitPlaces(r) == places && int(h.running.Load()) == places
	}, reactortest.FlushTimeout, time.Millisecond, "want the limit %d and %d calls running; have %d and %d (backend: %d)",
		want, places, r.Stats().InFlightLimit, reactor.LimitPlaces(r), h.running.Load())
}

// submitN submits n calls named prefix0, prefix1, …, with opts.
func submitN(t *testing.T, r *reactor.Reactor, prefix string, n int, opts *calls.Options) []*calls.Promise[*testpb.EchoResponse] {
	t.Helper()
	ps := make([]*calls.Promise[*testpb.EchoResponse], n)
	for i := range n {
		ps[i] = reactor.Call(r, echo, echoReq(prefix+strconv.Itoa(i)), opts)
		require.NoError(t, ps[i].Err())
	}
	return ps
}

// TestAdaptiveLimitAIMD checks the limit's moves, observed from the backend: a burst of drops
// of calls in flight together shrinks it once; a drop of a call started after that shrinks it
// again, down to the floor; then successes while the lanes are at least half used grow it by
// one per window (as many successes as the limit), up to Workers × BatchSize; and no more
// calls than the limit ever start at once.
func TestAdaptiveLimitAIMD(t *testing.T) {
	h := newHeldBackend(t)
	r, _ := newLimitedReactor(t, h, 2, 4, &reactor.AdaptiveLimit{Floor: 2, Backoff: 0.5})

	// Initial is Workers × BatchSize by default: 8 run, 4 wait.
	submitN(t, r, "a", 12, nil)
	var running []heldCall
	for range 8 {
		running = append(running, h.next(t))
	}
	requireLimit(t, r, h, 8, 8)
	require.Equal(t, 4, r.Stats().Queued)

	// Eight drops of calls in flight together: one window, one backoff (8 × 0.5). The four
	// queued calls start as places free up under the new limit.
	for _, c := range running {
		c.outcome <- status.Error(codes.Unavailable, "overloaded")
	}
	running = running[:0]
	for range 4 {
		running = append(running, h.next(t))
	}
	requireLimit(t, r, h, 4, 4)

	// A drop of a call started after the backoff: the next window, the next backoff (to 2).
	// The three other calls keep running, over the new limit; new calls wait.
	h.resetPeak()
	running[0].outcome <- status.Error(codes.ResourceExhausted, "overloaded")
	running = running[1:]
	const queued = 40
	submitN(t, r, "b", queued, nil)
	requireLimit(t, r, h, 2, 3)
	require.Eventually(t, func() bool { return r.Stats().Queued == queued }, reactortest.FlushTimeout, time.Millisecond)

	// Successes, the lanes being at least half used, grow the limit by one per window of
	// them, and lanes take as many calls as the limit allows.
	limit, credit, places := 2, 0, 3
	for limit < 8 {
		running[0].outcome <- nil
		running = running[1:]
		if credit++; credit >= limit { // 2 × places ≥ limit: the lanes are full
			limit, credit = limit+1, 0
		}
		places = max(places-1, limit)
		for len(running) < places {
			running = append(running, h.next(t))
		}
		requireLimit(t, r, h, limit, places)
	}
	require.LessOrEqual(t, int(h.peak.Load()), 8)
	require.Len(t, h.started, 0, "a call started over the limit")
}

// TestAdaptiveLimitSignals checks what each outcome of a call does to the limit: drops (the
// three codes, and a call the reactor cuts at its deadline) shrink it, another answer from
// the backend grows it (the lanes being half used), and a call cancelled while it runs, or
// timed out while it waits in prpc's queue, leaves it as it is.
func TestAdaptiveLimitSignals(t *testing.T) {
	// Of 4 lanes, with Floor 1 and Backoff 0.5: a drop takes 2 to 1; a success, the lanes
	// being full, takes 1 to 2 (one window of one call).
	for _, tc := range []struct {
		name          string
		end           func(c heldCall, p *calls.Promise[*testpb.EchoResponse], clock *reactortest.ManualClock)
		initial, want int
	}{
		{"Unavailable", func(c heldCall, _ *calls.Promise[*testpb.EchoResponse], _ *reactortest.ManualClock) {
			c.outcome <- status.Error(codes.Unavailable, "down")
		}, 2, 1},
		{"ResourceExhausted", func(c heldCall, _ *calls.Promise[*testpb.EchoResponse], _ *reactortest.ManualClock) {
			c.outcome <- status.Error(codes.ResourceExhausted, "overloaded")
		}, 2, 1},
		{"DeadlineExceeded from the backend", func(c heldCall, _ *calls.Promise[*testpb.EchoResponse], _ *reactortest.ManualClock) {
			c.outcome <- status.Error(codes.DeadlineExceeded, "too slow")
		}, 2, 1},
		{"cut at its deadline", func(_ heldCall, _ *calls.Promise[*testpb.EchoResponse], clock *reactortest.ManualClock) {
			advanceTo(t, clock, clock.Now().Add(reactor.DefaultTimeout))
		}, 2, 1},
		{"OK", func(c heldCall, _ *calls.Promise[*testpb.EchoResponse], _ *reactortest.ManualClock) {
			c.outcome <- nil
		}, 1, 2},
		{"NotFound", func(c heldCall, _ *calls.Promise[*testpb.EchoResponse], _ *reactortest.ManualClock) {
			c.outcome <- status.Error(codes.NotFound, "no such player")
		}, 1, 2},
		{"cancelled while running", func(_ heldCall, p *calls.Promise[*testpb.EchoResponse], _ *reactortest.ManualClock) {
			p.Cancel()
		}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldBackend(t)
			r, clock := newLimitedReactor(t, h, 1, 4, &reactor.AdaptiveLimit{Floor: 1, Initial: tc.initial, Backoff: 0.5})
			p := submitN(t, r, "a", 1, nil)[0]
			tc.end(h.next(t), p, clock)
			requireLimit(t, r, h, tc.want, 0)
			reactortest.Flush(t, r)
		})
	}
}

// TestAdaptiveLimitQueuedCallsTimeOut checks that calls waiting for a place under the limit
// time out in prpc's queue, never sent, and that such a timeout leaves the limit as it is:
// it says nothing about the backend.
func TestAdaptiveLimitQueuedCallsTimeOut(t *testing.T) {
	h := newHeldBackend(t)
	r, clock := newLimitedReactor(t, h, 1, 4, &reactor.AdaptiveLimit{Floor: 1, Initial: 2, Backoff: 0.5})
	long := &calls.Options{Timeout: time.Second}
	held := submitN(t, r, "held", 2, long)
	running := []heldCall{h.next(t), h.next(t)}
	queued := submitN(t, r, "queued", 3, &calls.Options{Timeout: 50 * time.Millisecond})
	require.Eventually(t, func() bool { return r.Stats().Queued == 3 }, reactortest.FlushTimeout, time.Millisecond)

	advanceTo(t, clock, clock.Now().Add(50*time.Millisecond))
	for _, p := range queued {
		for p.State() == calls.Pending {
			select {
			case <-r.Ready():
				r.Tick(time.Hour)
			case <-time.After(reactortest.FlushTimeout):
				t.Fatal("the queued calls did not time out")
			}
		}
		require.ErrorIs(t, p.Err(), calls.ErrTimeout)
		var ce *calls.Error
		require.ErrorAs(t, p.Err(), &ce)
		require.True(t, ce.NotSent(), "a call that timed out in the queue was sent")
	}
	requireLimit(t, r, h, 2, 2)
	require.Equal(t, 2, h.Calls(echo.Path()))

	for _, c := range running {
		c.outcome <- nil
	}
	reactortest.Flush(t, r)
	for _, p := range held {
		require.Equal(t, calls.Succeeded, p.State())
	}
}

// TestAdaptiveLimitCriticalFirst checks that critical calls waiting for a place under the
// limit take the next one before every other call, whatever their order of submission.
func TestAdaptiveLimitCriticalFirst(t *testing.T) {
	h := newHeldBackend(t)
	r, _ := newLimitedReactor(t, h, 1, 4, &reactor.AdaptiveLimit{Floor: 1, Initial: 1, Backoff: 0.5})
	submitN(t, r, "first", 1, nil)
	first := h.next(t)
	submitN(t, r, "ordinary", 2, nil)
	submitN(t, r, "critical", 2, &calls.Options{Critical: true})
	require.Eventually(t, func() bool { return r.Stats().Queued == 4 }, reactortest.FlushTimeout, time.Millisecond)

	// A drop keeps the limit at its floor, 1: calls start one at a time, critical first.
	c := first
	var order []string
	for range 4 {
		c.outcome <- status.Error(codes.Unavailable, "overloaded")
		c = h.next(t)
		order = append(order, c.id)
	}
	c.outcome <- nil
	require.Equal(t, []string{"critical0", "critical1", "ordinary0", "ordinary1"}, order)
	require.LessOrEqual(t, int(h.peak.Load()), 1)
	reactortest.Flush(t, r)
}

// TestAdaptiveLimitClose checks that Close settles every call exactly once when calls wait
// behind the limit: those queued are dropped, the running one cut off.
func TestAdaptiveLimitClose(t *testing.T) {
	h := newHeldBackend(t)
	r, err := reactor.New(reactor.Config{Conn: h.Backend, Workers: 1, BatchSize: 4, AdaptiveLimit: &reactor.AdaptiveLimit{Floor: 1, Initial: 1}})
	require.NoError(t, err)
	defer close(h.stop)
	var runs [6]int
	var errs [6]error
	for i := range runs {
		require.NoError(t, reactor.Go(r, echo, echoReq("c"), nil, func(_ *testpb.EchoResponse, err error) {
			runs[i]++
			errs[i] = err
		}))
	}
	h.next(t)
	require.Eventually(t, func() bool { return r.Stats().Queued == 5 }, reactortest.FlushTimeout, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, r.Close(ctx), context.Canceled)
	require.Equal(t, [6]int{1, 1, 1, 1, 1, 1}, runs)
	for _, err := range errs {
		require.ErrorIs(t, err, calls.ErrClosed)
	}
	s := r.Stats()
	require.Equal(t, uint64(6), s.Closed)
	require.Equal(t, uint64(5), s.NeverSent)
}

// TestAdaptiveLimitOnByDefault checks that a reactor limits its calls in flight adaptively
// unless AdaptiveLimit.Disabled says not to, Stats reporting no limit then.
func TestAdaptiveLimitOnByDefault(t *testing.T) {
	cases := []struct {
		name  string
		limit *reactor.AdaptiveLimit
		want  int
	}{
		{name: "nil: the defaults, starting at the lanes", want: 2},
		{name: "zero fields: the same", limit: &reactor.AdaptiveLimit{}, want: 2},
		{name: "disabled", limit: &reactor.AdaptiveLimit{Disabled: true}, want: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldBackend(t)
			r, _ := newLimitedReactor(t, h, 1, 2, tc.limit)
			require.Equal(t, tc.want, r.Stats().InFlightLimit)
		})
	}
}

// TestAdaptiveLimitValidation checks that New rejects each bad AdaptiveLimit with an error
// naming the field, and accepts the defaults.
func TestAdaptiveLimitValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit reactor.AdaptiveLimit
		field string // "" for accepted
	}{
		{"defaults", reactor.AdaptiveLimit{}, ""},
		{"floor at the lanes", reactor.AdaptiveLimit{Floor: 8, Initial: 8}, ""},
		{"floor above the lanes", reactor.AdaptiveLimit{Floor: 9}, "Config.AdaptiveLimit.Floor is 9"},
		{"floor None", reactor.AdaptiveLimit{Floor: reactor.None}, "Config.AdaptiveLimit.Floor is -1"},
		{"initial below the floor", reactor.AdaptiveLimit{Floor: 4, Initial: 3}, "Config.AdaptiveLimit.Initial is 3"},
		{"initial above the lanes", reactor.AdaptiveLimit{Initial: 9}, "Config.AdaptiveLimit.Initial is 9"},
		{"initial below the default floor", reactor.AdaptiveLimit{Initial: 1}, "Config.AdaptiveLimit.Initial is 1"},
		{"backoff 1", reactor.AdaptiveLimit{Backoff: 1}, "Config.AdaptiveLimit.Backoff is 1"},
		{"backoff above 1", reactor.AdaptiveLimit{Backoff: 1.5}, "Config.AdaptiveLimit.Backoff is 1.5"},
		{"backoff None", reactor.AdaptiveLimit{Backoff: reactor.None}, "Config.AdaptiveLimit.Backoff is -1"},
		{"backoff NaN", reactor.AdaptiveLimit{Backoff: math.NaN()}, "Config.AdaptiveLimit.Backoff is NaN"},
		{"disabled", reactor.AdaptiveLimit{Disabled: true}, ""},
		{"disabled with a floor", reactor.AdaptiveLimit{Disabled: true, Floor: 2}, "Config.AdaptiveLimit is {Disabled:true Floor:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			r, err := reactor.New(reactor.Config{Conn: reactortest.NewBackend(), Workers: 2, BatchSize: 4, AdaptiveLimit: &limit})
			if tc.field == "" {
				require.NoError(t, err)
				require.NoError(t, r.Close(context.Background()))
				return
			}
			require.ErrorContains(t, err, tc.field)
		})
	}
}
