package otelprpc

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Attribute keys, as OpenTelemetry's RPC conventions name them, and prpc's own.
const (
	keySystem  = attribute.Key("rpc.system")
	keyService = attribute.Key("rpc.service")
	keyMethod  = attribute.Key("rpc.method")
	keyCode    = attribute.Key("rpc.grpc.status_code")
	keyServer  = attribute.Key("server.address")
	keyReactor = attribute.Key("prpc.reactor")
	keyLoop    = attribute.Key("prpc.loop")
	keyOutcome = attribute.Key("outcome") // a stream message's; Prometheus's label of the same name

	systemValue = "grpc"
)

// metricID names one metric a Producer exports; the order of the constants is the order of
// the metrics in a collection.
type metricID int

const (
	callDuration metricID = iota
	callQueueWait
	callTransport
	callTickWait
	callSubmitted
	callCompleted
	callTimedOut
	callOverloaded
	callCancelled
	callClosed
	callShed
	callNeverSent
	callCoalesced
	hedgeSent
	hedgeWon
	hedgeLost
	streamsOpen
	streamMessages
	streamMessagesWaiting
	streamStalls
	streamReopens
	streamEnds
	callsPending
	callsMaxOutstanding
	callsQueued
	callsInFlight
	callsInFlightLimit
	deliveryOldestWait
	backendCalls
	backendFailed
	backendHedgesLost
	loopTickDuration
	loopTicks
	loopOverruns
	loopSkipped
	loopDelivered
	numMetrics
)

// kind is the data type a metric is exported as.
type kind uint8

const (
	histogram  kind = iota // metricdata.Histogram[float64], cumulative
	counter                // metricdata.Sum[int64], monotonic and cumulative
	gauge                  // metricdata.Gauge[int64]
	floatGauge             // metricdata.Gauge[float64]
)

// instrument describes a metric as it is exported.
type instrument struct {
	name, unit, description string
	kind                    kind
}

