package histogram_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/histogram"
)

// counts returns a histogram's per-bucket counts over n buckets, from bucket:count pairs.
func counts(n int, pairs ...int) []uint64 {
	c := make([]uint64, n)
	for i := 0; i < len(pairs); i += 2 {
		c[pairs[i]] = uint64(pairs[i+1])
	}
	return c
}

func TestObserveSnapshot(t *testing.T) {
	b := histogram.DefaultLatency()
	nb := b.Len() + 1
	tests := []struct {
		name      string
		durations []time.Duration
		want      histogram.Snapshot
	}{
		{"none", nil, histogram.Snapshot{Bounds: b, Counts: counts(nb)}},
		{"zero is in the first bucket", []time.Duration{0}, histogram.Snapshot{Bounds: b, Counts: counts(nb, 0, 1), Count: 1}},
		{
			"negative counts as zero, in the sum too",
			[]time.Duration{-5 * time.Millisecond, math.MinInt64, time.Millisecond},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 0, 2, 7, 1), Count: 3, Sum: time.Millisecond},
		},
		{
			"bounds are inclusive",
			[]time.Duration{time.Millisecond, time.Millisecond + 1, 2 * time.Millisecond},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 7, 1, 8, 2), Count: 3, Sum: 4*time.Millisecond + 1},
		},
		{
			"one of each phase lands in its own bucket",
			[]time.Duration{
				23 * time.Millisecond,     // the whole call: 20 ms < d ≤ 25 ms
				40 * time.Microsecond,     // queue wait: 10 µs < d ≤ 50 µs
				7 * time.Millisecond,      // transport: 6 ms < d ≤ 8 ms
				16*time.Millisecond - 100, // tick wait: 13 ms < d ≤ 16 ms
			},
			histogram.Snapshot{
				Bounds: b, Counts: counts(nb, 18, 1, 2, 1, 13, 1, 16, 1), Count: 4,
				Sum: 23*time.Millisecond + 40*time.Microsecond + 7*time.Millisecond + 16*time.Millisecond - 100,
			},
		},
		{
			"huge ones are +Inf",
			[]time.Duration{100*time.Second + 1, time.Hour},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, nb-1, 2), Count: 2, Sum: time.Hour + 100*time.Second + 1},
		},
		{
			"the largest duration is +Inf, and the sum holds it exactly",
			[]time.Duration{math.MaxInt64},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, nb-1, 1), Count: 1, Sum: math.MaxInt64},
		},
		{
			"the sum wraps around past the largest duration",
			[]time.Duration{math.MaxInt64, 2},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 1, 1, nb-1, 1), Count: 2, Sum: math.MinInt64 + 1},
		},
		{
			"repeats add up",
			[]time.Duration{3 * time.Microsecond, 3 * time.Microsecond, 3 * time.Microsecond},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 1, 3), Count: 3, Sum: 9 * time.Microsecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram.Histogram
			h.Init(b)
			require.Same(t, b, h.Bounds())
			for _, d := range tt.durations {
				h.Observe(d)
			}
			var got histogram.Snapshot
			h.Snapshot(&got)
			assert.Equal(t, tt.want, got)

			// The histogram is cumulative: a second round adds to the first.
			for _, d := range tt.durations {
				h.Observe(d)
			}
			h.Snapshot(&got)
			twice := histogram.Snapshot{Bounds: b, Counts: make([]uint64, nb), Count: 2 * tt.want.Count, Sum: 2 * tt.want.Sum}
			for i, n := range tt.want.Counts {
				twice.Counts[i] = 2 * n
			}
			assert.Equal(t, twice, got)
		})
	}
}

