package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// hedgeBackend serves echo; each attempt reports its grpc-previous-rpc-attempts (0 for the
// first) on entered and waits for an answer on its attempt's channel, or for its context, whose
// error it then reports on ended.
type hedgeBackend struct {
	*reactortest.Backend
	entered chan int
	ended   chan error
	answers [5]chan codes.Code // per attempt: the code it answers with (OK: a response)
}

func newHedgeBackend() *hedgeBackend {
	h := &hedgeBackend{Backend: reactortest.NewBackend(), entered: make(chan int, 64), ended: make(chan error, 64)}
	for i := range h.answers {
		h.answers[i] = make(chan codes.Code, 64)
	}
	reactortest.Handle(h.Backend, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		previous := 0
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			if v := md.Get("grpc-previous-rpc-attempts"); len(v) == 1 {
				previous = int(v[0][0] - '0')
			}
		}
		h.entered <- previous
		select {
		case code := <-h.answers[previous]:
			if code != codes.OK {
				return nil, status.Error(code, "attempt refused")
			}
			return &testpb.EchoResponse{Message: req.GetMessage() + string(rune('a'+previous))}, nil
		case <-ctx.Done():
			h.ended <- ctx.Err()
			return nil, ctx.Err()
		}
	})
	return h
}

// hedging returns a reactor on a manual clock whose echo calls are hedged as p says.
func hedging(t *testing.T, h *hedgeBackend, p reactor.HedgePolicy) (*reactor.Reactor, *reactortest.ManualClock) {
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, h.Backend, reactor.Config{
		Clock: clk, Workers: 1, BatchSize: 4, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: &p}},
	})
	return r, clk
}

// waitEntered returns the next attempt's grpc-previous-rpc-attempts.
func (h *hedgeBackend) waitEntered(t *testing.T) int {
	t.Helper()
	select {
	case n := <-h.entered:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no attempt reached the backend")
		return -1
	}
}

// noAttempt checks that no attempt has reached the backend beyond those received.
func (h *hedgeBackend) noAttempt(t *testing.T) {
	t.Helper()
	select {
	case n := <-h.entered:
		t.Fatalf("an attempt (previous attempts %d) reached the backend", n)
	default:
	}
}

// waitTimerBy waits until the reactor has set its one timer for a hedge or a deadline due by
// at.
func waitTimerBy(t *testing.T, clk *reactortest.ManualClock, at time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, clk.WaitTimerBy(ctx, at))
}

func methodStats(r *reactor.Reactor) reactor.MethodStats { return r.Stats().Methods[echo.Path()] }

// TestHedgeSendsAfterDelay checks that a call without an answer after the delay sends a second
// attempt, which carries grpc-previous-rpc-attempts; that the first answer settles the call
// and cancels the other attempt; and that Stats counts the hedge and its win.
func TestHedgeSendsAfterDelay(t *testing.T) {
	h := newHedgeBackend()
	r, clk := hedging(t, h, reactor.HedgePolicy{Delay: 10 * time.Millisecond})
	start := clk.Now()
	o := submitEcho(r, "x", nil)
	require.Equal(t, 0, h.waitEntered(t))
	waitTimerBy(t, clk, start.Add(10*time.Millisecond))
	h.noAttempt(t)
	clk.Advance(10 * time.Millisecond)
	require.Equal(t, 1, h.waitEntered(t), "the hedge says one attempt went before it")
	h.answers[1] <- codes.OK
	tickUntilDelivered(t, r, []*outcome{o})
	require.NoError(t, o.err)
	require.Equal(t, "xb", o.resp.GetMessage(), "the hedge's response")
	require.ErrorIs(t, <-h.ended, context.Canceled, "the first attempt is cancelled")
	s := methodStats(r)
	require.Equal(t, uint64(1), s.Hedges)
	require.Equal(t, uint64(1), s.HedgesWon)
}

