package promprpc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/metrics/promprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	echo  = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")
)

// a66Bounds are the upper bounds of gRPC's latency buckets (gRFC A66), in seconds, written
// out here so that the tests check the le labels the reactor's buckets give, not only their
// number.
var a66Bounds = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002,
	0.003, 0.004, 0.005, 0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065,
	0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}

// wantHistogram returns the exposition text of a histogram named name, with HELP text help and
// labels (`a="x",b="y"`, or empty), that counted the durations ds: its cumulative le buckets,
// sum and count.
func wantHistogram(name, help, labels string, ds ...time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	sep := ""
	if labels != "" {
		sep = ","
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	for _, le := range a66Bounds {
		n := 0
		for _, d := range ds {
			if d.Seconds() <= le {
				n++
			}
		}
		fmt.Fprintf(&b, "%s_bucket{%s%sle=\"%g\"} %d\n", name, labels, sep, le, n)
	}
	fmt.Fprintf(&b, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, len(ds))
	fmt.Fprintf(&b, "%s_sum{%s} %g\n%s_count{%s} %d\n", name, labels, sum.Seconds(), name, labels, len(ds))
	return b.String()
}

// The HELP texts of the collector's histograms.
const (
	helpDuration  = "Time from a call's submission to its delivery by Tick, the wait for Tick included, of the calls delivered."
	helpQueueWait = "Time from a call's submission until a lane took it, or until prpc settled it if no lane did."
	helpTransport = "Time from a lane taking a call until its outcome was queued for Tick, for the calls that reached gRPC."
	helpTickWait  = "Time from a call's outcome being queued for Tick until Tick delivered it: the game loop's share of the latency."
	helpTicks     = "Duration of the loop's ticks: OnTick and every reactor's Tick."
)

// gaugeHelp are the HELP texts of the collector's gauges.
var gaugeHelp = map[string]string{
	"prpc_calls_pending":                "Calls admitted and not yet delivered by Tick.",
	"prpc_calls_max_outstanding":        "The bound on pending calls (MaxOutstanding): a call beyond it is overloaded.",
	"prpc_calls_queued":                 "Admitted calls waiting for a free lane.",
	"prpc_calls_in_flight":              "Calls a lane has taken whose outcome is not yet queued for Tick.",
	"prpc_calls_in_flight_limit":        "The adaptive limit on the calls lanes run at once (0 when it is disabled).",
	"prpc_delivery_oldest_wait_seconds": "How long the oldest outcome waiting for Tick has waited (0 when none waits).",
}

// gauge is the exposition text of a gauge without labels.
func gauge(name string, v float64) string {
	return fmt.Sprintf("# HELP %s %s\n# TYPE %s gauge\n%s %g\n", name, gaugeHelp[name], name, name, v)
}

// reactorGauges is the exposition text of a reactor's gauges, without labels, but for
// prpc_calls_in_flight.
func reactorGauges(pending, maxOutstanding, queued, inFlightLimit int, oldestWait float64) string {
	return gauge("prpc_calls_pending", float64(pending)) +
		gauge("prpc_calls_max_outstanding", float64(maxOutstanding)) +
		gauge("prpc_calls_queued", float64(queued)) +
		gauge("prpc_calls_in_flight_limit", float64(inFlightLimit)) +
		gauge("prpc_delivery_oldest_wait_seconds", oldestWait)
}

// compare checks that c exports exactly the families of want among names (every family c
// exports if names is empty).
func compare(t *testing.T, c *promprpc.Collector, want string, names ...string) {
	t.Helper()
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), names...))
}

