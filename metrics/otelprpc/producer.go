package otelprpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// ScopeName is the name of the instrumentation scope of every metric a Producer produces:
// this module's path.
const ScopeName = "github.com/trixnew/prpc/metrics/otelprpc"

// Option configures a Producer.
type Option interface {
	apply(*config)
}

type config struct {
	backends bool
	reactors []named[*reactor.Reactor]
	loops    []named[*loop.Loop]
}

// named is a reactor or loop an option adds, with its name.
type named[T any] struct {
	name string
	v    T
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithBackends makes the Producer export each reactor's Stats.Backends too: the counters
// prpc.backend.calls, prpc.backend.failed (by rpc.grpc.status_code) and
// prpc.backend.hedges_lost, with the backend's address as server.address. A reactor keeps a
// row for each backend it has recently called, so the number of series follows the backends
// of the mesh (see reactor.Stats.Backends, which also says when a row goes and how a removed
// row's counts are kept under the address reactor.RemovedBackendsAddr). A row that goes and
// comes back counts from zero again: the Producer gives it a new start time when it sees it
// come back, or sees one of its counts decrease, so that a consumer knows the counter was
// reset; a row removed and recreated between two collections with at least as many calls as
// before is taken for the same series. Off by default.
func WithBackends() Option {
	return optionFunc(func(c *config) { c.backends = true })
}

// WithReactor adds r, unnamed, as AddReactor(r, "") does once the Producer is made.
func WithReactor(r *reactor.Reactor) Option { return WithNamedReactor("", r) }

// WithNamedReactor adds r with the attribute prpc.reactor set to name, as AddReactor(r, name)
// does once the Producer is made: for a program with several reactors.
func WithNamedReactor(name string, r *reactor.Reactor) Option {
	return optionFunc(func(c *config) { c.reactors = append(c.reactors, named[*reactor.Reactor]{name, r}) })
}

// WithLoop adds l, unnamed, as AddLoop(l, "") does once the Producer is made.
func WithLoop(l *loop.Loop) Option { return WithNamedLoop("", l) }

// WithNamedLoop adds l with the attribute prpc.loop set to name, as AddLoop(l, name) does
// once the Producer is made: for a program with several loops.
func WithNamedLoop(name string, l *loop.Loop) Option {
	return optionFunc(func(c *config) { c.loops = append(c.loops, named[*loop.Loop]{name, l}) })
}

// Producer is an OpenTelemetry metric.Producer over prpc's reactors and loops: each
// collection reads the Stats of every reactor added, and the Stats and TickDurations of every
// loop added, and returns them as one instrumentation scope's metrics (see the package
// documentation for the metrics). Register it on a reader with sdkmetric.WithProducer.
//
// A Producer is safe for concurrent use: reactors and loops may be added and removed at any
// time, and collections may run at once (one waits for the other). Produce holds the
// Producer's mutex while it reads the snapshots; the reactors and loops themselves are held
// up only as their Stats methods say: for a copy of their counters.
type Producer struct {
	backends bool
	scope    instrumentation.Scope

	mu       sync.Mutex
	reactors []*reactorSource
	loops    []*loopSource
}

var _ sdkmetric.Producer = (*Producer)(nil)

// NewProducer returns a Producer configured by opts, with the reactors and loops they add
// (WithReactor, WithLoop, …): more may be added later with AddReactor and AddLoop. It panics
// as AddReactor and AddLoop do, for a nil, repeated or same-named reactor or loop.
func NewProducer(opts ...Option) *Producer {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	p := &Producer{
		backends: c.backends,
		scope:    instrumentation.Scope{Name: ScopeName, Version: moduleVersion()},
	}
	for _, r := range c.reactors {
		p.AddReactor(r.v, r.name)
	}
	for _, l := range c.loops {
		p.AddLoop(l.v, l.name)
	}
	return p
}

// AddReactor adds r, whose metrics the Producer exports from its next collection on,
// cumulative from now (their start time): add a reactor as soon as reactor.New returns it, so
// that its counts, which run from its start, are not ascribed to a shorter interval. With a
// non-empty name, every metric of r carries the attribute prpc.reactor with that name; a
// program with several reactors names each, so that their series differ.
//
// AddReactor panics if r is nil or added already, or if another reactor was added with the
// same name (the empty name included), since their series would be one.
func (p *Producer) AddReactor(r *reactor.Reactor, name string) {
	if r == nil {
		panic("otelprpc: AddReactor: nil reactor")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.reactors {
		switch {
		case s.r == r:
			panic("otelprpc: AddReactor: the reactor was added already")
		case s.name == name:
			panic(fmt.Sprintf("otelprpc: AddReactor: a reactor named %q was added already; name each reactor differently", name))
		}
	}
	p.reactors = append(p.reactors, newReactorSource(r, name, time.Now()))
}

// RemoveReactor removes r: its metrics are not exported from the next collection on. It does
// nothing if r was not added. Remove a reactor once it is closed and its last counts have
// been collected, if the program goes on without it; a closed reactor that stays added goes on
// reporting its final counts.
func (p *Producer) RemoveReactor(r *reactor.Reactor) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reactors = slices.DeleteFunc(p.reactors, func(s *reactorSource) bool { return s.r == r })
}

// AddLoop adds l, whose metrics the Producer exports from its next collection on, cumulative
// from now: add it before Run. With a non-empty name, every metric of l carries the attribute
// prpc.loop with that name, for a program that runs several loops. AddLoop panics if l is nil
// or added already, or if another loop was added with the same name (the empty name
// included).
func (p *Producer) AddLoop(l *loop.Loop, name string) {
	if l == nil {
		panic("otelprpc: AddLoop: nil loop")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.loops {
		switch {
		case s.l == l:
			panic("otelprpc: AddLoop: the loop was added already")
		case s.name == name:
			panic(fmt.Sprintf("otelprpc: AddLoop: a loop named %q was added already; name each loop differently", name))
		}
	}
	p.loops = append(p.loops, &loopSource{l: l, name: name, start: time.Now(), attrs: nameSet(keyLoop, name)})
}

// RemoveLoop removes l: its metrics are not exported from the next collection on. It does
// nothing if l was not added.
func (p *Producer) RemoveLoop(l *loop.Loop) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loops = slices.DeleteFunc(p.loops, func(s *loopSource) bool { return s.l == l })
}

// Produce implements metric.Producer: it reads one snapshot of each reactor added
// (StatsWithoutPercentiles: the histograms, counters and gauges, without the percentile
// windows, which it does not export and which Stats would copy and sort), and the Stats and
// TickDurations of each loop added, and returns their metrics in one ScopeMetrics, or nothing
// if none is added. It never fails, and does not heed ctx, since what it reads is already in
// memory.
//
// Its cost grows with the reactors' methods: each adds four histograms and about a dozen
// counters to the result.
func (p *Producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reactors) == 0 && len(p.loops) == 0 {
		return nil, nil
	}
	c := new(collection)
	for _, s := range p.reactors {
		s.collect(c, p.backends)
	}
	for _, s := range p.loops {
		s.collect(c)
	}
	return []metricdata.ScopeMetrics{{Scope: p.scope, Metrics: c.metrics()}}, nil
}

