// Package histogram keeps cumulative histograms of durations in fixed buckets, recorded by
// one goroutine at a time and read by any: what a reactor keeps per method for the latency
// of its calls and of their phases, and what metrics adapters export as OpenTelemetry or
// Prometheus histograms.
//
// A Set is a few histograms over the same Bounds, published together. Its writer, a
// Recorder, records each duration into plain memory, without a lock, an atomic operation or
// an allocation, and publishes what it recorded once per batch (a Tick, for a reactor):
// Publish adds each set's new counts to the set's published ones under the set's lock,
// which it only tries to take, so that the writer never waits for a reader. Readers (Read,
// ReadAll) copy the published counts under that lock: they see every histogram of a set as
// of the same Publish, never a count that differs from the sum of its buckets, and nothing
// recorded since.
//
// Why batches: the writer is a reactor's host goroutine, whose time per call is what prpc
// is judged on. An atomic add per bucket and per sum costs it two locked instructions per
// duration; a batch costs two per set and per batch (the lock and its release), and plain
// additions per duration, so it costs the writer less once a batch holds a few calls of
// each set (a Tick in a burst holds many), and more with a single call per batch, when the
// host has time to spare. A reader's copy under a lock is also cheaper than loading every bucket
// atomically, and, unlike that, sees a set as of one instant. A sequence lock per batch,
// which lets the writer publish without ever deferring a set, costs it an atomic store per
// bucket touched and per total instead of the lock. The package's benchmarks
// (BenchmarkRecord, BenchmarkRead, BenchmarkRecordWhileRead) compare the three, and
// BenchmarkBucket compares Bounds.Bucket with binary and linear searches.
package histogram

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// Snapshot is one histogram as a reader copied it: what OpenTelemetry's HistogramDataPoint
// and Prometheus's histogram need, less the labels.
type Snapshot struct {
	// Bounds are the histogram's bucket bounds; nil in a zero Snapshot.
	Bounds *Bounds
	// Counts has one entry per bucket, Bounds.Len()+1 of them, each counting the durations
	// in that bucket alone: not cumulative, as OpenTelemetry's BucketCounts are. Cumulative
	// returns the running sums that Prometheus's buckets hold.
	Counts []uint64
	// Count is the number of durations recorded: the sum of Counts, in every snapshot.
	Count uint64
	// Sum is the sum of the durations recorded, negative ones counted as zero. It is exact,
	// to the nanosecond, until it passes about 292 years (math.MaxInt64 nanoseconds), and
	// wraps around there.
	Sum time.Duration
}

// SumSeconds returns Sum in seconds, the unit OpenTelemetry and Prometheus use.
func (s *Snapshot) SumSeconds() float64 { return s.Sum.Seconds() }

