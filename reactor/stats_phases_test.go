package reactor_test

import (
	"context"
	"sync"
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

// phaseBackend is a reactortest.Backend that serves Echo and Other's Echo. A request whose
// Message is in holds waits at the backend, after sending its Message on entered, until the
// test releases it (release) or its context ends; "notfound" fails with NotFound; any other
// request is echoed at once. Every held request is released when the test ends.
type phaseBackend struct {
	*reactortest.Backend
	entered chan string
	mu      sync.Mutex
	holds   map[string]chan struct{}
}

func newPhaseBackend(t *testing.T, holds ...string) *phaseBackend {
	b := &phaseBackend{Backend: reactortest.NewBackend(), entered: make(chan string, 16), holds: map[string]chan struct{}{}}
	for _, h := range holds {
		b.holds[h] = make(chan struct{})
	}
	handler := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		msg := req.GetMessage()
		b.mu.Lock()
		hold := b.holds[msg]
		b.mu.Unlock()
		switch {
		case hold != nil:
			b.entered <- msg
			select {
			case <-hold:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		case msg == "notfound":
			return nil, status.Error(codes.NotFound, msg)
		}
		return &testpb.EchoResponse{Message: msg}, nil
	}
	reactortest.Handle(b.Backend, echo, handler)
	reactortest.Handle(b.Backend, echoOther, handler)
	t.Cleanup(func() { // before the reactor's Close
		for _, h := range holds {
			b.release(h)
		}
	})
	return b
}

// release lets the held request msg return, once.
func (b *phaseBackend) release(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch := b.holds[msg]; ch != nil {
		close(ch)
		b.holds[msg] = nil
	}
}

// TestStatsLatencyPhases checks that QueueWait, Transport and TickWait each show the time a
// call spent in its phase, per method and in all: on a single lane held by another call, a
// call waits x for the lane, y at the backend, then z until the host ticks, each measured on
// a manual clock advanced by that much while the call is in that phase. Latency is their sum.
func TestStatsLatencyPhases(t *testing.T) {
	// Distinct, so that a phase measured as another shows.
	const x, y, z = 3 * time.Second, 5 * time.Second, 7 * time.Second
	b := newPhaseBackend(t, "blocker", "measured")
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, b.Backend, reactor.Config{
		Clock: clk, Workers: 1, BatchSize: 1,
		// Far above the 15 s the clock is advanced in all: no call times out.
		MaxTimeout: time.Hour, DefaultTimeout: time.Hour,
	})

	// The blocker (Other's method) takes the only lane; the measured call (Echo) waits behind
	// it, in the queue, for x.
	blocker := reactor.Call(r, echoOther, echoReq("blocker"), nil)
	require.Equal(t, "blocker", recv(t, b.entered, "the blocker at the backend"))
	measured := reactor.Call(r, echo, echoReq("measured"), nil)
	waitGauges(t, r, 1, 1)
	clk.Advance(x)
	b.release("blocker")
	// The lane settled the blocker before it took the measured call: deliver the blocker.
	require.Equal(t, "measured", recv(t, b.entered, "the measured call at the backend"))
	r.Tick(time.Second)
	require.Equal(t, calls.Succeeded, blocker.State())
	require.Zero(t, r.Stats().OldestUndelivered, "nothing settled waits for Tick")

	// y at the backend, then z waiting for Tick.
	clk.Advance(y)
	b.release("measured")
	waitGauges(t, r, 0, 0) // settled and queued for Tick
	clk.Advance(z)
	require.Equal(t, 1, r.Tick(time.Second).Delivered)
	require.Equal(t, calls.Succeeded, measured.State())

	one := func(d time.Duration) reactor.Latency {
		return reactor.Latency{Samples: 1, P50: d, P95: d, P99: d, Max: d}
	}
	s := r.Stats()
	m := s.Methods[echo.Path()]
	require.Equal(t, one(x), m.QueueWait, "Echo's QueueWait")
	require.Equal(t, one(y), m.Transport, "Echo's Transport")
	require.Equal(t, one(z), m.TickWait, "Echo's TickWait")
	require.Equal(t, one(x+y+z), m.Latency, "Echo's Latency")
	o := s.Methods[echoOther.Path()]
	require.Equal(t, one(0), o.QueueWait, "the blocker's QueueWait")
	require.Equal(t, one(x), o.Transport, "the blocker's Transport")
	require.Equal(t, one(0), o.TickWait, "the blocker's TickWait")
	require.Equal(t, one(x), o.Latency, "the blocker's Latency")
	// In all: two samples each; by nearest rank P50 is the smaller, P95 the larger.
	two := func(a, b time.Duration) reactor.Latency {
		return reactor.Latency{Samples: 2, P50: a, P95: b, P99: b, Max: b}
	}
	require.Equal(t, two(0, x), s.QueueWait, "QueueWait")
	require.Equal(t, two(x, y), s.Transport, "Transport")
	require.Equal(t, two(0, z), s.TickWait, "TickWait")
	require.Equal(t, two(x, x+y+z), s.Latency, "Latency")
	require.Zero(t, s.NeverSent)

	// The histograms count the same phases, per method and in all.
	mh, oh, all := m.Histograms, o.Histograms, s.Histograms
	requireHist(t, mh.QueueWait, "Echo's QueueWait", x)
	requireHist(t, mh.Transport, "Echo's Transport", y)
	requireHist(t, mh.TickWait, "Echo's TickWait", z)
	requireHist(t, mh.Latency, "Echo's Latency", x+y+z)
	requireHist(t, oh.QueueWait, "the blocker's QueueWait", 0)
	requireHist(t, oh.Transport, "the blocker's Transport", x)
	requireHist(t, oh.TickWait, "the blocker's TickWait", 0)
	requireHist(t, oh.Latency, "the blocker's Latency", x)
	requireHist(t, all.QueueWait, "QueueWait", x, 0)
	requireHist(t, all.Transport, "Transport", y, x)
	requireHist(t, all.TickWait, "TickWait", z, 0)
	requireHist(t, all.Latency, "Latency", x+y+z, x)
}