// Known calls on an in-memory backend with a manual clock, so that every latency is exact: a
// timeout, an overload, two successes and a NotFound. The collector exports their counts by
// outcome and their latencies, by phase, in the reactor's buckets; the gauges read at each
// scrape show the calls outstanding.
func TestCollectorCalls(t *testing.T) {
	clock := reactortest.NewManualClock(epoch)
	held, release := make(chan struct{}, 1), make(chan struct{})
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		switch req.GetMessage() {
		case "ok":
			clock.Advance(3 * time.Millisecond) // the transport takes 3 ms
			return &testpb.EchoResponse{}, nil
		case "missing":
			return nil, status.Error(codes.NotFound, "no such player")
		default: // "hold": until the deadline, on the manual clock
			held <- struct{}{}
			select {
			case <-ctx.Done():
			case <-release: // the test failed: do not hold up closing the reactor
			}
			return nil, ctx.Err()
		}
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: clock, MaxOutstanding: 1})
	t.Cleanup(func() { close(release) }) // runs before the reactor is closed
	c := promprpc.NewCollector(promprpc.WithReactor(r))
	gauges := []string{"prpc_calls_pending", "prpc_calls_max_outstanding", "prpc_calls_queued",
		"prpc_calls_in_flight", "prpc_calls_in_flight_limit", "prpc_delivery_oldest_wait_seconds"}
	compare(t, c, reactorGauges(0, 1, 0, 32, 0)+gauge("prpc_calls_in_flight", 0), gauges...)
	// No method has been called: no per-method series.
	compare(t, c, "", "prpc_call_submitted_total", "prpc_call_duration_seconds")

	// A call the backend holds past its deadline, and one more, overloaded meanwhile. This is
	// the reactor's first call, so that InFlight is exact: a lane leaves InFlight just after
	// its call is delivered, so a call before it might still count there.
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "hold"}, &calls.Options{Timeout: 2 * time.Second})
	<-held // a lane sent it
	compare(t, c, reactorGauges(1, 1, 0, 32, 0)+gauge("prpc_calls_in_flight", 1), gauges...)
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "overloaded"}, nil)
	require.NoError(t, clock.WaitTimerBy(t.Context(), clock.Now().Add(2*time.Second)))
	clock.Advance(2 * time.Second)
	reactortest.Flush(t, r)
	select {
	case <-r.Ready(): // a wake-up Flush did not need to wait for: every call is delivered
	default:
	}

	// Two successes: 3 ms of transport, then 20 ms until the Tick that delivers them.
	for i := range 2 {
		reactor.Call(r, echo, &testpb.EchoRequest{Message: "ok"}, nil)
		<-r.Ready() // the outcome is queued for Tick
		clock.Advance(20 * time.Millisecond)
		if i == 0 {
			compare(t, c, gauge("prpc_calls_pending", 1)+gauge("prpc_delivery_oldest_wait_seconds", 0.02),
				"prpc_calls_pending", "prpc_delivery_oldest_wait_seconds")
		}
		reactortest.Flush(t, r)
	}
	// NotFound, at once.
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "missing"}, nil)
	reactortest.Flush(t, r)

	const l = `rpc_method="Echo",rpc_service="prpctest.TestService",rpc_system="grpc"`
	counter := func(name, help string, v int) string {
		return fmt.Sprintf("# HELP %s %s\n# TYPE %s counter\n%s{%s} %d\n", name, help, name, name, l, v)
	}
	ok := 23 * time.Millisecond
	// The adaptive limit has reacted to the timeout: its value is the reactor's business, its
	// export was checked above.
	limit := r.Stats().InFlightLimit
	want := reactorGauges(0, 1, 0, limit, 0) +
		wantHistogram("prpc_call_duration_seconds", helpDuration, l, 2*time.Second, ok, ok, 0) +
		wantHistogram("prpc_call_queue_wait_seconds", helpQueueWait, l, 0, 0, 0, 0) +
		wantHistogram("prpc_call_transport_seconds", helpTransport, l, 2*time.Second, 3*time.Millisecond, 3*time.Millisecond, 0) +
		wantHistogram("prpc_call_tick_wait_seconds", helpTickWait, l, 0, 20*time.Millisecond, 20*time.Millisecond, 0) +
		counter("prpc_call_submitted_total", "Calls submitted, rejected ones included.", 5) +
		`# HELP prpc_call_completed_total Calls settled and delivered, or rejected at submission, by gRPC status code (0 for a response).
# TYPE prpc_call_completed_total counter
prpc_call_completed_total{rpc_grpc_status_code="0",` + l + `} 2
prpc_call_completed_total{rpc_grpc_status_code="4",` + l + `} 1
prpc_call_completed_total{rpc_grpc_status_code="5",` + l + `} 1
prpc_call_completed_total{rpc_grpc_status_code="8",` + l + `} 1
` +
		counter("prpc_call_timed_out_total", "Calls failed because their deadline passed (ErrTimeout).", 1) +
		counter("prpc_call_overloaded_total", "Calls rejected at submission because MaxOutstanding calls were outstanding (ErrOverloaded).", 1) +
		counter("prpc_call_cancelled_total", "Calls failed because they were cancelled (ErrCancelled).", 0) +
		counter("prpc_call_closed_total", "Calls failed because the reactor closed (ErrClosed).", 0) +
		counter("prpc_call_shed_total", "Calls a lane did not send because they could no longer finish in time (ErrShed).", 0) +
		counter("prpc_call_never_sent_total", "Failed calls that never reached gRPC.", 1) +
		counter("prpc_call_coalesced_total", "Calls that joined another call's transport call instead of sending their own.", 0) +
		counter("prpc_hedge_sent_total", "Attempts of calls sent after the first (hedges).", 0) +
		counter("prpc_hedge_won_total", "Calls that a hedge's response settled, before the first attempt's.", 0) +
		counter("prpc_hedge_lost_total", "Attempts cancelled because another attempt of the same call decided it first.", 0)
	// Every family (but prpc_calls_in_flight: the lane of the last call may not have left
	// it yet), and nothing else: no loop, no backends.
	var names []string
	for _, n := range specNames {
		if !strings.HasPrefix(n, "prpc_loop_") && !strings.HasPrefix(n, "prpc_backend_") && n != "prpc_calls_in_flight" {
			names = append(names, n)
		}
	}
	compare(t, c, want, names...)
	require.ElementsMatch(t, append(names, "prpc_calls_in_flight"), gather(t, c))
}

