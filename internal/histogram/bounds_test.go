package histogram_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/histogram"
)

// a66 are gRFC A66's latency bounds, written out here as grpc-go's
// stats/opentelemetry.DefaultLatencyBounds holds them, so that a change to the package's copy
// fails this test.
var a66 = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}

func TestDefaultLatency(t *testing.T) {
	b := histogram.DefaultLatency()
	require.Same(t, b, histogram.DefaultLatency(), "every call returns the same value")
	require.Equal(t, a66, b.Seconds())
	require.Equal(t, len(a66), b.Len())
	ns := b.Nanoseconds()
	for i, s := range a66 {
		assert.Equal(t, time.Duration(math.Round(s*1e9)), time.Duration(ns[i]), "bound %d", i)
	}
	assert.Equal(t, int64(10_000), ns[1], "10 µs")
	assert.Equal(t, int64(300_000), ns[4], "0.3 ms, which is not exact in binary")
	assert.Equal(t, int64(100*time.Second), ns[40])
}

// TestBucketEdges checks the bucket of durations at, just below and just above bounds, and
// of zero, negative and huge durations: upper bounds are inclusive, as OpenTelemetry and
// Prometheus count them.
func TestBucketEdges(t *testing.T) {
	last := len(a66) // the +Inf bucket
	tests := []struct {
		name string
		d    time.Duration
		want int
	}{
		{"zero is in the first bucket, whose bound is 0", 0, 0},
		{"a nanosecond is above 0", 1, 1},
		{"negative counts as zero", -time.Millisecond, 0},
		{"most negative counts as zero", math.MinInt64, 0},
		{"just below 10 µs", 10*time.Microsecond - 1, 1},
		{"at 10 µs", 10 * time.Microsecond, 1},
		{"just above 10 µs", 10*time.Microsecond + 1, 2},
		{"at 0.3 ms", 300 * time.Microsecond, 4},
		{"just above 0.3 ms", 300*time.Microsecond + 1, 5},
		{"at 1 ms", time.Millisecond, 7},
		{"just above 1 ms", time.Millisecond + 1, 8},
		{"1.5 ms", 1500 * time.Microsecond, 8},
		{"at 13 ms", 13 * time.Millisecond, 15},
		{"just above 13 ms", 13*time.Millisecond + 1, 16},
		{"at 1 s", time.Second, 34},
		{"just above 1 s", time.Second + 1, 35},
		{"just below 100 s", 100*time.Second - 1, 40},
		{"at 100 s, the last bound", 100 * time.Second, 40},
		{"just above 100 s is +Inf", 100*time.Second + 1, last},
		{"an hour is +Inf", time.Hour, last},
		{"the largest duration is +Inf", math.MaxInt64, last},
	}
	b := histogram.DefaultLatency()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, b.Bucket(tt.d))
		})
	}
}

// refBucket is the bucket of d by definition: the first bound at or above it.
func refBucket(ns []int64, d time.Duration) int {
	i, _ := slices.BinarySearch(ns, max(int64(d), 0))
	return i
}

// TestBucketAgainstSearch checks Bucket against a binary search over the bounds, for every
// bound and its neighbours and for random durations of every magnitude, with bounds of
// several shapes: A66's, few and wide, dense within an octave, the most allowed, none.
func TestBucketAgainstSearch(t *testing.T) {
	many := make([]float64, histogram.MaxBounds)
	for i := range many {
		many[i] = float64(i+1) * 1e-9 * float64(i+1) * float64(i+1) // 1 ns, 8 ns, 27 ns …
	}
	tests := []struct {
		name    string
		seconds []float64
	}{
		{"A66", a66},
		{"Prometheus' defaults", []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
		{"one bound, not zero", []float64{0.001}},
		{"dense within an octave", []float64{1.000e-3, 1.001e-3, 1.002e-3, 1.003e-3, 1.004e-3, 1.5e-3, 2e-3}},
		{"nanoseconds", []float64{1e-9, 2e-9, 3e-9, 4e-9}},
		{"the most bounds allowed", many},
		{"none: one bucket", nil},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := histogram.NewBounds(tt.seconds...)
			require.NoError(t, err)
			ns := b.Nanoseconds()
			check := func(d time.Duration) {
				if got, want := b.Bucket(d), refBucket(ns, d); got != want {
					t.Fatalf("Bucket(%d ns) = %d, want %d", int64(d), got, want)
				}
			}
			for _, n := range ns {
				for _, d := range []int64{n - 1, n, n + 1} {
					check(time.Duration(d))
				}
			}
			for k := range 63 { // every bit length, and both ends of it
				check(time.Duration(int64(1) << k))
				check(time.Duration(int64(1)<<k - 1))
				check(time.Duration(int64(1)<<(k+1) - 1))
			}
			for range 100_000 {
				check(time.Duration(rng.Int64N(int64(1) << rng.IntN(63))))
			}
		})
	}
}

func TestNewBoundsRejects(t *testing.T) {
	tooMany := make([]float64, histogram.MaxBounds+1)
	for i := range tooMany {
		tooMany[i] = float64(i)
	}
	tests := []struct {
		name    string
		seconds []float64
		errLike string
	}{
		{"NaN", []float64{0, math.NaN()}, "bound 1 is NaN s"},
		{"negative", []float64{-1}, "bound 0 is -1 s"},
		{"infinite", []float64{1, math.Inf(1)}, "bound 1 is +Inf s"},
		{"beyond a Duration", []float64{300 * 365 * 86400}, "bound 0"},
		{"decreasing", []float64{0.002, 0.001}, "bound 1 (0.001 s) is not above bound 0 (0.002 s)"},
		{"equal", []float64{0.001, 0.001}, "bound 1 (0.001 s) is not above bound 0"},
		{"equal once rounded to the nanosecond", []float64{1e-9, 1.2e-9}, "bound 1 (1.2e-09 s) is not above bound 0"},
		{"too many", tooMany, "256 bounds, more than the 255"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := histogram.NewBounds(tt.seconds...)
			require.Nil(t, b)
			require.ErrorContains(t, err, tt.errLike)
			require.ErrorContains(t, err, "histogram: ")
		})
	}
}

func TestNewBoundsCopies(t *testing.T) {
	s := []float64{0.001, 0.002}
	b, err := histogram.NewBounds(s...)
	require.NoError(t, err)
	s[0] = 0.0015
	assert.Equal(t, []float64{0.001, 0.002}, b.Seconds())
	assert.Equal(t, 1, b.Bucket(1500*time.Microsecond))
}