// nameSet returns the attribute set {key: name}, or the empty set for an empty name.
func nameSet(key attribute.Key, name string) attribute.Set {
	if name == "" {
		return *attribute.EmptySet()
	}
	return attribute.NewSet(key.String(name))
}

// reactorSource is a reactor added to a Producer, with the attribute sets of its series,
// made once and kept, and what reset detection needs of its backends.
type reactorSource struct {
	r     *reactor.Reactor
	name  string
	start time.Time
	attrs attribute.Set // prpc.reactor, or empty
	// methods are the attribute sets of each method's series, by path.
	methods map[string]*methodSeries
	// backends are the series of each backend row seen at the last collection, by address.
	backends map[string]*backendSeries
	// lastRead is when the last collection read Stats; zero before the first.
	lastRead time.Time
}

func newReactorSource(r *reactor.Reactor, name string, start time.Time) *reactorSource {
	return &reactorSource{
		r: r, name: name, start: start, attrs: nameSet(keyReactor, name),
		methods: make(map[string]*methodSeries), backends: make(map[string]*backendSeries),
	}
}

// codeSets are attribute sets made once per gRPC status code: a base set and the code.
type codeSets struct {
	base  []attribute.KeyValue
	codes map[codes.Code]attribute.Set
}

// code returns the base set with rpc.grpc.status_code c.
func (s *codeSets) code(c codes.Code) attribute.Set {
	set, ok := s.codes[c]
	if !ok {
		set = attribute.NewSet(append(slices.Clip(s.base), keyCode.Int64(int64(c)))...)
		s.codes[c] = set
	}
	return set
}