// gather returns the names of the families c exports.
func gather(t *testing.T, c *promprpc.Collector) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range families {
		names = append(names, mf.GetName())
	}
	return names
}

// Streams on an in-memory backend: a stream whose host does not tick holds MaxWaiting
// messages and stalls; once it is delivered, its messages and its OK end are counted, beside
// a stream refused at open; a stream method has none of the calls' series.
func TestCollectorStreams(t *testing.T) {
	const path = "/game.v1.Feed/Watch"
	feed := calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse](path)
	b := reactortest.NewBackend()
	reactortest.HandleStream(b, feed, func(_ context.Context, req *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
		for range 3 {
			if err := send(&testpb.EchoResponse{Message: req.GetMessage()}); err != nil {
				return err
			}
		}
		return nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: reactortest.NewManualClock(epoch)})
	c := promprpc.NewCollector(promprpc.WithReactor(r))
	ended := 0
	h := calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
		OnMessage: func(*testpb.EchoResponse) {},
		OnEnd:     func(error) { ended++ },
	}
	reactor.Watch(r, feed, &testpb.WatchRequest{Message: "m"}, &calls.StreamOptions{MaxWaiting: 2}, h)
	require.Eventually(t, func() bool { return r.Stats().Methods[path].Streams.Stalls == 1 }, 10*time.Second, time.Millisecond,
		"the ring of 2 is full and the receiver waits")

	const m = `rpc_method="Watch",rpc_service="game.v1.Feed",rpc_system="grpc"`
	families := []string{"prpc_streams_open", "prpc_stream_messages_waiting", "prpc_stream_messages_total",
		"prpc_stream_stalls_total", "prpc_stream_reopens_total", "prpc_stream_ends_total",
		"prpc_call_submitted_total", "prpc_call_duration_seconds"}
	messages := func(received, delivered int) string {
		return fmt.Sprintf(`# HELP prpc_stream_messages_total Stream messages by outcome: received, and then delivered to OnMessage, replaced by a newer one (KeepLatest) or discarded because the stream was stopped.
# TYPE prpc_stream_messages_total counter
prpc_stream_messages_total{outcome="received",`+m+`} %d
prpc_stream_messages_total{outcome="delivered",`+m+`} %d
prpc_stream_messages_total{outcome="replaced",`+m+`} 0
prpc_stream_messages_total{outcome="discarded",`+m+`} 0
`, received, delivered)
	}
	gauges := func(open, waiting int) string {
		return fmt.Sprintf(`# HELP prpc_streams_open Streams opened whose end Tick has not delivered yet.
# TYPE prpc_streams_open gauge
prpc_streams_open{`+m+`} %d
# HELP prpc_stream_messages_waiting Stream messages received and waiting for Tick.
# TYPE prpc_stream_messages_waiting gauge
prpc_stream_messages_waiting{`+m+`} %d
`, open, waiting)
	}
	const reopens = `# HELP prpc_stream_reopens_total Reopenings of streams ended by a transient code (resubscription).
# TYPE prpc_stream_reopens_total counter
prpc_stream_reopens_total{` + m + `} 0
`
	const endsHelp = `# HELP prpc_stream_ends_total Stream ends delivered by Tick, refusals at open included, by gRPC status code (0 for OK).
# TYPE prpc_stream_ends_total counter
`
	compare(t, c, gauges(1, 2)+messages(2, 0)+reopens+endsHelp+`prpc_stream_ends_total{rpc_grpc_status_code="0",`+m+`} 0
# HELP prpc_stream_stalls_total Times a stream's receiver stopped reading because MaxWaiting messages waited for Tick.
# TYPE prpc_stream_stalls_total counter
prpc_stream_stalls_total{`+m+`} 1
`, families...)

	reactor.Watch(r, feed, (*testpb.WatchRequest)(nil), nil, h) // refused: InvalidArgument
	for ended < 2 {
		select {
		case <-r.Ready():
		case <-time.After(10 * time.Second):
			t.Fatal("the ends are not delivered")
		}
		r.Tick(time.Second)
	}
	compare(t, c, gauges(0, 0)+messages(3, 3)+reopens+endsHelp+
		`prpc_stream_ends_total{rpc_grpc_status_code="0",`+m+`} 1
prpc_stream_ends_total{rpc_grpc_status_code="3",`+m+`} 1
`, "prpc_streams_open", "prpc_stream_messages_waiting", "prpc_stream_messages_total", "prpc_stream_reopens_total", "prpc_stream_ends_total")
}

