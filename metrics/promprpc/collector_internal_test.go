package promprpc

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// fixedSnapshots collects c's metrics from given snapshots instead of reading them.
type fixedSnapshots struct {
	c     *Collector
	name  string
	st    reactor.Stats
	loop  loop.Stats
	ticks reactor.Histogram
}

func (f *fixedSnapshots) Describe(ch chan<- *prometheus.Desc) { f.c.Describe(ch) }

func (f *fixedSnapshots) Collect(ch chan<- prometheus.Metric) {
	f.c.collectReactor(ch, f.name, &f.st)
	f.c.collectLoop(ch, &f.loop, &f.ticks)
}

// Every field of the snapshots goes to its own metric: each has a distinct value here, so a
// field exported under another's name, or not at all, fails the comparison. Histograms are
// cumulated, with the bounds as le and the sum in seconds.
func TestCollectMapsEveryField(t *testing.T) {
	r := reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{})
	l, err := loop.New(loop.Config{})
	require.NoError(t, err)
	hist := func(counts ...uint64) reactor.Histogram {
		var n uint64
		for _, c := range counts {
			n += c
		}
		return reactor.Histogram{Bounds: []float64{0.001, 0.01}, Counts: counts, Count: n, Sum: 1500 * time.Millisecond}
	}
	f := &fixedSnapshots{
		c:    NewCollector(WithNamedReactor("players", r), WithLoop(l), WithBackends()),
		name: "players",
		st: reactor.Stats{
			Pending: 1, MaxOutstanding: 2, Queued: 3, InFlight: 4, InFlightLimit: 5,
			OldestUndelivered: 6 * time.Millisecond,
			Methods: map[string]reactor.MethodStats{
				"/game.v1.Players/Get": {
					Submitted: 101, Succeeded: 11,
					// A failure counted under OK would repeat the successes' series: it joins them.
					Failed:   map[codes.Code]uint64{codes.NotFound: 12, codes.DeadlineExceeded: 13, codes.OK: 7},
					TimedOut: 21, Overloaded: 22, Cancelled: 23, Closed: 24, Shed: 25, NeverSent: 26,
					Coalesced: 27, Hedges: 28, HedgesWon: 29, HedgesLost: 30,
					Histograms: reactor.Histograms{
						Latency: hist(1, 2, 3), QueueWait: hist(4, 0, 0), Transport: hist(0, 5, 0), TickWait: hist(0, 0, 6),
					},
				},
				// A stream method: its stream metrics, none of the calls'.
				"/game.v1.Players/Watch": {
					Streams: reactor.StreamStats{
						Opened: 61, Reopened: 62, Open: 63, Ended: map[codes.Code]uint64{codes.OK: 64, codes.Unavailable: 65},
						Received: 66, Delivered: 67, Replaced: 68, Discarded: 69, Waiting: 70, Stalls: 71, Sent: 72, Unsent: 73,
					},
				},
			},
			Backends: []reactor.BackendStats{
				{Addr: "10.0.0.1:443", Calls: 41, Failed: map[codes.Code]uint64{codes.Unavailable: 42}, HedgesLost: 43},
				{Addr: reactor.RemovedBackendsAddr, Calls: 44, HedgesLost: 45},
			},
		},
		loop: loop.Stats{Ticks: 51, Overruns: 52, Skipped: 53, Delivered: 54, Wakeups: 55, Drained: 56},
		ticks: reactor.Histogram{
			Bounds: []float64{0.05}, Counts: []uint64{7, 8}, Count: 15, Sum: 2 * time.Second,
		},
	}
	// Labels in the registry's order, by name.
	const m = `prpc_reactor="players",rpc_method="Get",rpc_service="game.v1.Players",rpc_system="grpc"`
	const mc = `prpc_reactor="players",rpc_grpc_status_code="%s",rpc_method="Get",rpc_service="game.v1.Players",rpc_system="grpc"`
	const w = `prpc_reactor="players",rpc_method="Watch",rpc_service="game.v1.Players",rpc_system="grpc"`
	const wc = `prpc_reactor="players",rpc_grpc_status_code="%s",rpc_method="Watch",rpc_service="game.v1.Players",rpc_system="grpc"`
	const wo = `outcome="%s",prpc_reactor="players",rpc_method="Watch",rpc_service="game.v1.Players",rpc_system="grpc"`
	const r1 = `prpc_reactor="players",server_address="10.0.0.1:443"`
	const r2 = `prpc_reactor="players",server_address="(removed)"`
	want := `
# HELP prpc_calls_pending Calls admitted and not yet delivered by Tick.
# TYPE prpc_calls_pending gauge
prpc_calls_pending{prpc_reactor="players"} 1
# HELP prpc_calls_max_outstanding The bound on pending calls (MaxOutstanding): a call beyond it is overloaded.
# TYPE prpc_calls_max_outstanding gauge
prpc_calls_max_outstanding{prpc_reactor="players"} 2
# HELP prpc_calls_queued Admitted calls waiting for a free lane.
# TYPE prpc_calls_queued gauge
prpc_calls_queued{prpc_reactor="players"} 3
# HELP prpc_calls_in_flight Calls a lane has taken whose outcome is not yet queued for Tick.
# TYPE prpc_calls_in_flight gauge
prpc_calls_in_flight{prpc_reactor="players"} 4
# HELP prpc_calls_in_flight_limit The adaptive limit on the calls lanes run at once (0 when it is disabled).
# TYPE prpc_calls_in_flight_limit gauge
prpc_calls_in_flight_limit{prpc_reactor="players"} 5
# HELP prpc_delivery_oldest_wait_seconds How long the oldest outcome waiting for Tick has waited (0 when none waits).
# TYPE prpc_delivery_oldest_wait_seconds gauge
prpc_delivery_oldest_wait_seconds{prpc_reactor="players"} 0.006
# HELP prpc_call_duration_seconds Time from a call's submission to its delivery by Tick, the wait for Tick included, of the calls delivered.
# TYPE prpc_call_duration_seconds histogram
prpc_call_duration_seconds_bucket{` + m + `,le="0.001"} 1
prpc_call_duration_seconds_bucket{` + m + `,le="0.01"} 3
prpc_call_duration_seconds_bucket{` + m + `,le="+Inf"} 6
prpc_call_duration_seconds_sum{` + m + `} 1.5
prpc_call_duration_seconds_count{` + m + `} 6
# HELP prpc_call_queue_wait_seconds Time from a call's submission until a lane took it, or until prpc settled it if no lane did.
# TYPE prpc_call_queue_wait_seconds histogram
prpc_call_queue_wait_seconds_bucket{` + m + `,le="0.001"} 4
prpc_call_queue_wait_seconds_bucket{` + m + `,le="0.01"} 4
prpc_call_queue_wait_seconds_bucket{` + m + `,le="+Inf"} 4
prpc_call_queue_wait_seconds_sum{` + m + `} 1.5
prpc_call_queue_wait_seconds_count{` + m + `} 4
# HELP prpc_call_transport_seconds Time from a lane taking a call until its outcome was queued for Tick, for the calls that reached gRPC.
# TYPE prpc_call_transport_seconds histogram
prpc_call_transport_seconds_bucket{` + m + `,le="0.001"} 0
prpc_call_transport_seconds_bucket{` + m + `,le="0.01"} 5
prpc_call_transport_seconds_bucket{` + m + `,le="+Inf"} 5
prpc_call_transport_seconds_sum{` + m + `} 1.5
prpc_call_transport_seconds_count{` + m + `} 5
# HELP prpc_call_tick_wait_seconds Time from a call's outcome being queued for Tick until Tick delivered it: the game loop's share of the latency.
# TYPE prpc_call_tick_wait_seconds histogram
prpc_call_tick_wait_seconds_bucket{` + m + `,le="0.001"} 0
prpc_call_tick_wait_seconds_bucket{` + m + `,le="0.01"} 0
prpc_call_tick_wait_seconds_bucket{` + m + `,le="+Inf"} 6
prpc_call_tick_wait_seconds_sum{` + m + `} 1.5
prpc_call_tick_wait_seconds_count{` + m + `} 6
# HELP prpc_call_submitted_total Calls submitted, rejected ones included.
# TYPE prpc_call_submitted_total counter
prpc_call_submitted_total{` + m + `} 101
# HELP prpc_call_completed_total Calls settled and delivered, or rejected at submission, by gRPC status code (0 for a response).
# TYPE prpc_call_completed_total counter
prpc_call_completed_total{` + fmt.Sprintf(mc, "0") + `} 18
prpc_call_completed_total{` + fmt.Sprintf(mc, "4") + `} 13
prpc_call_completed_total{` + fmt.Sprintf(mc, "5") + `} 12
# HELP prpc_call_timed_out_total Calls failed because their deadline passed (ErrTimeout).
# TYPE prpc_call_timed_out_total counter
prpc_call_timed_out_total{` + m + `} 21
# HELP prpc_call_overloaded_total Calls rejected at submission because MaxOutstanding calls were outstanding (ErrOverloaded).
# TYPE prpc_call_overloaded_total counter
prpc_call_overloaded_total{` + m + `} 22
# HELP prpc_call_cancelled_total Calls failed because they were cancelled (ErrCancelled).
# TYPE prpc_call_cancelled_total counter
prpc_call_cancelled_total{` + m + `} 23
# HELP prpc_call_closed_total Calls failed because the reactor closed (ErrClosed).
# TYPE prpc_call_closed_total counter
prpc_call_closed_total{` + m + `} 24
# HELP prpc_call_shed_total Calls a lane did not send because they could no longer finish in time (ErrShed).
# TYPE prpc_call_shed_total counter
prpc_call_shed_total{` + m + `} 25
# HELP prpc_call_never_sent_total Failed calls that never reached gRPC.
# TYPE prpc_call_never_sent_total counter
prpc_call_never_sent_total{` + m + `} 26
# HELP prpc_call_coalesced_total Calls that joined another call's transport call instead of sending their own.
# TYPE prpc_call_coalesced_total counter
prpc_call_coalesced_total{` + m + `} 27
# HELP prpc_hedge_sent_total Attempts of calls sent after the first (hedges).
# TYPE prpc_hedge_sent_total counter
prpc_hedge_sent_total{` + m + `} 28
# HELP prpc_hedge_won_total Calls that a hedge's response settled, before the first attempt's.
# TYPE prpc_hedge_won_total counter
prpc_hedge_won_total{` + m + `} 29
# HELP prpc_hedge_lost_total Attempts cancelled because another attempt of the same call decided it first.
# TYPE prpc_hedge_lost_total counter
prpc_hedge_lost_total{` + m + `} 30
# HELP prpc_streams_open Streams opened whose end Tick has not delivered yet.
# TYPE prpc_streams_open gauge
prpc_streams_open{` + w + `} 63
# HELP prpc_stream_messages_waiting Stream messages received and waiting for Tick.
# TYPE prpc_stream_messages_waiting gauge
prpc_stream_messages_waiting{` + w + `} 70
# HELP prpc_stream_messages_total Stream messages by outcome: received, and then delivered to OnMessage, replaced by a newer one (KeepLatest) or discarded because the stream was stopped.
# TYPE prpc_stream_messages_total counter
prpc_stream_messages_total{` + fmt.Sprintf(wo, "received") + `} 66
prpc_stream_messages_total{` + fmt.Sprintf(wo, "delivered") + `} 67
prpc_stream_messages_total{` + fmt.Sprintf(wo, "replaced") + `} 68
prpc_stream_messages_total{` + fmt.Sprintf(wo, "discarded") + `} 69
# HELP prpc_stream_stalls_total Times a stream's receiver stopped reading because MaxWaiting messages waited for Tick.
# TYPE prpc_stream_stalls_total counter
prpc_stream_stalls_total{` + w + `} 71
# HELP prpc_stream_reopens_total Reopenings of streams ended by a transient code (resubscription).
# TYPE prpc_stream_reopens_total counter
prpc_stream_reopens_total{` + w + `} 62
# HELP prpc_stream_ends_total Stream ends delivered by Tick, refusals at open included, by gRPC status code (0 for OK).
# TYPE prpc_stream_ends_total counter
prpc_stream_ends_total{` + fmt.Sprintf(wc, "0") + `} 64
prpc_stream_ends_total{` + fmt.Sprintf(wc, "14") + `} 65
# HELP prpc_backend_calls_total Transport calls that got a connection to the backend.
# TYPE prpc_backend_calls_total counter
prpc_backend_calls_total{` + r1 + `} 41
prpc_backend_calls_total{` + r2 + `} 44
# HELP prpc_backend_failed_total Transport calls to the backend that failed, by gRPC status code.
# TYPE prpc_backend_failed_total counter
prpc_backend_failed_total{prpc_reactor="players",rpc_grpc_status_code="14",server_address="10.0.0.1:443"} 42
# HELP prpc_backend_hedges_lost_total Attempts of hedged calls to the backend cancelled because another attempt decided the call first.
# TYPE prpc_backend_hedges_lost_total counter
prpc_backend_hedges_lost_total{` + r1 + `} 43
prpc_backend_hedges_lost_total{` + r2 + `} 45
# HELP prpc_loop_tick_duration_seconds Duration of the loop's ticks: OnTick and every reactor's Tick.
# TYPE prpc_loop_tick_duration_seconds histogram
prpc_loop_tick_duration_seconds_bucket{le="0.05"} 7
prpc_loop_tick_duration_seconds_bucket{le="+Inf"} 15
prpc_loop_tick_duration_seconds_sum 2
prpc_loop_tick_duration_seconds_count 15
# HELP prpc_loop_ticks_total Ticks the loop ran.
# TYPE prpc_loop_ticks_total counter
prpc_loop_ticks_total 51
# HELP prpc_loop_overruns_total Ticks that ended after the next tick's due time.
# TYPE prpc_loop_overruns_total counter
prpc_loop_overruns_total 52
# HELP prpc_loop_skipped_total Due times passed over because ticks ran late.
# TYPE prpc_loop_skipped_total counter
prpc_loop_skipped_total 53
# HELP prpc_loop_delivered_total Calls the loop's Ticks delivered, in ticks and wake-ups.
# TYPE prpc_loop_delivered_total counter
prpc_loop_delivered_total 54
`
	require.NoError(t, testutil.CollectAndCompare(f, strings.NewReader(want)))
}

func TestSplitPath(t *testing.T) {
	for _, tt := range []struct{ path, service, method string }{
		{"/game.v1.Players/Get", "game.v1.Players", "Get"},
		{"/Players/Get", "Players", "Get"},
		{"game.v1.Players/Get", "game.v1.Players", "Get"},
		{"/Get", "", "Get"},
		{"Get", "", "Get"},
	} {
		service, method := splitPath(tt.path)
		require.Equal(t, tt.service, service, tt.path)
		require.Equal(t, tt.method, method, tt.path)
	}
}
