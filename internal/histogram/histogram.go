// Package histogram counts durations in fixed buckets: a reactor's latency histograms, one
// per method and phase of its calls (the whole call, its queue wait, its transport, its tick
// wait), which metrics adapters export as OpenTelemetry explicit-bucket histograms or as
// Prometheus histograms. A Histogram is cumulative: its counts only grow, from its Init, as
// both exporters expect.
//
// A Histogram does no locking, and uses no atomic operation: Observe is a bucket lookup (see
// Bounds.Bucket) and plain additions, and Snapshot a plain copy. Its owner keeps it under a
// lock it already holds where it records and where it reads: a reactor records a delivered
// call's durations where it counts the call's outcome, under the mutex of its counters, and
// copies its histograms, with those counters, under the same mutex when asked for its
// statistics. Recording thus adds no synchronisation to what a call costs the goroutine that
// delivers it, and a copy sees every histogram of the reactor, and its counters, as of the
// same instant, each histogram's count equal to the sum of its buckets. A Histogram used
// otherwise must be recorded and read from one goroutine.
//
// Buckets are those of the histogram's Bounds: bucket i counts the durations above bound
// i-1 and at most bound i (upper bounds are inclusive, as OpenTelemetry's and Prometheus's
// are), and the last bucket, above the last bound, is +Inf. A negative duration counts as
// zero, in its bucket and in the sum. The sum is kept in nanoseconds, in an int64: exact
// until it passes math.MaxInt64 nanoseconds (about 292 years of recorded durations), where
// it wraps around.
package histogram

import (
	"fmt"
	"slices"
	"time"
)

// Histogram counts durations in the buckets of its Bounds; it does no locking: its owner
// records and copies it under one lock (a reactor, under the mutex of its counters), or from
// one goroutine.
//
// Its owner keeps it as a value, in the structure it records from (a reactor's counters of
// a method), so that recording reaches the counts without loading a pointer to the
// histogram first: the zero value is not usable until Init. A Histogram must not be copied
// after Init: the copy would share its counts.
type Histogram struct {
	bounds *Bounds
	counts []uint64 // one per bucket, bounds.Len()+1
	count  uint64   // the sum of counts
	sum    int64    // nanoseconds, negative durations counted as zero
}

// Init makes h an empty histogram over b's buckets, whatever it held before.
func (h *Histogram) Init(b *Bounds) {
	*h = Histogram{bounds: b, counts: make([]uint64, b.Len()+1)}
}

// Bounds returns the histogram's bounds.
func (h *Histogram) Bounds() *Bounds { return h.bounds }

// Observe counts d in its bucket and adds it to the sum; a negative d counts as zero. It
// does not allocate.
func (h *Histogram) Observe(d time.Duration) {
	ns := max(int64(d), 0)
	h.counts[h.bounds.Bucket(time.Duration(ns))]++
	h.count++
	h.sum += ns
}

// Snapshot copies the histogram into dst, which shares no memory with it afterwards. It
// reuses dst.Counts' array if it can hold the buckets: an owner who copies into the same
// Snapshot each time allocates nothing after the first.
func (h *Histogram) Snapshot(dst *Snapshot) {
	dst.Bounds = h.bounds
	dst.Counts = setLen(dst.Counts, len(h.counts))
	copy(dst.Counts, h.counts)
	dst.Count, dst.Sum = h.count, time.Duration(h.sum)
}

// Snapshot is one histogram as its owner copied it: what OpenTelemetry's HistogramDataPoint
// and Prometheus's histogram need, less the labels.
type Snapshot struct {
	// Bounds are the histogram's bucket bounds; nil in a zero Snapshot.
	Bounds *Bounds
	// Counts has one entry per bucket, Bounds.Len()+1 of them, each counting the durations
	// in that bucket alone: not cumulative, as OpenTelemetry's BucketCounts are. Cumulative
	// returns the running sums that Prometheus's buckets hold.
	Counts []uint64
	// Count is the number of durations recorded: the sum of Counts.
	Count uint64
	// Sum is the sum of the durations recorded, negative ones counted as zero. It is exact,
	// to the nanosecond, until it passes math.MaxInt64 nanoseconds, and wraps around there.
	Sum time.Duration
}

// SumSeconds returns Sum in seconds, the unit OpenTelemetry and Prometheus use.
func (s *Snapshot) SumSeconds() float64 { return s.Sum.Seconds() }

// Cumulative returns the cumulative bucket counts, Prometheus's: entry i counts the
// durations at or below bound i, and the last entry, for +Inf, equals Count. It appends them
// to dst[:0], so that a caller who passes the slice of its previous call allocates nothing.
func (s *Snapshot) Cumulative(dst []uint64) []uint64 { return Cumulative(s.Counts, dst) }

// Cumulative returns the running sums of counts, per-bucket counts, appended to dst[:0]:
// Prometheus's "le" buckets, the last equal to their total. A caller who passes the slice of
// its previous call allocates nothing, and one who passes nil allocates once.
func Cumulative(counts, dst []uint64) []uint64 {
	dst = slices.Grow(dst[:0], len(counts))
	var sum uint64
	for _, n := range counts {
		sum += n
		dst = append(dst, sum)
	}
	return dst
}

// Merge adds o's counts and sum to s, as one histogram that recorded both: a reactor's
// histogram over all its methods is the merge of its methods'. A zero s takes o's bounds; s
// keeps no reference to o's Counts. Merging snapshots whose bounds differ panics: their
// buckets do not add up.
func (s *Snapshot) Merge(o *Snapshot) {
	if o.Bounds == nil {
		return // a zero Snapshot adds nothing
	}
	if s.Bounds == nil {
		s.Bounds = o.Bounds
		s.Counts = setLen(s.Counts, len(o.Counts))
		clear(s.Counts)
		s.Count, s.Sum = 0, 0
	}
	if s.Bounds != o.Bounds && !slices.Equal(s.Bounds.ns, o.Bounds.ns) {
		panic(fmt.Sprintf("histogram: Merge of a snapshot with %d bounds into one with %d other bounds", o.Bounds.Len(), s.Bounds.Len()))
	}
	for i, n := range o.Counts {
		s.Counts[i] += n
	}
	s.Count += o.Count
	s.Sum += o.Sum
}

// setLen returns s with length n, reusing its array if it can hold n.
func setLen(s []uint64, n int) []uint64 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]uint64, n)
}
