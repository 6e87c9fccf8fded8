package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/rank"
	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

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
		P50: rank.Percentile(lat, 50),
		P95: rank.Percentile(lat, 95),
		P99: rank.Percentile(lat, 99),
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
	// scrapes is how many times the metrics client's scraper read the metrics adapters over
	// the trial; its burst sets it.
	scrapes int
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
