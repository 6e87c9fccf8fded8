package policybench

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

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
		if b.slow.Add(1)%int64(cfg.SlowEvery) == 0 {
			return echoAfter(ctx, req, cfg.SlowDelay)
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}
	fast := func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}
	var handlers []Handler
	for i := range cfg.Backends {
		h := fast
		if i == 0 {
			h = slow
		}
		handlers = append(handlers, h)
	}
	srvs, err := startServers(handlers...)
	if err != nil {
		return nil, err
	}
	b.Servers = srvs
	return b, nil
}

// Addrs returns the backends' addresses, the slow one first.
func (b *HedgeBackends) Addrs() []string { return servers(b.Servers).addrs() }

// Calls returns the calls each backend has received, the slow one first.
func (b *HedgeBackends) Calls() []int64 { return servers(b.Servers).calls() }

// Stop stops every backend, each once its handlers have returned.
func (b *HedgeBackends) Stop() error { return servers(b.Servers).stop() }

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

// RunHedge runs cfg once, against backends of its own: it warms up until every backend has
// served a call, then submits cfg.Calls calls and ticks the reactor until every one is
// delivered.
func RunHedge(cfg HedgeConfig) (res HedgeResult, err error) {
	be, err := StartHedgeBackends(cfg)
	if err != nil {
		return res, err
	}
	g, err := newRig(be.Servers, func(addrs []string) reactor.Config {
		return spreadOver(addrs, cfg.Timeout, cfg.Calls, cfg.Hedge)
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, g.close()) }()
	req := &testpb.EchoRequest{Message: "hedge"}
	if err := g.warmUpEach(req); err != nil {
		return res, err
	}
	calls0, stats0 := be.Calls(), g.methodStats()
	var latencies []time.Duration
	submit := func() error {
		submitted := time.Now()
		return g.submit(req, func(err error) {
			if err != nil {
				res.Failed++
				return
			}
			res.OK++
			latencies = append(latencies, time.Since(submitted))
		})
	}
	if res.Calls, err = g.submitEveryTick(cfg.Calls, cfg.PerTick, cfg.TickEvery, nil, submit); err != nil {
		return res, err
	}
	for i, c := range be.Calls() {
		res.BackendCalls = append(res.BackendCalls, c-calls0[i])
	}
	res.Hedges, res.HedgesWon = g.hedgesSince(stats0)
	res.P50, res.P99 = percentiles(latencies)
	return res, nil
}
