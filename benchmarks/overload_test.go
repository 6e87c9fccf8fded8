package benchmarks

import (
	"testing"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// BenchmarkOverload drives an overloaded backend open-loop at twice its capacity and compares
// fixed lanes with Config.AdaptiveLimit: the cases and the shape of policybench.OverloadCases
// and DefaultOverload, whose documentation describes the backend and the host. Two backends:
// drops-cancelled drops a call cancelled while it waits for a worker; serves-cancelled serves
// every call it received, so that it spends its workers on calls whose clients gave up. For
// each, three reactors:
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
// of the run; 0 without the limit). One iteration is one run, against a backend of its own:
// -benchtime 1x.
func BenchmarkOverload(b *testing.B) {
	for _, cfg := range policybench.OverloadCases(policybench.DefaultOverload()) {
		b.Run(cfg.Name(), func(b *testing.B) {
			for b.Loop() {
				res, err := policybench.RunOverload(cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res.Goodput(), "goodput/s")
				if res.OK > 0 {
					b.ReportMetric(float64(res.P99)/float64(time.Millisecond), "p99-ms")
				}
				b.ReportMetric(float64(res.Timeouts), "timeouts")
				b.ReportMetric(float64(res.NeverSent), "never-sent")
				b.ReportMetric(float64(res.Wasted), "wasted")
				b.ReportMetric(float64(res.Limit), "limit")
			}
		})
	}
}
