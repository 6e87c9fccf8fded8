package policybench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/benchmarks/internal/rank"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// hedgePolicy returns the policy of the scenario's method: idempotent, and hedged as cfg.Hedge
// says (unhedged if nil).
func hedgePolicy(cfg HedgeConfig) reactor.MethodPolicy {
	return reactor.MethodPolicy{Method: echo, Idempotent: true, Hedge: cfg.Hedge}
}

// HedgeConfig is one case of the hedged-reads scenario: Backends backends that answer at
// once, but for the first, which delays one call in SlowEvery by SlowDelay; and a host that
// spreads Calls calls over them (round_robin), PerTick every TickEvery, open-loop, each with
// Timeout, hedged as Hedge says or not.
type HedgeConfig struct {
	Backends  int
	SlowEvery int
	SlowDelay time.Duration
	Calls     int
	PerTick   int
	TickEvery time.Duration
	Timeout   time.Duration
	// Hedge is the method's MethodPolicy.Hedge; nil leaves its calls unhedged.
	Hedge *reactor.HedgePolicy
}

// DefaultHedge is the scenario's shape, unhedged: three backends, one of which delays 10% of
// its calls by 200 ms, and 2,000 calls, 20 every 10 ms, with 1 s timeouts.
func DefaultHedge() HedgeConfig {
	return HedgeConfig{Backends: 3, SlowEvery: 10, SlowDelay: 200 * time.Millisecond,
		Calls: 2000, PerTick: 20, TickEvery: 10 * time.Millisecond, Timeout: time.Second}
}

// Short returns c with fewer calls and a shorter delay, for tests.
func (c HedgeConfig) Short() HedgeConfig {
	c.Calls, c.SlowDelay = 200, 20*time.Millisecond
	return c
}

// HedgeCase is one case of the scenario, named as BenchmarkHedgedReads's sub-benchmark.
type HedgeCase struct {
	Name   string
	Config HedgeConfig
}

// HedgeCases returns the scenario's cases over base, with the HedgePolicy defaults otherwise
// (two attempts, Budget 0.1, which exceeds the share of calls the slow backend delays):
//
//   - "unhedged": no Hedge;
//   - "delay-<d>": a fixed Delay of half base.TickEvery. The host delivers only in Tick, so
//     a hedge sent after half a tick interval still answers in time for the tick that
//     delivers the fast calls, where a Delay of a whole interval would push the slow call to
//     the next tick; and half an interval is well above a fast call's transport time while
//     the lanes send a tick's calls, so the hedges go to the slow calls rather than to fast
//     calls queued behind the others of their tick;
//   - "p95": DelayQuantile 0.95 without a floor (Delay 0): a call is hedged once its first
//     attempt has taken longer than 95% of the method's recent successful attempts, so the
//     slowest twentieth of the fast calls are hedged too, beside the slow ones; and no call
//     is until 32 attempts have succeeded, the warm-up's included.
func HedgeCases(base HedgeConfig) []HedgeCase {
	unhedged, fixed, quantile := base, base, base
	unhedged.Hedge = nil
	fixed.Hedge = &reactor.HedgePolicy{Delay: base.TickEvery / 2}
	quantile.Hedge = &reactor.HedgePolicy{DelayQuantile: 0.95}
	return []HedgeCase{{"unhedged", unhedged}, {"delay-" + fixed.Hedge.Delay.String(), fixed}, {"p95", quantile}}
}

// HedgeBackends are the scenario's backends: Servers[0] is the slow one.
type HedgeBackends struct {
	Servers []*Server
	slow    atomic.Int64 // the calls the slow backend has received
}

// StartHedgeBackends starts cfg.Backends servers: the first delays every cfg.SlowEvery-th call
// it receives by cfg.SlowDelay (or until the call is cancelled), the others answer at once.
func StartHedgeBackends(cfg HedgeConfig) (*HedgeBackends, error) {
	b := &HedgeBackends{}
	slow := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if b.slow.Add(1)%int64(cfg.SlowEvery) == 0 && !delay(ctx, cfg.SlowDelay) {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}
	fast := func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}
	for i := range cfg.Backends {
		h := fast
		if i == 0 {
			h = slow
		}
		s, err := StartServer(h)
		if err != nil {
			return nil, errors.Join(err, b.Stop())
		}
		b.Servers = append(b.Servers, s)
	}
	return b, nil
}