// TestObserveOtherBounds checks that a histogram counts in its own bounds' buckets, and
// that with no bounds at all it has one bucket, +Inf.
func TestObserveOtherBounds(t *testing.T) {
	tests := []struct {
		name    string
		seconds []float64
		want    []uint64 // after observing 0, 1 ms, 5 ms, 1 s
	}{
		{"Prometheus' defaults", []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, []uint64{3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"one bound", []float64{0.001}, []uint64{2, 2}},
		{"none: one bucket", nil, []uint64{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := histogram.NewBounds(tt.seconds...)
			require.NoError(t, err)
			var h histogram.Histogram
			h.Init(b)
			for _, d := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, time.Second} {
				h.Observe(d)
			}
			var got histogram.Snapshot
			h.Snapshot(&got)
			assert.Equal(t, tt.want, got.Counts)
			assert.Equal(t, uint64(4), got.Count)
			assert.Equal(t, time.Second+6*time.Millisecond, got.Sum)
		})
	}
}

// TestInitEmpties checks that Init makes a histogram that recorded durations empty, over
// the bounds it is given.
func TestInitEmpties(t *testing.T) {
	b, err := histogram.NewBounds(0.001, 0.01)
	require.NoError(t, err)
	var h histogram.Histogram
	h.Init(histogram.DefaultLatency())
	h.Observe(time.Second)
	h.Init(b)
	require.Same(t, b, h.Bounds())
	var got histogram.Snapshot
	h.Snapshot(&got)
	assert.Equal(t, histogram.Snapshot{Bounds: b, Counts: []uint64{0, 0, 0}}, got)
	h.Observe(5 * time.Millisecond)
	h.Snapshot(&got)
	assert.Equal(t, histogram.Snapshot{Bounds: b, Counts: []uint64{0, 1, 0}, Count: 1, Sum: 5 * time.Millisecond}, got)
}

