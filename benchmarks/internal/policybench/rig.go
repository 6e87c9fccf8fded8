package policybench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/benchmarks/internal/rank"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// What the scenarios' runners share: their servers, a reactor connected to them, the host
// side that submits calls and ticks the reactor, and the figures they take from it.

// servers are the backends of one run, each a Server of its own.
type servers []*Server

// startServers starts a Server for each of handlers, in order. If one fails to start, it
// stops those it started.
func startServers(handlers ...Handler) (servers, error) {
	var ss servers
	for _, h := range handlers {
		s, err := StartServer(h)
		if err != nil {
			return nil, errors.Join(err, ss.stop())
		}
		ss = append(ss, s)
	}
	return ss, nil
}

// addrs returns the servers' addresses, in order.
func (ss servers) addrs() []string {
	var as []string
	for _, s := range ss {
		as = append(as, s.Addr())
	}
	return as
}

// calls returns the calls each server has received, in order.
func (ss servers) calls() []int64 {
	var cs []int64
	for _, s := range ss {
		cs = append(cs, s.Calls())
	}
	return cs
}

// stop stops every server, each once its handlers have returned.
func (ss servers) stop() error {
	var err error
	for _, s := range ss {
		err = errors.Join(err, s.Stop())
	}
	return err
}

// echoAfter answers req with its own message after d, or fails with ctx's error, as a gRPC
// status, if ctx is done first.
func echoAfter(ctx context.Context, req *testpb.EchoRequest, d time.Duration) (*testpb.EchoResponse, error) {
	if !delay(ctx, d) {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &testpb.EchoResponse{Message: req.GetMessage()}, nil
}

// echoAfterDelayMs is a Handler that answers each call after the time its request asks for
// (EchoRequest.DelayMs).
func echoAfterDelayMs(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return echoAfter(ctx, req, time.Duration(req.GetDelayMs())*time.Millisecond)
}

// rig is what one run of a scenario stands on: its servers and a reactor connected to them,
// which the host goroutine, the one that runs the scenario, ticks. Its methods run on the
// host goroutine.
type rig struct {
	srvs servers
	r    *reactor.Reactor
	// pending is the calls submitted through submit whose callback has not run yet.
	pending int
	// beforeStop, if not nil, runs once the reactor is closed or shut down, before the
	// servers stop: a backend that holds calls back releases them.
	beforeStop func()
	closed     bool // close or shutdown has run
}

// newRig creates a reactor of the Config that config returns for the servers' addresses, in
// plaintext (newRig sets Credentials), connected to srvs. The rig owns srvs from then on: if
// the reactor cannot be created, newRig stops them.
func newRig(srvs servers, config func(addrs []string) reactor.Config) (*rig, error) {
	cfg := config(srvs.addrs())
	cfg.Credentials = reactor.Insecure()
	r, err := reactor.New(cfg)
	if err != nil {
		return nil, errors.Join(err, srvs.stop())
	}
	return &rig{srvs: srvs, r: r}, nil
}

// startRig starts a server for each of handlers, then a reactor connected to them, as newRig
// does.
func startRig(config func(addrs []string) reactor.Config, handlers ...Handler) (*rig, error) {
	srvs, err := startServers(handlers...)
	if err != nil {
		return nil, err
	}
	return newRig(srvs, config)
}

// spreadOver returns the Config of a reactor that spreads the calls over addrs (round_robin,
// through Config.Targets), each with timeout, for a run of calls calls of echo, hedged as
// hedge says (unhedged if nil).
func spreadOver(addrs []string, timeout time.Duration, calls int, hedge *reactor.HedgePolicy) reactor.Config {
	return reactor.Config{Targets: addrs, DefaultTimeout: timeout, MaxOutstanding: max(calls, 1024),
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: hedge}}}
}

// close closes the reactor (Reactor.Close), runs beforeStop, then stops the servers, each once
// its handlers have returned. After close or shutdown it does nothing.
func (g *rig) close() error {
	if g.closed {
		return nil
	}
	g.closed = true
	err := g.r.Close(context.Background())
	return errors.Join(err, g.stopServers())
}