// Addrs returns the backends' addresses, the slow one first.
func (b *HedgeBackends) Addrs() []string {
	var as []string
	for _, s := range b.Servers {
		as = append(as, s.Addr())
	}
	return as
}

// Calls returns the calls each backend has received, the slow one first.
func (b *HedgeBackends) Calls() []int64 {
	var cs []int64
	for _, s := range b.Servers {
		cs = append(cs, s.Calls())
	}
	return cs
}

// Stop stops every backend, each once its handlers have returned.
func (b *HedgeBackends) Stop() error {
	var err error
	for _, s := range b.Servers {
		err = errors.Join(err, s.Stop())
	}
	return err
}

// HedgeResult is what one run of the scenario saw.
type HedgeResult struct {
	// Calls is the calls submitted, OK those that succeeded and Failed the others.
	Calls, OK, Failed int
	// BackendCalls is the calls each backend received during the run, the slow one first:
	// hedging sends some calls twice.
	BackendCalls []int64
	// P50 and P99 are the latencies, from submission to callback, of the calls that
	// succeeded, by nearest rank.
	P50, P99 time.Duration
	// Hedges and HedgesWon are the method's MethodStats.Hedges and HedgesWon over the
	// measured calls: the attempts sent after a call's first, and the calls a hedge's
	// response settled. Both 0 without hedging.
	Hedges, HedgesWon uint64
}

// ExtraLoad is the share of transport calls beyond one per call: 0 without hedging, and for
// no calls.
func (r HedgeResult) ExtraLoad() float64 {
	if r.Calls == 0 {
		return 0
	}
	var n int64
	for _, c := range r.BackendCalls {
		n += c
	}
	return float64(n)/float64(r.Calls) - 1
}

// hedgeWarmup bounds the time RunHedge warms up for, until every backend has served a call.
const hedgeWarmup = 5 * time.Second

// RunHedge runs cfg once, against backends of its own: it warms up until every backend has
// served a call, then submits cfg.Calls calls and ticks the reactor until every one is
// delivered.
func RunHedge(cfg HedgeConfig) (res HedgeResult, err error) {
	be, err := StartHedgeBackends(cfg)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, be.Stop()) }()
	r, err := reactor.New(reactor.Config{
		Targets: be.Addrs(), Credentials: reactor.Insecure(), DefaultTimeout: cfg.Timeout, MaxOutstanding: max(cfg.Calls, 1024),
		Policies: []reactor.MethodPolicy{hedgePolicy(cfg)},
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.Close(context.Background())) }()
	req := &testpb.EchoRequest{Message: "hedge"}
	var latencies []time.Duration
	pending := 0
	submit := func(measured bool) error {
		submitted := time.Now()
		pending++
		return reactor.Go(r, echo, req, nil, func(_ *testpb.EchoResponse, err error) {
			pending--
			switch {
			case !measured:
			case err == nil:
				res.OK++
				latencies = append(latencies, time.Since(submitted))
			default:
				res.Failed++
			}
		})
	}
	drain := func() {
		for pending > 0 {
			<-r.Ready()
			r.Tick(time.Second)
		}
	}
	// round_robin picks only the backends it has connected to: warm up until each has served
	// a call, so that the measured calls are spread over all of them.
	for warm := time.Now(); slices.Contains(be.Calls(), 0); {
		if time.Since(warm) > hedgeWarmup {
			return res, fmt.Errorf("policybench: after %v of warm-up calls, the backends had received %v", hedgeWarmup, be.Calls())
		}
		for range cfg.Backends {
			if err := submit(false); err != nil {
				return res, err
			}
		}
		drain()
	}
	calls0, stats0 := be.Calls(), r.Stats().Methods[echo.Path()]
	tick := time.NewTicker(cfg.TickEvery)
	defer tick.Stop()
	for res.Calls < cfg.Calls {
		for range min(cfg.PerTick, cfg.Calls-res.Calls) {
			if err := submit(true); err != nil {
				return res, err
			}
			res.Calls++
		}
		<-tick.C
		r.Tick(2 * time.Millisecond)
	}
	drain()
	for i, c := range be.Calls() {
		res.BackendCalls = append(res.BackendCalls, c-calls0[i])
	}
	stats := r.Stats().Methods[echo.Path()]
	res.Hedges, res.HedgesWon = stats.Hedges-stats0.Hedges, stats.HedgesWon-stats0.HedgesWon
	slices.Sort(latencies)
	res.P50, res.P99 = rank.Percentile(latencies, 50), rank.Percentile(latencies, 99)
	return res, nil
}
