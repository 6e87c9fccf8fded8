package benchmarks

import (
	"testing"

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
