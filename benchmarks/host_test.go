package benchmarks

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/reactor"
)

var getPlayer = calls.MustMethod[*networkpb.GetPlayerRequest, *networkpb.GetPlayerResponse](networkpb.DataService_GetPlayer_FullMethodName)

// instantConn is an in-memory transport stub: a grpc.ClientConnInterface whose Invoke returns
// nil at once and leaves the reply message empty, so that a benchmark over it counts only
// prpc's own work.
type instantConn struct{}

func (instantConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error { return nil }

func (instantConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "instantConn has no streams")
}

// newInstantReactor returns a reactor over instantConn, closed when the benchmark ends.
func newInstantReactor(b *testing.B, cfg reactor.Config) *reactor.Reactor {
	b.Helper()
	cfg.Conn = instantConn{}
	r, err := reactor.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return r
}

// hostBatch is how many calls BenchmarkHostCostStub submits before draining them.
const hostBatch = 64

// BenchmarkHostCostStub measures prpc's own work on the host goroutine per call, in isolation:
// reactor.Call with a Then callback, plus the delivery of its completion in Tick. The
// transport is instantConn and the request is an empty message (nothing to encode), so
// neither the network nor encoding counts, and the callback does nothing. Calls are submitted
// hostBatch at a time, then drained with Tick woken by Ready, so the few calls alive at once
// reuse warm memory.
//
// It does not measure what a burst costs the host: there, thousands of calls are alive at
// once and come from fresh memory, the lanes that share the reactor's locks are busy, and
// pooled buffers are refilled from other processors. BenchmarkHostCostBurst measures that,
// against the hand-written pool; use this one to see prpc's own code paths, not to predict a
// game server's cost.
//
// ns/op is the wall time per call, including the reactor goroutine and invokers that run
// beside the host; host-ns/call counts only the time spent inside reactor.Call, Then and Tick
// on the benchmark goroutine.
func BenchmarkHostCostStub(b *testing.B) {
	r := newInstantReactor(b, reactor.Config{MaxOutstanding: hostBatch})
	req := &networkpb.GetPlayerRequest{}
	then := func(*networkpb.GetPlayerResponse) {}
	var host time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(hostBatch, b.N-done)
		t0 := time.Now()
		for range n {
			reactor.Call(r, getPlayer, req, nil).Then(then)
		}
		host += time.Since(t0)
		for delivered := 0; delivered < n; {
			<-r.Ready()
			t1 := time.Now()
			delivered += r.Tick(time.Second).Delivered
			host += time.Since(t1)
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(host.Nanoseconds())/float64(b.N), "host-ns/call")
	if st := r.Stats(); st.Succeeded != uint64(b.N) {
		b.Fatalf("%d of %d calls succeeded; stats %+v", st.Succeeded, b.N, st)
	}
}

// BenchmarkIdleTick measures a Tick with nothing to deliver, which a game loop pays every
// tick.
func BenchmarkIdleTick(b *testing.B) {
	r := newInstantReactor(b, reactor.Config{})
	b.ReportAllocs()
	for b.Loop() {
		r.Tick(2 * time.Millisecond)
	}
}

// budgetCalls is how many completions wait when BenchmarkTickBudget starts ticking.
const budgetCalls = 20_000

