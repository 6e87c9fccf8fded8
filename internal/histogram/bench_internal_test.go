package histogram

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/trixnew/prpc/internal/threadcpu"
)

// cpuPerOp locks the benchmark to its thread and returns a function, to call once the loop
// is done, that reports the thread's CPU time per op as "cpu-ns/op": on a machine whose cores
// other processes share, ns/op counts the time the thread waited for a CPU too, cpu-ns/op
// does not. It also counts the thread's work just before and after the loop, a fixed cost
// that only runs of many ops (the default -benchtime, or 100ms) make negligible.
func cpuPerOp(b *testing.B) (report func()) {
	runtime.LockOSThread()
	c0, ok := threadcpu.Now()
	return func() {
		c1, ok1 := threadcpu.Now()
		runtime.UnlockOSThread()
		if ok && ok1 && b.N > 0 {
			b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
		}
	}
}

// samples are durations to record, drawn before a benchmark starts. len is a power of two.
type samples []time.Duration

// logUniform returns n durations spread evenly over the logarithms of [lo, hi].
func logUniform(rng *rand.Rand, n int, lo, hi time.Duration) samples {
	s := make(samples, n)
	for i := range s {
		s[i] = time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), rng.Float64()))
	}
	return s
}

// callPhases are the four durations a reactor records per call: the whole call, its queue
// wait, its transport and its tick wait, each drawn from a range a game's calls may show.
type callPhases [4]samples

const sampleCount = 4096

func newCallPhases() callPhases {
	rng := rand.New(rand.NewPCG(5, 6))
	var p callPhases
	p[1] = logUniform(rng, sampleCount, time.Microsecond, time.Millisecond)        // queue wait
	p[2] = logUniform(rng, sampleCount, 100*time.Microsecond, 50*time.Millisecond) // transport
	p[3] = make(samples, sampleCount)                                              // tick wait, up to a 20 Hz tick
	p[0] = make(samples, sampleCount)
	for i := range sampleCount {
		p[3][i] = time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		p[0][i] = p[1][i] + p[2][i] + p[3][i]
	}
	return p
}

// BenchmarkBucket compares Bounds.Bucket ("table") with a binary search over the bounds
// ("binary"), among A66's bounds, for durations spread over six decades ("spread": a branch
// predictor cannot guess the comparisons) and for durations of one bucket ("steady").
func BenchmarkBucket(b *testing.B) {
	bounds := DefaultLatency()
	rng := rand.New(rand.NewPCG(7, 8))
	inputs := []struct {
		name string
		s    samples
	}{
		{"spread", logUniform(rng, sampleCount, time.Microsecond, 10*time.Second)},
		{"steady", logUniform(rng, sampleCount, 1100*time.Microsecond, 1900*time.Microsecond)},
	}
	ways := []struct {
		name   string
		bucket func(time.Duration) int
	}{
		{"table", bounds.Bucket},
		{"binary", bounds.bucketBinary},
	}
	for _, in := range inputs {
		for _, w := range ways {
			b.Run(w.name+"/"+in.name, func(b *testing.B) {
				s, sum := in.s, 0
				defer cpuPerOp(b)()
				for i := 0; b.Loop(); i++ {
					sum += w.bucket(s[i&(sampleCount-1)])
				}
				sink = sum
			})
		}
	}
}

var sink int

// bucketBinary finds the bucket with the standard library's binary search: the way
// Bounds.Bucket's table is measured against.
func (b *Bounds) bucketBinary(d time.Duration) int {
	i, _ := slices.BinarySearch(b.ns, max(int64(d), 0))
	return i
}

// BenchmarkObserve measures recording: one duration per op ("one"), and a call's four
// phases per op, each into its own histogram of the call's method, as a reactor records a
// delivered call ("phases"), with one method, whose histograms stay in the core's caches,
// and with 4096 methods taken at random, whose histograms do not fit in them, as when the
// game's code pushed them out between two ticks. The calls of a loop are independent, so
// the processor overlaps their cache misses, which a reactor's deliveries, with the game's
// callbacks between them, may not: "methods=4096" is a lower bound of a cold recording.
func BenchmarkObserve(b *testing.B) {
	bounds := DefaultLatency()
	p := newCallPhases()
	b.Run("one", func(b *testing.B) {
		var h Histogram
		h.Init(bounds)
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			h.Observe(p[0][i&(sampleCount-1)])
		}
	})
	// method is what a reactor keeps per method: its counters, then its histograms, by value.
	type method struct {
		counters [6]uint64
		hist     [4]Histogram
	}
	for _, n := range []struct {
		name    string
		methods int
	}{{"phases/methods=1", 1}, {"phases/methods=4096", 4096}} {
		b.Run(n.name, func(b *testing.B) {
			ms := make([]*method, n.methods)
			for i := range ms {
				ms[i] = new(method)
				for j := range ms[i].hist {
					ms[i].hist[j].Init(bounds)
				}
			}
			rng := rand.New(rand.NewPCG(11, 12))
			order := make([]*method, sampleCount) // the method of each call
			for i := range order {
				order[i] = ms[rng.IntN(n.methods)]
			}
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for i := 0; b.Loop(); i++ {
				k := i & (sampleCount - 1)
				m := order[k]
				m.counters[0]++
				m.hist[0].Observe(p[0][k])
				m.hist[1].Observe(p[1][k])
				m.hist[2].Observe(p[2][k])
				m.hist[3].Observe(p[3][k])
			}
		})
	}
}

// BenchmarkSnapshot measures the copy of a histogram over A66's bounds into a snapshot it
// reuses: what a reactor's lock is held for, per histogram, while its owner reads them.
func BenchmarkSnapshot(b *testing.B) {
	p := newCallPhases()
	var h Histogram
	h.Init(DefaultLatency())
	for _, d := range p[0] {
		h.Observe(d)
	}
	var dst Snapshot
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		h.Snapshot(&dst)
	}
}
