package reactor

import (
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"github.com/trixnew/prpc/calls"
)

// Stats is a snapshot of a reactor. Submitted = Succeeded + Σ Failed + Pending holds in
// every snapshot; TimedOut, Overloaded, Cancelled, Closed and NeverSent count parts of Failed.
//
// An admitted call counts in Submitted and Pending once the reactor goroutine has taken it,
// in the turn after Call (or Go) returns (microseconds later, unless that goroutine waits for
// a CPU), so that Call and Go share no counter with prpc's goroutines; a rejected call counts
// when Call or Go returns, and a delivered one when Tick delivers it. Admission itself is
// exact: Call and Go compare MaxOutstanding with the calls admitted and not delivered at that
// instant, and Reactor.Idle reads the same count.
//
// Queued, InFlight and Invokers are gauges that prpc's goroutines keep without the lock under
// which the counters are kept; a snapshot reads them just after the counters. While calls move,
// it may therefore show a call in Queued or InFlight that Pending does not count yet, or no
// longer does.
type Stats struct {
	// Pending is the number of calls admitted and not yet delivered by Tick: the calls that
	// count against MaxOutstanding, as the reactor goroutine has counted them (see above). It
	// never exceeds MaxOutstanding.
	Pending int
	// MaxOutstanding is Config.MaxOutstanding as New resolved it: the bound on Pending, for
	// graphs and alerts that compare the two.
	MaxOutstanding int
	// Queued is the number of admitted calls waiting for a free lane.
	Queued int
	// InFlight is the number of calls a lane has taken whose outcome is not yet queued for
	// Tick: transport calls running, including calls already settled (timed out or
	// cancelled) whose transport call has not returned yet, and calls joined to another's
	// transport call (MethodPolicy.Coalesce) until they settle. Once a call has left InFlight,
	// the next Tick delivers it, unless another lane is handing a call over at that instant
	// and its thread has lost its CPU: Tick does not wait for it, and Ready fires again.
	InFlight int
	// InFlightLimit is the current adaptive limit on the calls lanes run at once
	// (Config.AdaptiveLimit): between its Floor and Workers × BatchSize. It may be below
	// InFlight for a moment after it shrinks, until calls already running return. Zero with
	// AdaptiveLimit.Disabled.
	InFlightLimit int
	// Invokers has one entry per invoker, in order.
	Invokers []InvokerStats
	// State is the connectivity state of the connection the reactor dialled, or of
	// Config.Conn if it has a GetState method (as *grpc.ClientConn does). StateKnown is false,
	// and State meaningless, for a Config.Conn without one.
	State      connectivity.State
	StateKnown bool

	// Submitted counts every call submitted, rejected ones included (admitted ones once the
	// reactor goroutine has taken them).
	Submitted uint64
	// Succeeded counts calls delivered with a response.
	Succeeded uint64
	// Failed counts failed calls by gRPC code: calls rejected at submission as soon as they
	// are, other calls once delivered.
	Failed map[codes.Code]uint64
	// TimedOut counts failures with ErrTimeout.
	TimedOut uint64
	// Overloaded counts rejections with ErrOverloaded.
	Overloaded uint64
	// Cancelled counts failures with ErrCancelled.
	Cancelled uint64
	// Closed counts failures with ErrClosed.
	Closed uint64
	// Shed counts the calls a lane did not send, because they could no longer finish in time
	// (ErrShed): they count in NeverSent too.
	Shed uint64
	// NeverSent counts the failed calls that never reached gRPC, so that gRPC's stats
	// handlers and interceptors never saw them: calls rejected at submission (overloaded,
	// invalid, too large, reactor closed), and calls prpc settled before any lane took them
	// (their deadline passed, or they were cancelled or cut off by Close, while they waited
	// for a lane), and calls a lane shed (ErrShed). A call a lane took otherwise counts as sent,
	// even if encoding its request failed.
	NeverSent uint64

	// Drained counts the calls whose callbacks Shutdown ran while it drained the reactor,
	// before closing it. A host that drains by ticking until Idle (package loop does) counts
	// its own: see loop.Stats.Drained.
	Drained uint64
	// CutOff counts the calls Close (or Shutdown) cut off when its context was done: calls
	// admitted and still pending then, failed with ErrClosed. They are part of Closed.
	CutOff uint64

	// Latency is the time from submission to delivery by Tick of the most recent admitted
	// calls (up to 1024 of them). It includes the wait for Tick. QueueWait, Transport and
	// TickWait split each of these calls' latency in three, one after the other, so that a
	// slow backend (Transport) can be told from busy lanes (QueueWait) and from a host that
	// ticks too rarely (TickWait). The split falls on the microsecond.
	Latency Latency
	// QueueWait is the time from submission until a lane took the call, or until prpc
	// settled it if no lane did (a deadline, a cancel or Close while it waited).
	QueueWait Latency
	// Transport is the time from a lane taking the call until its outcome was queued for
	// Tick: the transport call, or, for a call timed out or cancelled meanwhile, until the
	// lane's transport call returned. Calls no lane took have no sample here.
	Transport Latency
	// TickWait is the time from the outcome's queuing for Tick until Tick delivered it.
	TickWait Latency
	// Histograms count the same latencies as Latency and its parts, for every admitted call
	// delivered since the reactor started, in fixed buckets: what metrics systems graph and
	// alert on (see Histogram). They are the sums of the methods' Histograms.
	Histograms Histograms
	// OldestUndelivered is how long the oldest admitted call whose outcome waits for Tick
	// has waited, at the snapshot: zero when none waits. It grows while the host does not
	// tick; the calls a Tick in progress delivers count as waiting until it returns.
	OldestUndelivered time.Duration

	// StreamsOpen is the number of streams (Watch, Bidi) opened whose end Tick has not
	// delivered yet: the sum of the methods' StreamStats.Open. Streams count in none of the
	// calls' counters above.
	StreamsOpen int
	// MessagesWaiting is the number of stream messages received and waiting for Tick: the
	// sum of the methods' StreamStats.Waiting.
	MessagesWaiting int

	// Methods breaks the counters and latencies down by method path, streams' methods
	// included.
	Methods map[string]MethodStats

	// Backends counts transport calls by the backend they reached, sorted by address.
	//
	// A backend's row stays while gRPC's balancer keeps a connection to its address (with
	// round_robin, to every address the resolver lists; with pick_first, to the one in use)
	// and for at least five minutes, on Config.Clock, after its last transport call; then it
	// is removed, so that a mesh whose endpoints change on every deploy holds the rows of
	// recent addresses, not of every address the process has seen. That is where prpc sees
	// the balancer's connections (see BackendStats.State); where it does not (Config.Conn,
	// Config.ServiceConfig and the other cases BackendStats.State lists), a row idle for five
	// minutes is removed only while there are more than 64 rows, the longest idle first. Rows
	// are removed when Stats is read and when a transport call reaches an address that has no
	// row.
	//
	// A removed row's counts are added to the row of RemovedBackendsAddr, which appears
	// with the first removal and stays, so that the sums of Calls and of Failed over
	// Backends never decrease, as metrics of cumulative counts need. An address that gets
	// calls after its row was removed gets a new row, counting from zero (a counter reset,
	// for such metrics); a call that was running when its backend's row was removed counts
	// in that new row.
	Backends []BackendStats

	// LastConnError describes the most recent failure of the security (TLS) handshake of a
	// new connection, as calls.HandshakeError.Error does: its classification, then its
	// cause ("TLS handshake failed: server certificate signed by unknown authority: tls:
	// failed to verify certificate: …"). It is empty when no handshake has failed since the
	// last successful one, so a non-empty value means the backend is reachable but the
	// connection is misconfigured, not down. A handshake succeeds when the server's first
	// bytes arrive after it (a TLS 1.3 server refuses a client certificate only then).
	// Failures before the handshake (a refused or unreachable TCP connection) are not
	// recorded. Always empty with Insecure credentials and with Config.Conn, whose
	// handshakes prpc does not see.
	LastConnError string
	// LastConnErrorKind classifies LastConnError; calls.HandshakeOther when it is empty.
	LastConnErrorKind calls.HandshakeErrorKind
}

