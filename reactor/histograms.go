package reactor

import (
	"slices"
	"time"

	"github.com/trixnew/prpc/internal/histogram"
)

// Histogram counts durations in fixed buckets since the reactor started: cumulative, never
// reset, so that a metrics system can take rates and percentiles over any interval, sum them
// across methods and servers, and aggregate them across scrapes, which the percentiles of
// Latency cannot. Its buckets are those of gRPC's OpenTelemetry metrics (gRFC A66), from 0
// to 100 seconds.
type Histogram struct {
	// Bounds are the buckets' upper bounds, in seconds, increasing. The Histograms of one
	// snapshot share one slice, made for that snapshot: no other snapshot sees a change to it.
	Bounds []float64
	// Counts has len(Bounds)+1 entries, each counting the durations in its bucket alone:
	// Counts[i] counts those d with Bounds[i-1] < d ≤ Bounds[i] (no lower limit for i = 0),
	// and the last entry those above the last bound. These are OpenTelemetry's bucket counts;
	// Prometheus's "le" buckets are their running sums (Cumulative).
	Counts []uint64
	// Count is the number of durations counted: the sum of Counts.
	Count uint64
	// Sum is the sum of the durations counted.
	Sum time.Duration
}

// Cumulative returns the running sums of Counts, appended to dst[:0]: entry i counts the
// durations at or below Bounds[i], and the last entry, for +Inf, equals Count. These are
// Prometheus's buckets. A caller who passes the slice of its previous call allocates nothing.
func (h *Histogram) Cumulative(dst []uint64) []uint64 { return histogram.Cumulative(h.Counts, dst) }

// Histograms are the latency histograms of a set of calls, split as Stats.Latency is: the
// whole call, from submission to delivery by Tick, and its three phases, which add up to it.
// A call counts in them when Tick (or Shutdown or Close) delivers it; a call rejected at
// submission counts in none (Stats.Failed counts it), and a call that never reached gRPC
// has no Transport phase.
type Histograms struct {
	// Latency is the time from submission to delivery, the wait for Tick included.
	Latency Histogram
	// QueueWait is the time from submission until a lane took the call, or until prpc
	// settled it if no lane did.
	QueueWait Histogram
	// Transport is the time from a lane taking the call until its outcome was queued for
	// Tick, for the calls that reached gRPC.
	Transport Histogram
	// TickWait is the time from the outcome's queuing for Tick until Tick delivered it: the
	// game loop's own share of the latency.
	TickWait Histogram
}

// phaseHistograms are a method's Histograms as the host goroutine records them, under the
// reactor's counters mutex (tallies.mu): recording and copying take no lock of their own.
// init sets them up; they must not be copied afterwards.
type phaseHistograms struct {
	latency, queue, transport, tickWait histogram.Histogram
}

// init makes h's histograms, empty, over gRPC's latency bounds.
func (h *phaseHistograms) init() {
	b := histogram.DefaultLatency()
	for _, x := range []*histogram.Histogram{&h.latency, &h.queue, &h.transport, &h.tickWait} {
		x.Init(b)
	}
}

// observe counts one delivered call's phases.
func (h *phaseHistograms) observe(p phases) {
	h.latency.Observe(p.total())
	h.queue.Observe(p.queue)
	if p.transport >= 0 {
		h.transport.Observe(p.transport)
	}
	h.tickWait.Observe(p.tickWait)
}

// phaseSnapshots are a copy of phaseHistograms, taken under the counters mutex and turned
// into Histograms after it.
type phaseSnapshots [4]histogram.Snapshot

// copyTo copies h into s.
func (h *phaseHistograms) copyTo(s *phaseSnapshots) {
	h.latency.Snapshot(&s[0])
	h.queue.Snapshot(&s[1])
	h.transport.Snapshot(&s[2])
	h.tickWait.Snapshot(&s[3])
}

// merge adds o to s.
func (s *phaseSnapshots) merge(o *phaseSnapshots) {
	for i := range s {
		s[i].Merge(&o[i])
	}
}

// histograms returns s as Histograms over bounds, sharing s's counts.
func (s *phaseSnapshots) histograms(bounds []float64) Histograms {
	return Histograms{
		Latency:   publicHistogram(&s[0], bounds),
		QueueWait: publicHistogram(&s[1], bounds),
		Transport: publicHistogram(&s[2], bounds),
		TickWait:  publicHistogram(&s[3], bounds),
	}
}

// publicHistogram returns s as a Histogram over bounds, sharing its counts; a zero snapshot
// (no method called yet) gives zero counts.
func publicHistogram(s *histogram.Snapshot, bounds []float64) Histogram {
	if s.Bounds == nil {
		s.Counts = make([]uint64, len(bounds)+1)
	}
	return Histogram{Bounds: bounds, Counts: s.Counts, Count: s.Count, Sum: s.Sum}
}

// snapshotBounds returns a copy of the histograms' bounds in seconds, for one snapshot's
// Histograms to share: a caller who changes it changes no other snapshot.
func snapshotBounds() []float64 { return slices.Clone(histogram.DefaultLatency().Seconds()) }
