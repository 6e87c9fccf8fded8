// Package rank computes percentiles by nearest rank, for the benchmarks' reports: the burst
// suite's latencies and tick intervals, and the call-policy scenarios' latencies
// (benchmarks/internal/policybench).
package rank

import "time"

// Percentile returns the q-th percentile (0 < q ≤ 100) of sorted, an ascending slice, by
// nearest rank: the smallest sample such that at least q% of the samples are at or below it,
// which is sorted[⌈q/100 × n⌉ − 1]. For 1,000 samples p99 is the 990th smallest (index 989).
// pRPC's scripts read index ⌊n × q/100⌋ instead (the 991st for p99), one rank higher whenever
// n × q/100 is a whole number. It returns 0 for no samples.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// Integer arithmetic on hundredths of a percent avoids float rounding at exact ranks.
	h := int64(q*100 + 0.5)
	rank := int((int64(n)*h + 9999) / 10000)
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}
