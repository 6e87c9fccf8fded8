package benchmarks

import (
	"testing"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// BenchmarkHedgedReads spreads reads over three loopback backends, one of which delays a
// share of its calls, open-loop as a game submits them each tick, and compares hedged reads
// (MethodPolicy.Hedge) with unhedged ones: the cases and the shape of policybench.HedgeCases
// and DefaultHedge, whose documentation describes the backends, the host and why each case
// hedges as it does:
//
//   - unhedged: no hedging;
//   - delay-5ms: a fixed Delay of half the host's tick interval;
//   - p95: DelayQuantile 0.95, the delay following the method's recent transport times.
//
// It reports p50-ms and p99-ms (of the calls that succeeded, submission to callback),
// extra-load (the transport calls the backends received beyond one per call, as a share of
// the calls), hedges-won (the calls a hedge's response settled) and failed (the calls that
// failed). One iteration is one run, against backends of its own: -benchtime 1x.
func BenchmarkHedgedReads(b *testing.B) {
	for _, tc := range policybench.HedgeCases(policybench.DefaultHedge()) {
		b.Run(tc.Name, func(b *testing.B) {
			for b.Loop() {
				res, err := policybench.RunHedge(tc.Config)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.P50)/float64(time.Millisecond), "p50-ms")
				b.ReportMetric(float64(res.P99)/float64(time.Millisecond), "p99-ms")
				b.ReportMetric(res.ExtraLoad(), "extra-load")
				b.ReportMetric(float64(res.HedgesWon), "hedges-won")
				b.ReportMetric(float64(res.Failed), "failed")
			}
		})
	}
}

// BenchmarkHedgedFailover spreads reads over three loopback backends, open-loop as a game
// submits them each tick, and kills one of them mid-run (its listener and connections closed
// at once) while it serves calls: the cases and the shape of policybench.FailoverCases and
// DefaultFailover, whose documentation describes the backends and the host:
//
//   - unhedged: no hedging, so gRPC retries a call that failed with Unavailable
//     (Config.Retry's defaults);
//   - p95: HedgePolicy{DelayQuantile: 0.95}, as the documentation shows it;
//   - p95-nonfatal-unavailable: the same with NonFatalCodes [Unavailable].
//
// It reports ok (the reads that succeeded), unavailable, deadline-exceeded and failed (the
// reads that failed with Unavailable, DeadlineExceeded, and otherwise), broken (the calls the
// killed backend was serving), and hedges and hedges-won (MethodStats.Hedges and HedgesWon).
// One iteration is one run, against backends of its own: -benchtime 1x.
func BenchmarkHedgedFailover(b *testing.B) {
	for _, tc := range policybench.FailoverCases(policybench.DefaultFailover()) {
		b.Run(tc.Name, func(b *testing.B) {
			for b.Loop() {
				res, err := policybench.RunFailover(tc.Config)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.OK), "ok")
				b.ReportMetric(float64(res.Unavailable), "unavailable")
				b.ReportMetric(float64(res.DeadlineExceeded), "deadline-exceeded")
				b.ReportMetric(float64(res.Failed), "failed")
				b.ReportMetric(float64(res.Broken), "broken")
				b.ReportMetric(float64(res.Hedges), "hedges")
				b.ReportMetric(float64(res.HedgesWon), "hedges-won")
			}
		})
	}
}
