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
	var srvs []*Server
	defer func() {
		for _, s := range srvs {
			err = errors.Join(err, s.Stop())
		}
	}()
	handler := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if !delay(ctx, cfg.Service) {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}
	var addrs []string
	for range cfg.Backends {
		s, err := StartServer(handler)
		if err != nil {
			return res, err
		}
		srvs = append(srvs, s)
		addrs = append(addrs, s.Addr())
	}
	calls := func() []int64 {
		var cs []int64
		for _, s := range srvs {
			cs = append(cs, s.Calls())
		}
		return cs
	}
	r, err := reactor.New(reactor.Config{
		Targets: addrs, Credentials: reactor.Insecure(), DefaultTimeout: cfg.Timeout, MaxOutstanding: max(cfg.Calls, 1024),
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: cfg.Hedge}},
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.Close(context.Background())) }()
	req := &testpb.EchoRequest{Message: "failover"}
	pending := 0
	submit := func(measured bool) error {
		pending++
		return reactor.Go(r, echo, req, nil, func(_ *testpb.EchoResponse, err error) {
			pending--
			if !measured {
				return
			}
			switch status.Code(err) {
			case codes.OK:
				res.OK++
			case codes.Unavailable:
				res.Unavailable++
			case codes.DeadlineExceeded:
				res.DeadlineExceeded++
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
	// a call, so that the reads are spread over all of them from the first.
	for warm := time.Now(); slices.Contains(calls(), 0); {
		if time.Since(warm) > hedgeWarmup {
			return res, fmt.Errorf("policybench: after %v of warm-up calls, the backends had received %v", hedgeWarmup, calls())
		}
		for range cfg.Backends {
			if err := submit(false); err != nil {
				return res, err
			}
		}
		drain()
	}
	stats0 := r.Stats().Methods[echo.Path()]
	victim, killed := srvs[0], false
	tick := time.NewTicker(cfg.TickEvery)
	defer tick.Stop()
	for res.Calls < cfg.Calls {
		if !killed && res.Calls >= cfg.KillAfter {
			if n := victim.Serving(); n > 0 {
				res.Broken, killed = n, true
				if err := victim.Kill(); err != nil {
					return res, err
				}
			}
		}
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
	if !killed {
		return res, fmt.Errorf("policybench: the backend to kill served no call at any tick after the first %d reads", cfg.KillAfter)
	}
	stats := r.Stats().Methods[echo.Path()]
	res.Hedges, res.HedgesWon = stats.Hedges-stats0.Hedges, stats.HedgesWon-stats0.HedgesWon
	return res, nil
}
