package histogram_test

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trixnew/prpc/internal/histogram"
)

// TestMain fails the package if a test leaves a goroutine behind: the concurrency test's
// reader, say.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// counts returns a histogram's per-bucket counts over n buckets, from bucket:count pairs.
func counts(n int, pairs ...int) []uint64 {
	c := make([]uint64, n)
	for i := 0; i < len(pairs); i += 2 {
		c[pairs[i]] = uint64(pairs[i+1])
	}
	return c
}

func read(s *histogram.Set, i int) histogram.Snapshot {
	var snap histogram.Snapshot
	s.Read(i, &snap)
	return snap
}

func TestRecordPublishRead(t *testing.T) {
	b := histogram.DefaultLatency()
	nb := b.Len() + 1
	tests := []struct {
		name      string
		durations []time.Duration
		want      histogram.Snapshot
	}{
		{"none", nil, histogram.Snapshot{Bounds: b, Counts: counts(nb)}},
		{"zero", []time.Duration{0}, histogram.Snapshot{Bounds: b, Counts: counts(nb, 0, 1), Count: 1}},
		{
			"negative counts as zero, in the sum too",
			[]time.Duration{-5 * time.Millisecond, time.Millisecond},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 0, 1, 7, 1), Count: 2, Sum: time.Millisecond},
		},
		{
			"bounds are inclusive",
			[]time.Duration{time.Millisecond, time.Millisecond + 1, 2 * time.Millisecond},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 7, 1, 8, 2), Count: 3, Sum: 4*time.Millisecond + 1},
		},
		{
			"huge ones are +Inf",
			[]time.Duration{100*time.Second + 1, time.Hour},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, nb-1, 2), Count: 2, Sum: time.Hour + 100*time.Second + 1},
		},
		{
			"repeats add up",
			[]time.Duration{3 * time.Microsecond, 3 * time.Microsecond, 3 * time.Microsecond},
			histogram.Snapshot{Bounds: b, Counts: counts(nb, 1, 3), Count: 3, Sum: 9 * time.Microsecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := histogram.NewSet(b, 2)
			var r histogram.Recorder
			for _, d := range tt.durations {
				r.Record(s, 1, d)
			}
			assert.Equal(t, histogram.Snapshot{Bounds: b, Counts: counts(nb)}, read(s, 1), "nothing is visible before Publish")
			assert.Equal(t, len(tt.durations) > 0, r.Pending())
			require.True(t, r.Publish())
			assert.False(t, r.Pending())
			assert.Equal(t, tt.want, read(s, 1))
			assert.Equal(t, histogram.Snapshot{Bounds: b, Counts: counts(nb)}, read(s, 0), "the other histogram of the set")

			// A second round adds to the first: the histograms are cumulative.
			for _, d := range tt.durations {
				r.Record(s, 1, d)
			}
			r.Flush()
			twice := tt.want
			twice.Counts = make([]uint64, nb)
			for i, n := range tt.want.Counts {
				twice.Counts[i] = 2 * n
			}
			twice.Count, twice.Sum = 2*tt.want.Count, 2*tt.want.Sum
			assert.Equal(t, twice, read(s, 1))
		})
	}
}

// TestPublishDoesNotWaitForReaders holds a set's lock as a reader copying it does: Publish
// must neither wait nor lose the durations, which the next Publish then publishes.
func TestPublishDoesNotWaitForReaders(t *testing.T) {
	b := histogram.DefaultLatency()
	held, free := histogram.NewSet(b, 1), histogram.NewSet(b, 1)
	var r histogram.Recorder
	r.Record(held, 0, time.Millisecond)
	r.Record(free, 0, time.Second)

	unlock := histogram.LockForTest(held)
	require.False(t, r.Publish(), "a set whose lock is held stays pending")
	require.True(t, r.Pending())
	assert.Equal(t, uint64(1), read(free, 0).Count, "the other set is published")
	r.Record(held, 0, 2*time.Millisecond) // recorded while the set waits: kept with the rest
	unlock()

	assert.Equal(t, uint64(0), read(held, 0).Count)
	require.True(t, r.Publish())
	got := read(held, 0)
	assert.Equal(t, uint64(2), got.Count)
	assert.Equal(t, 3*time.Millisecond, got.Sum)
	assert.Equal(t, counts(b.Len()+1, 7, 1, 8, 1), got.Counts)
}

