package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"github.com/trixnew/prpc/internal/logline"
	"github.com/trixnew/prpc/reactor"
)

// TestStatsLogValue checks the exact record a logger writes for a Stats, through the text and
// the JSON handler: the group of headline figures, not the breakdowns.
func TestStatsLogValue(t *testing.T) {
	full := reactor.Stats{
		Pending: 3, Queued: 1, InFlight: 2,
		Invokers:   []reactor.InvokerStats{{Load: 2, State: reactor.InvokerBusy}},
		State:      connectivity.Ready,
		StateKnown: true,
		Submitted:  120, Succeeded: 110,
		Failed:   map[codes.Code]uint64{codes.Unavailable: 5, codes.DeadlineExceeded: 2, codes.NotFound: 0},
		TimedOut: 2, Overloaded: 1, Cancelled: 4, Closed: 0, NeverSent: 3,
		Latency:           reactor.Latency{Samples: 117, P50: 1200 * time.Microsecond, P95: 5 * time.Millisecond, P99: 8 * time.Millisecond, Max: time.Second},
		QueueWait:         reactor.Latency{Samples: 117, P50: time.Microsecond, P99: 2 * time.Millisecond, Max: 3 * time.Millisecond},
		Transport:         reactor.Latency{Samples: 100, P50: time.Millisecond, P99: 5 * time.Millisecond, Max: 6 * time.Millisecond},
		TickWait:          reactor.Latency{Samples: 117, P50: 200 * time.Microsecond, P99: time.Millisecond, Max: 50 * time.Millisecond},
		OldestUndelivered: 40 * time.Millisecond,
		Methods:           map[string]reactor.MethodStats{"/pkg.Svc/M": {Submitted: 120}},
		Backends:          []reactor.BackendStats{{Addr: "10.0.0.1:443"}},
		LastConnError:     "TLS handshake failed",
	}
	tests := []struct {
		name       string
		stats      reactor.Stats
		text, json string
	}{
		{
			name:  "every figure",
			stats: full,
			text: `level=INFO msg=prpc stats.pending=3 stats.queued=1 stats.in_flight=2 stats.submitted=120 stats.succeeded=110 ` +
				`stats.failed.total=7 stats.failed.DeadlineExceeded=2 stats.failed.Unavailable=5 ` +
				`stats.timed_out=2 stats.overloaded=1 stats.cancelled=4 stats.closed=0 stats.never_sent=3 ` +
				`stats.latency.p50=1.2ms stats.latency.p99=8ms stats.latency.queue_wait_p99=2ms ` +
				`stats.latency.transport_p99=5ms stats.latency.tick_wait_p99=1ms stats.oldest_undelivered=40ms stats.state=READY` + "\n",
			json: `{"level":"INFO","msg":"prpc","stats":{"pending":3,"queued":1,"in_flight":2,"submitted":120,"succeeded":110,` +
				`"failed":{"total":7,"DeadlineExceeded":2,"Unavailable":5},` +
				`"timed_out":2,"overloaded":1,"cancelled":4,"closed":0,"never_sent":3,` +
				`"latency":{"p50":1200000,"p99":8000000,"queue_wait_p99":2000000,"transport_p99":5000000,"tick_wait_p99":1000000},` +
				`"oldest_undelivered":40000000,"state":"READY"}}` + "\n",
		},
		{
			name:  "after a shutdown",
			stats: reactor.Stats{Submitted: 3, Succeeded: 2, Closed: 1, Failed: map[codes.Code]uint64{codes.Canceled: 1}, Drained: 2, CutOff: 1},
			text: `level=INFO msg=prpc stats.pending=0 stats.queued=0 stats.in_flight=0 stats.submitted=3 stats.succeeded=2 ` +
				`stats.failed.total=1 stats.failed.Canceled=1 stats.timed_out=0 stats.overloaded=0 stats.cancelled=0 stats.closed=1 ` +
				`stats.never_sent=0 stats.latency.p50=0s stats.latency.p99=0s stats.latency.queue_wait_p99=0s ` +
				`stats.latency.transport_p99=0s stats.latency.tick_wait_p99=0s stats.oldest_undelivered=0s stats.drained=2 stats.cut_off=1` + "\n",
			json: `{"level":"INFO","msg":"prpc","stats":{"pending":0,"queued":0,"in_flight":0,"submitted":3,"succeeded":2,` +
				`"failed":{"total":1,"Canceled":1},"timed_out":0,"overloaded":0,"cancelled":0,"closed":1,"never_sent":0,` +
				`"latency":{"p50":0,"p99":0,"queue_wait_p99":0,"transport_p99":0,"tick_wait_p99":0},"oldest_undelivered":0,` +
				`"drained":2,"cut_off":1}}` + "\n",
		},
		{
			name:  "streams",
			stats: reactor.Stats{StreamsOpen: 2, MessagesWaiting: 5, Drained: 1},
			text: `level=INFO msg=prpc stats.pending=0 stats.queued=0 stats.in_flight=0 stats.submitted=0 stats.succeeded=0 ` +
				`stats.failed.total=0 stats.timed_out=0 stats.overloaded=0 stats.cancelled=0 stats.closed=0 stats.never_sent=0 ` +
				`stats.latency.p50=0s stats.latency.p99=0s stats.latency.queue_wait_p99=0s ` +
				`stats.latency.transport_p99=0s stats.latency.tick_wait_p99=0s stats.oldest_undelivered=0s ` +
				`stats.streams_open=2 stats.messages_waiting=5 stats.drained=1` + "\n",
			json: `{"level":"INFO","msg":"prpc","stats":{"pending":0,"queued":0,"in_flight":0,"submitted":0,"succeeded":0,` +
				`"failed":{"total":0},"timed_out":0,"overloaded":0,"cancelled":0,"closed":0,"never_sent":0,` +
				`"latency":{"p50":0,"p99":0,"queue_wait_p99":0,"transport_p99":0,"tick_wait_p99":0},"oldest_undelivered":0,` +
				`"streams_open":2,"messages_waiting":5,"drained":1}}` + "\n",
		},
		{
			name:  "zero, state unknown",
			stats: reactor.Stats{},
			text: `level=INFO msg=prpc stats.pending=0 stats.queued=0 stats.in_flight=0 stats.submitted=0 stats.succeeded=0 ` +
				`stats.failed.total=0 stats.timed_out=0 stats.overloaded=0 stats.cancelled=0 stats.closed=0 stats.never_sent=0 ` +
				`stats.latency.p50=0s stats.latency.p99=0s stats.latency.queue_wait_p99=0s ` +
				`stats.latency.transport_p99=0s stats.latency.tick_wait_p99=0s stats.oldest_undelivered=0s` + "\n",
			json: `{"level":"INFO","msg":"prpc","stats":{"pending":0,"queued":0,"in_flight":0,"submitted":0,"succeeded":0,` +
				`"failed":{"total":0},"timed_out":0,"overloaded":0,"cancelled":0,"closed":0,"never_sent":0,` +
				`"latency":{"p50":0,"p99":0,"queue_wait_p99":0,"transport_p99":0,"tick_wait_p99":0},"oldest_undelivered":0}}` + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.text, logline.Text("prpc", "stats", tc.stats))
			require.Equal(t, tc.json, logline.JSON("prpc", "stats", &tc.stats))
		})
	}
}