// methodSeries are the attribute sets of one method's series.
type methodSeries struct {
	attrs attribute.Set // rpc.system, rpc.service, rpc.method and the reactor's name
	codeSets
	outcomes *[len(outcomes)]attribute.Set // a stream method's: attrs with each outcome; made on first use
}

// outcomes are the values of a stream message's outcome attribute, in StreamStats' order.
var outcomes = [...]string{"received", "delivered", "replaced", "discarded"}

// outcome returns the method's attribute set with the i-th outcome.
func (m *methodSeries) outcome(i int) attribute.Set {
	if m.outcomes == nil {
		m.outcomes = new([len(outcomes)]attribute.Set)
		for j, o := range outcomes {
			m.outcomes[j] = attribute.NewSet(append(slices.Clip(m.base), keyOutcome.String(o))...)
		}
	}
	return m.outcomes[i]
}

// method returns the series of the method at path, made on first use.
func (s *reactorSource) method(path string) *methodSeries {
	m := s.methods[path]
	if m == nil {
		service, method, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		base := []attribute.KeyValue{keySystem.String(systemValue), keyService.String(service), keyMethod.String(method)}
		if s.name != "" {
			base = append(base, keyReactor.String(s.name))
		}
		m = &methodSeries{attrs: attribute.NewSet(base...), codeSets: codeSets{base: base, codes: make(map[codes.Code]attribute.Set)}}
		s.methods[path] = m
	}
	return m
}

// backendSeries is one backend row's series: their attribute sets, their start time, and the
// counts of the last collection, to tell a reset.
type backendSeries struct {
	attrs attribute.Set // rpc.system, server.address and the reactor's name
	codeSets
	start      time.Time
	calls      uint64
	hedgesLost uint64
	failed     map[codes.Code]uint64
}

// backend returns the series of the backend row b, and records it in seen: the series of the
// last collection if b continues it, else a series that starts when the last collection read
// Stats (s.lastRead), before which the row did not exist, or at the reactor's start time on
// the first collection.
func (s *reactorSource) backend(b *reactor.BackendStats, seen map[string]*backendSeries) *backendSeries {
	old := s.backends[b.Addr]
	if old != nil && !old.reset(b) {
		old.remember(b)
		seen[b.Addr] = old
		return old
	}
	start := s.lastRead
	if start.IsZero() {
		start = s.start
	}
	if old == nil {
		base := []attribute.KeyValue{keySystem.String(systemValue), keyServer.String(b.Addr)}
		if s.name != "" {
			base = append(base, keyReactor.String(s.name))
		}
		old = &backendSeries{attrs: attribute.NewSet(base...), codeSets: codeSets{base: base, codes: make(map[codes.Code]attribute.Set)}}
	}
	old.start = start
	old.remember(b)
	seen[b.Addr] = old
	return old
}

// reset reports whether one of b's counts is below the last collection's.
func (bs *backendSeries) reset(b *reactor.BackendStats) bool {
	if b.Calls < bs.calls || b.HedgesLost < bs.hedgesLost {
		return true
	}
	for c, n := range bs.failed {
		if b.Failed[c] < n {
			return true
		}
	}
	return false
}

