package histogram

// The designs the package's own was chosen against, kept for its benchmarks
// (bench_internal_test.go): ways to find a duration's bucket, and ways to share the counts
// with readers.

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bucketBinary finds the bucket with the standard library's binary search.
func (b *Bounds) bucketBinary(d time.Duration) int {
	i, _ := slices.BinarySearch(b.ns, max(int64(d), 0))
	return i
}

// bucketSortSearch finds the bucket with sort.Search, as OpenTelemetry's SDK does
// (sort.SearchFloat64s, over float64 bounds).
func (b *Bounds) bucketSortSearch(d time.Duration) int {
	ns := max(int64(d), 0)
	return sort.Search(len(b.ns), func(i int) bool { return b.ns[i] >= ns })
}

// bucketLinear compares the duration with each bound from the first, as Prometheus's client
// does for fewer than 35 bounds.
func (b *Bounds) bucketLinear(d time.Duration) int {
	ns := max(int64(d), 0)
	i := 0
	for i < len(b.ns) && ns > b.ns[i] {
		i++
	}
	return i
}

// padded holds the bounds padded to 64 with the largest int64, for its bucket method.
type padded [64]int64

func newPadded(b *Bounds) *padded {
	var p padded
	for i := range p {
		p[i] = 1<<63 - 1
	}
	copy(p[:], b.ns)
	return &p
}

// bucket is a binary search of fixed depth over the padded bounds, whose steps the
// compiler may turn into conditional moves.
func (p *padded) bucket(d time.Duration) int {
	ns := max(int64(d), 0)
	i := 0
	for step := 32; step > 0; step >>= 1 {
		if p[i+step-1] < ns {
			i += step
		}
	}
	if p[i] < ns { // only for ns above every bound, when i is 63
		i++
	}
	return i
}

// atomicSet is the design without batches: each duration is two atomic adds, one to its
// bucket and one to the sum; a reader loads every bucket and takes the count as their sum,
// so that count and buckets agree, though the sum may hold a duration whose bucket the
// reader did not see yet, and the histograms of a set are read at different instants.
type atomicSet struct {
	bounds  *Bounds
	buckets int
	counts  []atomic.Uint64 // histogram i's bucket j at i*buckets+j
	sums    []atomic.Int64
}

func newAtomicSet(b *Bounds, n int) *atomicSet {
	nb := b.Len() + 1
	return &atomicSet{bounds: b, buckets: nb, counts: make([]atomic.Uint64, n*nb), sums: make([]atomic.Int64, n)}
}

func (s *atomicSet) record(i int, d time.Duration) {
	ns := max(int64(d), 0)
	s.counts[i*s.buckets+s.bounds.Bucket(time.Duration(ns))].Add(1)
	s.sums[i].Add(ns)
}

func (s *atomicSet) readAll(dst []Snapshot) {
	for i := range dst {
		dst[i].Bounds = s.bounds
		dst[i].Counts = setLen(dst[i].Counts, s.buckets)
		var n uint64
		for j := range dst[i].Counts {
			c := s.counts[i*s.buckets+j].Load()
			dst[i].Counts[j] = c
			n += c
		}
		dst[i].Count, dst[i].Sum = n, time.Duration(s.sums[i].Load())
	}
}

// seqSet is the design with batches and a sequence lock instead of a mutex: the writer
// records as Recorder does, and publishes by making the sequence odd, storing the new totals
// of the buckets it touched, then making it even again; a reader loads everything between
// two readings of the same even sequence, and retries otherwise. The writer never waits, nor
// defers a set; it pays an atomic store per bucket touched and per total instead of a lock.
type seqSet struct {
	bounds  *Bounds
	buckets int
	rec     []hist
	listed  bool
	seq     atomic.Uint64
	counts  []atomic.Uint64 // published, histogram i's bucket j at i*buckets+j
	totals  []atomic.Uint64 // published, histogram i's count at 2i, sum at 2i+1
}