// A loop's ticks on a manual clock, so that every duration is exact: 50, 70, 30, 230 and
// 10 ms at 20 TPS. The second and fourth end after the next tick's due time (overruns), and
// the fourth, ending 380 ms in, passes over the due times at 200, 250 and 300 ms (skipped).
func TestCollectorLoop(t *testing.T) {
	clock := reactortest.NewManualClock(epoch)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	durations := []time.Duration{50 * time.Millisecond, 70 * time.Millisecond, 30 * time.Millisecond, 230 * time.Millisecond, 10 * time.Millisecond}
	l, err := loop.New(loop.Config{TPS: 20, Clock: clock, OnTick: func(n uint64) {
		clock.Advance(durations[n])
		if int(n) == len(durations)-1 {
			cancel()
		}
	}})
	require.NoError(t, err)
	c := promprpc.NewCollector(promprpc.WithLoop(l))
	require.NoError(t, l.Run(ctx))

	want := wantHistogram("prpc_loop_tick_duration_seconds", helpTicks, "", durations...) + `
# HELP prpc_loop_ticks_total Ticks the loop ran.
# TYPE prpc_loop_ticks_total counter
prpc_loop_ticks_total 5
# HELP prpc_loop_overruns_total Ticks that ended after the next tick's due time.
# TYPE prpc_loop_overruns_total counter
prpc_loop_overruns_total 2
# HELP prpc_loop_skipped_total Due times passed over because ticks ran late.
# TYPE prpc_loop_skipped_total counter
prpc_loop_skipped_total 3
# HELP prpc_loop_delivered_total Calls the loop's Ticks delivered, in ticks and wake-ups.
# TYPE prpc_loop_delivered_total counter
prpc_loop_delivered_total 0
`
	compare(t, c, want) // every family, and nothing else: no reactor
}

