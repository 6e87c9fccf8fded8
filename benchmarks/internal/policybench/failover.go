package policybench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// FailoverConfig is one case of the failover scenario: Backends backends that each answer
// every call after Service; a host that spreads Calls reads over them (round_robin, through
// Config.Targets), PerTick every TickEvery, open-loop, each with Timeout; and the first
// backend killed (Server.Kill: its listener and connections closed at once) mid-run: at the
// first tick, once KillAfter reads have been submitted, at which it is serving a call, so
// that the kill breaks calls in flight. The method is idempotent, and hedged as Hedge says or, if nil,
// retried by gRPC as Config.Retry's defaults say.
type FailoverConfig struct {
	Backends  int
	Service   time.Duration
	Calls     int
	PerTick   int
	TickEvery time.Duration
	Timeout   time.Duration
	KillAfter int
	// Hedge is the method's MethodPolicy.Hedge; nil leaves its calls unhedged.
	Hedge *reactor.HedgePolicy
}

// DefaultFailover is the scenario's shape, unhedged: three backends that take 30 ms per call,
// and 300 reads, 3 every 10 ms, so that each backend serves about three at any moment, with
// 1 s timeouts; the first backend killed once 150 have been submitted. The kill breaks so
// few calls that gRPC's retry throttling, at Config.Retry's defaults, retries each of them:
// the scenario measures failover, not the throttle.
func DefaultFailover() FailoverConfig {
	return FailoverConfig{Backends: 3, Service: 30 * time.Millisecond, Calls: 300, PerTick: 3,
		TickEvery: 10 * time.Millisecond, Timeout: time.Second, KillAfter: 150}
}

// Short returns c with fewer reads, for tests.
func (c FailoverConfig) Short() FailoverConfig {
	c.Calls, c.KillAfter = 60, 30
	return c
}

// FailoverCase is one case of the scenario, named as BenchmarkHedgedFailover's sub-benchmark.
type FailoverCase struct {
	Name   string
	Config FailoverConfig
}

// FailoverCases returns the scenario's cases over base:
//
//   - "unhedged": no Hedge, so gRPC retries a call that failed with Unavailable (Config.Retry's
//     defaults), on another backend;
//   - "p95": HedgePolicy{DelayQuantile: 0.95}, as the documentation shows it, its other
//     fields, NonFatalCodes among them, left to their defaults;
//   - "p95-nonfatal-unavailable": the same with NonFatalCodes [Unavailable], so that an attempt
//     that failed with Unavailable sends the next one at once.
func FailoverCases(base FailoverConfig) []FailoverCase {
	unhedged, quantile, nonFatal := base, base, base
	unhedged.Hedge = nil
	quantile.Hedge = &reactor.HedgePolicy{DelayQuantile: 0.95}
	nonFatal.Hedge = &reactor.HedgePolicy{DelayQuantile: 0.95, NonFatalCodes: []codes.Code{codes.Unavailable}}
	return []FailoverCase{{"unhedged", unhedged}, {"p95", quantile}, {"p95-nonfatal-unavailable", nonFatal}}
}

// FailoverResult is what one run of the scenario saw.
type FailoverResult struct {
	// Calls is the reads submitted; OK those that succeeded; Unavailable and
	// DeadlineExceeded those that failed with that code; Failed those that failed otherwise.
	Calls, OK, Unavailable, DeadlineExceeded, Failed int
	// Broken is the calls the killed backend was serving when it was killed (Server.Serving
	// just before).
	Broken int64
	// Hedges and HedgesWon are the method's MethodStats.Hedges and HedgesWon over the
	// reads; both 0 without hedging.
	Hedges, HedgesWon uint64
}

// RunFailover runs cfg once, against backends of its own: it warms up until every backend has
// served a call, then submits cfg.Calls reads, kills the first backend mid-run as cfg says,
// and ticks the reactor until every read is delivered.
func RunFailover(cfg FailoverConfig) (res FailoverResult, err error) {
	handler := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return echoAfter(ctx, req, cfg.Service)
	}
	g, err := startRig(func(addrs []string) reactor.Config {
		return spreadOver(addrs, cfg.Timeout, cfg.Calls, cfg.Hedge)
	}, slices.Repeat([]Handler{handler}, cfg.Backends)...)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, g.close()) }()
	req := &testpb.EchoRequest{Message: "failover"}
	if err := g.warmUpEach(req); err != nil {
		return res, err
	}
	stats0 := g.methodStats()
	k := &killer{victim: g.srvs[0], after: cfg.KillAfter}
	submit := func() error { return g.submit(req, res.count) }
	res.Calls, err = g.submitEveryTick(cfg.Calls, cfg.PerTick, cfg.TickEvery, k.atTick, submit)
	res.Broken = k.broken
	if err != nil {
		return res, err
	}
	if !k.killed {
		return res, fmt.Errorf("policybench: the backend to kill served no call at any tick after the first %d reads", cfg.KillAfter)
	}
	res.Hedges, res.HedgesWon = g.hedgesSince(stats0)
	return res, nil
}

// count counts a read's outcome by its code.
func (r *FailoverResult) count(err error) {
	switch status.Code(err) {
	case codes.OK:
		r.OK++
	case codes.Unavailable:
		r.Unavailable++
	case codes.DeadlineExceeded:
		r.DeadlineExceeded++
	default:
		r.Failed++
	}
}

// killer kills victim at the first tick at which at least after reads have been submitted
// and victim is serving a call, and notes the calls the kill broke.
type killer struct {
	victim *Server
	after  int
	broken int64 // the calls victim was serving when it was killed
	killed bool
}

// atTick kills the victim if it is time to, given the reads submitted so far, and returns
// what Server.Kill returned.
func (k *killer) atTick(submitted int) error {
	if k.killed || submitted < k.after {
		return nil
	}
	if n := k.victim.Serving(); n > 0 {
		k.broken, k.killed = n, true
		return k.victim.Kill()
	}
	return nil
}