// TestStatsLatencyPhasesOfCallsCutShort checks the phases of calls the reactor settled: a call
// whose deadline passed while it waited for the lane has only QueueWait and TickWait (no lane
// took it), and a call whose deadline passed at the backend has a Transport phase that lasts
// until its lane's transport call returned. The lane's call (Other's method) times out at y,
// the queued one (Echo) at x; both are delivered z after the later deadline.
func TestStatsLatencyPhasesOfCallsCutShort(t *testing.T) {
	const x, y, z = 2 * time.Second, 5 * time.Second, 3 * time.Second
	b := newPhaseBackend(t, "blocker", "queued")
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, b.Backend, reactor.Config{
		Clock: clk, Workers: 1, BatchSize: 1, MaxTimeout: time.Hour, DefaultTimeout: time.Hour,
	})
	start := clk.Now()
	blocker := reactor.Call(r, echoOther, echoReq("blocker"), &calls.Options{Timeout: y})
	require.Equal(t, "blocker", recv(t, b.entered, "the blocker at the backend"))
	queued := reactor.Call(r, echo, echoReq("queued"), &calls.Options{Timeout: x})
	waitGauges(t, r, 1, 1)
	require.NoError(t, clk.WaitTimerBy(closeCtx(t, bound), start.Add(x)))
	clk.Advance(x)
	waitGauges(t, r, 1, 0) // the queued call timed out
	require.NoError(t, clk.WaitTimerBy(closeCtx(t, bound), start.Add(y)))
	clk.Advance(y - x)
	waitGauges(t, r, 0, 0) // the blocker timed out, and its lane returned
	clk.Advance(z)
	require.Equal(t, 2, r.Tick(time.Second).Delivered)
	require.ErrorIs(t, queued.Err(), calls.ErrTimeout)
	require.ErrorIs(t, blocker.Err(), calls.ErrTimeout)

	one := func(d time.Duration) reactor.Latency {
		return reactor.Latency{Samples: 1, P50: d, P95: d, P99: d, Max: d}
	}
	s := r.Stats()
	m := s.Methods[echo.Path()]
	require.Equal(t, one(x), m.QueueWait, "the queued call's QueueWait")
	require.Equal(t, reactor.Latency{}, m.Transport, "the queued call's Transport")
	require.Equal(t, one(y-x+z), m.TickWait, "the queued call's TickWait")
	require.Equal(t, one(y+z), m.Latency, "the queued call's Latency")
	o := s.Methods[echoOther.Path()]
	require.Equal(t, one(0), o.QueueWait, "the blocker's QueueWait")
	require.Equal(t, one(y), o.Transport, "the blocker's Transport")
	require.Equal(t, one(z), o.TickWait, "the blocker's TickWait")
	require.Equal(t, one(y+z), o.Latency, "the blocker's Latency")
	require.Equal(t, one(y), s.Transport, "Transport in all: the blocker's only")
	requireHist(t, m.Histograms.QueueWait, "the queued call's QueueWait", x)
	requireHist(t, m.Histograms.Transport, "the queued call's Transport: none, it was never sent")
	requireHist(t, m.Histograms.TickWait, "the queued call's TickWait", y-x+z)
	requireHist(t, m.Histograms.Latency, "the queued call's Latency", y+z)
	requireHist(t, o.Histograms.Transport, "the blocker's Transport", y)
	requireHist(t, s.Histograms.Transport, "Transport in all: the blocker's only", y)
	require.Equal(t, uint64(1), m.TimedOut, "Echo's TimedOut")
	require.Equal(t, uint64(1), o.TimedOut, "Other's TimedOut")
}