// TestHedgeNotSentWhenAnswered checks that a call answered before the delay sends one attempt.
func TestHedgeNotSentWhenAnswered(t *testing.T) {
	h := newHedgeBackend()
	r, clk := hedging(t, h, reactor.HedgePolicy{Delay: 10 * time.Millisecond})
	o := submitEcho(r, "x", nil)
	require.Equal(t, 0, h.waitEntered(t))
	h.answers[0] <- codes.OK
	tickUntilDelivered(t, r, []*outcome{o})
	require.Equal(t, "xa", o.resp.GetMessage())
	clk.Advance(time.Second) // past the delay: the call is decided, nothing is sent
	// The reactor goroutine queues the hedges due in the turn that hands the next call to the
	// lanes, before it does: the next attempt to reach the backend is that call's first.
	start := clk.Now()
	next := submitEcho(r, "y", nil)
	require.Equal(t, 0, h.waitEntered(t), "the next call's first attempt, not a hedge of the first call")
	waitTimerBy(t, clk, start.Add(10*time.Millisecond)) // the next call's hedge: a turn after the Advance
	h.answers[0] <- codes.OK
	tickUntilDelivered(t, r, []*outcome{next})
	h.noAttempt(t)
	require.Zero(t, methodStats(r).Hedges)
}

// TestHedgeCodes checks the codes of attempts: a fatal one settles the call at once and
// cancels the others; a non-fatal one sends the next attempt at once, without waiting for
// the delay; and when every attempt fails non-fatally, the call fails with the last.
func TestHedgeCodes(t *testing.T) {
	t.Run("fatal", func(t *testing.T) {
		h := newHedgeBackend()
		r, clk := hedging(t, h, reactor.HedgePolicy{Delay: 10 * time.Millisecond, NonFatalCodes: []codes.Code{codes.Unavailable}})
		start := clk.Now()
		o := submitEcho(r, "x", nil)
		require.Equal(t, 0, h.waitEntered(t))
		waitTimerBy(t, clk, start.Add(10*time.Millisecond))
		clk.Advance(10 * time.Millisecond)
		waitHedge := h.waitEntered(t)
		require.Equal(t, 1, waitHedge)
		h.answers[1] <- codes.NotFound
		tickUntilDelivered(t, r, []*outcome{o})
		require.Equal(t, codes.NotFound, status.Code(o.err))
		require.ErrorIs(t, <-h.ended, context.Canceled)
		require.Zero(t, methodStats(r).HedgesWon, "a hedge that failed did not win")
	})
	t.Run("non-fatal sends the next at once", func(t *testing.T) {
		h := newHedgeBackend()
		r, _ := hedging(t, h, reactor.HedgePolicy{Delay: time.Hour, MaxAttempts: 3, NonFatalCodes: []codes.Code{codes.Unavailable}})
		o := submitEcho(r, "x", nil)
		require.Equal(t, 0, h.waitEntered(t))
		h.answers[0] <- codes.Unavailable
		require.Equal(t, 1, h.waitEntered(t), "sent without the clock moving")
		h.answers[1] <- codes.OK
		tickUntilDelivered(t, r, []*outcome{o})
		require.Equal(t, "xb", o.resp.GetMessage())
	})
	t.Run("every attempt non-fatal", func(t *testing.T) {
		h := newHedgeBackend()
		r, _ := hedging(t, h, reactor.HedgePolicy{Delay: time.Hour, MaxAttempts: 2, NonFatalCodes: []codes.Code{codes.Unavailable}})
		o := submitEcho(r, "x", nil)
		require.Equal(t, 0, h.waitEntered(t))
		h.answers[0] <- codes.Unavailable
		require.Equal(t, 1, h.waitEntered(t))
		h.answers[1] <- codes.Unavailable
		tickUntilDelivered(t, r, []*outcome{o})
		require.Equal(t, codes.Unavailable, status.Code(o.err))
		var e *calls.Error
		require.ErrorAs(t, o.err, &e)
		require.False(t, e.NotSent(), "attempts were sent")
		require.Equal(t, uint64(1), methodStats(r).Hedges)
	})
}

// TestHedgeTimeoutCancelsAttempts checks that a hedged call whose deadline passes settles at
// once with ErrTimeout and that every attempt is cancelled, with DeadlineExceeded.
func TestHedgeTimeoutCancelsAttempts(t *testing.T) {
	h := newHedgeBackend()
	r, clk := hedging(t, h, reactor.HedgePolicy{Delay: 10 * time.Millisecond})
	start := clk.Now()
	o := submitEcho(r, "x", &calls.Options{Timeout: time.Second})
	require.Equal(t, 0, h.waitEntered(t))
	waitTimerBy(t, clk, start.Add(10*time.Millisecond))
	clk.Advance(10 * time.Millisecond)
	require.Equal(t, 1, h.waitEntered(t))
	waitTimerBy(t, clk, start.Add(time.Second)) // the call's deadline: no hedge is left
	clk.Advance(time.Second)
	tickUntilDelivered(t, r, []*outcome{o})
	require.ErrorIs(t, o.err, calls.ErrTimeout)
	require.ErrorIs(t, <-h.ended, context.DeadlineExceeded)
	require.ErrorIs(t, <-h.ended, context.DeadlineExceeded)
}

