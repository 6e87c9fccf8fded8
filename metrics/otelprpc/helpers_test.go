package otelprpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/metrics/otelprpc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// patience bounds every wait of these tests, so that a bug fails them instead of hanging.
const patience = 10 * time.Second

// The methods the tests call: a service that is not registered, so its messages are not
// checked against a declaration.
var (
	get = calls.MustMethod[*wrapperspb.StringValue, *wrapperspb.StringValue]("/game.Inventory/Get")
	put = calls.MustMethod[*wrapperspb.StringValue, *wrapperspb.StringValue]("/game.Inventory/Put")
)

// Metric kinds, as the tests name them.
const (
	kindHistogram = "histogram"
	kindCounter   = "counter"
	kindGauge     = "gauge"
)

// specMetric is one row of the table of docs/metrics.md.
type specMetric struct {
	name, kind, unit string
	attrs            []attribute.Key // the attributes of every data point, the reactor's or loop's name aside
}

var (
	methodKeys  = []attribute.Key{"rpc.system", "rpc.service", "rpc.method"}
	codeKeys    = []attribute.Key{"rpc.system", "rpc.service", "rpc.method", "rpc.grpc.status_code"}
	backendKeys = []attribute.Key{"rpc.system", "server.address"}
)

// reactorSpec are the metrics of a reactor, without WithBackends.
var reactorSpec = []specMetric{
	{"prpc.call.duration", kindHistogram, "s", methodKeys},
	{"prpc.call.queue_wait", kindHistogram, "s", methodKeys},
	{"prpc.call.transport", kindHistogram, "s", methodKeys},
	{"prpc.call.tick_wait", kindHistogram, "s", methodKeys},
	{"prpc.call.submitted", kindCounter, "{call}", methodKeys},
	{"prpc.call.completed", kindCounter, "{call}", codeKeys},
	{"prpc.call.timed_out", kindCounter, "{call}", methodKeys},
	{"prpc.call.overloaded", kindCounter, "{call}", methodKeys},
	{"prpc.call.cancelled", kindCounter, "{call}", methodKeys},
	{"prpc.call.closed", kindCounter, "{call}", methodKeys},
	{"prpc.call.shed", kindCounter, "{call}", methodKeys},
	{"prpc.call.never_sent", kindCounter, "{call}", methodKeys},
	{"prpc.call.coalesced", kindCounter, "{call}", methodKeys},
	{"prpc.hedge.sent", kindCounter, "{attempt}", methodKeys},
	{"prpc.hedge.won", kindCounter, "{call}", methodKeys},
	{"prpc.hedge.lost", kindCounter, "{attempt}", methodKeys},
	{"prpc.calls.pending", kindGauge, "{call}", nil},
	{"prpc.calls.max_outstanding", kindGauge, "{call}", nil},
	{"prpc.calls.queued", kindGauge, "{call}", nil},
	{"prpc.calls.in_flight", kindGauge, "{call}", nil},
	{"prpc.calls.in_flight_limit", kindGauge, "{call}", nil},
	{"prpc.delivery.oldest_wait", kindGauge, "s", nil},
}

// streamSpec are the metrics of a reactor's stream methods.
var streamSpec = []specMetric{
	{"prpc.streams.open", kindGauge, "{stream}", methodKeys},
	{"prpc.stream.messages", kindCounter, "{message}", append(methodKeys[:3:3], "outcome")},
	{"prpc.stream.messages_waiting", kindGauge, "{message}", methodKeys},
	{"prpc.stream.stalls", kindCounter, "{stall}", methodKeys},
	{"prpc.stream.reopens", kindCounter, "{stream}", methodKeys},
	{"prpc.stream.ends", kindCounter, "{stream}", codeKeys},
}

// backendSpec are the metrics WithBackends adds.
var backendSpec = []specMetric{
	{"prpc.backend.calls", kindCounter, "{call}", backendKeys},
	{"prpc.backend.failed", kindCounter, "{call}", append(backendKeys[:2:2], "rpc.grpc.status_code")},
	{"prpc.backend.hedges_lost", kindCounter, "{attempt}", backendKeys},
}

// loopSpec are the metrics of a loop.
var loopSpec = []specMetric{
	{"prpc.loop.tick.duration", kindHistogram, "s", nil},
	{"prpc.loop.ticks", kindCounter, "{tick}", nil},
	{"prpc.loop.overruns", kindCounter, "{tick}", nil},
	{"prpc.loop.skipped", kindCounter, "{tick}", nil},
	{"prpc.loop.delivered", kindCounter, "{call}", nil},
}

// newReader returns a ManualReader with p registered on it, in a MeterProvider shut down when
// the test ends.
func newReader(t *testing.T, p *otelprpc.Producer) *sdkmetric.ManualReader {
	t.Helper()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	return reader
}

// collect collects reader once and returns the Producer's metrics by name, checking that they
// are in one scope, ScopeName, each name once.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelprpc.ScopeName, sm.Scope.Name, "the only scope is the Producer's")
		require.Empty(t, out, "one ScopeMetrics")
		for _, m := range sm.Metrics {
			_, dup := out[m.Name]
			require.False(t, dup, "metric %s appears twice", m.Name)
			out[m.Name] = m
		}
	}
	return out
}

