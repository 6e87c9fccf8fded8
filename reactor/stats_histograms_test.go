package reactor_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// requireHist checks that h counted exactly durations: each in the first bucket whose bound
// is at or above it (upper bounds are inclusive), their number and their sum.
func requireHist(t *testing.T, h reactor.Histogram, what string, durations ...time.Duration) {
	t.Helper()
	require.Len(t, h.Counts, len(h.Bounds)+1, "%s: one bucket per bound and one above", what)
	want := make([]uint64, len(h.Bounds)+1)
	var sum time.Duration
	for _, d := range durations {
		i := 0
		for i < len(h.Bounds) && d.Seconds() > h.Bounds[i] {
			i++
		}
		want[i]++
		sum += d
	}
	require.Equal(t, want, h.Counts, "%s: counts by bucket", what)
	require.Equal(t, uint64(len(durations)), h.Count, "%s: count", what)
	require.Equal(t, sum, h.Sum, "%s: sum", what)
}

// TestHistogramBounds checks the buckets: gRPC's OpenTelemetry latency bounds (gRFC A66), from
// 0 to 100 seconds, shared by every histogram of a snapshot, before any call as after.
func TestHistogramBounds(t *testing.T) {
	b := newPhaseBackend(t)
	r := reactortest.NewReactor(t, b.Backend, reactor.Config{})
	a66 := []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
		0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13,
		0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}
	s := r.Stats()
	for _, h := range []reactor.Histogram{s.Histograms.Latency, s.Histograms.QueueWait, s.Histograms.Transport, s.Histograms.TickWait} {
		require.Equal(t, a66, h.Bounds)
		requireHist(t, h, "before any call")
	}
	reactor.Call(r, echo, echoReq("one"), nil)
	recv(t, r.Ready(), "the call settled")
	r.Tick(time.Second)
	require.Equal(t, a66, r.Stats().Methods[echo.Path()].Histograms.Latency.Bounds)
}

// TestHistogramCumulative checks Cumulative: Prometheus's running sums, the last equal to
// Count, appended to the slice given.
func TestHistogramCumulative(t *testing.T) {
	tests := []struct {
		name   string
		counts []uint64
		want   []uint64
	}{
		{"empty", []uint64{0, 0, 0}, []uint64{0, 0, 0}},
		{"first bucket", []uint64{2, 0, 0}, []uint64{2, 2, 2}},
		{"spread", []uint64{1, 2, 3}, []uint64{1, 3, 6}},
		{"above every bound", []uint64{0, 0, 4}, []uint64{0, 0, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := reactor.Histogram{Bounds: []float64{0.1, 1}, Counts: tt.counts}
			dst := make([]uint64, 0, 8)
			got := h.Cumulative(dst)
			require.Equal(t, tt.want, got)
			require.Same(t, &dst[:1][0], &got[0], "appended to dst's array")
		})
	}
}

// TestStatsWithoutPercentiles checks that StatsWithoutPercentiles is Stats with the
// percentiles of recent calls left zero, in all and per method, and every other field the
// same: the histograms, counters and gauges that metrics adapters export.
func TestStatsWithoutPercentiles(t *testing.T) {
	b := newPhaseBackend(t)
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, b.Backend, reactor.Config{Clock: clk, MaxTimeout: time.Hour, DefaultTimeout: time.Hour})
	for _, msg := range []string{"a", "notfound", "b"} {
		reactor.Call(r, echo, echoReq(msg), nil)
		reactor.Call(r, echoOther, echoReq(msg), nil)
	}
	waitGauges(t, r, 0, 0)
	clk.Advance(3 * time.Millisecond)
	reactortest.Flush(t, r)

	want := r.Stats()
	require.NotZero(t, want.Latency.Samples, "the full snapshot has percentiles")
	want.Latency, want.QueueWait, want.Transport, want.TickWait = reactor.Latency{}, reactor.Latency{}, reactor.Latency{}, reactor.Latency{}
	for path, m := range want.Methods {
		m.Latency, m.QueueWait, m.Transport, m.TickWait = reactor.Latency{}, reactor.Latency{}, reactor.Latency{}, reactor.Latency{}
		want.Methods[path] = m
	}
	got := r.StatsWithoutPercentiles()
	require.Equal(t, want, got)
	require.Equal(t, uint64(6), got.Histograms.Latency.Count, "the histograms are there")
}

// TestHistogramBoundsNotShared checks that a snapshot's bounds are its own: a reader that
// changes them changes neither a later snapshot nor the buckets the reactor records into.
func TestHistogramBoundsNotShared(t *testing.T) {
	b := newPhaseBackend(t)
	r := reactortest.NewReactor(t, b.Backend, reactor.Config{})
	first := r.Stats().Histograms.Latency.Bounds
	want := slices.Clone(first)
	for i := range first {
		first[i] = -1
	}
	reactor.Call(r, echo, echoReq("one"), nil)
	recv(t, r.Ready(), "the call settled")
	r.Tick(time.Second)
	s := r.Stats()
	require.Equal(t, want, s.Histograms.Latency.Bounds, "a later snapshot")
	require.Equal(t, want, s.Methods[echo.Path()].Histograms.Latency.Bounds, "a method's")
	require.Equal(t, uint64(1), s.Histograms.Latency.Count)
}
