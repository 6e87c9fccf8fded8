package otelprpc_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
)

// hist returns a histogram over bounds 0.1 and 1 s whose counts start at n, so that each one
// given to TestMapping differs.
func hist(n uint64) reactor.Histogram {
	return reactor.Histogram{Bounds: []float64{0.1, 1}, Counts: []uint64{n, n + 1, n + 2}, Count: 3*n + 3, Sum: time.Duration(n) * time.Second}
}

// TestMapping feeds a reactor's source a snapshot in which every field has a value of its
// own, and checks that each metric reports the field docs/metrics.md names for it.
func TestMapping(t *testing.T) {
	st := reactor.Stats{
		Pending: 1, MaxOutstanding: 2, Queued: 3, InFlight: 4, InFlightLimit: 5, OldestUndelivered: 1500 * time.Millisecond,
		Methods: map[string]reactor.MethodStats{
			"/game.Inventory/Get": {
				Submitted: 11, Succeeded: 12, Failed: map[codes.Code]uint64{codes.NotFound: 13, codes.DeadlineExceeded: 14},
				NeverSent: 15, TimedOut: 16, Overloaded: 17, Cancelled: 18, Closed: 19, Shed: 20, Coalesced: 21,
				Hedges: 22, HedgesWon: 23, HedgesLost: 24,
				Histograms: reactor.Histograms{Latency: hist(100), QueueWait: hist(200), Transport: hist(300), TickWait: hist(400)},
			},
			// A stream method: the streams' metrics, none of the calls'.
			"/game.Inventory/Watch": {
				Streams: reactor.StreamStats{
					Opened: 41, Reopened: 42, Open: 43, Ended: map[codes.Code]uint64{codes.OK: 44, codes.Unavailable: 45},
					Received: 46, Delivered: 47, Replaced: 48, Discarded: 49, Waiting: 50, Stalls: 51, Sent: 52, Unsent: 53,
				},
			},
		},
		Backends: []reactor.BackendStats{{Addr: "10.0.0.1:50051", Calls: 31, Failed: map[codes.Code]uint64{codes.Unavailable: 32}, HedgesLost: 33}},
	}
	start := epoch
	now := epoch.Add(time.Minute)
	got := byName(t, otelprpc.NewStatsSource("world", start, true).Collect(st, now, now))
	requireSpec(t, got, append(append(reactorSpec, backendSpec...), streamSpec...), "prpc.reactor")
	world := attribute.String("prpc.reactor", "world")
	outcome := func(o string) attribute.Set { return methodAttrs("Watch", world, attribute.String("outcome", o)) }

	counts := []struct {
		metric string
		attrs  attribute.Set
		want   int64
	}{
		{"prpc.call.submitted", methodAttrs("Get", world), 11},
		{"prpc.call.completed", withCode("Get", 0, world), 12},
		{"prpc.call.completed", withCode("Get", int64(codes.NotFound), world), 13},
		{"prpc.call.completed", withCode("Get", int64(codes.DeadlineExceeded), world), 14},
		{"prpc.call.never_sent", methodAttrs("Get", world), 15},
		{"prpc.call.timed_out", methodAttrs("Get", world), 16},
		{"prpc.call.overloaded", methodAttrs("Get", world), 17},
		{"prpc.call.cancelled", methodAttrs("Get", world), 18},
		{"prpc.call.closed", methodAttrs("Get", world), 19},
		{"prpc.call.shed", methodAttrs("Get", world), 20},
		{"prpc.call.coalesced", methodAttrs("Get", world), 21},
		{"prpc.hedge.sent", methodAttrs("Get", world), 22},
		{"prpc.hedge.won", methodAttrs("Get", world), 23},
		{"prpc.hedge.lost", methodAttrs("Get", world), 24},
		{"prpc.stream.messages", outcome("received"), 46},
		{"prpc.stream.messages", outcome("delivered"), 47},
		{"prpc.stream.messages", outcome("replaced"), 48},
		{"prpc.stream.messages", outcome("discarded"), 49},
		{"prpc.stream.stalls", methodAttrs("Watch", world), 51},
		{"prpc.stream.reopens", methodAttrs("Watch", world), 42},
		{"prpc.stream.ends", withCode("Watch", 0, world), 44},
		{"prpc.stream.ends", withCode("Watch", int64(codes.Unavailable), world), 45},
		{"prpc.backend.calls", attrs(attribute.String("rpc.system", "grpc"), attribute.String("server.address", "10.0.0.1:50051"), world), 31},
		{"prpc.backend.failed", attrs(attribute.String("rpc.system", "grpc"), attribute.String("server.address", "10.0.0.1:50051"), world,
			attribute.Int64("rpc.grpc.status_code", int64(codes.Unavailable))), 32},
		{"prpc.backend.hedges_lost", attrs(attribute.String("rpc.system", "grpc"), attribute.String("server.address", "10.0.0.1:50051"), world), 33},
	}
	for _, c := range counts {
		require.Equal(t, c.want, counterValue(t, got[c.metric], c.attrs), c.metric)
		series := 1 // the stream method has no calls' series, the unary one no streams'
		switch c.metric {
		case "prpc.call.completed":
			series = 3 // codes 0, NotFound and DeadlineExceeded
		case "prpc.stream.messages":
			series = 4 // the outcomes
		case "prpc.stream.ends":
			series = 2 // codes 0 and Unavailable
		}
		require.Len(t, counters(t, got[c.metric]), series, c.metric)
	}
	reactorAttrs := attrs(world)
	gauges := map[string]float64{
		"prpc.calls.pending": 1, "prpc.calls.max_outstanding": 2, "prpc.calls.queued": 3, "prpc.calls.in_flight": 4,
		"prpc.calls.in_flight_limit": 5, "prpc.delivery.oldest_wait": 1.5,
	}
	for name, want := range gauges {
		require.Equal(t, want, gauge(t, got[name], reactorAttrs), name)
	}
	require.Equal(t, 43.0, gauge(t, got["prpc.streams.open"], methodAttrs("Watch", world)))
	require.Equal(t, 50.0, gauge(t, got["prpc.stream.messages_waiting"], methodAttrs("Watch", world)))
	hs := st.Methods["/game.Inventory/Get"].Histograms
	for name, h := range map[string]reactor.Histogram{
		"prpc.call.duration": hs.Latency, "prpc.call.queue_wait": hs.QueueWait, "prpc.call.transport": hs.Transport, "prpc.call.tick_wait": hs.TickWait,
	} {
		p := histogram(t, got[name], methodAttrs("Get", world))
		requireHistogramOf(t, h, p, name)
	}
	starts, ends := times(got)
	for i := range starts {
		require.Equal(t, start, starts[i])
		require.Equal(t, now, ends[i])
	}
}

// TestLoopMapping checks that each loop metric reports the field of loop.Stats that
// docs/metrics.md names for it, and the histogram TickDurations.
func TestLoopMapping(t *testing.T) {
	st := loop.Stats{Ticks: 41, Overruns: 42, Skipped: 43, Delivered: 44, Wakeups: 45, Drained: 46}
	h := hist(500)
	start, now := epoch, epoch.Add(time.Minute)
	got := byName(t, otelprpc.LoopMetrics("", start, now, st, h))
	requireSpec(t, got, loopSpec, "")
	require.Len(t, got, len(loopSpec), "a loop's metrics alone")
	empty := *attribute.EmptySet()
	for name, want := range map[string]int64{"prpc.loop.ticks": 41, "prpc.loop.overruns": 42, "prpc.loop.skipped": 43, "prpc.loop.delivered": 44} {
		require.Equal(t, want, counterValue(t, got[name], empty), name)
	}
	requireHistogramOf(t, h, histogram(t, got["prpc.loop.tick.duration"], empty), "tick duration")
}