// TestFlushWaitsForReaders checks that Flush publishes a set whose lock a reader holds once
// the reader lets go, rather than leaving it pending as Publish would. (The check that Flush
// has not returned before the release can only catch a Flush that returns at once.)
func TestFlushWaitsForReaders(t *testing.T) {
	s := histogram.NewSet(histogram.DefaultLatency(), 1)
	var r histogram.Recorder
	r.Record(s, 0, time.Millisecond)
	unlock := histogram.LockForTest(s)
	flushed := make(chan struct{})
	go func() {
		r.Flush()
		close(flushed)
	}()
	select {
	case <-flushed:
		t.Fatal("Flush returned while a reader held the set")
	default:
	}
	unlock()
	<-flushed
	assert.False(t, r.Pending())
	assert.Equal(t, uint64(1), read(s, 0).Count)
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

func TestSetMisusePanics(t *testing.T) {
	assert.PanicsWithValue(t, "histogram: NewSet of 0 histograms", func() { histogram.NewSet(histogram.DefaultLatency(), 0) })
	s := histogram.NewSet(histogram.DefaultLatency(), 2)
	assert.PanicsWithValue(t, "histogram: ReadAll of a set of 2 histograms into 1 snapshots", func() { s.ReadAll(make([]histogram.Snapshot, 1)) })
}

// TestNoAllocations checks the costs the package documents: recording and publishing
// allocate nothing once the Recorder's list has grown, and a reader who reads into the same
// snapshots, nor computes cumulative counts into the same slice, allocates nothing either.
func TestNoAllocations(t *testing.T) {
	b := histogram.DefaultLatency()
	sets := []*histogram.Set{histogram.NewSet(b, 4), histogram.NewSet(b, 4), histogram.NewSet(b, 4)}
	var r histogram.Recorder
	d := time.Duration(0)
	record := func() {
		for _, s := range sets {
			for i := range 4 {
				d = (d*7 + 13*time.Microsecond) % (2 * time.Minute)
				r.Record(s, i, d)
			}
		}
		r.Publish()
	}
	record() // the Recorder's list grows to three sets
	assert.Zero(t, testing.AllocsPerRun(100, record), "Record and Publish")

	snaps := make([]histogram.Snapshot, 4)
	sets[0].ReadAll(snaps)
	var one histogram.Snapshot
	sets[1].Read(2, &one)
	var cum []uint64
	cum = one.Cumulative(cum)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		sets[0].ReadAll(snaps)
		sets[1].Read(2, &one)
		cum = one.Cumulative(cum)
	}), "ReadAll, Read and Cumulative into the same values")
}

// TestConcurrentReaders runs a writer that records every duration into each histogram of
// a set (as a reactor records the phases of each call) and publishes in batches of random
// sizes, against readers that read the set all the while, under -race in CI. Every snapshot
// must be one the writer published: each histogram's count is the sum of its buckets, every
// histogram of the set has the same count and the same sum, and no count ever decreases. At
// the end, the set holds exactly what a model recorded.
func TestConcurrentReaders(t *testing.T) {
	const (
		n       = 3
		records = 20_000
		readers = 2
	)
	b := histogram.DefaultLatency()
	s := histogram.NewSet(b, n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads [readers]int
	for reader := range readers {
		wg.Go(func() {
			snaps := make([]histogram.Snapshot, n)
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.ReadAll(snaps)
				reads[reader]++
				for i := range snaps {
					var sum uint64
					for _, c := range snaps[i].Counts {
						sum += c
					}
					if sum != snaps[i].Count || snaps[i].Count != snaps[0].Count || snaps[i].Sum != snaps[0].Sum {
						t.Errorf("histogram %d: count %d, buckets' sum %d, sum %v; histogram 0: count %d, sum %v",
							i, snaps[i].Count, sum, snaps[i].Sum, snaps[0].Count, snaps[0].Sum)
						return
					}
				}
				if snaps[0].Count < last {
					t.Errorf("the count went from %d down to %d", last, snaps[0].Count)
					return
				}
				last = snaps[0].Count
			}
		})
	}

	var r histogram.Recorder
	rng := rand.New(rand.NewPCG(3, 4))
	want := make([]uint64, b.Len()+1)
	var wantSum time.Duration
	for done := 0; done < records; {
		batch := 1 + rng.IntN(64)
		for range min(batch, records-done) {
			// Durations of every magnitude, from below zero to beyond the last bound.
			d := time.Duration(rng.Int64N(int64(1)<<rng.IntN(40))) - time.Microsecond
			for i := range n {
				r.Record(s, i, d)
			}
			want[refBucket(b.Nanoseconds(), d)]++
			wantSum += max(d, 0)
			done++
		}
		r.Publish()
	}
	r.Flush()
	close(stop)
	wg.Wait()

	snaps := make([]histogram.Snapshot, n)
	s.ReadAll(snaps)
	for i := range snaps {
		assert.Equal(t, want, snaps[i].Counts, "histogram %d", i)
		assert.Equal(t, uint64(records), snaps[i].Count, "histogram %d", i)
		assert.Equal(t, wantSum, snaps[i].Sum, "histogram %d", i)
	}
	t.Logf("reads: %v", reads)
}

func TestSumSeconds(t *testing.T) {
	s := histogram.Snapshot{Sum: 1500 * time.Millisecond}
	assert.Equal(t, 1.5, s.SumSeconds())
	s.Sum = math.MaxInt64
	assert.InDelta(t, 9.223372036854776e9, s.SumSeconds(), 1)
}