// TestSnapshotSharesNothing checks that a snapshot is a copy: what the histogram records
// afterwards does not change it, whether its Counts were allocated by Snapshot or reused,
// and a change to it does not reach the histogram.
func TestSnapshotSharesNothing(t *testing.T) {
	b := histogram.DefaultLatency()
	tests := []struct {
		name string
		dst  histogram.Snapshot
	}{
		{"into a zero snapshot", histogram.Snapshot{}},
		{"into one too small", histogram.Snapshot{Counts: make([]uint64, 3)}},
		{"into one with room", histogram.Snapshot{Counts: make([]uint64, 100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram.Histogram
			h.Init(b)
			h.Observe(time.Millisecond)
			snap := tt.dst
			h.Snapshot(&snap)
			want := histogram.Snapshot{Bounds: b, Counts: counts(b.Len()+1, 7, 1), Count: 1, Sum: time.Millisecond}
			require.Equal(t, want, snap)

			h.Observe(time.Millisecond)
			h.Observe(time.Hour)
			assert.Equal(t, want, snap, "later Observes leave the snapshot alone")

			snap.Counts[7] = 100
			var again histogram.Snapshot
			h.Snapshot(&again)
			assert.Equal(t, uint64(2), again.Counts[7], "a change to the snapshot leaves the histogram alone")
		})
	}
}

func TestSnapshotCumulative(t *testing.T) {
	b, err := histogram.NewBounds(0.001, 0.01)
	require.NoError(t, err)
	tests := []struct {
		name   string
		counts []uint64
		want   []uint64
	}{
		{"empty", []uint64{0, 0, 0}, []uint64{0, 0, 0}},
		{"spread", []uint64{1, 2, 3}, []uint64{1, 3, 6}},
		{"only +Inf", []uint64{0, 0, 4}, []uint64{0, 0, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := histogram.Snapshot{Bounds: b, Counts: tt.counts}
			buf := make([]uint64, 1, 8)
			got := s.Cumulative(buf)
			assert.Equal(t, tt.want, got)
			assert.Same(t, &buf[:1][0], &got[0], "the caller's slice is reused")
		})
	}
}

func TestSnapshotMerge(t *testing.T) {
	b, err := histogram.NewBounds(0.001, 0.01)
	require.NoError(t, err)
	same, err := histogram.NewBounds(0.001, 0.01) // equal bounds, another value
	require.NoError(t, err)
	tests := []struct {
		name     string
		into, of histogram.Snapshot
		want     histogram.Snapshot
	}{
		{
			"two histograms",
			histogram.Snapshot{Bounds: b, Counts: []uint64{1, 0, 2}, Count: 3, Sum: 5 * time.Second},
			histogram.Snapshot{Bounds: b, Counts: []uint64{0, 4, 1}, Count: 5, Sum: time.Second},
			histogram.Snapshot{Bounds: b, Counts: []uint64{1, 4, 3}, Count: 8, Sum: 6 * time.Second},
		},
		{
			"into a zero snapshot",
			histogram.Snapshot{},
			histogram.Snapshot{Bounds: b, Counts: []uint64{0, 4, 1}, Count: 5, Sum: time.Second},
			histogram.Snapshot{Bounds: b, Counts: []uint64{0, 4, 1}, Count: 5, Sum: time.Second},
		},
		{
			"a zero snapshot adds nothing",
			histogram.Snapshot{Bounds: b, Counts: []uint64{1, 0, 2}, Count: 3, Sum: 5 * time.Second},
			histogram.Snapshot{},
			histogram.Snapshot{Bounds: b, Counts: []uint64{1, 0, 2}, Count: 3, Sum: 5 * time.Second},
		},
		{
			"equal bounds of different values",
			histogram.Snapshot{Bounds: b, Counts: []uint64{1, 0, 0}, Count: 1},
			histogram.Snapshot{Bounds: same, Counts: []uint64{1, 0, 0}, Count: 1},
			histogram.Snapshot{Bounds: b, Counts: []uint64{2, 0, 0}, Count: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			into := tt.into
			into.Merge(&tt.of)
			assert.Equal(t, tt.want, into)
			if len(tt.of.Counts) > 0 {
				tt.of.Counts[0] += 100
				assert.Equal(t, tt.want.Counts[0], into.Counts[0], "the merged snapshot shares nothing with the other")
			}
		})
	}
}

func TestSnapshotMergeOtherBoundsPanics(t *testing.T) {
	b1, err := histogram.NewBounds(0.001, 0.01)
	require.NoError(t, err)
	b2, err := histogram.NewBounds(0.001, 0.02)
	require.NoError(t, err)
	s := histogram.Snapshot{Bounds: b1, Counts: []uint64{1, 0, 0}, Count: 1}
	o := histogram.Snapshot{Bounds: b2, Counts: []uint64{1, 0, 0}, Count: 1}
	assert.PanicsWithValue(t, "histogram: Merge of a snapshot with 2 bounds into one with 2 other bounds", func() { s.Merge(&o) })
}

// TestNoAllocations checks the costs the package documents: Observe allocates nothing, nor
// does Snapshot into a snapshot whose Counts have room, nor Cumulative into a slice with room.
func TestNoAllocations(t *testing.T) {
	b := histogram.DefaultLatency()
	var h histogram.Histogram
	h.Init(b)
	d := time.Duration(0)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		for range 4 {
			d = (d*7 + 13*time.Microsecond) % (2 * time.Minute)
			h.Observe(d)
		}
	}), "Observe")

	snap := histogram.Snapshot{Counts: make([]uint64, 0, b.Len()+1)}
	assert.Zero(t, testing.AllocsPerRun(100, func() { h.Snapshot(&snap) }), "Snapshot into a snapshot with room")
	require.Equal(t, h.Bounds(), snap.Bounds, "the snapshot was taken")

	cum := make([]uint64, 0, b.Len()+1)
	assert.Zero(t, testing.AllocsPerRun(100, func() { cum = snap.Cumulative(cum) }), "Cumulative into a slice with room")
	require.Len(t, cum, b.Len()+1)
}

func TestSumSeconds(t *testing.T) {
	s := histogram.Snapshot{Sum: 1500 * time.Millisecond}
	assert.Equal(t, 1.5, s.SumSeconds())
	s.Sum = math.MaxInt64
	assert.InDelta(t, 9.223372036854776e9, s.SumSeconds(), 1)
}