// remember keeps b's counts for the next collection's reset check.
func (bs *backendSeries) remember(b *reactor.BackendStats) {
	bs.calls, bs.hedgesLost = b.Calls, b.HedgesLost
	if bs.failed == nil {
		bs.failed = make(map[codes.Code]uint64, len(b.Failed))
	}
	clear(bs.failed)
	for c, n := range b.Failed {
		bs.failed[c] = n
	}
}

// collect adds one Stats of the reactor to c.
func (s *reactorSource) collect(c *collection, backends bool) {
	read := time.Now()
	st := s.r.StatsWithoutPercentiles()
	s.add(c, &st, time.Now(), backends)
	s.lastRead = read
}

// add adds st, read at now, to c.
func (s *reactorSource) add(c *collection, st *reactor.Stats, now time.Time, backends bool) {
	gauge := func(id metricID, v int) {
		c.ints[id] = append(c.ints[id], metricdata.DataPoint[int64]{Attributes: s.attrs, StartTime: s.start, Time: now, Value: int64(v)})
	}
	gauge(callsPending, st.Pending)
	gauge(callsMaxOutstanding, st.MaxOutstanding)
	gauge(callsQueued, st.Queued)
	gauge(callsInFlight, st.InFlight)
	gauge(callsInFlightLimit, st.InFlightLimit)
	c.floats[deliveryOldestWait] = append(c.floats[deliveryOldestWait], metricdata.DataPoint[float64]{
		Attributes: s.attrs, StartTime: s.start, Time: now, Value: st.OldestUndelivered.Seconds(),
	})

	paths := make([]string, 0, len(st.Methods))
	for path := range st.Methods {
		paths = append(paths, path)
	}
	slices.Sort(paths) // a stable order of series from one collection to the next
	// The method metrics get a point per method each (completed, one per code); a stream
	// method gets the streams' instead.
	for id := callDuration; id <= hedgeLost; id++ {
		if instruments[id].kind == histogram {
			c.hists[id] = slices.Grow(c.hists[id], len(paths))
		} else {
			c.ints[id] = slices.Grow(c.ints[id], len(paths))
		}
	}
	for _, path := range paths {
		ms := st.Methods[path]
		m := s.method(path)
		if ms.Streams.Opened > 0 {
			s.addStreams(c, m, &ms.Streams, now)
			if ms.Submitted == 0 {
				continue // a stream method: no call of it is ever submitted
			}
		}
		hist := func(id metricID, h *reactor.Histogram) {
			c.hists[id] = append(c.hists[id], c.histPoint(m.attrs, s.start, now, h))
		}
		hist(callDuration, &ms.Histograms.Latency)
		hist(callQueueWait, &ms.Histograms.QueueWait)
		hist(callTransport, &ms.Histograms.Transport)
		hist(callTickWait, &ms.Histograms.TickWait)
		count := func(id metricID, attrs attribute.Set, v uint64) {
			c.ints[id] = append(c.ints[id], metricdata.DataPoint[int64]{Attributes: attrs, StartTime: s.start, Time: now, Value: int64(v)})
		}
		count(callSubmitted, m.attrs, ms.Submitted)
		count(callCompleted, m.code(codes.OK), ms.Succeeded)
		for _, code := range sortedCodes(ms.Failed) {
			count(callCompleted, m.code(code), ms.Failed[code])
		}
		count(callTimedOut, m.attrs, ms.TimedOut)
		count(callOverloaded, m.attrs, ms.Overloaded)
		count(callCancelled, m.attrs, ms.Cancelled)
		count(callClosed, m.attrs, ms.Closed)
		count(callShed, m.attrs, ms.Shed)
		count(callNeverSent, m.attrs, ms.NeverSent)
		count(callCoalesced, m.attrs, ms.Coalesced)
		count(hedgeSent, m.attrs, ms.Hedges)
		count(hedgeWon, m.attrs, ms.HedgesWon)
		count(hedgeLost, m.attrs, ms.HedgesLost)
	}

	if backends {
		seen := make(map[string]*backendSeries, len(st.Backends))
		for i := range st.Backends {
			b := &st.Backends[i]
			bs := s.backend(b, seen)
			count := func(id metricID, attrs attribute.Set, v uint64) {
				c.ints[id] = append(c.ints[id], metricdata.DataPoint[int64]{Attributes: attrs, StartTime: bs.start, Time: now, Value: int64(v)})
			}
			count(backendCalls, bs.attrs, b.Calls)
			for _, code := range sortedCodes(b.Failed) {
				count(backendFailed, bs.code(code), b.Failed[code])
			}
			count(backendHedgesLost, bs.attrs, b.HedgesLost)
		}
		s.backends = seen // rows gone since the last collection are forgotten: if they come back, they start anew
	}
}

