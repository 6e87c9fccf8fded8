package policybench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/rank"
	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// OverloadConfig is one case of the overload scenario: a backend of Workers workers with a
// queue in front of them, each call waiting for a free worker, in order, then taking Service
// of it, so that a call's time grows with the calls in flight; and a host that submits
// PerTick calls every TickEvery for Run, open-loop, each with Timeout, and ticks the reactor in
// between, then shuts it down.
type OverloadConfig struct {
	// Workers is the backend's workers and Service each call's time on one: it serves
	// Workers/Service calls a second.
	Workers int
	Service time.Duration
	// ServesCancelled makes the backend serve every call it received, as handlers that never
	// look at their context do (a database query behind a pool without deadlines), so that
	// it spends its workers on calls whose clients gave up; otherwise it drops a call
	// cancelled while it waits for a worker (a Go handler that selects on its context). Once
	// a call has a worker, both finish it.
	ServesCancelled bool
	// Timeout is every call's timeout; Run the time the host submits for; PerTick the calls it
	// submits every TickEvery.
	Timeout, Run, TickEvery time.Duration
	PerTick                 int
	// LaneWorkers and BatchSize are the reactor's Config.Workers and Config.BatchSize, and
	// Adaptive sets Config.AdaptiveLimit, with its defaults.
	LaneWorkers, BatchSize int
	Adaptive               bool
}

// DefaultOverload is the scenario's shape as the benchmarks run it, for the backend that drops
// cancelled calls and the default lanes: 4 workers of 5 ms each, 50 ms timeouts, submitting
// for 3 s twice what the backend serves, every 10 ms.
func DefaultOverload() OverloadConfig {
	c := OverloadConfig{Workers: 4, Service: 5 * time.Millisecond, Timeout: 50 * time.Millisecond,
		Run: 3 * time.Second, TickEvery: 10 * time.Millisecond, LaneWorkers: 4, BatchSize: 8}
	c.PerTick = 2 * c.Workers * int(c.TickEvery/c.Service)
	return c
}

// Short returns c with a short run, for tests.
func (c OverloadConfig) Short() OverloadConfig {
	c.Run = 200 * time.Millisecond
	return c
}

// Lanes is the reactor's lanes, LaneWorkers × BatchSize.
func (c OverloadConfig) Lanes() int { return c.LaneWorkers * c.BatchSize }

// Backend names the backend: "serves-cancelled" or "drops-cancelled".
func (c OverloadConfig) Backend() string {
	if c.ServesCancelled {
		return "serves-cancelled"
	}
	return "drops-cancelled"
}

// Limit names the reactor's limit on its lanes: "adaptive" or "fixed".
func (c OverloadConfig) Limit() string {
	if c.Adaptive {
		return "adaptive"
	}
	return "fixed"
}

// Name names the case as BenchmarkOverload's sub-benchmark: the backend, then the limit and
// the lanes, as in "drops-cancelled/adaptive-128".
func (c OverloadConfig) Name() string {
	return fmt.Sprintf("%s/%s-%d", c.Backend(), c.Limit(), c.Lanes())
}

// OverloadCases returns the scenario's cases over base, for each backend (dropping cancelled
// calls, then serving them): four times base's batch of lanes, more than the backend serves
// within the calls' timeout, fixed then under AdaptiveLimit, and base's own lanes, fixed.
func OverloadCases(base OverloadConfig) []OverloadConfig {
	var cs []OverloadConfig
	for _, serves := range []bool{false, true} {
		for _, l := range []struct {
			batch    int
			adaptive bool
		}{{4 * base.BatchSize, false}, {4 * base.BatchSize, true}, {base.BatchSize, false}} {
			c := base
			c.ServesCancelled, c.BatchSize, c.Adaptive = serves, l.batch, l.adaptive
			cs = append(cs, c)
		}
	}
	return cs
}

