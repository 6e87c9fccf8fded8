package policybench

import (
	"errors"
	"fmt"
	"time"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// CoalesceConfig is one case of the coalesced-reads scenario: bursts of Burst identical calls,
// all submitted in one tick, as a game does when many players join at once, to a server that
// answers each call after Service; with the method's calls coalesced (MethodPolicy.Coalesce,
// with CoalesceMax) or not.
type CoalesceConfig struct {
	// Burst is the calls of each burst; Bursts the bursts RunCoalesce measures, after one
	// burst that connects and warms up.
	Burst, Bursts int
	// Service is the time the server takes to answer each call it receives, in whole
	// milliseconds: each request asks for it (EchoRequest.DelayMs).
	Service time.Duration
	// Timeout is every call's timeout.
	Timeout time.Duration
	// Coalesce and CoalesceMax are the method's MethodPolicy fields.
	Coalesce    bool
	CoalesceMax int
}

// DefaultCoalesce is the scenario's shape as the benchmarks run it, coalescing off: bursts of
// 1,000 calls to a server that takes 20 ms per call, five bursts per run.
func DefaultCoalesce() CoalesceConfig {
	return CoalesceConfig{Burst: 1000, Bursts: 5, Service: 20 * time.Millisecond, Timeout: 5 * time.Second}
}

// Short returns c with small bursts and a quick server, for tests.
func (c CoalesceConfig) Short() CoalesceConfig {
	c.Burst, c.Bursts, c.Service = 50, 2, 2*time.Millisecond
	return c
}

// CoalesceCase is one case of the scenario, named as BenchmarkCoalescedBurst's sub-benchmark.
type CoalesceCase struct {
	Name   string
	Config CoalesceConfig
}

// CoalesceCases returns the scenario's cases over base: coalescing off ("off"), on with
// the default cap ("on") and on with a cap of one burst ("on-max<Burst>"), which lets one
// transport call serve the whole burst.
func CoalesceCases(base CoalesceConfig) []CoalesceCase {
	off, on, whole := base, base, base
	off.Coalesce, off.CoalesceMax = false, 0
	on.Coalesce, on.CoalesceMax = true, 0
	whole.Coalesce, whole.CoalesceMax = true, base.Burst
	return []CoalesceCase{{"off", off}, {"on", on}, {fmt.Sprintf("on-max%d", base.Burst), whole}}
}

// CoalesceResult is what the bursts of one run measured, summed over them.
type CoalesceResult struct {
	// Bursts is the bursts measured, Calls their calls.
	Bursts, Calls int
	// BackendCalls is the transport calls the server received during them.
	BackendCalls int64
	// LastDelivery is the time from each burst's first submission to its last delivery,
	// summed over the bursts.
	LastDelivery time.Duration
	// Host is the time spent inside reactor.Call, Then, OnError and Tick on the host
	// goroutine, summed over every call.
	Host time.Duration
	// Failed is the calls that failed.
	Failed int
}

// BackendCallsPerBurst is the transport calls the server received per burst.
func (r CoalesceResult) BackendCallsPerBurst() float64 {
	return float64(r.BackendCalls) / float64(max(r.Bursts, 1))
}

// LastDeliveryPerBurst is the mean time from a burst's first submission to its last delivery.
func (r CoalesceResult) LastDeliveryPerBurst() time.Duration {
	return r.LastDelivery / time.Duration(max(r.Bursts, 1))
}

// HostNsPerCall is the host goroutine's time per call, in nanoseconds.
func (r CoalesceResult) HostNsPerCall() float64 {
	return float64(r.Host.Nanoseconds()) / float64(max(r.Calls, 1))
}

// CoalesceRun is a started run of the scenario: its server and a reactor, warmed up by one
// burst. BenchmarkCoalescedBurst runs its b.N bursts one by one; RunCoalesce runs a whole run.
type CoalesceRun struct {
	cfg    CoalesceConfig
	g      *rig
	calls0 int64 // the server's calls before the first measured burst
	res    CoalesceResult
	then   func(*testpb.EchoResponse)
	fail   func(error)
}

// StartCoalesce starts the server and the reactor of one run of cfg and runs the burst that
// connects and warms up, which is not measured.
func StartCoalesce(cfg CoalesceConfig) (*CoalesceRun, error) {
	g, err := startRig(func(addrs []string) reactor.Config {
		return reactor.Config{Target: addrs[0], MaxOutstanding: 2 * cfg.Burst, DefaultTimeout: cfg.Timeout,
			Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Coalesce: cfg.Coalesce, CoalesceMax: cfg.CoalesceMax}}}
	}, echoAfterDelayMs)
	if err != nil {
		return nil, err
	}
	c := &CoalesceRun{cfg: cfg, g: g}
	c.then = func(*testpb.EchoResponse) {}
	c.fail = func(error) { c.res.Failed++ }
	c.Burst()
	c.calls0, c.res = g.srvs[0].Calls(), CoalesceResult{Failed: c.res.Failed}
	return c, nil
}

// Burst submits one burst, a new request per call as game code makes them, and ticks the
// reactor, woken by Ready, until every call of it is delivered. It adds the burst to the
// result.
func (c *CoalesceRun) Burst() {
	delayMs := c.cfg.Service.Milliseconds()
	start := time.Now()
	for range c.cfg.Burst {
		reactor.Call(c.g.r, echo, &testpb.EchoRequest{Message: "leaderboard", DelayMs: delayMs}, nil).Then(c.then).OnError(c.fail)
	}
	host := time.Since(start)
	for delivered := 0; delivered < c.cfg.Burst; {
		<-c.g.r.Ready()
		t := time.Now()
		delivered += c.g.r.Tick(time.Second).Delivered
		host += time.Since(t)
	}
	c.res.LastDelivery += time.Since(start)
	c.res.Host += host
	c.res.Bursts++
	c.res.Calls += c.cfg.Burst
}

// Result returns what the bursts measured so far; its Failed counts the warm-up's failed
// calls too.
func (c *CoalesceRun) Result() CoalesceResult {
	res := c.res
	res.BackendCalls = c.g.srvs[0].Calls() - c.calls0
	return res
}

// Close closes the reactor and stops the server; a second Close does nothing.
func (c *CoalesceRun) Close() error { return c.g.close() }

// RunCoalesce runs cfg once: it starts a server and a reactor, warms up with one burst, then
// measures cfg.Bursts bursts.
func RunCoalesce(cfg CoalesceConfig) (res CoalesceResult, err error) {
	c, err := StartCoalesce(cfg)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	for range cfg.Bursts {
		c.Burst()
	}
	return c.Result(), nil
}