// addStreams adds the metrics of a method's streams st, read at now, to c. The ends with code
// 0 have a point from the first stream on, as the calls' successes do; another code has one
// once a stream has ended with it.
func (s *reactorSource) addStreams(c *collection, m *methodSeries, st *reactor.StreamStats, now time.Time) {
	point := func(id metricID, attrs attribute.Set, v int64) {
		c.ints[id] = append(c.ints[id], metricdata.DataPoint[int64]{Attributes: attrs, StartTime: s.start, Time: now, Value: v})
	}
	point(streamsOpen, m.attrs, int64(st.Open))
	for i, v := range [len(outcomes)]uint64{st.Received, st.Delivered, st.Replaced, st.Discarded} {
		point(streamMessages, m.outcome(i), int64(v))
	}
	point(streamMessagesWaiting, m.attrs, int64(st.Waiting))
	point(streamStalls, m.attrs, int64(st.Stalls))
	point(streamReopens, m.attrs, int64(st.Reopened))
	point(streamEnds, m.code(codes.OK), int64(st.Ended[codes.OK]))
	for _, code := range sortedCodes(st.Ended) {
		if code != codes.OK {
			point(streamEnds, m.code(code), int64(st.Ended[code]))
		}
	}
}

// sortedCodes returns the codes of m in increasing order.
func sortedCodes(m map[codes.Code]uint64) []codes.Code {
	out := make([]codes.Code, 0, len(m))
	for code := range m {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

// histPoint returns h as a data point. The bucket counts are h's, which each snapshot makes
// anew; the bounds are a copy made once per collection, since every histogram of prpc shares
// one slice of them, which the data points must not expose.
func (c *collection) histPoint(attrs attribute.Set, start, now time.Time, h *reactor.Histogram) metricdata.HistogramDataPoint[float64] {
	return metricdata.HistogramDataPoint[float64]{
		Attributes: attrs, StartTime: start, Time: now,
		// Each reactor snapshot and TickDurations has bounds of its own: no copy is needed.
		Count: h.Count, Bounds: h.Bounds, BucketCounts: h.Counts, Sum: h.Sum.Seconds(),
	}
}

// loopSource is a loop added to a Producer.
type loopSource struct {
	l     *loop.Loop
	name  string
	start time.Time
	attrs attribute.Set // prpc.loop, or empty
}

// collect adds one Stats and TickDurations of the loop to c.
func (s *loopSource) collect(c *collection) {
	st := s.l.Stats()
	h := s.l.TickDurations()
	s.add(c, &st, &h, time.Now())
}

// add adds st and h, read at now, to c.
func (s *loopSource) add(c *collection, st *loop.Stats, h *reactor.Histogram, now time.Time) {
	c.hists[loopTickDuration] = append(c.hists[loopTickDuration], c.histPoint(s.attrs, s.start, now, h))
	count := func(id metricID, v uint64) {
		c.ints[id] = append(c.ints[id], metricdata.DataPoint[int64]{Attributes: s.attrs, StartTime: s.start, Time: now, Value: int64(v)})
	}
	count(loopTicks, st.Ticks)
	count(loopOverruns, st.Overruns)
	count(loopSkipped, st.Skipped)
	count(loopDelivered, st.Delivered)
}