// instruments are the metrics a Producer exports, by metricID. The names, units and
// attributes are those of docs/metrics.md, shared with the Prometheus adapter.
var instruments = [numMetrics]instrument{
	callDuration:  {"prpc.call.duration", "s", "Time from a call's submission until Tick delivered it, for every admitted call delivered.", histogram},
	callQueueWait: {"prpc.call.queue_wait", "s", "Time from a call's submission until a lane took it, or until prpc settled it if no lane did.", histogram},
	callTransport: {"prpc.call.transport", "s", "Time from a lane taking a call until its outcome was queued for Tick, for the calls that reached gRPC.", histogram},
	callTickWait:  {"prpc.call.tick_wait", "s", "Time from a call's outcome being queued for Tick until Tick delivered it.", histogram},
	callSubmitted: {"prpc.call.submitted", "{call}", "Calls submitted, rejected ones included.", counter},
	callCompleted: {"prpc.call.completed", "{call}", "Calls delivered by Tick or rejected at submission, by gRPC status code.", counter},
	callTimedOut:  {"prpc.call.timed_out", "{call}", "Calls failed because their deadline passed, whoever noticed first (ErrTimeout).", counter},
	callOverloaded: {"prpc.call.overloaded", "{call}", "Calls rejected at submission because the reactor had too many outstanding (ErrOverloaded).",
		counter},
	callCancelled: {"prpc.call.cancelled", "{call}", "Calls cancelled through their promise or parent context (ErrCancelled).", counter},
	callClosed:    {"prpc.call.closed", "{call}", "Calls failed because the reactor was closed (ErrClosed).", counter},
	callShed:      {"prpc.call.shed", "{call}", "Calls a lane did not send because they could no longer finish in time (ErrShed).", counter},
	callNeverSent: {"prpc.call.never_sent", "{call}", "Failed calls that never reached gRPC.", counter},
	callCoalesced: {"prpc.call.coalesced", "{call}", "Calls that joined another call's transport call instead of sending their own.", counter},
	hedgeSent:     {"prpc.hedge.sent", "{attempt}", "Hedged attempts sent after a call's first.", counter},
	hedgeWon:      {"prpc.hedge.won", "{call}", "Calls settled by a hedge's response before the first attempt's.", counter},
	hedgeLost: {"prpc.hedge.lost", "{attempt}", "Attempts cancelled because another attempt of the same call decided it first.",
		counter},
	streamsOpen:           {"prpc.streams.open", "{stream}", "Streams opened whose end Tick has not delivered yet.", gauge},
	streamMessages:        {"prpc.stream.messages", "{message}", "Stream messages by outcome: received, and then delivered, replaced by a newer one (KeepLatest) or discarded because the stream was stopped.", counter},
	streamMessagesWaiting: {"prpc.stream.messages_waiting", "{message}", "Stream messages received and waiting for Tick.", gauge},
	streamStalls:          {"prpc.stream.stalls", "{stall}", "Times a stream's receiver stopped reading because MaxWaiting messages waited for Tick.", counter},
	streamReopens:         {"prpc.stream.reopens", "{stream}", "Reopenings of streams ended by a transient code (resubscription).", counter},
	streamEnds:            {"prpc.stream.ends", "{stream}", "Stream ends delivered by Tick, refusals at open included, by gRPC status code.", counter},
	callsPending:          {"prpc.calls.pending", "{call}", "Calls admitted and not yet delivered by Tick.", gauge},
	callsMaxOutstanding:   {"prpc.calls.max_outstanding", "{call}", "The bound on pending calls (MaxOutstanding).", gauge},
	callsQueued:           {"prpc.calls.queued", "{call}", "Admitted calls waiting for a free lane.", gauge},
	callsInFlight:         {"prpc.calls.in_flight", "{call}", "Calls a lane has taken whose outcome is not yet queued for Tick.", gauge},
	callsInFlightLimit:    {"prpc.calls.in_flight_limit", "{call}", "The adaptive limit on the calls lanes run at once; 0 when it is disabled.", gauge},
	deliveryOldestWait: {"prpc.delivery.oldest_wait", "s", "How long the oldest outcome waiting for Tick has waited; 0 when none waits.",
		floatGauge},
	backendCalls:      {"prpc.backend.calls", "{call}", "Transport calls that got a connection to the backend.", counter},
	backendFailed:     {"prpc.backend.failed", "{call}", "Transport calls that failed at the backend, by gRPC status code.", counter},
	backendHedgesLost: {"prpc.backend.hedges_lost", "{attempt}", "Hedged attempts at the backend cancelled because another attempt decided the call first.", counter},
	loopTickDuration:  {"prpc.loop.tick.duration", "s", "Duration of the loop's ticks: OnTick and the reactors' Tick.", histogram},
	loopTicks:         {"prpc.loop.ticks", "{tick}", "Ticks the loop ran.", counter},
	loopOverruns:      {"prpc.loop.overruns", "{tick}", "Ticks that ended after the next tick's due time.", counter},
	loopSkipped:       {"prpc.loop.skipped", "{tick}", "Due times passed over because ticks ran late.", counter},
	loopDelivered:     {"prpc.loop.delivered", "{call}", "Calls the loop's Tick calls delivered.", counter},
}

// collection gathers the data points of one collection, by metric.
type collection struct {
	hists  [numMetrics][]metricdata.HistogramDataPoint[float64]
	ints   [numMetrics][]metricdata.DataPoint[int64]
	floats [numMetrics][]metricdata.DataPoint[float64]
}

// metrics returns the metrics that have data points, in the order of metricID.
func (c *collection) metrics() []metricdata.Metrics {
	out := make([]metricdata.Metrics, 0, numMetrics)
	for id := range numMetrics {
		in := &instruments[id]
		var data metricdata.Aggregation
		switch {
		case in.kind == histogram && len(c.hists[id]) > 0:
			data = metricdata.Histogram[float64]{DataPoints: c.hists[id], Temporality: metricdata.CumulativeTemporality}
		case in.kind == counter && len(c.ints[id]) > 0:
			data = metricdata.Sum[int64]{DataPoints: c.ints[id], Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
		case in.kind == gauge && len(c.ints[id]) > 0:
			data = metricdata.Gauge[int64]{DataPoints: c.ints[id]}
		case in.kind == floatGauge && len(c.floats[id]) > 0:
			data = metricdata.Gauge[float64]{DataPoints: c.floats[id]}
		default:
			continue
		}
		out = append(out, metricdata.Metrics{Name: in.name, Description: in.description, Unit: in.unit, Data: data})
	}
	return out
}