// TestHedgeOneTimer checks that a reactor whose calls are hedged keeps one timer on its clock,
// as reactortest.ManualClock's documentation promises: set for the earliest of its calls' next
// hedges and deadlines, while attempts are out, however many calls there are. Each case sends
// three calls, each with a timeout of a second, advances the clock to each time in due in turn
// (from the calls' submission), once the reactor's timer is set for it, and then waits for the
// attempts that the advance sends: one per call, but at the last time, the calls' deadline.
func TestHedgeOneTimer(t *testing.T) {
	const n, timeout = 3, time.Second
	cases := []struct {
		name   string
		policy reactor.HedgePolicy
		due    []time.Duration
	}{
		{"hedges due before the deadline", reactor.HedgePolicy{Delay: 10 * time.Millisecond, MaxAttempts: 3}, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, timeout}},
		{"a hedge due after the deadline", reactor.HedgePolicy{Delay: 2 * timeout}, []time.Duration{timeout}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHedgeBackend()
			clk := reactortest.NewManualClock(time.Now())
			r := reactortest.NewReactor(t, h.Backend, reactor.Config{ // a lane for each attempt
				Clock: clk, Workers: 1, BatchSize: 16, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
				Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: &tc.policy}},
			})
			start := clk.Now()
			outs := make([]*outcome, n)
			for i := range outs {
				outs[i] = submitEcho(r, string(rune('p'+i)), &calls.Options{Timeout: timeout})
			}
			for range n {
				require.Equal(t, 0, h.waitEntered(t))
			}
			for i, d := range tc.due {
				waitTimerBy(t, clk, start.Add(d))
				require.Equal(t, 1, clk.Timers(), "the reactor's timers, with its calls' attempt %d out", i+1)
				clk.Set(start.Add(d))
				if i < len(tc.due)-1 {
					for range n {
						require.Equal(t, i+1, h.waitEntered(t), "a hedge, once due")
					}
				}
			}
			tickUntilDelivered(t, r, outs)
			for _, o := range outs {
				require.ErrorIs(t, o.err, calls.ErrTimeout)
			}
			h.noAttempt(t)
		})
	}
}

// TestHedgeBudget checks that the budget caps the hedges: a full bucket of ten, then a tenth
// of a hedge per call.
func TestHedgeBudget(t *testing.T) {
	h := newHedgeBackend()
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, h.Backend, reactor.Config{
		Clock: clk, Workers: 4, BatchSize: 16, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: &reactor.HedgePolicy{Delay: 10 * time.Millisecond, Budget: 0.1}}},
	})
	const n = 30
	outs := make([]*outcome, n)
	start := clk.Now()
	for i := range outs {
		outs[i] = submitEcho(r, "x", nil)
		require.Equal(t, 0, h.waitEntered(t))
	}
	waitTimerBy(t, clk, start.Add(10*time.Millisecond))
	clk.Advance(10 * time.Millisecond)
	// Ten tokens at the start, and 0.1 for each call: the bucket holds at most ten.
	const want = 10
	for range want {
		require.Equal(t, 1, h.waitEntered(t))
	}
	require.Eventually(t, func() bool { return methodStats(r).Hedges == want }, 5*time.Second, time.Millisecond)
	h.noAttempt(t)
	for range n {
		h.answers[0] <- codes.OK
	}
	tickUntilDelivered(t, r, outs)
	h.noAttempt(t)
}