// byName returns ms by name, each name once.
func byName(t *testing.T, ms []metricdata.Metrics) map[string]metricdata.Metrics {
	t.Helper()
	out := map[string]metricdata.Metrics{}
	for _, m := range ms {
		_, dup := out[m.Name]
		require.False(t, dup, "metric %s appears twice", m.Name)
		out[m.Name] = m
	}
	return out
}

// requireSpec checks that every metric of spec is in got with its kind, its unit and, on each
// data point, its attributes and, if the point has the attribute extra, that one too.
func requireSpec(t *testing.T, got map[string]metricdata.Metrics, spec []specMetric, extra attribute.Key) {
	t.Helper()
	for _, s := range spec {
		m, ok := got[s.name]
		require.True(t, ok, "metric %s is missing", s.name)
		require.Equal(t, s.unit, m.Unit, "%s: unit", s.name)
		require.NotEmpty(t, m.Description, "%s: description", s.name)
		var sets []attribute.Set
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			require.Equal(t, kindHistogram, s.kind, "%s: kind", s.name)
			require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, "%s: temporality", s.name)
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Sum[int64]:
			require.Equal(t, kindCounter, s.kind, "%s: kind", s.name)
			require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, "%s: temporality", s.name)
			require.True(t, d.IsMonotonic, "%s: monotonic", s.name)
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Gauge[int64]:
			require.Equal(t, kindGauge, s.kind, "%s: kind", s.name)
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Gauge[float64]:
			require.Equal(t, kindGauge, s.kind, "%s: kind", s.name)
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		default:
			t.Fatalf("%s: data of type %T", s.name, m.Data)
		}
		require.NotEmpty(t, sets, "%s: data points", s.name)
		for _, set := range sets {
			var keys []attribute.Key
			for _, kv := range set.ToSlice() {
				if kv.Key != extra {
					keys = append(keys, kv.Key)
				}
			}
			require.ElementsMatch(t, s.attrs, keys, "%s: attributes %s", s.name, set.Encoded(attribute.DefaultEncoder()))
		}
	}
}

// attrs returns the attribute set of kvs.
func attrs(kvs ...attribute.KeyValue) attribute.Set { return attribute.NewSet(kvs...) }

// methodAttrs returns the attributes of the series of method m (a path's method name) of
// service game.Inventory, with extra ones.
func methodAttrs(m string, extra ...attribute.KeyValue) attribute.Set {
	return attrs(append([]attribute.KeyValue{
		attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", "game.Inventory"), attribute.String("rpc.method", m),
	}, extra...)...)
}

// withCode returns the attributes of the method's series with a status code.
func withCode(m string, code int64, extra ...attribute.KeyValue) attribute.Set {
	return methodAttrs(m, append(extra, attribute.Int64("rpc.grpc.status_code", code))...)
}

// counter returns the value of m's data point with attributes a, which must be a monotonic
// cumulative counter, and whether it has one.
func counter(t *testing.T, m metricdata.Metrics, a attribute.Set) (int64, bool) {
	t.Helper()
	d, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a Sum[int64], not %T", m.Name, m.Data)
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&a) {
			return p.Value, true
		}
	}
	return 0, false
}

// counterValue is counter, failing the test if m has no data point with attributes a.
func counterValue(t *testing.T, m metricdata.Metrics, a attribute.Set) int64 {
	t.Helper()
	v, ok := counter(t, m, a)
	require.True(t, ok, "%s has no data point %s", m.Name, a.Encoded(attribute.DefaultEncoder()))
	return v
}

// counters returns the values of m's data points by their attributes' encoding.
func counters(t *testing.T, m metricdata.Metrics) map[string]int64 {
	t.Helper()
	d, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a Sum[int64], not %T", m.Name, m.Data)
	out := map[string]int64{}
	for _, p := range d.DataPoints {
		out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
	}
	return out
}

// gauge returns the value of m's data point with attributes a, as a float64.
func gauge(t *testing.T, m metricdata.Metrics, a attribute.Set) float64 {
	t.Helper()
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&a) {
				return float64(p.Value)
			}
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&a) {
				return p.Value
			}
		}
	default:
		t.Fatalf("%s is a gauge, not %T", m.Name, m.Data)
	}
	t.Fatalf("%s has no data point %s", m.Name, a.Encoded(attribute.DefaultEncoder()))
	return 0
}

// histogram returns m's data point with attributes a.
func histogram(t *testing.T, m metricdata.Metrics, a attribute.Set) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	d, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a Histogram[float64], not %T", m.Name, m.Data)
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&a) {
			return p
		}
	}
	t.Fatalf("%s has no data point %s", m.Name, a.Encoded(attribute.DefaultEncoder()))
	return metricdata.HistogramDataPoint[float64]{}
}

// times returns the start time and time of every data point of ms.
func times(ms map[string]metricdata.Metrics) (starts, ends []time.Time) {
	for _, m := range ms {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				starts, ends = append(starts, p.StartTime), append(ends, p.Time)
			}
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				starts, ends = append(starts, p.StartTime), append(ends, p.Time)
			}
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				starts, ends = append(starts, p.StartTime), append(ends, p.Time)
			}
		case metricdata.Gauge[float64]:
			for _, p := range d.DataPoints {
				starts, ends = append(starts, p.StartTime), append(ends, p.Time)
			}
		}
	}
	return starts, ends
}