// MethodStats are the statistics of one method. Submitted = Succeeded + Σ Failed + the
// method's pending calls.
type MethodStats struct {
	// Submitted counts the method's calls submitted, rejected ones included.
	Submitted uint64
	// Succeeded counts the method's calls delivered with a response.
	Succeeded uint64
	// Failed counts the method's failed calls by gRPC code, as Stats.Failed does.
	Failed map[codes.Code]uint64
	// NeverSent counts the method's failed calls that never reached gRPC, as
	// Stats.NeverSent does.
	NeverSent uint64
	// TimedOut, Overloaded, Cancelled and Closed count the method's failures with ErrTimeout,
	// ErrOverloaded, ErrCancelled and ErrClosed, as Stats' do.
	TimedOut, Overloaded, Cancelled, Closed uint64
	// Shed counts the method's calls that a lane did not send because they could no longer
	// finish in time (ErrShed), as Stats.Shed does.
	Shed uint64
	// Coalesced counts the method's calls that joined another call's transport call instead
	// of sending their own (MethodPolicy.Coalesce), as they joined: the backend received
	// that many fewer calls. The call whose transport call they joined is not counted.
	Coalesced uint64
	// Hedges counts the attempts of the method's calls sent after the first
	// (MethodPolicy.Hedge): the extra load hedging put on the backends. HedgesWon counts the
	// calls that a hedge's OK response settled, before the first attempt's.
	Hedges, HedgesWon uint64
	// HedgesLost counts the attempts of the method's calls, first attempts included, that
	// prpc cancelled because another attempt of the same call had decided it first (an OK
	// answer, a fatal status, or an attempt that reached the call's deadline): extra load that
	// hedging put on the backends, not failures (BackendStats.HedgesLost counts them by
	// backend, apart from BackendStats.Failed).
	HedgesLost uint64
	// Latency covers the method's most recent admitted calls, up to 1024; QueueWait,
	// Transport and TickWait split it as Stats' do.
	Latency, QueueWait, Transport, TickWait Latency
	// Histograms count the latencies of every admitted call of the method delivered since
	// the reactor started, as Stats.Histograms do.
	Histograms Histograms
	// Streams are the statistics of the method's streams; zero for a method whose streams
	// were never opened (a unary method's).
	Streams StreamStats
}