// TestHedgeDelayQuantile checks that a method hedged by DelayQuantile sends no hedge until
// enough attempts have succeeded, and then waits the quantile of their transport times.
func TestHedgeDelayQuantile(t *testing.T) {
	h := newHedgeBackend()
	r, clk := hedging(t, h, reactor.HedgePolicy{DelayQuantile: 0.5})
	for i := range 32 {
		o := submitEcho(r, "x", nil)
		require.Equal(t, 0, h.waitEntered(t))
		clk.Advance(time.Duration(i+1) * time.Millisecond) // transport times 1 ms to 32 ms
		h.answers[0] <- codes.OK
		tickUntilDelivered(t, r, []*outcome{o})
	}
	require.Zero(t, methodStats(r).Hedges, "no hedge before enough samples")
	start := clk.Now()
	o := submitEcho(r, "y", nil)
	require.Equal(t, 0, h.waitEntered(t))
	// The median of 1 … 32 ms is 17 ms (the sample at index 16).
	waitTimerBy(t, clk, start.Add(17*time.Millisecond))
	clk.Advance(16 * time.Millisecond)
	h.noAttempt(t)
	clk.Advance(time.Millisecond)
	require.Equal(t, 1, h.waitEntered(t))
	h.answers[1] <- codes.OK
	tickUntilDelivered(t, r, []*outcome{o})
	require.Equal(t, "yb", o.resp.GetMessage())
}

// TestHedgeServiceConfig checks that a hedged method gets no retry policy in the service
// config prpc generates: a method is hedged or retried, never both.
func TestHedgeServiceConfig(t *testing.T) {
	cfg := reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure(), Policies: []reactor.MethodPolicy{
		{Method: echo, Idempotent: true, Hedge: &reactor.HedgePolicy{Delay: time.Millisecond}},
		{Method: mapRead, Idempotent: true},
	}}
	sc, err := cfg.ServiceConfigJSON()
	require.NoError(t, err)
	require.Contains(t, sc, `"method":"Read"`, "the idempotent method is retried")
	require.NotContains(t, sc, `"method":"Echo"`, "the hedged method is not")
}

// TestHedgePolicyErrors checks that New refuses a hedging policy that is invalid, or that
// would combine hedging with retries, naming the field.
func TestHedgePolicyErrors(t *testing.T) {
	hedge := func(p reactor.HedgePolicy) reactor.MethodPolicy {
		return reactor.MethodPolicy{Method: echo, Idempotent: true, Hedge: &p}
	}
	cases := []struct {
		name   string
		cfg    reactor.Config
		policy reactor.MethodPolicy
		want   string
	}{
		{"not idempotent", reactor.Config{}, reactor.MethodPolicy{Method: echo, Hedge: &reactor.HedgePolicy{}}, "Config.Policies[0].Hedge "},
		{"one attempt", reactor.Config{}, hedge(reactor.HedgePolicy{MaxAttempts: 1}), "Config.Policies[0].Hedge.MaxAttempts "},
		{"six attempts", reactor.Config{}, hedge(reactor.HedgePolicy{MaxAttempts: 6}), "Config.Policies[0].Hedge.MaxAttempts "},
		{"negative delay", reactor.Config{}, hedge(reactor.HedgePolicy{Delay: -time.Millisecond}), "Config.Policies[0].Hedge.Delay "},
		{"quantile 1", reactor.Config{}, hedge(reactor.HedgePolicy{DelayQuantile: 1}), "Config.Policies[0].Hedge.DelayQuantile "},
		{"negative budget", reactor.Config{}, hedge(reactor.HedgePolicy{Budget: -0.1}), "Config.Policies[0].Hedge.Budget "},
		{"budget over 4", reactor.Config{}, hedge(reactor.HedgePolicy{Budget: 5}), "Config.Policies[0].Hedge.Budget "},
		{"OK non-fatal", reactor.Config{}, hedge(reactor.HedgePolicy{NonFatalCodes: []codes.Code{codes.OK}}), "Config.Policies[0].Hedge.NonFatalCodes[0] "},
		{"with retries", reactor.Config{Retry: reactor.RetryPolicy{MaxAttempts: 4}}, hedge(reactor.HedgePolicy{}), "hedged or retried, never both"},
		{"resolver's service config", reactor.Config{Target: "dns:///localhost:1", Credentials: reactor.Insecure(), ServiceConfigLookup: true},
			hedge(reactor.HedgePolicy{}), "Config.Policies[0].Hedge "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.Target == "" {
				cfg.Conn = reactortest.NewBackend()
			}
			cfg.Policies = []reactor.MethodPolicy{tc.policy}
			r, err := reactor.New(cfg)
			if err == nil {
				_ = r.Close(context.Background())
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
