package benchmarks

import (
	"testing"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// BenchmarkCoalescedBurst submits bursts of identical calls at once, as a game does when many
// players join in one tick, to a loopback gRPC server that takes a fixed time per call, then
// ticks until every call is delivered; with the method's calls coalesced
// (MethodPolicy.Coalesce, with the default cap and with a cap of one burst) and without: the
// cases and the shape of policybench.CoalesceCases and DefaultCoalesce, one burst per
// iteration, after one that connects and warms up. It reports the transport calls the server
// received per burst (backend-calls/burst), the time from the first submission to the last
// delivery (last-delivery-ms), and the time spent inside reactor.Call, Then and Tick on the
// benchmark goroutine per call (host-ns/call).
func BenchmarkCoalescedBurst(b *testing.B) {
	for _, tc := range policybench.CoalesceCases(policybench.DefaultCoalesce()) {
		b.Run(tc.Name, func(b *testing.B) {
			c, err := policybench.StartCoalesce(tc.Config)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				if err := c.Close(); err != nil {
					b.Error(err)
				}
			})
			b.ResetTimer()
			for range b.N {
				c.Burst()
			}
			b.StopTimer()
			res := c.Result()
			if res.Failed > 0 {
				b.Fatalf("%d calls failed", res.Failed)
			}
			b.ReportMetric(res.BackendCallsPerBurst(), "backend-calls/burst")
			b.ReportMetric(float64(res.LastDelivery.Microseconds())/1e3/float64(res.Bursts), "last-delivery-ms")
			b.ReportMetric(res.HostNsPerCall(), "host-ns/call")
		})
	}
}

// BenchmarkCoalescedSpread submits identical reads of a slow leaderboard spread over
// milliseconds or ticks rather than all in one tick, to a loopback gRPC server, while a host
// loop ticks the reactor, with the method's calls coalesced (MethodPolicy.Coalesce) and
// without: the cases and the shapes of policybench.SpreadCases and DefaultSpread, whose
// documentation describes them:
//
//   - per-player: 200 reads of a leaderboard that takes 320 ms, one every 250 µs, each from
//     a player's goroutine of its own;
//   - per-tick: 10 reads on the host goroutine at each of 20 ticks of a 50 ms loop, of a
//     leaderboard that takes 300 ms.
//
// Every read has a timeout of 1 s. It reports backend-calls (the transport calls the server
// received), ok (the reads that succeeded), coalesced (MethodStats.Coalesced: the reads that
// joined another's transport call), deadline-exceeded and failed (the reads that failed
// with DeadlineExceeded, and otherwise), and last-delivery-ms (from the first submission to
// the last delivery). One iteration is one run, against a server of its own: -benchtime 1x.
func BenchmarkCoalescedSpread(b *testing.B) {
	for _, tc := range policybench.SpreadCases(policybench.DefaultSpread(policybench.PerPlayer), policybench.DefaultSpread(policybench.PerTick)) {
		b.Run(tc.Name, func(b *testing.B) {
			for b.Loop() {
				res, err := policybench.RunSpread(tc.Config)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.BackendCalls), "backend-calls")
				b.ReportMetric(float64(res.OK), "ok")
				b.ReportMetric(float64(res.Coalesced), "coalesced")
				b.ReportMetric(float64(res.DeadlineExceeded), "deadline-exceeded")
				b.ReportMetric(float64(res.Failed), "failed")
				b.ReportMetric(float64(res.LastDelivery)/float64(time.Millisecond), "last-delivery-ms")
			}
		})
	}
}
