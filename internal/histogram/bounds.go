package histogram

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
)

// MaxBounds is the largest number of bounds a Bounds may have: Bucket's table holds the
// index of a bucket in a byte, and Len() is the index of the last.
const MaxBounds = 255

// Bounds are the upper bounds of a histogram's buckets, in seconds as OpenTelemetry and
// Prometheus name them and in nanoseconds as a histogram records durations. A histogram has
// Len()+1 buckets: bucket i, for i < Len(), counts the durations d with bound i-1 < d ≤
// bound i (no lower limit for bucket 0), and the last bucket counts those above the last
// bound (+Inf). Upper bounds are inclusive, as in OpenTelemetry's explicit-bucket histograms
// and Prometheus's "le" buckets: a duration equal to a bound counts in that bound's bucket.
// Durations are compared with the bounds in nanoseconds (Nanoseconds), which differ from
// Seconds only for a bound that is not a whole number of nanoseconds.
//
// Bounds are immutable and safe to share between goroutines and histograms.
type Bounds struct {
	seconds []float64
	ns      []int64
	// start[k] is the first bucket whose bound is at least the smallest duration, in
	// nanoseconds, whose bit length is k (0 for k == 0, else 1<<(k-1)): every bound below it
	// is below every duration of that bit length, so a search for such a duration starts
	// there. With A66's bounds it leaves at most four bounds to compare.
	start [65]uint8
}

// defaultLatency is the shared value DefaultLatency returns.
var defaultLatency = mustBounds(
	0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005,
	0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13,
	0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100,
)

// DefaultLatency returns the latency bounds of gRPC's OpenTelemetry metrics (gRFC A66, and
// grpc-go's stats/opentelemetry.DefaultLatencyBounds), from 0 to 100 seconds: 41 bounds,
// so 42 buckets, the first counting durations of zero and the last those above 100 s. Every
// call returns the same value.
func DefaultLatency() *Bounds { return defaultLatency }

func mustBounds(seconds ...float64) *Bounds {
	b, err := NewBounds(seconds...)
	if err != nil {
		panic(err)
	}
	return b
}

// NewBounds returns bounds with the given upper bounds, in seconds. It copies seconds. The
// bounds must be finite, at least zero, at most MaxBounds of them, and increasing by at
// least a nanosecond each, since durations are recorded in nanoseconds: a bound is rounded
// to the nearest nanosecond for recording, and must be at most math.MaxInt64 nanoseconds
// (about 292 years) once rounded.
func NewBounds(seconds ...float64) (*Bounds, error) {
	if len(seconds) > MaxBounds {
		return nil, fmt.Errorf("histogram: %d bounds, more than the %d a histogram may have", len(seconds), MaxBounds)
	}
	b := &Bounds{seconds: slices.Clone(seconds), ns: make([]int64, len(seconds))}
	for i, s := range seconds {
		ns := math.Round(s * 1e9)
		// float64(math.MaxInt64) is 2⁶³, one above it: ns must stay below it.
		if math.IsNaN(s) || s < 0 || ns >= float64(math.MaxInt64) {
			return nil, fmt.Errorf("histogram: bound %d is %v s: it must be at least 0 and below %v", i, s, time.Duration(math.MaxInt64))
		}
		b.ns[i] = int64(ns)
		if i > 0 && b.ns[i] <= b.ns[i-1] {
			return nil, fmt.Errorf("histogram: bound %d (%v s) is not above bound %d (%v s) by a nanosecond or more", i, s, i-1, seconds[i-1])
		}
	}
	// start[64] stays 0: a duration of bit length 64 is negative, recorded as zero.
	for k := range 64 {
		var lo int64 // the smallest duration of bit length k
		if k > 0 {
			lo = 1 << (k - 1)
		}
		i, _ := slices.BinarySearch(b.ns, lo)
		b.start[k] = uint8(i)
	}
	return b, nil
}

// Len returns the number of bounds; a histogram over them has Len()+1 buckets.
func (b *Bounds) Len() int { return len(b.ns) }

// Seconds returns the bounds in seconds, as NewBounds got them: what OpenTelemetry's
// HistogramDataPoint.Bounds and Prometheus's "le" labels hold. The slice is shared: the
// caller must not modify it.
func (b *Bounds) Seconds() []float64 { return b.seconds }

// Nanoseconds returns the bounds as recorded, rounded to the nanosecond. The slice is shared:
// the caller must not modify it.
func (b *Bounds) Nanoseconds() []int64 { return b.ns }

// Bucket returns the index of the bucket that counts d: the first bound at or above d, or
// Len() for a duration above every bound. A negative d counts as zero.
//
// It costs a table lookup on d's bit length and then at most a few comparisons (with the
// default bounds, at most four): less than a binary search over the bounds, whose
// branches a processor cannot predict for durations that vary.
func (b *Bounds) Bucket(d time.Duration) int {
	ns := max(int64(d), 0)
	i := int(b.start[bits.Len64(uint64(ns))])
	bounds := b.ns
	for i < len(bounds) && ns > bounds[i] {
		i++
	}
	return i
}
