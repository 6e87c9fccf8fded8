package reactor

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
)

// gauges is the reactor's load as Stats reads it, written per call by the reactor goroutine and
// the lanes: inFlight goes up when a lane claims a call and down when a lane settles it, and a
// call the reactor settles after a lane claimed it leaves it in a turn of the reactor goroutine
// (engine.release); queued goes up when the reactor queues calls and down when a lane claims
// one or the reactor drops one. The deadline heap, the reactor goroutine's, sits here because
// lanes count their settlements in it.
type gauges struct {
	queued    atomic.Int32
	inFlight  atomic.Int32
	deadlines callqueue.DeadlineHeap
}

// tallies is the reactor's counters, under mu: the reactor goroutine counts accepted calls
// once per turn, Tick counts each delivered call, Call and Go each rejected one, and Stats
// reads them. Any goroutine that looks a method up for the first time enters it in byPath
// (Reactor.method).
type tallies struct {
	mu      sync.Mutex
	counts  counters
	byPath  map[string]*methodEntry // the methods called so far
	latency latencyWindow
}

// counters is the reactor's call counts, and those of each method (methodCounters).
type counters struct {
	pending              int
	submitted, succeeded uint64
	failed               map[codes.Code]uint64
	failedTotal          uint64 // the sum of failed
	neverSent            uint64
	failures
}

// failures counts failed calls by prpc's reason, for the reactor and for each method.
type failures struct {
	timedOut, overloaded, cancelled, closed, shed uint64
}

// count counts a failure for reason, if it is one of those counted.
func (f *failures) count(reason callcore.Reason) {
	switch reason {
	case callcore.ReasonTimeout:
		f.timedOut++
	case callcore.ReasonOverloaded:
		f.overloaded++
	case callcore.ReasonCancelled:
		f.cancelled++
	case callcore.ReasonClosed:
		f.closed++
	case callcore.ReasonShed:
		f.shed++
	}
}

// methodCounters are the counters of one method.
type methodCounters struct {
	submitted, succeeded, neverSent uint64
	failed                          map[codes.Code]uint64
	failures
	latency                       latencyWindow
	hist                          phaseHistograms
	coalesced                     atomic.Uint64  // counted by the lanes, without mu
	hedges, hedgesWon, hedgesLost atomic.Uint64  // counted by the lanes, without mu
	streams                       streamCounters // the method's streams (streamstats.go)
}

func newMethodCounters() *methodCounters {
	m := &methodCounters{failed: make(map[codes.Code]uint64)}
	m.hist.init()
	return m
}

// submit counts n submitted calls of the method whose counters are m.
func (c *counters) submit(m *methodCounters, n uint64) {
	c.submitted += n
	m.submitted += n
}

// succeed counts a delivered success of the method whose counters are m.
func (c *counters) succeed(m *methodCounters) {
	c.succeeded++
	m.succeeded++
}

// reject counts a call of the method whose counters are m rejected at submission: a failure
// that never reached gRPC.
func (c *counters) reject(m *methodCounters, code codes.Code, reason callcore.Reason) {
	c.fail(m, code, reason)
	c.notSent(m)
}

// notSent counts a failed call of the method whose counters are m that never reached gRPC.
func (c *counters) notSent(m *methodCounters) {
	c.neverSent++
	m.neverSent++
}

// fail counts a failure of the method whose counters are m, at rejection or at delivery.
func (c *counters) fail(m *methodCounters, code codes.Code, reason callcore.Reason) {
	m.failed[code]++
	c.failed[code]++
	c.failedTotal++
	c.failures.count(reason)
	m.failures.count(reason)
}

func errCode(err error) codes.Code { return status.Code(err) }

// phases are the parts of one delivered call's latency, which add up to it: queue, from
// submission until a lane claimed the call, or until it settled if none did; transport, from
// the claim until the outcome was queued for Tick, or negative if no lane claimed the call;
// tickWait, from then until Tick delivered it.
type phases struct{ queue, transport, tickWait time.Duration }

// phasesOf returns the phases of c, an admitted call delivered at at, and whether it reached
// gRPC: a call the reactor settled while no lane had claimed it (callcore.Dropped), or that its
// lane shed (ErrShed), never did, and has no transport phase.
//
// The record keeps the claim and settle times to the microsecond (callcore.Call.Since), so
// the phases split the latency at those times rounded down; they add up to it exactly.
func phasesOf(c *callcore.Call, at int64) (p phases, sent bool) {
	settled := c.At(c.Settled)
	// Tick's clock reading for a delivery may precede, by a hair, the settling of a call a
	// lane queued while Tick started: the call waited for nothing, not for less than that.
	at = max(at, settled)
	p.tickWait = time.Duration(at - settled)
	if claim, _ := c.Claim(c.Gen()); claim == callcore.Dropped || c.Reason == callcore.ReasonShed {
		p.queue, p.transport = time.Duration(settled-c.Submitted), -1
		return p, false
	}
	claimed := c.At(c.Claimed)
	p.queue, p.transport = time.Duration(claimed-c.Submitted), time.Duration(settled-claimed)
	return p, true
}

// total returns the call's latency, from submission to delivery.
func (p phases) total() time.Duration { return p.queue + max(p.transport, 0) + p.tickWait }

// latencyWindow is a ring of the phases of the most recent delivered calls, each 24 bytes: it
// grows with the calls delivered, up to latencyWindowSize of them (24 KiB), so that a method
// called a few times holds a few samples, not a full window.
type latencyWindow struct {
	ring []phases // the samples, len ≤ latencyWindowSize
	next int      // where the next sample goes, once ring is full
}

func (w *latencyWindow) add(d phases) {
	if len(w.ring) < latencyWindowSize {
		w.ring = append(w.ring, d)
		return
	}
	w.ring[w.next] = d
	w.next = (w.next + 1) % latencyWindowSize
}

// last returns the latest sample, if any.
func (w *latencyWindow) last() (phases, bool) {
	switch n := len(w.ring); {
	case n == 0:
		return phases{}, false
	case n < latencyWindowSize:
		return w.ring[n-1], true
	}
	return w.ring[(w.next+latencyWindowSize-1)%latencyWindowSize], true
}

// latencies are the summaries of a window of phases: the whole latency and its three parts.
type latencies struct{ whole, queue, transport, tickWait Latency }

// summarizePhases summarizes the phases of a window.
func summarizePhases(ps []phases) latencies {
	whole := make([]time.Duration, len(ps))
	queue := make([]time.Duration, len(ps))
	tickWait := make([]time.Duration, len(ps))
	transport := make([]time.Duration, 0, len(ps))
	for i, p := range ps {
		whole[i], queue[i], tickWait[i] = p.total(), p.queue, p.tickWait
		if p.transport >= 0 {
			transport = append(transport, p.transport)
		}
	}
	return latencies{summarize(whole), summarize(queue), summarize(transport), summarize(tickWait)}
}

// summarize returns the percentiles of samples, sorting them in place.
func summarize(s []time.Duration) Latency {
	if len(s) == 0 {
		return Latency{}
	}
	slices.Sort(s)
	rank := func(q int) time.Duration { return s[(q*len(s)+99)/100-1] }
	return Latency{Samples: len(s), P50: rank(50), P95: rank(95), P99: rank(99), Max: s[len(s)-1]}
}
