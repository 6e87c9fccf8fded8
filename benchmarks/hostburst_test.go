package benchmarks

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/benchmarks/internal/handpool"
	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/reactor"
)

// The shape of BenchmarkHostCostBurst: bursts of hostBurst calls, prpc's reactor with
// hostWorkers × hostLanes and the pool with as many goroutines (the burst suite's extreme
// shape), hostWarmUp calls through each client before the first burst, and every call's
// timeout, the burst suite's, long enough for the last call of a burst.
const (
	hostBurst   = 20_000
	hostTimeout = 10 * time.Second
	hostWorkers = 6
	hostLanes   = 16
	hostWarmUp  = 1000
	hostBudget  = 2 * time.Millisecond
)

// BenchmarkHostCostBurst measures what a burst of calls costs the host goroutine with a real
// backend, the data-service example on loopback in this process: one goroutine submits b.N
// GetPlayer calls in bursts of hostBurst as game logic does, a new request per call and a
// callback that captures the call's index, then drains the outcomes with Tick(2ms) woken by
// Ready. Before each burst, freed memory goes back to the OS, as the burst suite does before
// each trial, so each burst's calls come from fresh memory as in a game server.
//
//   - prpc-go, prpc-onsettled, prpc-then-onerror: reactor.Go with its callback, reactor.Call
//     with OnSettled, and reactor.Call with Then and OnError, each on a reactor with Workers 6
//     and BatchSize 16;
//   - pool: the hand-written pool (benchmarks/internal/handpool) of 96 goroutines, Submit
//     with one callback, its replies drained by its own Tick.
//
// The timer runs only while a burst is submitted, so ns/op is the submission's time per call
// on the host goroutine, and B/op and allocs/op are the process's allocations meanwhile,
// those of the client's and the backend's goroutines included. deliver-ns/call is the time
// per call spent in Tick, and host-ns/call the sum of both: what the host goroutine pays per
// call. The backend shares the CPUs, as a backend on the same machine does. A run takes
// several times -benchtime, since the drains are not timed; -benchtime 100000x bounds it.
func BenchmarkHostCostBurst(b *testing.B) {
	addr, xuid := startDataService(b)
	// prpc runs one form of submission on a fresh reactor.
	prpc := func(submit func(r *reactor.Reactor, i int, req *networkpb.GetPlayerRequest, out *burstOutcomes)) func(b *testing.B) {
		return func(b *testing.B) {
			r, err := reactor.New(reactor.Config{
				Target: addr, Credentials: reactor.Insecure(), Workers: hostWorkers, BatchSize: hostLanes,
				MaxOutstanding: hostBurst, DefaultTimeout: hostTimeout, MaxTimeout: hostTimeout,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := r.Close(context.Background()); err != nil {
					b.Error(err)
				}
			}()
			submitAll := func(n int, out *burstOutcomes) {
				for i := range n {
					submit(r, i, &networkpb.GetPlayerRequest{Xuid: xuid}, out)
				}
			}
			hostBursts(b, submitAll, r.Tick, r.Ready())
		}
	}
	b.Run("prpc-go", prpc(func(r *reactor.Reactor, i int, req *networkpb.GetPlayerRequest, out *burstOutcomes) {
		_ = reactor.Go(r, getPlayer, req, nil, func(resp *networkpb.GetPlayerResponse, err error) { out.record(i, resp, err) })
	}))
	b.Run("prpc-onsettled", prpc(func(r *reactor.Reactor, i int, req *networkpb.GetPlayerRequest, out *burstOutcomes) {
		reactor.Call(r, getPlayer, req, nil).
			OnSettled(func(resp *networkpb.GetPlayerResponse, err error) { out.record(i, resp, err) })
	}))
	b.Run("prpc-then-onerror", prpc(func(r *reactor.Reactor, i int, req *networkpb.GetPlayerRequest, out *burstOutcomes) {
		reactor.Call(r, getPlayer, req, nil).
			Then(func(resp *networkpb.GetPlayerResponse) { out.record(i, resp, nil) }).
			OnError(func(err error) { out.record(i, nil, err) })
	}))
	b.Run("pool", func(b *testing.B) {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		pool, err := handpool.New(networkpb.NewDataServiceClient(cc).GetPlayer, handpool.Config{
			Workers: hostWorkers * hostLanes, Capacity: hostBurst, Timeout: hostTimeout,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			if err := pool.Close(context.Background()); err != nil {
				b.Error(err)
			}
		}()
		submitAll := func(n int, out *burstOutcomes) {
			for i := range n {
				req := &networkpb.GetPlayerRequest{Xuid: xuid}
				pool.Submit(req, func(resp *networkpb.GetPlayerResponse, err error) { out.record(i, resp, err) })
			}
		}
		hostBursts(b, submitAll, pool.Tick, pool.Ready())
	})
}

// burstOutcomes records the outcomes of one burst, on the host goroutine.
type burstOutcomes struct {
	seen []bool
	done int
	err  error // the first failure, wrong answer or duplicate outcome
}

func newBurstOutcomes(n int) *burstOutcomes { return &burstOutcomes{seen: make([]bool, n)} }

// record notes the outcome of call i: its response, or its error.
func (o *burstOutcomes) record(i int, resp *networkpb.GetPlayerResponse, err error) {
	switch {
	case o.seen[i]:
		err = fmt.Errorf("call %d: a second outcome", i)
	case err == nil && !resp.GetFound():
		err = fmt.Errorf("call %d: player not found", i)
	}
	if !o.seen[i] {
		o.seen[i] = true
		o.done++
	}
	if err != nil && o.err == nil {
		o.err = err
	}
}

// hostBursts warms the client up with hostWarmUp calls, then submits b.N calls with
// submitAll in bursts of at most hostBurst, timing only the submissions, and drains each
// burst with tick woken by ready before the next. It reports deliver-ns/call and
// host-ns/call, and fails the benchmark if any call failed or was answered wrongly.
func hostBursts(b *testing.B, submitAll func(n int, out *burstOutcomes), tick func(time.Duration) reactor.TickReport, ready <-chan struct{}) {
	var deliver time.Duration
	drain := func(out *burstOutcomes, n int) {
		timeout := time.NewTimer(hostTimeout + 30*time.Second)
		defer timeout.Stop()
		for out.done < n {
			select {
			case <-ready:
			case <-timeout.C:
				b.Fatalf("%d of %d outcomes delivered", out.done, n)
			}
			t0 := time.Now()
			tick(hostBudget)
			deliver += time.Since(t0)
		}
		if out.err != nil {
			b.Fatal(out.err)
		}
	}
	b.ReportAllocs()
	b.StopTimer()
	warm := newBurstOutcomes(hostWarmUp)
	submitAll(hostWarmUp, warm)
	drain(warm, hostWarmUp)
	deliver = 0
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(hostBurst, b.N-done)
		out := newBurstOutcomes(n)
		debug.FreeOSMemory()
		b.StartTimer()
		submitAll(n, out)
		b.StopTimer()
		drain(out, n)
		done += n
	}
	n := float64(b.N)
	b.ReportMetric(float64(deliver.Nanoseconds())/n, "deliver-ns/call")
	b.ReportMetric(float64((b.Elapsed()+deliver).Nanoseconds())/n, "host-ns/call")
}