// Named reactors: each reactor's metrics carry its name, and a method path splits into the
// service's full name and the method's.
func TestCollectorNamedReactors(t *testing.T) {
	b := reactortest.NewBackend()
	get := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/game.v1.Players/Get")
	load := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/game.v1.World/Load")
	for _, m := range []*calls.Method[*testpb.EchoRequest, *testpb.EchoResponse]{get, load} {
		reactortest.Handle(b, m, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
			return &testpb.EchoResponse{}, nil
		})
	}
	players := reactortest.NewReactor(t, b, reactor.Config{MaxOutstanding: 100})
	world := reactortest.NewReactor(t, b, reactor.Config{MaxOutstanding: 200})
	reactor.Call(players, get, &testpb.EchoRequest{}, nil)
	reactor.Call(players, get, &testpb.EchoRequest{}, nil)
	reactor.Call(world, load, &testpb.EchoRequest{}, nil)
	reactortest.Flush(t, players)
	reactortest.Flush(t, world)

	c := promprpc.NewCollector(promprpc.WithNamedReactor("players", players), promprpc.WithNamedReactor("world", world))
	compare(t, c, `
# HELP prpc_call_completed_total Calls settled and delivered, or rejected at submission, by gRPC status code (0 for a response).
# TYPE prpc_call_completed_total counter
prpc_call_completed_total{prpc_reactor="players",rpc_grpc_status_code="0",rpc_method="Get",rpc_service="game.v1.Players",rpc_system="grpc"} 2
prpc_call_completed_total{prpc_reactor="world",rpc_grpc_status_code="0",rpc_method="Load",rpc_service="game.v1.World",rpc_system="grpc"} 1
# HELP prpc_calls_max_outstanding The bound on pending calls (MaxOutstanding): a call beyond it is overloaded.
# TYPE prpc_calls_max_outstanding gauge
prpc_calls_max_outstanding{prpc_reactor="players"} 100
prpc_calls_max_outstanding{prpc_reactor="world"} 200
`, "prpc_call_completed_total", "prpc_calls_max_outstanding")
}

// WithBackends exports the transport calls by backend address, failures by code.
func TestCollectorBackends(t *testing.T) {
	srv := testserver.Start(t)
	r, err := reactor.New(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(context.Background())) }()
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.NotFound)}, nil)
	reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.NotFound)}, nil)
	reactortest.Flush(t, r)

	c := promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithBackends())
	compare(t, c, fmt.Sprintf(`
# HELP prpc_backend_calls_total Transport calls that got a connection to the backend.
# TYPE prpc_backend_calls_total counter
prpc_backend_calls_total{server_address=%[1]q} 3
# HELP prpc_backend_failed_total Transport calls to the backend that failed, by gRPC status code.
# TYPE prpc_backend_failed_total counter
prpc_backend_failed_total{rpc_grpc_status_code="5",server_address=%[1]q} 2
# HELP prpc_backend_hedges_lost_total Attempts of hedged calls to the backend cancelled because another attempt decided the call first.
# TYPE prpc_backend_hedges_lost_total counter
prpc_backend_hedges_lost_total{server_address=%[1]q} 0
`, srv.Addr()), "prpc_backend_calls_total", "prpc_backend_failed_total", "prpc_backend_hedges_lost_total")

	// Without the option, none of them.
	require.Zero(t, testutil.CollectAndCount(promprpc.NewCollector(promprpc.WithReactor(r)),
		"prpc_backend_calls_total", "prpc_backend_failed_total", "prpc_backend_hedges_lost_total"))
}

