package benchmarks

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// The shape of BenchmarkOverload: a backend of overloadWorkers workers, each call taking
// overloadService of one, so that it serves overloadWorkers/overloadService calls a second;
// a host that submits twice that, open-loop, for overloadRun, overloadPerTick calls every
// overloadTickEvery; every call's timeout is overloadTimeout.
const (
	overloadWorkers   = 4
	overloadService   = 5 * time.Millisecond
	overloadTimeout   = 50 * time.Millisecond
	overloadRun       = 3 * time.Second
	overloadTickEvery = 10 * time.Millisecond
	overloadPerTick   = 2 * overloadWorkers * int(overloadTickEvery/overloadService)
)

// overloadEcho is the test service's Echo, the backend's only method.
var overloadEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

// BenchmarkOverload drives an overloaded backend open-loop at twice its capacity and compares
// fixed lanes with Config.AdaptiveLimit. The backend (testserver, on loopback, in this
// process) has overloadWorkers workers and a queue in front of them: a call waits for a free
// worker, in order, then takes overloadService of it, so that its time grows with the calls
// in flight. Two backends: drops-cancelled drops a call cancelled while it waits for a worker
// (a Go handler that selects on its context); serves-cancelled serves every call it received,
// as handlers that never look at their context do (a database query behind a pool without
// deadlines), so that it spends its workers on calls whose clients gave up. Once a call has
// a worker, both finish it. A host goroutine submits overloadPerTick calls every
// overloadTickEvery for overloadRun and ticks the reactor in between, then shuts it down.
//
//   - fixed-128: Workers 4 × BatchSize 32, more lanes than the backend can serve within the
//     calls' timeout: the backend's queue grows past it;
//   - adaptive-128: the same lanes with AdaptiveLimit's defaults;
//   - fixed-32: the default lanes, Workers 4 × BatchSize 8, which this backend serves within
//     the timeout.
//
// It reports goodput/s (calls that succeeded, per second of the run), p99-ms (of the calls
// that succeeded, submission to callback), timeouts (calls that failed with ErrTimeout),
// never-sent (those of them prpc never sent: they timed out in its queue), wasted (calls the
// backend served after their client had given up) and limit (Stats.InFlightLimit at the end
// of the run; 0 without the limit). One iteration is one run: -benchtime 1x.
func BenchmarkOverload(b *testing.B) {
	srv := testserver.Start(b)
	workers := make(chan struct{}, overloadWorkers)
	var wasted atomic.Int64
	var serving sync.WaitGroup // the calls the backend has not finished, for the next run
	var honour atomic.Bool     // the backend drops a call cancelled while it waits for a worker
	srv.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		serving.Add(1)
		defer serving.Done()
		select {
		case workers <- struct{}{}:
		case <-honourDone(ctx, honour.Load()): // cancelled while queued: no work done
			return nil, ctx.Err()
		}
		time.Sleep(overloadService)
		<-workers
		if ctx.Err() != nil {
			wasted.Add(1)
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	for _, mode := range []struct {
		name   string
		honour bool
		batch  int
		limit  *reactor.AdaptiveLimit
	}{
		{"drops-cancelled/fixed-128", true, 32, nil},
		{"drops-cancelled/adaptive-128", true, 32, &reactor.AdaptiveLimit{}},
		{"drops-cancelled/fixed-32", true, 8, nil},
		{"serves-cancelled/fixed-128", false, 32, nil},
		{"serves-cancelled/adaptive-128", false, 32, &reactor.AdaptiveLimit{}},
		{"serves-cancelled/fixed-32", false, 8, nil},
	} {
		b.Run(mode.name, func(b *testing.B) {
			honour.Store(mode.honour)
			for b.Loop() {
				wasted.Store(0)
				o := overloadRunOnce(b, srv.Addr(), mode.batch, mode.limit)
				serving.Wait() // the calls the reactor gave up on, which the backend still serves
				o.wasted = wasted.Load()
				o.report(b)
			}
		})
	}
}

// honourDone returns ctx.Done() if the backend drops calls cancelled while they wait for a
// worker, and nil, a channel never ready, if it serves them all.
func honourDone(ctx context.Context, honour bool) <-chan struct{} {
	if honour {
		return ctx.Done()
	}
	return nil
}

// overloadOutcome is what one run of BenchmarkOverload saw.
type overloadOutcome struct {
	ok, timeouts, neverSent, wasted int64
	limit                           int
	latencies                       []time.Duration // of the calls that succeeded
}

// overloadRunOnce runs one open-loop run against addr with Workers 4 × batch lanes and limit.
func overloadRunOnce(b *testing.B, addr string, batch int, limit *reactor.AdaptiveLimit) *overloadOutcome {
	r, err := reactor.New(reactor.Config{
		Target: addr, Credentials: reactor.Insecure(), Workers: 4, BatchSize: batch,
		DefaultTimeout: overloadTimeout, AdaptiveLimit: limit,
	})
	if err != nil {
		b.Fatal(err)
	}
	o := &overloadOutcome{}
	req := &testpb.EchoRequest{Message: "overload"}
	tick := time.NewTicker(overloadTickEvery)
	defer tick.Stop()
	start := time.Now()
	for time.Since(start) < overloadRun {
		for range overloadPerTick {
			submitted := time.Now()
			err := reactor.Go(r, overloadEcho, req, nil, func(_ *testpb.EchoResponse, err error) {
				var ce *calls.Error
				switch {
				case err == nil:
					o.ok++
					o.latencies = append(o.latencies, time.Since(submitted))
				case errors.Is(err, calls.ErrTimeout):
					o.timeouts++
					if errors.As(err, &ce) && ce.NotSent() {
						o.neverSent++
					}
				}
			})
			if err != nil && !errors.Is(err, calls.ErrOverloaded) {
				b.Fatal(err)
			}
		}
		<-tick.C
		r.Tick(2 * time.Millisecond)
	}
	o.limit = r.Stats().InFlightLimit
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	return o
}

// report adds the run's figures to b's results.
func (o *overloadOutcome) report(b *testing.B) {
	b.ReportMetric(float64(o.ok)/overloadRun.Seconds(), "goodput/s")
	if s := o.latencies; len(s) > 0 {
		slices.Sort(s)
		p99 := s[max(int(math.Ceil(0.99*float64(len(s))))-1, 0)]
		b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	}
	b.ReportMetric(float64(o.timeouts), "timeouts")
	b.ReportMetric(float64(o.neverSent), "never-sent")
	b.ReportMetric(float64(o.wasted), "wasted")
	b.ReportMetric(float64(o.limit), "limit")
}