// BenchmarkTickBudget measures how well Tick keeps its budget with a large backlog: 20,000
// completions wait (submitted while the transport was held, then released and settled), and
// Tick(2ms) runs with trivial callbacks until all are delivered.
//
// One op is one backlog: filling it and draining it. Filling (20,000 submissions through the
// reactor) takes far longer than draining, so the timer runs through both to keep the number
// of backlogs, and the benchmark's run time, small; ns/op, B/op and allocs/op are then
// overridden with the drain's figures alone. overrun-p99-µs and overrun-max-µs are the 99th
// percentile (nearest rank) and maximum, over every Tick of the run, of how far its reported
// Elapsed went past the budget (0 for a Tick that stopped early because nothing was left);
// ticks/op is the number of Ticks per drain. On Linux, tick-cpu-max-µs is the most CPU time
// the benchmark's thread spent inside one Tick: when it is near the budget while
// overrun-max-µs is large, the overrun was time the thread spent off the CPU (preempted by
// other work on the machine, or stopped by the Go runtime), not work Tick failed to stop. For
// more samples, raise -benchtime (e.g. 100x). Each drain starts from a collected heap (see
// the runtime.GC call below).
func BenchmarkTickBudget(b *testing.B) {
	const budget = 2 * time.Millisecond
	conn := &gatedConn{}
	r, err := reactor.New(reactor.Config{MaxOutstanding: budgetCalls, Conn: conn})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		conn.open()
		if err := r.Close(context.Background()); err != nil {
			b.Error(err)
		}
	}()
	req := &networkpb.GetPlayerRequest{}
	delivered := 0
	then := func(*networkpb.GetPlayerResponse) { delivered++ }
	var (
		overruns           []time.Duration
		tickCPU            time.Duration
		cpuKnown           = true
		ticks              int
		drain              time.Duration
		m0, m1             runtime.MemStats
		allocs, allocBytes uint64
	)
	b.ReportAllocs()
	for range b.N {
		conn.hold(budgetCalls)
		for range budgetCalls {
			reactor.Call(r, getPlayer, req, nil).Then(then)
		}
		// While the transport is held, the reactor shows every call queued or in flight once
		// it has admitted them all; then release them and wait until every one has returned
		// and the reactor has queued its completion for Tick.
		waitStats(b, r, func(st reactor.Stats) bool { return st.Queued+st.InFlight == budgetCalls })
		conn.open()
		<-conn.returned
		waitStats(b, r, func(st reactor.Stats) bool {
			return st.Pending == budgetCalls && st.Queued == 0 && st.InFlight == 0
		})

		delivered = 0
		// Measure Tick, not the collection of the set-up's garbage: without this, a GC cycle
		// started by the submissions can still be running during the Ticks and add its pauses
		// and descheduling to their overruns. The Ticks themselves allocate nothing.
		runtime.GC()
		runtime.LockOSThread() // for threadcpu.Now
		runtime.ReadMemStats(&m0)
		start := time.Now()
		for delivered < budgetCalls {
			c0, ok0 := threadcpu.Now()
			rep := r.Tick(budget)
			c1, ok1 := threadcpu.Now()
			cpuKnown = cpuKnown && ok0 && ok1
			tickCPU = max(tickCPU, c1-c0)
			ticks++
			overruns = append(overruns, max(rep.Elapsed-budget, 0))
			if rep.Delivered == 0 {
				b.Fatalf("Tick delivered nothing with %d of %d delivered", delivered, budgetCalls)
			}
		}
		drain += time.Since(start)
		runtime.ReadMemStats(&m1)
		runtime.UnlockOSThread()
		allocs += m1.Mallocs - m0.Mallocs
		allocBytes += m1.TotalAlloc - m0.TotalAlloc
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(drain.Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(allocs)/n, "allocs/op")
	b.ReportMetric(float64(allocBytes)/n, "B/op")
	slices.Sort(overruns)
	p99 := overruns[max((len(overruns)*99+99)/100, 1)-1]
	b.ReportMetric(float64(p99)/float64(time.Microsecond), "overrun-p99-µs")
	b.ReportMetric(float64(overruns[len(overruns)-1])/float64(time.Microsecond), "overrun-max-µs")
	b.ReportMetric(float64(ticks)/n, "ticks/op")
	if cpuKnown {
		b.ReportMetric(float64(tickCPU)/float64(time.Microsecond), "tick-cpu-max-µs")
	}
}

// waitStats polls r.Stats until ok holds, yielding the processor between polls; it fails the
// benchmark after 30 s.
func waitStats(b *testing.B, r *reactor.Reactor, ok func(reactor.Stats) bool) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := r.Stats()
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("reactor did not reach the expected state; stats %+v", st)
		}
		runtime.Gosched()
	}
}

// gatedConn is instantConn with a gate: while held, Invoke waits until the gate opens (or the
// call's context ends). returned is closed once the number of calls given to hold have
// returned.
type gatedConn struct {
	instantConn
	gate     atomic.Pointer[chan struct{}] // nil: open
	left     atomic.Int64
	returned chan struct{}
}

// hold closes the gate and arms returned for the next n calls. Call it only while no call
// is running.
func (c *gatedConn) hold(n int) {
	ch := make(chan struct{})
	c.returned = make(chan struct{})
	c.left.Store(int64(n))
	c.gate.Store(&ch)
}

func (c *gatedConn) open() {
	if ch := c.gate.Swap(nil); ch != nil {
		close(*ch)
	}
}

func (c *gatedConn) Invoke(ctx context.Context, _ string, _, _ any, _ ...grpc.CallOption) (err error) {
	defer func() {
		if c.left.Add(-1) == 0 {
			close(c.returned)
		}
	}()
	gate := c.gate.Load()
	if gate == nil {
		return nil
	}
	select {
	case <-*gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