// promlint finds nothing to say about the collector's metrics: names, units, suffixes, HELP.
func TestCollectorLint(t *testing.T) {
	srv := testserver.Start(t)
	r, err := reactor.New(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(context.Background())) }()
	reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.NotFound)}, nil)
	reactortest.Flush(t, r)
	watch := calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]("/prpctest.TestService/Watch")
	ended := false
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: 1}, nil, calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
		OnMessage: func(*testpb.EchoResponse) {}, OnEnd: func(error) { ended = true },
	})
	for !ended {
		select {
		case <-r.Ready():
		case <-time.After(10 * time.Second):
			t.Fatal("the stream did not end")
		}
		r.Tick(time.Second)
	}
	l, err := loop.New(loop.Config{})
	require.NoError(t, err)

	c := promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l), promprpc.WithBackends())
	require.ElementsMatch(t, append(specNames, streamNames...), gather(t, c), "every family is linted")
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// NewCollector panics on options it cannot export, saying why.
func TestNewCollectorMisuse(t *testing.T) {
	b := reactortest.NewBackend()
	r1 := reactortest.NewReactor(t, b, reactor.Config{})
	r2 := reactortest.NewReactor(t, b, reactor.Config{})
	l, err := loop.New(loop.Config{})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		opts []promprpc.Option
		want string
	}{
		{"nothing", nil, "promprpc: NewCollector with no reactor and no loop"},
		{"only backends", []promprpc.Option{promprpc.WithBackends()}, "promprpc: NewCollector with no reactor and no loop"},
		{"nil reactor", []promprpc.Option{promprpc.WithReactor(nil)}, "promprpc: a nil *reactor.Reactor"},
		{"nil loop", []promprpc.Option{promprpc.WithLoop(nil)}, "promprpc: WithLoop with a nil *loop.Loop"},
		{"two loops", []promprpc.Option{promprpc.WithLoop(l), promprpc.WithLoop(l)}, "promprpc: NewCollector with more than one loop"},
		{"two unnamed", []promprpc.Option{promprpc.WithReactor(r1), promprpc.WithReactor(r2)}, "promprpc: several reactors, not all named"},
		{"named and unnamed", []promprpc.Option{promprpc.WithNamedReactor("a", r1), promprpc.WithReactor(r2)}, "promprpc: several reactors, not all named"},
		{"same reactor", []promprpc.Option{promprpc.WithNamedReactor("a", r1), promprpc.WithNamedReactor("b", r1)}, "promprpc: the same reactor given twice"},
		{"same name", []promprpc.Option{promprpc.WithNamedReactor("a", r1), promprpc.WithNamedReactor("a", r2)}, `promprpc: two reactors named "a"`},
		{"empty name", []promprpc.Option{promprpc.WithNamedReactor("", r1)}, "promprpc: WithNamedReactor with an empty name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				v := recover()
				require.NotNil(t, v, "NewCollector did not panic")
				require.True(t, strings.HasPrefix(fmt.Sprint(v), tt.want), "panic %q, want it to start %q", v, tt.want)
			}()
			promprpc.NewCollector(tt.opts...)
		})
	}
	// The valid forms do not panic.
	promprpc.NewCollector(promprpc.WithReactor(r1))
	promprpc.NewCollector(promprpc.WithLoop(l))
	promprpc.NewCollector(promprpc.WithNamedReactor("a", r1), promprpc.WithNamedReactor("b", r2), promprpc.WithLoop(l), promprpc.WithBackends())
}