// Cumulative returns the cumulative bucket counts, Prometheus's: entry i counts the
// durations at or below bound i, and the last entry, for +Inf, equals Count. It appends them
// to dst[:0], so that a caller who passes the slice of its previous call allocates nothing.
func (s *Snapshot) Cumulative(dst []uint64) []uint64 {
	dst = dst[:0]
	var sum uint64
	for _, n := range s.Counts {
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

// Set is a fixed number of histograms over the same bounds, recorded by one Recorder and
// published together: the phases of one method's calls, say. Its zero value is not usable;
// NewSet makes one.
//
// Record and the Recorder's Publish and Flush are for the Recorder's goroutine (one at a
// time); Read and ReadAll are safe from any goroutine at any time.
type Set struct {
	bounds  *Bounds
	buckets int // bounds.Len() + 1

	// The writer's side: what its Recorder recorded since it last published the set.
	rec    []hist
	listed bool // in the Recorder's list of sets to publish

	// The readers' side: what the Recorder published, under mu.
	mu  sync.Mutex
	pub []hist
}

// hist is one histogram's counts: for the writer, those recorded since the last
// publication, with touched marking the buckets recorded into; for readers, the totals
// published.
type hist struct {
	counts  []uint64
	touched uint64 // bit i set: counts[i] may be non-zero (the writer's side only)
	count   uint64
	sum     int64
}

// NewSet returns a set of n histograms over bounds, all empty. It panics if n < 1.
func NewSet(bounds *Bounds, n int) *Set {
	if n < 1 {
		panic(fmt.Sprintf("histogram: NewSet of %d histograms", n))
	}
	nb := bounds.Len() + 1
	s := &Set{bounds: bounds, buckets: nb, rec: make([]hist, n), pub: make([]hist, n)}
	// One array per side, so that the writer's records and the readers' copies do not share
	// cache lines more than at the two arrays' ends.
	rec, pub := make([]uint64, n*nb), make([]uint64, n*nb)
	for i := range n {
		s.rec[i].counts = rec[i*nb : (i+1)*nb : (i+1)*nb]
		s.pub[i].counts = pub[i*nb : (i+1)*nb : (i+1)*nb]
	}
	return s
}

// Len returns the number of histograms in the set.
func (s *Set) Len() int { return len(s.pub) }

// Bounds returns the bounds of the set's histograms.
func (s *Set) Bounds() *Bounds { return s.bounds }

// Read copies histogram i of the set, as last published, into dst, reusing dst.Counts if
// it can hold the buckets: a reader who reads into the same Snapshot each time allocates
// nothing after the first. It holds the set's lock for the copy only; a Publish that finds
// it held leaves the set to the next one.
func (s *Set) Read(i int, dst *Snapshot) {
	dst.Bounds = s.bounds
	dst.Counts = setLen(dst.Counts, s.buckets)
	s.mu.Lock()
	s.pub[i].copyTo(dst)
	s.mu.Unlock()
}

// ReadAll copies every histogram of the set, as of the same Publish, into dst[i] for
// histogram i, reusing their Counts as Read does. It panics if len(dst) is not Len().
func (s *Set) ReadAll(dst []Snapshot) {
	if len(dst) != len(s.pub) {
		panic(fmt.Sprintf("histogram: ReadAll of a set of %d histograms into %d snapshots", len(s.pub), len(dst)))
	}
	for i := range dst {
		dst[i].Bounds = s.bounds
		dst[i].Counts = setLen(dst[i].Counts, s.buckets)
	}
	s.mu.Lock()
	for i := range dst {
		s.pub[i].copyTo(&dst[i])
	}
	s.mu.Unlock()
}

func (h *hist) copyTo(dst *Snapshot) {
	copy(dst.Counts, h.counts)
	dst.Count, dst.Sum = h.count, time.Duration(h.sum)
}

// publishLocked adds what the writer recorded to the published counts, and clears the
// writer's. The caller holds s.mu.
func (s *Set) publishLocked() {
	for i := range s.rec {
		r, p := &s.rec[i], &s.pub[i]
		if r.count == 0 {
			continue
		}
		for t := r.touched; t != 0; t &= t - 1 {
			b := bits.TrailingZeros64(t)
			p.counts[b] += r.counts[b]
			r.counts[b] = 0
		}
		p.count += r.count
		p.sum += r.sum
		r.touched, r.count, r.sum = 0, 0, 0
	}
}

// Recorder is the writing side of sets: it records durations into them and publishes them
// to their readers. A set has one Recorder, and a Recorder is used by one goroutine at a
// time (a reactor's: whichever goroutine holds its host role). The zero value is ready to
// use.
//
// Recording costs the writer a bucket lookup (see Bounds.Bucket) and four plain additions;
// publishing, two locked instructions per set recorded into since the last publication,
// whatever the number of durations. Neither allocates once the Recorder has listed as many
// sets at once as it ever will.
type Recorder struct {
	pending []*Set // the sets recorded into and not yet published, each once
}

// Record records d into histogram i of s, a negative d as zero. Readers see it once the
// Recorder publishes s (Publish or Flush).
func (r *Recorder) Record(s *Set, i int, d time.Duration) {
	ns := max(int64(d), 0)
	b := s.bounds.Bucket(time.Duration(ns))
	h := &s.rec[i]
	h.counts[b]++
	h.touched |= 1 << b
	h.count++
	h.sum += ns
	if !s.listed {
		s.listed = true
		r.pending = append(r.pending, s)
	}
}

// Pending reports whether some durations recorded are not published yet.
func (r *Recorder) Pending() bool { return len(r.pending) > 0 }

// Publish publishes what was recorded since the last publication, without waiting: a set
// whose lock a reader holds at that instant (for the time of a copy) keeps its durations
// for the next Publish or Flush, and Publish reports false. It returns true when nothing is
// left pending.
func (r *Recorder) Publish() bool {
	kept := r.pending[:0]
	for _, s := range r.pending {
		if !s.mu.TryLock() {
			kept = append(kept, s)
			continue
		}
		s.publishLocked()
		s.mu.Unlock()
		s.listed = false
	}
	clear(r.pending[len(kept):])
	r.pending = kept
	return len(kept) == 0
}

// Flush publishes everything recorded, waiting for readers to finish their copies if it
// must: for a writer that stops recording (a reactor that closes) and must leave nothing
// unpublished.
func (r *Recorder) Flush() {
	for _, s := range r.pending {
		s.mu.Lock()
		s.publishLocked()
		s.mu.Unlock()
		s.listed = false
	}
	clear(r.pending)
	r.pending = r.pending[:0]
}
