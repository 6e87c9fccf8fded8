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

// The hedged-reads scenario, ready but for the policy: hedgePolicy is where
// MethodPolicy.Hedge is to be set once package reactor has it.

// ErrHedgeUnavailable is what RunHedge returns for a hedged run: prpc cannot hedge a call yet.
var ErrHedgeUnavailable = errors.New("policybench: hedged reads need MethodPolicy.Hedge, which package reactor does not have yet")

// hedgePolicy returns the policy of the scenario's method: idempotent, and hedged if hedge.
// It is the one piece of the scenario left to write once MethodPolicy.Hedge exists; until
// then it refuses a hedged run.
func hedgePolicy(hedge bool) (reactor.MethodPolicy, error) {
	p := reactor.MethodPolicy{Method: echo, Idempotent: true}
	if hedge {
		return p, ErrHedgeUnavailable
	}
	return p, nil
}

// HedgeConfig is one case of the hedged-reads scenario: Backends backends that answer at
// once, but for the first, which delays one call in SlowEvery by SlowDelay; and a host that
// spreads Calls calls over them (round_robin), PerTick every TickEvery, open-loop, each with
// Timeout, hedged (Hedge) or not.
type HedgeConfig struct {
	Backends  int
	SlowEvery int
	SlowDelay time.Duration
	Calls     int
	PerTick   int
	TickEvery time.Duration
	Timeout   time.Duration
	Hedge     bool
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
// delivered. A hedged run fails with ErrHedgeUnavailable until MethodPolicy.Hedge exists.
func RunHedge(cfg HedgeConfig) (res HedgeResult, err error) {
	policy, err := hedgePolicy(cfg.Hedge)
	if err != nil {
		return res, err
	}
	be, err := StartHedgeBackends(cfg)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, be.Stop()) }()
	r, err := reactor.New(reactor.Config{
		Targets: be.Addrs(), Credentials: reactor.Insecure(), DefaultTimeout: cfg.Timeout, MaxOutstanding: max(cfg.Calls, 1024),
		Policies: []reactor.MethodPolicy{policy},
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
	calls0 := be.Calls()
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
	slices.Sort(latencies)
	res.P50, res.P99 = rank.Percentile(latencies, 50), rank.Percentile(latencies, 99)
	return res, nil
}