// TestStatsOldestUndelivered checks Stats.OldestUndelivered on a manual clock: the time the
// oldest settled call has waited for Tick grows while nobody ticks, counts the calls of a Tick
// in progress, follows the calls a budgeted Tick leaves behind, and is zero once Tick has
// delivered them all.
func TestStatsOldestUndelivered(t *testing.T) {
	b := newPhaseBackend(t)
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, b.Backend, reactor.Config{Clock: clk, MaxTimeout: time.Hour, DefaultTimeout: time.Hour})
	oldest := func() time.Duration { return r.Stats().OldestUndelivered }
	// settled submits a call that the backend answers at once and waits until it waits for
	// Tick: the backend has run it n-th, and no call is queued or in flight.
	settled := func(n int) *echoPromise {
		p := reactor.Call(r, echo, echoReq("now"), nil)
		require.Eventually(t, func() bool { return b.Calls(echo.Path()) == n }, bound, poll, "call %d at the backend", n)
		waitGauges(t, r, 0, 0)
		return p
	}

	require.Zero(t, oldest(), "nothing settled yet")
	first := settled(1)
	require.Zero(t, oldest(), "just settled")
	clk.Advance(time.Second)
	require.Equal(t, time.Second, oldest(), "the first call, settled 1 s ago")
	second := settled(2)
	clk.Advance(2 * time.Second)
	require.Equal(t, 3*time.Second, oldest(), "the first call, not the second")

	// A Tick with no budget delivers exactly one call: the second, settled 2 s ago, is left.
	// While it runs, the calls it took count as waiting: the first's callback sees it.
	var during time.Duration
	first.Then(func(*testpb.EchoResponse) { during = oldest() })
	require.Equal(t, reactor.TickReport{Delivered: 1, Remaining: 1}, r.Tick(0))
	require.Equal(t, calls.Succeeded, first.State())
	require.Equal(t, 3*time.Second, during, "seen by a callback of the Tick that delivers the first call")
	require.Equal(t, 2*time.Second, oldest(), "the second call, left by Tick")
	clk.Advance(time.Second)
	require.Equal(t, 3*time.Second, oldest(), "the second call waits on")

	require.Equal(t, 1, r.Tick(time.Second).Delivered)
	require.Equal(t, calls.Succeeded, second.State())
	require.Zero(t, oldest(), "everything delivered")
	require.Equal(t, reactor.Latency{Samples: 2, P50: 3 * time.Second, P95: 3 * time.Second, P99: 3 * time.Second, Max: 3 * time.Second},
		r.Stats().TickWait)
}

