package promprpc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// Label names, as docs/metrics.md gives them: OpenTelemetry's RPC attributes with
// underscores, and prpc's own.
const (
	labelSystem   = "rpc_system"
	labelService  = "rpc_service"
	labelMethod   = "rpc_method"
	labelCode     = "rpc_grpc_status_code"
	labelReactor  = "prpc_reactor"
	labelAddress  = "server_address"
	labelOutcome  = "outcome"
	systemGRPC    = "grpc"
	metricsPrefix = "prpc_"
)

// Option configures a Collector: the reactors and loop it reads, and what it exports of them.
type Option func(*options)

type options struct {
	reactors []namedReactor
	loops    []*loop.Loop
	backends bool
}

type namedReactor struct {
	name string // "" for WithReactor
	r    *reactor.Reactor
}

// WithReactor has the Collector export r's metrics, without a reactor label. It suits a
// program with one reactor; NewCollector panics if it is given with another reactor. Use
// WithNamedReactor for each of several.
func WithReactor(r *reactor.Reactor) Option {
	return func(o *options) { o.reactors = append(o.reactors, namedReactor{r: r}) }
}

// WithNamedReactor has the Collector export r's metrics with the label prpc_reactor=name, so
// that several reactors' can be told apart. Names must be non-empty and distinct, and every
// reactor of the Collector must have one (NewCollector panics otherwise).
func WithNamedReactor(name string, r *reactor.Reactor) Option {
	return func(o *options) {
		if name == "" {
			panic("promprpc: WithNamedReactor with an empty name")
		}
		o.reactors = append(o.reactors, namedReactor{name: name, r: r})
	}
}

// WithLoop has the Collector export l's metrics: its tick durations and counters. A Collector
// takes at most one loop, since the loop's metrics have no label to tell loops apart; a
// program with several registers a Collector for each through
// prometheus.WrapRegistererWith, with a label of its choosing.
func WithLoop(l *loop.Loop) Option {
	return func(o *options) { o.loops = append(o.loops, l) }
}

// WithBackends adds the counts of each reactor's transport calls by backend address
// (reactor.Stats.Backends), labelled server_address: prpc_backend_calls_total,
// prpc_backend_failed_total and prpc_backend_hedges_lost_total. A reactor keeps a row per
// recent address and folds the rows of backends gone into one whose address is
// reactor.RemovedBackendsAddr, so the label's values stay bounded (see Stats.Backends).
func WithBackends() Option {
	return func(o *options) { o.backends = true }
}

// Collector is a prometheus.Collector over reactors and a loop (see NewCollector). It is safe
// for concurrent use: each Collect reads fresh snapshots.
type Collector struct {
	reactors []namedReactor
	loop     *loop.Loop
	named    bool // the reactors have names: every reactor metric has the prpc_reactor label

	// Per method.
	duration, queueWait, transport, tickWait *prometheus.Desc
	submitted, completed                     *prometheus.Desc
	timedOut, overloaded, cancelled, closed  *prometheus.Desc
	shed, neverSent, coalesced               *prometheus.Desc
	hedgeSent, hedgeWon, hedgeLost           *prometheus.Desc
	// Per stream method.
	streamsOpen, streamMessages, streamWaiting *prometheus.Desc
	streamStalls, streamReopens, streamEnds    *prometheus.Desc
	// Per reactor.
	pending, maxOutstanding, queued, inFlight, inFlightLimit, oldestWait *prometheus.Desc
	// Per backend, with WithBackends; nil otherwise.
	backendCalls, backendFailed, backendHedgesLost *prometheus.Desc
	// Per loop.
	tickDuration, ticks, overruns, skipped, delivered *prometheus.Desc

	// What scrapes share: each series' label pairs and the histograms' upper bounds.
	labels labelCache
	bounds boundsCache
}

