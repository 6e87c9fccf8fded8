package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// coalesceBurst is how many identical calls BenchmarkCoalescedBurst submits in one tick.
const coalesceBurst = 1000

var echoRead = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

// BenchmarkCoalescedBurst submits coalesceBurst identical calls at once, as a game does when
// many players join in one tick, to a loopback gRPC server that takes 20 ms per call, then
// ticks until every call is delivered; with the method's calls coalesced
// (MethodPolicy.Coalesce, with the default cap and with a cap above the burst) and without.
// It reports the transport calls the server received per burst (backend-calls/burst), the
// time from the first submission to the last delivery (last-delivery-ms), and the time spent
// inside reactor.Call, Then and Tick on the benchmark goroutine per call (host-ns/call).
func BenchmarkCoalescedBurst(b *testing.B) {
	cases := []struct {
		name     string
		coalesce bool
		max      int
	}{
		{"off", false, 0},
		{"on", true, 0},
		{"on-max1000", true, coalesceBurst},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			srv := testserver.Start(b)
			r, err := reactor.New(reactor.Config{
				Target: srv.Addr(), Credentials: reactor.Insecure(), MaxOutstanding: 2 * coalesceBurst, DefaultTimeout: 5 * time.Second,
				Policies: []reactor.MethodPolicy{{Method: echoRead, Idempotent: true, Coalesce: tc.coalesce, CoalesceMax: tc.max}},
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if err := r.Close(context.Background()); err != nil {
					b.Error(err)
				}
			})
			failed := 0
			then := func(*testpb.EchoResponse) {}
			fail := func(error) { failed++ }
			burst := func() (host, last time.Duration) {
				start := time.Now()
				for range coalesceBurst {
					reactor.Call(r, echoRead, &testpb.EchoRequest{Message: "leaderboard", DelayMs: 20}, nil).Then(then).OnError(fail)
				}
				host = time.Since(start)
				for delivered := 0; delivered < coalesceBurst; {
					<-r.Ready()
					t1 := time.Now()
					delivered += r.Tick(time.Second).Delivered
					host += time.Since(t1)
				}
				return host, time.Since(start)
			}
			burst() // connects and warms up
			calls0 := srv.Calls()
			var host, last time.Duration
			b.ResetTimer()
			for range b.N {
				h, l := burst()
				host += h
				last += l
			}
			b.StopTimer()
			if failed > 0 {
				b.Fatalf("%d calls failed", failed)
			}
			b.ReportMetric(float64(srv.Calls()-calls0)/float64(b.N), "backend-calls/burst")
			b.ReportMetric(float64(last.Microseconds())/1e3/float64(b.N), "last-delivery-ms")
			b.ReportMetric(float64(host.Nanoseconds())/float64(b.N*coalesceBurst), "host-ns/call")
		})
	}
}
