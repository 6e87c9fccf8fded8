package histogram

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
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

// BenchmarkBucket compares ways to find a duration's bucket among A66's bounds, for
// durations spread over six decades ("spread": a branch predictor cannot guess the
// comparisons) and for durations of one bucket ("steady").
func BenchmarkBucket(b *testing.B) {
	bounds := DefaultLatency()
	pad := newPadded(bounds)
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
		{"sortsearch", bounds.bucketSortSearch},
		{"linear", bounds.bucketLinear},
		{"branchless", pad.bucket},
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

// BenchmarkRecord measures what recording costs the writer per call, four durations per call
// (a reactor's phases) into the set of the call's method, publication included: a Publish
// after every calls calls, over methods methods in turn. batch is the package's design (plain
// records, a mutex per set per batch), seqlock the same with a sequence lock and atomic
// stores at publication, atomic an atomic add per bucket and sum and no batch.
func BenchmarkRecord(b *testing.B) {
	bounds := DefaultLatency()
	p := newCallPhases()
	for _, methods := range []int{1, 8} {
		for _, calls := range []int{1, 16, 256} {
			name := fmt.Sprintf("methods=%d/calls=%d", methods, calls)
			b.Run("batch/"+name, func(b *testing.B) {
				sets := make([]*Set, methods)
				for i := range sets {
					sets[i] = NewSet(bounds, 4)
				}
				var r Recorder
				b.ReportAllocs()
				defer cpuPerOp(b)()
				defer cpuPerOp(b)()
				for i := 0; b.Loop(); i++ {
					s, k := sets[i%methods], i&(sampleCount-1)
					r.Record(s, 0, p[0][k])
					r.Record(s, 1, p[1][k])
					r.Record(s, 2, p[2][k])
					r.Record(s, 3, p[3][k])
					if (i+1)%calls == 0 {
						r.Publish()
					}
				}
			})
			b.Run("seqlock/"+name, func(b *testing.B) {
				sets := make([]*seqSet, methods)
				for i := range sets {
					sets[i] = newSeqSet(bounds, 4)
				}
				var r seqRecorder
				b.ReportAllocs()
				defer cpuPerOp(b)()
				defer cpuPerOp(b)()
				for i := 0; b.Loop(); i++ {
					s, k := sets[i%methods], i&(sampleCount-1)
					r.record(s, 0, p[0][k])
					r.record(s, 1, p[1][k])
					r.record(s, 2, p[2][k])
					r.record(s, 3, p[3][k])
					if (i+1)%calls == 0 {
						r.publish()
					}
				}
			})
			if calls > 1 {
				continue // the atomic design has no batches
			}
			b.Run("atomic/"+name, func(b *testing.B) {
				sets := make([]*atomicSet, methods)
				for i := range sets {
					sets[i] = newAtomicSet(bounds, 4)
				}
				b.ReportAllocs()
				defer cpuPerOp(b)()
				defer cpuPerOp(b)()
				for i := 0; b.Loop(); i++ {
					s, k := sets[i%methods], i&(sampleCount-1)
					s.record(0, p[0][k])
					s.record(1, p[1][k])
					s.record(2, p[2][k])
					s.record(3, p[3][k])
				}
			})
		}
	}
}

// BenchmarkRead measures a reader's copy of a set of four histograms (a method's phases)
// into snapshots it reuses, with no writer running.
func BenchmarkRead(b *testing.B) {
	bounds := DefaultLatency()
	p := newCallPhases()
	dst := make([]Snapshot, 4)
	b.Run("batch", func(b *testing.B) {
		s := NewSet(bounds, 4)
		var r Recorder
		for k := range sampleCount {
			for i := range 4 {
				r.Record(s, i, p[i][k])
			}
		}
		r.Flush()
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.ReadAll(dst)
		}
	})
	b.Run("seqlock", func(b *testing.B) {
		s := newSeqSet(bounds, 4)
		var r seqRecorder
		for k := range sampleCount {
			for i := range 4 {
				r.record(s, i, p[i][k])
			}
		}
		r.publish()
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.readAll(dst)
		}
	})
	b.Run("atomic", func(b *testing.B) {
		s := newAtomicSet(bounds, 4)
		for k := range sampleCount {
			for i := range 4 {
				s.record(i, p[i][k])
			}
		}
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			s.readAll(dst)
		}
	})
}

// BenchmarkRecordWhileRead is BenchmarkRecord's writer, one method, a Publish every 16
// calls, while another goroutine reads the set without pause: the worst a scrape can do to
// the writer (a real scrape reads once every few seconds).
func BenchmarkRecordWhileRead(b *testing.B) {
	bounds := DefaultLatency()
	p := newCallPhases()
	const calls = 16
	reader := func(b *testing.B, read func(dst []Snapshot)) (stop func()) {
		done, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			dst := make([]Snapshot, 4)
			for {
				select {
				case <-done:
					return
				default:
				}
				read(dst)
			}
		}()
		return func() { close(done); <-stopped }
	}
	b.Run("batch", func(b *testing.B) {
		s := NewSet(bounds, 4)
		var r Recorder
		defer reader(b, s.ReadAll)()
		deferred := 0
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			k := i & (sampleCount - 1)
			r.Record(s, 0, p[0][k])
			r.Record(s, 1, p[1][k])
			r.Record(s, 2, p[2][k])
			r.Record(s, 3, p[3][k])
			if (i+1)%calls == 0 && !r.Publish() {
				deferred++
			}
		}
		b.ReportMetric(float64(deferred)/float64(b.N/calls+1), "deferred/publish")
	})
	b.Run("seqlock", func(b *testing.B) {
		s := newSeqSet(bounds, 4)
		var r seqRecorder
		defer reader(b, s.readAll)()
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			k := i & (sampleCount - 1)
			r.record(s, 0, p[0][k])
			r.record(s, 1, p[1][k])
			r.record(s, 2, p[2][k])
			r.record(s, 3, p[3][k])
			if (i+1)%calls == 0 {
				r.publish()
			}
		}
	})
	b.Run("atomic", func(b *testing.B) {
		s := newAtomicSet(bounds, 4)
		defer reader(b, s.readAll)()
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for i := 0; b.Loop(); i++ {
			k := i & (sampleCount - 1)
			s.record(0, p[0][k])
			s.record(1, p[1][k])
			s.record(2, p[2][k])
			s.record(3, p[3][k])
		}
	})
}
