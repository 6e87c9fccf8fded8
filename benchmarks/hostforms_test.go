package benchmarks

import (
	"testing"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/reactor"
)

// hostFormsBurst is how many calls BenchmarkHostCostForms submits before draining them.
const hostFormsBurst = 2000

// BenchmarkHostCostForms measures prpc's cost to the host goroutine per call in each form of
// submission, without a network: the transport is instantConn, so the figures move only with
// prpc's own code and the game's allocations, which makes it the steadiest comparison of one
// commit with another. Each iteration submits a call as game logic does (a new request, a
// clock read, callbacks capturing the call's index and start) in bursts of hostFormsBurst from
// fresh and reused memory alike, then drains the burst with Tick woken by Ready.
//
// submit-ns is the time per call of the submission loop and deliver-ns that of the Tick calls
// that deliver it (callbacks included), both on the benchmark goroutine; ns/op also counts the
// waits for Ready. B/op and allocs/op are the process's, the lanes' included.
func BenchmarkHostCostForms(b *testing.B) {
	forms := []struct {
		name   string
		submit func(r *reactor.Reactor, i int, sink *int)
	}{
		{"go", func(r *reactor.Reactor, i int, sink *int) {
			start := time.Now()
			_ = reactor.Go(r, getPlayer, &networkpb.GetPlayerRequest{Xuid: "x"}, nil, func(*networkpb.GetPlayerResponse, error) {
				*sink += i + int(start.Unix())
			})
		}},
		{"onsettled", func(r *reactor.Reactor, i int, sink *int) {
			start := time.Now()
			reactor.Call(r, getPlayer, &networkpb.GetPlayerRequest{Xuid: "x"}, nil).
				OnSettled(func(*networkpb.GetPlayerResponse, error) { *sink += i + int(start.Unix()) })
		}},
		{"then-onerror", func(r *reactor.Reactor, i int, sink *int) {
			start := time.Now()
			reactor.Call(r, getPlayer, &networkpb.GetPlayerRequest{Xuid: "x"}, nil).
				Then(func(*networkpb.GetPlayerResponse) { *sink += i + int(start.Unix()) }).
				OnError(func(error) { *sink -= i + int(start.Unix()) })
		}},
	}
	for _, form := range forms {
		b.Run(form.name, func(b *testing.B) {
			r := newInstantReactor(b, reactor.Config{MaxOutstanding: hostFormsBurst, Workers: hostWorkers, BatchSize: hostLanes})
			var sink int
			var submit, deliver time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(hostFormsBurst, b.N-done)
				t0 := time.Now()
				for i := range n {
					form.submit(r, i, &sink)
				}
				submit += time.Since(t0)
				for got := 0; got < n; {
					<-r.Ready()
					t1 := time.Now()
					got += r.Tick(time.Second).Delivered
					deliver += time.Since(t1)
				}
				done += n
			}
			b.StopTimer()
			b.ReportMetric(float64(submit.Nanoseconds())/float64(b.N), "submit-ns")
			b.ReportMetric(float64(deliver.Nanoseconds())/float64(b.N), "deliver-ns")
			if st := r.Stats(); st.Succeeded != uint64(b.N) {
				b.Fatalf("%d of %d calls succeeded; stats %+v", st.Succeeded, b.N, st)
			}
		})
	}
}