func newSeqSet(b *Bounds, n int) *seqSet {
	nb := b.Len() + 1
	s := &seqSet{bounds: b, buckets: nb, rec: make([]hist, n), counts: make([]atomic.Uint64, n*nb), totals: make([]atomic.Uint64, 2*n)}
	rec := make([]uint64, n*nb)
	for i := range n {
		s.rec[i].counts = rec[i*nb : (i+1)*nb : (i+1)*nb]
	}
	return s
}

type seqRecorder struct{ pending []*seqSet }

func (r *seqRecorder) record(s *seqSet, i int, d time.Duration) {
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

func (r *seqRecorder) publish() {
	for _, s := range r.pending {
		s.seq.Add(1)
		for i := range s.rec {
			h := &s.rec[i]
			if h.count == 0 {
				continue
			}
			base := i * s.buckets
			for t := h.touched; t != 0; t &= t - 1 {
				b := base + bits.TrailingZeros64(t)
				s.counts[b].Store(s.counts[b].Load() + h.counts[b-base])
				h.counts[b-base] = 0
			}
			s.totals[2*i].Store(s.totals[2*i].Load() + h.count)
			s.totals[2*i+1].Store(s.totals[2*i+1].Load() + uint64(h.sum))
			h.touched, h.count, h.sum = 0, 0, 0
		}
		s.seq.Add(1)
		s.listed = false
	}
	clear(r.pending)
	r.pending = r.pending[:0]
}

func (s *seqSet) readAll(dst []Snapshot) {
	for i := range dst {
		dst[i].Bounds = s.bounds
		dst[i].Counts = setLen(dst[i].Counts, s.buckets)
	}
	for {
		seq := s.seq.Load()
		if seq&1 != 0 {
			runtime.Gosched()
			continue
		}
		for i := range dst {
			for j := range dst[i].Counts {
				dst[i].Counts[j] = s.counts[i*s.buckets+j].Load()
			}
			dst[i].Count, dst[i].Sum = s.totals[2*i].Load(), time.Duration(s.totals[2*i+1].Load())
		}
		if s.seq.Load() == seq {
			return
		}
	}
}

// TestDesignsAgree checks that the designs the benchmarks compare count alike, so that the
// benchmarks compare designs that work: the bucket searches find the same buckets, and the
// three ways to share a set hold the same snapshots once published.
func TestDesignsAgree(t *testing.T) {
	bounds := DefaultLatency()
	pad := newPadded(bounds)
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 2
	set, seq, atom := NewSet(bounds, n), newSeqSet(bounds, n), newAtomicSet(bounds, n)
	var r Recorder
	var sr seqRecorder
	for k := range 50_000 {
		d := time.Duration(rng.Int64N(int64(1)<<rng.IntN(40))) - time.Microsecond
		want := bounds.Bucket(d)
		for name, got := range map[string]int{
			"binary": bounds.bucketBinary(d), "sortsearch": bounds.bucketSortSearch(d),
			"linear": bounds.bucketLinear(d), "branchless": pad.bucket(d),
		} {
			if got != want {
				t.Fatalf("%s(%d ns) = %d, Bucket says %d", name, int64(d), got, want)
			}
		}
		i := k % n
		r.Record(set, i, d)
		sr.record(seq, i, d)
		atom.record(i, d)
		if k%7 == 0 {
			r.Publish()
			sr.publish()
		}
	}
	r.Flush()
	sr.publish()
	want, gotSeq, gotAtom := make([]Snapshot, n), make([]Snapshot, n), make([]Snapshot, n)
	set.ReadAll(want)
	seq.readAll(gotSeq)
	atom.readAll(gotAtom)
	require.Equal(t, want, gotSeq, "seqlock")
	require.Equal(t, want, gotAtom, "atomic")
	require.Equal(t, uint64(25_000), want[0].Count)
}