// OverloadResult is what one run of the scenario saw.
type OverloadResult struct {
	// Run is the time the host submitted for.
	Run time.Duration
	// Submitted is the calls the host submitted; Rejected those of them Go refused at once
	// with ErrOverloaded.
	Submitted, Rejected int64
	// OK is the calls that succeeded; Timeouts those that failed with ErrTimeout, NeverSent
	// those of them prpc never sent (they timed out in its queue); Failed those that failed
	// otherwise.
	OK, Timeouts, NeverSent, Failed int64
	// Wasted is the calls the backend served after their client had given up.
	Wasted int64
	// Limit is Stats.InFlightLimit at the end of the run; 0 without AdaptiveLimit.
	Limit int
	// P50 and P99 are the latencies, from submission to callback, of the calls that
	// succeeded, by nearest rank; 0 if none did.
	P50, P99 time.Duration
}

// Goodput is the calls that succeeded per second of the run.
func (r OverloadResult) Goodput() float64 { return float64(r.OK) / r.Run.Seconds() }

// overloadBackend is the scenario's backend: its workers and its count of wasted calls.
type overloadBackend struct {
	workers chan struct{}
	service time.Duration
	serves  bool // serves every call, cancelled or not
	wasted  atomic.Int64
}

// handle serves one call: it waits for a worker, unless the backend drops calls and this one
// is cancelled first, then holds the worker for the service time.
func (b *overloadBackend) handle(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	cancelled := ctx.Done()
	if b.serves {
		cancelled = nil // never ready
	}
	select {
	case b.workers <- struct{}{}:
	case <-cancelled: // cancelled while queued: no work done
		return nil, ctx.Err()
	}
	time.Sleep(b.service) // the work
	<-b.workers
	if ctx.Err() != nil {
		b.wasted.Add(1)
	}
	return &testpb.EchoResponse{Message: req.GetMessage()}, nil
}

// RunOverload runs cfg once, against a backend of its own: it submits for cfg.Run, shuts the
// reactor down (every call settles, its callback run), then waits for the backend to finish
// the calls it still holds, which it may serve after their clients gave up.
func RunOverload(cfg OverloadConfig) (res OverloadResult, err error) {
	be := &overloadBackend{workers: make(chan struct{}, cfg.Workers), service: cfg.Service, serves: cfg.ServesCancelled}
	srv, err := StartServer(be.handle)
	if err != nil {
		return res, err
	}
	stopped := false
	defer func() {
		if !stopped {
			err = errors.Join(err, srv.Stop())
		}
	}()
	var limit *reactor.AdaptiveLimit
	if cfg.Adaptive {
		limit = &reactor.AdaptiveLimit{}
	}
	r, err := reactor.New(reactor.Config{
		Target: srv.Addr(), Credentials: reactor.Insecure(), Workers: cfg.LaneWorkers, BatchSize: cfg.BatchSize,
		DefaultTimeout: cfg.Timeout, AdaptiveLimit: limit,
	})
	if err != nil {
		return res, err
	}
	res.Run = cfg.Run
	var latencies []time.Duration
	req := &testpb.EchoRequest{Message: "overload"}
	tick := time.NewTicker(cfg.TickEvery)
	defer tick.Stop()
	start := time.Now()
	for time.Since(start) < cfg.Run {
		for range cfg.PerTick {
			submitted := time.Now()
			res.Submitted++
			err := reactor.Go(r, echo, req, nil, func(_ *testpb.EchoResponse, err error) {
				var ce *calls.Error
				switch {
				case err == nil:
					res.OK++
					latencies = append(latencies, time.Since(submitted))
				case errors.Is(err, calls.ErrTimeout):
					res.Timeouts++
					if errors.As(err, &ce) && ce.NotSent() {
						res.NeverSent++
					}
				default:
					res.Failed++
				}
			})
			switch {
			case errors.Is(err, calls.ErrOverloaded):
				res.Rejected++
			case err != nil:
				return res, errors.Join(err, r.Close(context.Background()))
			}
		}
		<-tick.C
		r.Tick(2 * time.Millisecond)
	}
	res.Limit = r.Stats().InFlightLimit
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		return res, err
	}
	// The backend's calls the reactor gave up on, which it may still serve.
	stopped = true
	if err := srv.Stop(); err != nil {
		return res, err
	}
	res.Wasted = be.wasted.Load()
	slices.Sort(latencies)
	res.P50, res.P99 = rank.Percentile(latencies, 50), rank.Percentile(latencies, 99)
	return res, nil
}