// InvokerStats describes one invoker.
type InvokerStats struct {
	// Load is the number of calls the invoker's lanes have in flight (counted as InFlight
	// counts them, but without calls joined to another's transport call, which hold no lane,
	// and with each hedge, which holds one), at most BatchSize.
	Load int
	// State is what the invoker is doing.
	State InvokerState
}

// InvokerState is the state of an invoker.
type InvokerState uint8

// States of an invoker.
const (
	InvokerIdle    InvokerState = iota // no call in flight
	InvokerBusy                        // some calls in flight, slots free
	InvokerFull                        // BatchSize calls in flight
	InvokerStopped                     // the reactor is closed
)

// String returns "idle", "busy", "full" or "stopped".
func (s InvokerState) String() string {
	switch s {
	case InvokerIdle:
		return "idle"
	case InvokerBusy:
		return "busy"
	case InvokerFull:
		return "full"
	case InvokerStopped:
		return "stopped"
	}
	return "invalid"
}

// latencyWindowSize is the number of recent calls Stats.Latency and its parts cover.
const latencyWindowSize = 1024

// Latency holds percentiles of recent latencies, by nearest rank: Pq is the smallest sample
// such that at least q% of the samples are at or below it. All are zero without samples.
type Latency struct {
	// Samples is the number of latencies summarised, at most 1024.
	Samples int
	// P50, P95 and P99 are the 50th, 95th and 99th percentiles.
	P50, P95, P99 time.Duration
	// Max is the largest sample.
	Max time.Duration
}

// Stats returns a snapshot. It is safe from any goroutine. It never waits for a call or for a
// hook of the host, but it takes locks that prpc's goroutines take too, each briefly: the
// lock that counts calls (taken by the reactor goroutine once a turn, by Tick for each
// delivery and by Call and Go for a rejection), that of the per-backend counts (taken by a
// lane for a failed call and for its first call to a backend, and, for an address that has
// no row yet, for a pass over the rows that removes those of backends gone: see
// Stats.Backends) and that of the backends' connectivity states (taken by gRPC's balancer
// for each state change). So it may wait while one of them holds one, longer if that
// goroutine's thread has lost its CPU.
//
// It copies the counters and latency windows under the first lock, then sorts the windows
// outside it: a snapshot sorts four times up to 1024 latencies (the whole and its three parts)
// for the reactor and as many for each method, and allocates, so it suits monitoring, not a
// per-call path.
func (r *Reactor) Stats() Stats { return r.snapshot(true) }

// StatsWithoutPercentiles returns a snapshot as Stats does, but for the percentiles of recent
// calls: Latency, QueueWait, Transport and TickWait are zero, in Stats and in each method's
// MethodStats. It copies and sorts no latency window, so it costs a small part of what Stats
// costs, in time and in garbage: it is for readers that take the latencies from Histograms
// instead, such as metrics adapters scraped every few seconds (metrics/promprpc and
// metrics/otelprpc read it). It takes the same locks as Stats, for a copy of the counters.
func (r *Reactor) StatsWithoutPercentiles() Stats { return r.snapshot(false) }