// NewCollector returns a Collector that exports the metrics of the reactors and the loop the
// options name (see the package documentation for the list). Register it with a
// prometheus.Registerer; it reads the reactors' and the loop's snapshots at each scrape.
//
// NewCollector panics, with a message that starts "promprpc:", if the options name no reactor
// and no loop, a nil reactor or loop, the same reactor twice, more than one loop, several
// reactors not all named, or one name twice.
func NewCollector(opts ...Option) *Collector {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Collector{reactors: o.reactors, named: o.check()}
	if len(o.loops) == 1 {
		c.loop = o.loops[0]
	}
	c.makeDescs(o.backends)
	return c
}

// check panics, with a message saying what is wrong, unless o names at least one reactor or
// loop, at most one loop, no nil one, no reactor twice, and reactors that are either one or
// all named, each name once; it reports whether they are named.
func (o *options) check() (named bool) {
	if len(o.reactors) == 0 && len(o.loops) == 0 {
		panic("promprpc: NewCollector with no reactor and no loop")
	}
	if len(o.loops) > 1 {
		panic("promprpc: NewCollector with more than one loop; register a Collector per loop, through prometheus.WrapRegistererWith")
	}
	if len(o.loops) == 1 && o.loops[0] == nil {
		panic("promprpc: WithLoop with a nil *loop.Loop")
	}
	names := map[string]bool{}
	for i, nr := range o.reactors {
		if nr.r == nil {
			panic("promprpc: a nil *reactor.Reactor")
		}
		for _, earlier := range o.reactors[:i] {
			if earlier.r == nr.r {
				panic("promprpc: the same reactor given twice")
			}
		}
		if nr.name == "" {
			if len(o.reactors) > 1 {
				panic("promprpc: several reactors, not all named; give each with WithNamedReactor")
			}
			continue
		}
		if names[nr.name] {
			panic(fmt.Sprintf("promprpc: two reactors named %q", nr.name))
		}
		names[nr.name] = true
		named = true
	}
	return named
}

