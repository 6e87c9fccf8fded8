package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// percentile returns the q-th percentile (0 < q ≤ 100) of sorted, an ascending slice, by
// nearest rank: the smallest sample such that at least q% of the samples are at or below it,
// which is sorted[⌈q/100 × n⌉ − 1]. For 1,000 samples p99 is the 990th smallest (index 989).
// pRPC's scripts read index ⌊n × q/100⌋ instead (the 991st for p99), one rank higher whenever
// n × q/100 is a whole number. It returns 0 for no samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
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

// Latency summarises the latencies of one trial.
type Latency struct {
	Min, Avg, P50, P95, P99, Max time.Duration
}

// summarise sorts lat in place and returns its summary.
func summarise(lat []time.Duration) Latency {
	if len(lat) == 0 {
		return Latency{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return Latency{
		Min: lat[0],
		Avg: sum / time.Duration(len(lat)),
		P50: percentile(lat, 50),
		P95: percentile(lat, 95),
		P99: percentile(lat, 99),
		Max: lat[len(lat)-1],
	}
}

// recorder does the bookkeeping of one trial on the loop goroutine: one latency per call, from
// just before its submission to its outcome reaching the loop goroutine, and a check of every
// response. It is not safe for concurrent use; every client calls it only on the loop
// goroutine.
type recorder struct {
	n        int
	want     []*networkpb.Player // the answer each call must get
	lat      []time.Duration
	seen     []bool
	done     int // calls with an outcome
	ok       int // responses that were right
	failed   int // calls that failed
	wrong    int // responses that were wrong, and outcomes delivered twice
	firstErr string
}

// newRecorder returns a recorder for len(want) calls, call i expecting the player want[i].
func newRecorder(want []*networkpb.Player) *recorder {
	n := len(want)
	return &recorder{n: n, want: want, lat: make([]time.Duration, n), seen: make([]bool, n)}
}

// success records the response to call i, submitted at start, and checks it.
func (r *recorder) success(i int, start time.Time, resp *networkpb.GetPlayerResponse) {
	d := time.Since(start)
	if !r.first(i, d) {
		return
	}
	if err := checkResponse(i, r.want[i], resp); err != nil {
		r.wrong++
		r.note(err)
		return
	}
	r.ok++
}

// failure records the failure of call i, submitted at start.
func (r *recorder) failure(i int, start time.Time, err error) {
	d := time.Since(start)
	if !r.first(i, d) {
		return
	}
	r.failed++
	r.note(fmt.Errorf("call %d: %w", i, err))
}

// first counts an outcome of call i and reports whether it is the first one.
func (r *recorder) first(i int, d time.Duration) bool {
	if r.seen[i] {
		r.wrong++
		r.note(fmt.Errorf("call %d: outcome delivered twice", i))
		return false
	}
	r.done++
	r.seen[i] = true
	r.lat[i] = d
	return true
}

func (r *recorder) note(err error) {
	if r.firstErr == "" {
		r.firstErr = err.Error()
	}
}

// complete reports whether every call has an outcome.
func (r *recorder) complete() bool { return r.done >= r.n }