// TestStatsNeverSent checks that Stats.NeverSent and MethodStats.NeverSent count each kind of
// failed call that never reached gRPC, and none that did. Each case runs on a reactor with a
// single lane and room for two calls: a call of Echo that fails, and, when the case needs the
// lane taken, a call of Other's method that holds it (sent, whatever its outcome).
func TestStatsNeverSent(t *testing.T) {
	type env struct {
		r   *reactor.Reactor
		clk *reactortest.ManualClock
		b   *phaseBackend
	}
	// block takes the only lane with a held call of Other's method.
	block := func(t *testing.T, e env) {
		reactor.Call(e.r, echoOther, echoReq("blocker"), nil)
		require.Equal(t, "blocker", recv(t, e.b.entered, "the blocker at the backend"))
	}
	// queue submits a call of Echo that waits for the lane block took.
	queue := func(t *testing.T, e env, opts *calls.Options) *echoPromise {
		p := reactor.Call(e.r, echo, echoReq("queued"), opts)
		waitGauges(t, e.r, 1, 1)
		return p
	}
	// atBackend submits a call of Echo held at the backend.
	atBackend := func(t *testing.T, e env, opts *calls.Options) *echoPromise {
		p := reactor.Call(e.r, echo, echoReq("held"), opts)
		require.Equal(t, "held", recv(t, e.b.entered, "the call at the backend"))
		return p
	}
	// timeOut advances the clock past the deadline of a call with a 1 s timeout, submitted
	// at start.
	timeOut := func(t *testing.T, e env, start time.Time) {
		require.NoError(t, e.clk.WaitTimerBy(closeCtx(t, bound), start.Add(time.Second)))
		e.clk.Advance(time.Second)
	}
	closeNow := func(e env) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = e.r.Close(ctx) // cuts off what is left, with an error saying so
	}
	second := &calls.Options{Timeout: time.Second}
	tests := []struct {
		name      string
		run       func(t *testing.T, e env) *echoPromise // returns the failed call of Echo
		want      error                                  // the sentinel its error matches; nil: NotFound
		neverSent uint64
	}{
		{"rejected: overloaded", func(t *testing.T, e env) *echoPromise {
			block(t, e)
			reactor.Call(e.r, echoOther, echoReq("second"), nil) // the second of two slots
			return reactor.Call(e.r, echo, echoReq("over"), nil)
		}, calls.ErrOverloaded, 1},
		{"rejected: invalid", func(_ *testing.T, e env) *echoPromise {
			return reactor.Call(e.r, echo, echoReq("invalid"), &calls.Options{Timeout: -time.Second})
		}, calls.ErrInvalidArgument, 1},
		{"rejected: closed", func(_ *testing.T, e env) *echoPromise {
			closeNow(e)
			return reactor.Call(e.r, echo, echoReq("late"), nil)
		}, calls.ErrClosed, 1},
		{"deadline passed in the queue", func(t *testing.T, e env) *echoPromise {
			block(t, e)
			start := e.clk.Now()
			p := queue(t, e, second)
			timeOut(t, e, start)
			waitGauges(t, e.r, 1, 0) // dropped before the blocker frees the lane
			return p
		}, calls.ErrTimeout, 1},
		{"cancelled in the queue", func(t *testing.T, e env) *echoPromise {
			block(t, e)
			p := queue(t, e, nil)
			p.Cancel()
			waitGauges(t, e.r, 1, 0) // dropped before the blocker frees the lane
			return p
		}, calls.ErrCancelled, 1},
		{"cut off by Close in the queue", func(t *testing.T, e env) *echoPromise {
			block(t, e) // cut off too, but sent
			p := queue(t, e, nil)
			closeNow(e)
			return p
		}, calls.ErrClosed, 1},
		{"failed by the server", func(_ *testing.T, e env) *echoPromise {
			return reactor.Call(e.r, echo, echoReq("notfound"), nil)
		}, nil, 0},
		{"deadline passed at the backend", func(t *testing.T, e env) *echoPromise {
			start := e.clk.Now()
			p := atBackend(t, e, second)
			timeOut(t, e, start)
			return p
		}, calls.ErrTimeout, 0},
		{"cancelled at the backend", func(t *testing.T, e env) *echoPromise {
			p := atBackend(t, e, nil)
			p.Cancel()
			return p
		}, calls.ErrCancelled, 0},
		{"cut off by Close at the backend", func(t *testing.T, e env) *echoPromise {
			p := atBackend(t, e, nil)
			closeNow(e)
			return p
		}, calls.ErrClosed, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newPhaseBackend(t, "blocker", "held")
			clk := reactortest.NewManualClock(time.Now())
			r := newReactor(t, nil, reactor.Config{
				Conn: b.Backend, Clock: clk, Workers: 1, BatchSize: 1, MaxOutstanding: 2,
				MaxTimeout: time.Hour, DefaultTimeout: time.Hour,
			})
			p := tc.run(t, env{r: r, clk: clk, b: b})
			b.release("blocker")
			reactortest.Flush(t, r)
			require.Equal(t, calls.Failed, p.State())
			if tc.want == nil {
				require.Equal(t, codes.NotFound, status.Code(p.Err()), "%v", p.Err())
			} else {
				require.ErrorIs(t, p.Err(), tc.want)
			}

			s := r.Stats()
			requireMethodsAddUp(t, s)
			require.Equal(t, tc.neverSent, s.NeverSent, "Stats.NeverSent")
			require.Equal(t, tc.neverSent, s.Methods[echo.Path()].NeverSent, "Echo's NeverSent")
			require.Zero(t, s.Methods[echoOther.Path()].NeverSent, "the other method's calls were all sent")
		})
	}
}