// makeDescs makes c's metric descriptions: with the prpc_reactor label if its reactors are
// named, and the backends' if backends is set.
func (c *Collector) makeDescs(backends bool) {
	var reactorLabels []string
	if c.named {
		reactorLabels = []string{labelReactor}
	}
	with := func(labels ...string) []string {
		return append(append([]string(nil), reactorLabels...), labels...)
	}
	system := prometheus.Labels{labelSystem: systemGRPC}
	method := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(metricsPrefix+name, help, with(append([]string{labelService, labelMethod}, extra...)...), system)
	}
	gauge := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(metricsPrefix+name, help, with(), nil)
	}
	c.duration = method("call_duration_seconds", "Time from a call's submission to its delivery by Tick, the wait for Tick included, of the calls delivered.")
	c.queueWait = method("call_queue_wait_seconds", "Time from a call's submission until a lane took it, or until prpc settled it if no lane did.")
	c.transport = method("call_transport_seconds", "Time from a lane taking a call until its outcome was queued for Tick, for the calls that reached gRPC.")
	c.tickWait = method("call_tick_wait_seconds", "Time from a call's outcome being queued for Tick until Tick delivered it: the game loop's share of the latency.")
	c.submitted = method("call_submitted_total", "Calls submitted, rejected ones included.")
	c.completed = method("call_completed_total", "Calls settled and delivered, or rejected at submission, by gRPC status code (0 for a response).", labelCode)
	c.timedOut = method("call_timed_out_total", "Calls failed because their deadline passed (ErrTimeout).")
	c.overloaded = method("call_overloaded_total", "Calls rejected at submission because MaxOutstanding calls were outstanding (ErrOverloaded).")
	c.cancelled = method("call_cancelled_total", "Calls failed because they were cancelled (ErrCancelled).")
	c.closed = method("call_closed_total", "Calls failed because the reactor closed (ErrClosed).")
	c.shed = method("call_shed_total", "Calls a lane did not send because they could no longer finish in time (ErrShed).")
	c.neverSent = method("call_never_sent_total", "Failed calls that never reached gRPC.")
	c.coalesced = method("call_coalesced_total", "Calls that joined another call's transport call instead of sending their own.")
	c.hedgeSent = method("hedge_sent_total", "Attempts of calls sent after the first (hedges).")
	c.hedgeWon = method("hedge_won_total", "Calls that a hedge's response settled, before the first attempt's.")
	c.hedgeLost = method("hedge_lost_total", "Attempts cancelled because another attempt of the same call decided it first.")

	c.streamsOpen = method("streams_open", "Streams opened whose end Tick has not delivered yet.")
	c.streamMessages = method("stream_messages_total", "Stream messages by outcome: received, and then delivered to OnMessage, replaced by a newer one (KeepLatest) or discarded because the stream was stopped.", labelOutcome)
	c.streamWaiting = method("stream_messages_waiting", "Stream messages received and waiting for Tick.")
	c.streamStalls = method("stream_stalls_total", "Times a stream's receiver stopped reading because MaxWaiting messages waited for Tick.")
	c.streamReopens = method("stream_reopens_total", "Reopenings of streams ended by a transient code (resubscription).")
	c.streamEnds = method("stream_ends_total", "Stream ends delivered by Tick, refusals at open included, by gRPC status code (0 for OK).", labelCode)

	c.pending = gauge("calls_pending", "Calls admitted and not yet delivered by Tick.")
	c.maxOutstanding = gauge("calls_max_outstanding", "The bound on pending calls (MaxOutstanding): a call beyond it is overloaded.")
	c.queued = gauge("calls_queued", "Admitted calls waiting for a free lane.")
	c.inFlight = gauge("calls_in_flight", "Calls a lane has taken whose outcome is not yet queued for Tick.")
	c.inFlightLimit = gauge("calls_in_flight_limit", "The adaptive limit on the calls lanes run at once (0 when it is disabled).")
	c.oldestWait = gauge("delivery_oldest_wait_seconds", "How long the oldest outcome waiting for Tick has waited (0 when none waits).")

	if backends {
		c.backendCalls = prometheus.NewDesc(metricsPrefix+"backend_calls_total", "Transport calls that got a connection to the backend.", with(labelAddress), nil)
		c.backendFailed = prometheus.NewDesc(metricsPrefix+"backend_failed_total", "Transport calls to the backend that failed, by gRPC status code.", with(labelAddress, labelCode), nil)
		c.backendHedgesLost = prometheus.NewDesc(metricsPrefix+"backend_hedges_lost_total", "Attempts of hedged calls to the backend cancelled because another attempt decided the call first.", with(labelAddress), nil)
	}

	c.tickDuration = prometheus.NewDesc(metricsPrefix+"loop_tick_duration_seconds", "Duration of the loop's ticks: OnTick and every reactor's Tick.", nil, nil)
	c.ticks = prometheus.NewDesc(metricsPrefix+"loop_ticks_total", "Ticks the loop ran.", nil, nil)
	c.overruns = prometheus.NewDesc(metricsPrefix+"loop_overruns_total", "Ticks that ended after the next tick's due time.", nil, nil)
	c.skipped = prometheus.NewDesc(metricsPrefix+"loop_skipped_total", "Due times passed over because ticks ran late.", nil, nil)
	c.delivered = prometheus.NewDesc(metricsPrefix+"loop_delivered_total", "Calls the loop's Ticks delivered, in ticks and wake-ups.", nil, nil)
}