// shutdown shuts the reactor down (Reactor.Shutdown), for at most timeout, runs beforeStop,
// then stops the servers, each once its handlers have returned. After close or shutdown it
// does nothing.
func (g *rig) shutdown(timeout time.Duration) error {
	if g.closed {
		return nil
	}
	g.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := g.r.Shutdown(ctx)
	return errors.Join(err, g.stopServers())
}

// stopServers runs beforeStop, then stops the servers.
func (g *rig) stopServers() error {
	if g.beforeStop != nil {
		g.beforeStop()
	}
	return g.srvs.stop()
}

// submit submits a call of echo with req through reactor.Go, with done as its callback,
// and counts it pending until done has run. As reactor.Go, it returns the error of a call
// the reactor rejected, whose callback still runs.
func (g *rig) submit(req *testpb.EchoRequest, done func(err error)) error {
	g.pending++
	return reactor.Go(g.r, echo, req, nil, func(_ *testpb.EchoResponse, err error) {
		g.pending--
		done(err)
	})
}

// drain ticks the reactor, woken by Ready, until no call submitted through submit is pending.
func (g *rig) drain() {
	for g.pending > 0 {
		<-g.r.Ready()
		g.r.Tick(time.Second)
	}
}

// warmUp submits one call, whose request says "warm-up", and drains: the reactor connects.
// If the call fails, warmUp returns its error, prefixed by what, as in "the warm-up read".
func (g *rig) warmUp(what string) error {
	var failed error
	if err := g.submit(&testpb.EchoRequest{Message: "warm-up"}, func(err error) { failed = err }); err != nil {
		return err
	}
	g.drain()
	if failed != nil {
		return fmt.Errorf("policybench: %s: %w", what, failed)
	}
	return nil
}

// warmUpEachBound bounds the time warmUpEach warms up for.
const warmUpEachBound = 5 * time.Second

// warmUpEach submits rounds of calls with req, one per server, each round drained, until
// every server has received a call, or fails after warmUpEachBound. round_robin picks only
// the backends it has connected to, so that the calls after the warm-up are spread over all
// of them from the first. The warm-up's calls are not counted anywhere but in the servers'
// and the reactor's own counts.
func (g *rig) warmUpEach(req *testpb.EchoRequest) error {
	for warm := time.Now(); slices.Contains(g.srvs.calls(), 0); {
		if time.Since(warm) > warmUpEachBound {
			return fmt.Errorf("policybench: after %v of warm-up calls, the backends had received %v", warmUpEachBound, g.srvs.calls())
		}
		for range g.srvs {
			if err := g.submit(req, func(error) {}); err != nil {
				return err
			}
		}
		g.drain()
	}
	return nil
}

// submitEveryTick submits calls calls, open-loop, perTick at each tick of a ticker of every:
// at each tick it runs before, if not nil, with the calls submitted so far, submits the
// tick's calls with submit, waits for the ticker, then ticks the reactor once; once every
// call is submitted it drains. It returns the calls submitted, and the first error of before
// or submit, at which it stops.
func (g *rig) submitEveryTick(calls, perTick int, every time.Duration, before func(submitted int) error, submit func() error) (int, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	n := 0
	for n < calls {
		if before != nil {
			if err := before(n); err != nil {
				return n, err
			}
		}
		for range min(perTick, calls-n) {
			if err := submit(); err != nil {
				return n, err
			}
			n++
		}
		<-tick.C
		g.r.Tick(2 * time.Millisecond)
	}
	g.drain()
	return n, nil
}

// methodStats returns echo's MethodStats as they stand.
func (g *rig) methodStats() reactor.MethodStats {
	return g.r.Stats().Methods[echo.Path()]
}

// hedgesSince returns the hedges echo's calls have sent, and those that won, since its stats
// were since.
func (g *rig) hedgesSince(since reactor.MethodStats) (hedges, won uint64) {
	now := g.methodStats()
	return now.Hedges - since.Hedges, now.HedgesWon - since.HedgesWon
}

// percentiles sorts latencies and returns their 50th and 99th percentiles, by nearest rank.
func percentiles(latencies []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(latencies)
	return rank.Percentile(latencies, 50), rank.Percentile(latencies, 99)
}
