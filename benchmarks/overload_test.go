package benchmarks

import (
	"testing"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// BenchmarkOverload runs the policies suite's overload scenario, one run per case: a guild
// game's read against a backend of fixed workers behind a queue, offered twice what it serves
// open-loop, then a quarter of it once the load drops, the shape of policybench.DefaultOverload,
// whose documentation describes the backend and the host. Two backends: serves-cancelled
// serves every call it received, as a thread pool in front of a database does, so that it
// spends its workers on calls whose clients gave up; drops-cancelled drops a call cancelled
// while it waits for a worker. For each, three reactors (policybench.Mode):
//
//   - default: reactor.Config's defaults;
//   - adaptive: the default lanes with AdaptiveLimit{};
//   - fixed-4: a limit tuned by hand, Workers 1 × BatchSize 4.
//
// It reports goodput/s (the calls submitted during the overload that succeeded, per second
// of it), ok-after (the calls submitted after the load dropped that succeeded), wasted (the
// backend's executions for calls whose client had given up) and wasted-% (of its
// executions), shed and timeouts (calls that failed so), never-sent (failed calls prpc never
// sent), p50-ms and p99-ms (of the successes during the overload, submission to callback) and
// limit (Stats.InFlightLimit at the end of the overload; 0 without an adaptive limit). One
// iteration is one run, against a backend of its own: -benchtime 1x.
func BenchmarkOverload(b *testing.B) {
	for _, cfg := range policybench.OverloadCases(policybench.DefaultOverload()) {
		b.Run(cfg.Name(), func(b *testing.B) {
			for b.Loop() {
				res, err := policybench.RunOverload(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if res.Failed > 0 {
					b.Fatalf("%d calls failed otherwise than by a timeout, shedding or a refusal", res.Failed)
				}
				b.ReportMetric(res.Goodput(), "goodput/s")
				b.ReportMetric(float64(res.RecoveryOK), "ok-after")
				b.ReportMetric(float64(res.Wasted), "wasted")
				b.ReportMetric(100*res.WastedShare(), "wasted-%")
				b.ReportMetric(float64(res.Shed), "shed")
				b.ReportMetric(float64(res.Timeouts), "timeouts")
				b.ReportMetric(float64(res.NeverSent), "never-sent")
				if res.OverloadOK > 0 {
					b.ReportMetric(float64(res.P50)/float64(time.Millisecond), "p50-ms")
					b.ReportMetric(float64(res.P99)/float64(time.Millisecond), "p99-ms")
				}
				b.ReportMetric(float64(res.Limit), "limit")
			}
		})
	}
}