// Describe sends the descriptors of every metric c exports: those of the reactors if it has
// any, of the backends with WithBackends, of the loop if it has one.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	if len(c.reactors) > 0 {
		for _, d := range []*prometheus.Desc{
			c.duration, c.queueWait, c.transport, c.tickWait,
			c.submitted, c.completed, c.timedOut, c.overloaded, c.cancelled, c.closed,
			c.shed, c.neverSent, c.coalesced, c.hedgeSent, c.hedgeWon, c.hedgeLost,
			c.streamsOpen, c.streamMessages, c.streamWaiting, c.streamStalls, c.streamReopens, c.streamEnds,
			c.pending, c.maxOutstanding, c.queued, c.inFlight, c.inFlightLimit, c.oldestWait,
		} {
			ch <- d
		}
		if c.backendCalls != nil {
			ch <- c.backendCalls
			ch <- c.backendFailed
			ch <- c.backendHedgesLost
		}
	}
	if c.loop != nil {
		ch <- c.tickDuration
		ch <- c.ticks
		ch <- c.overruns
		ch <- c.skipped
		ch <- c.delivered
	}
}

// Collect reads one snapshot of each reactor (StatsWithoutPercentiles: the histograms,
// counters and gauges, without the percentile windows, which it does not export and which
// Stats would copy and sort), and Stats and TickDurations of the loop, and sends their
// metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, nr := range c.reactors {
		st := nr.r.StatsWithoutPercentiles()
		c.collectReactor(ch, nr.name, &st)
	}
	if c.loop != nil {
		st := c.loop.Stats()
		h := c.loop.TickDurations()
		c.collectLoop(ch, &st, &h)
	}
}

// collectLoop sends the metrics of a loop's snapshot st, with its tick durations h.
func (c *Collector) collectLoop(ch chan<- prometheus.Metric, st *loop.Stats, h *reactor.Histogram) {
	ch <- c.histogram(c.tickDuration, h, nil)
	ch <- c.counter(c.ticks, st.Ticks, nil)
	ch <- c.counter(c.overruns, st.Overruns, nil)
	ch <- c.counter(c.skipped, st.Skipped, nil)
	ch <- c.counter(c.delivered, st.Delivered, nil)
}

// collectReactor sends the metrics of the snapshot st of the reactor named name ("" if the
// reactors are not named).
func (c *Collector) collectReactor(ch chan<- prometheus.Metric, name string, st *reactor.Stats) {
	var rl []string // the reactor's label values
	if c.named {
		rl = []string{name}
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- &valueMetric{desc: d, labels: c.labels.get(d, rl), value: v, gauge: true}
	}
	gauge(c.pending, float64(st.Pending))
	gauge(c.maxOutstanding, float64(st.MaxOutstanding))
	gauge(c.queued, float64(st.Queued))
	gauge(c.inFlight, float64(st.InFlight))
	gauge(c.inFlightLimit, float64(st.InFlightLimit))
	gauge(c.oldestWait, st.OldestUndelivered.Seconds())

	var buf [maxLabelValues]string
	for path, m := range st.Methods {
		service, method := splitPath(path)
		lv := append(append(buf[:0], rl...), service, method)
		if m.Streams.Opened > 0 {
			c.collectStreams(ch, &m.Streams, lv)
			if m.Submitted == 0 {
				continue // a stream method: no call of it is ever submitted
			}
		}
		withCode := func(code string) []string { return append(lv[:len(lv):len(lv)], code) }
		ch <- c.histogram(c.duration, &m.Histograms.Latency, lv)
		ch <- c.histogram(c.queueWait, &m.Histograms.QueueWait, lv)
		ch <- c.histogram(c.transport, &m.Histograms.Transport, lv)
		ch <- c.histogram(c.tickWait, &m.Histograms.TickWait, lv)
		ch <- c.counter(c.submitted, m.Submitted, lv)
		ok := m.Succeeded + m.Failed[codes.OK] // a failure never has code OK; were it counted so, it joins the successes rather than repeat their series
		ch <- c.counter(c.completed, ok, withCode("0"))
		for code, n := range m.Failed {
			if code != codes.OK {
				ch <- c.counter(c.completed, n, withCode(codeLabel(code)))
			}
		}
		ch <- c.counter(c.timedOut, m.TimedOut, lv)
		ch <- c.counter(c.overloaded, m.Overloaded, lv)
		ch <- c.counter(c.cancelled, m.Cancelled, lv)
		ch <- c.counter(c.closed, m.Closed, lv)
		ch <- c.counter(c.shed, m.Shed, lv)
		ch <- c.counter(c.neverSent, m.NeverSent, lv)
		ch <- c.counter(c.coalesced, m.Coalesced, lv)
		ch <- c.counter(c.hedgeSent, m.Hedges, lv)
		ch <- c.counter(c.hedgeWon, m.HedgesWon, lv)
		ch <- c.counter(c.hedgeLost, m.HedgesLost, lv)
	}

	if c.backendCalls != nil {
		for _, b := range st.Backends {
			lv := append(append(buf[:0], rl...), b.Addr)
			ch <- c.counter(c.backendCalls, b.Calls, lv)
			ch <- c.counter(c.backendHedgesLost, b.HedgesLost, lv)
			for code, n := range b.Failed {
				ch <- c.counter(c.backendFailed, n, append(lv[:len(lv):len(lv)], codeLabel(code)))
			}
		}
	}
}