// snapshot is Stats, with the percentile windows if percentiles is set.
func (r *Reactor) snapshot(percentiles bool) Stats {
	s, samples, perMethod := r.copyCounts(percentiles)
	l := summarizePhases(samples)
	s.Latency, s.QueueWait, s.Transport, s.TickWait = l.whole, l.queue, l.transport, l.tickWait
	var all phaseSnapshots
	bounds := snapshotBounds()
	for i := range perMethod {
		m := &perMethod[i]
		ms := s.Methods[m.path]
		l := summarizePhases(m.samples)
		ms.Latency, ms.QueueWait, ms.Transport, ms.TickWait = l.whole, l.queue, l.transport, l.tickWait
		all.merge(&m.hist)
		ms.Histograms = m.hist.histograms(bounds)
		s.Methods[m.path] = ms
	}
	s.Histograms = all.histograms(bounds)
	r.readGauges(&s)
	return s
}

// methodCopy is what copyCounts took of one method under the counters' mutex, for snapshot to
// summarise after it.
type methodCopy struct {
	path    string
	samples []phases // its latency window, with percentiles
	hist    phaseSnapshots
}

// copyCounts copies, under the counters' mutex, the reactor's and each method's counters, their
// histograms and, with percentiles, their latency windows.
func (r *Reactor) copyCounts(percentiles bool) (s Stats, samples []phases, perMethod []methodCopy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s = Stats{
		Pending:        r.counts.pending,
		MaxOutstanding: r.cfg.MaxOutstanding,
		Submitted:      r.counts.submitted,
		Succeeded:      r.counts.succeeded,
		Failed:         maps.Clone(r.counts.failed),
		TimedOut:       r.counts.timedOut,
		Overloaded:     r.counts.overloaded,
		Cancelled:      r.counts.cancelled,
		Closed:         r.counts.closed,
		NeverSent:      r.counts.neverSent,
		Shed:           r.counts.shed,
		Drained:        r.drained.Load(),
		CutOff:         r.cutOff.Load(),
	}
	if percentiles {
		samples = slices.Clone(r.latency.ring)
	}
	perMethod = make([]methodCopy, 0, len(r.byPath))
	s.Methods = make(map[string]MethodStats, len(r.byPath))
	var streams map[string]*StreamStats
	for path, e := range r.byPath {
		m := e.counters
		s.Methods[path] = MethodStats{
			Submitted: m.submitted, Succeeded: m.succeeded, NeverSent: m.neverSent,
			TimedOut: m.timedOut, Overloaded: m.overloaded, Cancelled: m.cancelled, Closed: m.closed, Shed: m.shed,
			Coalesced: m.coalesced.Load(), Hedges: m.hedges.Load(), HedgesWon: m.hedgesWon.Load(), HedgesLost: m.hedgesLost.Load(),
			Failed: maps.Clone(m.failed),
		}
		if m.streams.touched {
			if streams == nil {
				streams = make(map[string]*StreamStats)
			}
			st := m.streamStatsLocked()
			streams[path] = &st
		}
		c := methodCopy{path: path}
		if percentiles {
			c.samples = slices.Clone(m.latency.ring)
		}
		m.hist.copyTo(&c.hist)
		perMethod = append(perMethod, c)
	}
	if streams != nil {
		r.streams.addOpenStreams(streams)
		for path, st := range streams {
			ms := s.Methods[path]
			ms.Streams = *st
			s.Methods[path] = ms
			s.StreamsOpen += st.Open
			s.MessagesWaiting += st.Waiting
		}
	}
	return s, samples, perMethod
}

// readGauges fills in s what prpc's goroutines keep without the counters' mutex: the oldest
// undelivered outcome's age, the backends, the queue and lane gauges, the last failed
// handshake and the connection's state.
func (r *Reactor) readGauges(s *Stats) {
	if settled, ok := r.out.Oldest(); ok {
		s.OldestUndelivered = max(time.Duration(r.now()-settled), 0)
	}
	s.Backends = r.backends.snapshot()
	s.Queued = int(r.queued.Load())
	s.InFlight = int(r.inFlight.Load())
	s.InFlightLimit, _ = r.work.Limit()
	stopped := r.isDone()
	s.Invokers = make([]InvokerStats, len(r.loads))
	for i := range r.loads {
		l := int(r.loads[i].Load())
		st := InvokerBusy
		switch {
		case stopped:
			st = InvokerStopped
		case l == 0:
			st = InvokerIdle
		case l >= r.cfg.BatchSize:
			st = InvokerFull
		}
		s.Invokers[i] = InvokerStats{Load: l, State: st}
	}
	if f := r.handshakes.Load(); f != nil {
		he := handshakeCause(f)
		s.LastConnError, s.LastConnErrorKind = he.Error(), he.Kind
	}
	if g, ok := r.conn.(interface{ GetState() connectivity.State }); ok {
		s.State, s.StateKnown = g.GetState(), true
	}
}

func (r *Reactor) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}