// collectStreams sends the metrics of a method's streams s, with the method's label values lv.
// The ends with code 0 have a series from the first stream on, as the calls' successes do;
// another code has one once a stream has ended with it.
func (c *Collector) collectStreams(ch chan<- prometheus.Metric, s *reactor.StreamStats, lv []string) {
	with := func(v string) []string { return append(lv[:len(lv):len(lv)], v) }
	ch <- c.methodGauge(c.streamsOpen, float64(s.Open), lv)
	ch <- c.methodGauge(c.streamWaiting, float64(s.Waiting), lv)
	ch <- c.counter(c.streamMessages, s.Received, with("received"))
	ch <- c.counter(c.streamMessages, s.Delivered, with("delivered"))
	ch <- c.counter(c.streamMessages, s.Replaced, with("replaced"))
	ch <- c.counter(c.streamMessages, s.Discarded, with("discarded"))
	ch <- c.counter(c.streamStalls, s.Stalls, lv)
	ch <- c.counter(c.streamReopens, s.Reopened, lv)
	ch <- c.counter(c.streamEnds, s.Ended[codes.OK], with("0"))
	for code, n := range s.Ended {
		if code != codes.OK {
			ch <- c.counter(c.streamEnds, n, with(codeLabel(code)))
		}
	}
}

// methodGauge returns v as d's gauge with the label values values.
func (c *Collector) methodGauge(d *prometheus.Desc, v float64, values []string) prometheus.Metric {
	return &valueMetric{desc: d, labels: c.labels.get(d, values), value: v, gauge: true}
}

// counter returns v as d's counter with the label values values.
func (c *Collector) counter(d *prometheus.Desc, v uint64, values []string) prometheus.Metric {
	return &valueMetric{desc: d, labels: c.labels.get(d, values), value: float64(v)}
}

// histogram returns h as d's histogram with the label values values: "le" buckets at
// h.Bounds (in seconds) with h's running sums, the +Inf bucket implied by the count, the sum
// in seconds.
func (c *Collector) histogram(d *prometheus.Desc, h *reactor.Histogram, values []string) prometheus.Metric {
	return newHistogramMetric(d, c.labels.get(d, values), h, &c.bounds)
}

// splitPath splits a gRPC method path, "/package.Service/Method", into the service's full
// name and the method's name. A path not of that form is the method's name, with an empty
// service.
func splitPath(path string) (service, method string) {
	p := strings.TrimPrefix(path, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// codeLabel is the value of rpc_grpc_status_code for code: its number, as OpenTelemetry's
// RPC conventions write it.
func codeLabel(code codes.Code) string {
	return strconv.FormatUint(uint64(code), 10)
}
