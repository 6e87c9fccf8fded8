package otelprpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// inventory is a Backend whose Get answers, fails "missing" with NotFound, and whose Put
// reports each call on entered and holds it until its context ends.
type inventory struct {
	*reactortest.Backend
	entered chan string
}

func newInventory() *inventory {
	inv := &inventory{Backend: reactortest.NewBackend(), entered: make(chan string, 16)}
	reactortest.Handle(inv.Backend, get, func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		if req.GetValue() == "missing" {
			return nil, status.Error(codes.NotFound, "no such item")
		}
		return wrapperspb.String("item " + req.GetValue()), nil
	})
	reactortest.Handle(inv.Backend, put, func(ctx context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		inv.entered <- req.GetValue()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return inv
}

// waitEntered waits until a Put call reaches the backend.
func (inv *inventory) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-inv.entered:
	case <-time.After(patience):
		t.Fatalf("no Put call reached the backend within %v", patience)
	}
}

// callGet makes a Get call and flushes it.
func callGet(t *testing.T, r *reactor.Reactor, item string) {
	t.Helper()
	reactor.Call(r, get, wrapperspb.String(item), nil)
	reactortest.Flush(t, r)
}

// requireHistogramOf checks that the data point p is h: the same bounds, bucket counts, count
// and sum.
func requireHistogramOf(t *testing.T, h reactor.Histogram, p metricdata.HistogramDataPoint[float64], what string) {
	t.Helper()
	require.Equal(t, h.Bounds, p.Bounds, "%s: bounds", what)
	require.Equal(t, h.Counts, p.BucketCounts, "%s: bucket counts", what)
	require.Equal(t, h.Count, p.Count, "%s: count", what)
	require.Equal(t, h.Sum.Seconds(), p.Sum, "%s: sum", what)
	_, defined := p.Min.Value()
	require.False(t, defined, "%s: no minimum", what)
	_, defined = p.Max.Value()
	require.False(t, defined, "%s: no maximum", what)
}

// TestReactorMetrics makes known calls, two Gets that succeed, one that fails with NotFound,
// one rejected as overloaded, a Put that times out and one that is cancelled, and checks that
// one collection has every metric of a reactor with its kind, unit and attributes, the values
// those calls make, and the histograms of Stats; and no backend metric without WithBackends.
func TestReactorMetrics(t *testing.T) {
	inv := newInventory()
	clk := reactortest.NewManualClock(epoch)
	r := reactortest.NewReactor(t, inv.Backend, reactor.Config{Clock: clk, MaxOutstanding: 1})
	p := otelprpc.NewProducer()
	before := time.Now()
	p.AddReactor(r, "")
	after := time.Now()
	reader := newReader(t, p)

	callGet(t, r, "a")
	callGet(t, r, "b")
	callGet(t, r, "missing")

	var putErr, overloadErr error
	reactor.Call(r, put, wrapperspb.String("x"), &calls.Options{Timeout: time.Second}).OnError(func(err error) { putErr = err })
	inv.waitEntered(t)
	reactor.Call(r, get, wrapperspb.String("c"), nil).OnError(func(err error) { overloadErr = err }) // MaxOutstanding is 1
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, clk.WaitTimers(ctx, 1), "the reactor set the timer of Put's deadline")
	clk.Advance(time.Second)
	reactortest.Flush(t, r)
	require.ErrorIs(t, putErr, calls.ErrTimeout)
	require.ErrorIs(t, overloadErr, calls.ErrOverloaded)

	var cancelErr error
	promise := reactor.Call(r, put, wrapperspb.String("y"), nil).OnError(func(err error) { cancelErr = err })
	inv.waitEntered(t)
	promise.Cancel()
	reactortest.Flush(t, r)
	require.ErrorIs(t, cancelErr, calls.ErrCancelled)
	// The cancelled Put was delivered at once; its lane leaves InFlight once its transport
	// call has returned.
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, patience, time.Millisecond, "the cancelled Put's lane returned")

	got := collect(t, reader)
	st := r.Stats()
	requireSpec(t, got, reactorSpec, "")
	for _, s := range append(backendSpec, loopSpec...) {
		require.NotContains(t, got, s.name, "only with WithBackends, or a loop added")
	}

	want := []struct {
		metric string
		attrs  attribute.Set
		value  int64
	}{
		{"prpc.call.submitted", methodAttrs("Get"), 4},
		{"prpc.call.submitted", methodAttrs("Put"), 2},
		{"prpc.call.completed", withCode("Get", 0), 2},
		{"prpc.call.completed", withCode("Get", int64(codes.NotFound)), 1},
		{"prpc.call.completed", withCode("Get", int64(codes.ResourceExhausted)), 1},
		{"prpc.call.completed", withCode("Put", 0), 0},
		{"prpc.call.completed", withCode("Put", int64(codes.DeadlineExceeded)), 1},
		{"prpc.call.completed", withCode("Put", int64(codes.Canceled)), 1},
		{"prpc.call.timed_out", methodAttrs("Get"), 0},
		{"prpc.call.timed_out", methodAttrs("Put"), 1},
		{"prpc.call.overloaded", methodAttrs("Get"), 1},
		{"prpc.call.overloaded", methodAttrs("Put"), 0},
		{"prpc.call.cancelled", methodAttrs("Get"), 0},
		{"prpc.call.cancelled", methodAttrs("Put"), 1},
		{"prpc.call.never_sent", methodAttrs("Get"), 1},
		{"prpc.call.never_sent", methodAttrs("Put"), 0},
	}
	for _, w := range want {
		require.Equal(t, w.value, counterValue(t, got[w.metric], w.attrs), "%s %s", w.metric, w.attrs.Encoded(attribute.DefaultEncoder()))
	}
	require.Len(t, counters(t, got["prpc.call.completed"]), 6, "a series per method and code seen, and code 0 for each method")
	for _, name := range []string{"prpc.call.closed", "prpc.call.shed", "prpc.call.coalesced", "prpc.hedge.sent", "prpc.hedge.won", "prpc.hedge.lost"} {
		getAttrs, putAttrs := methodAttrs("Get"), methodAttrs("Put")
		require.Equal(t, map[string]int64{getAttrs.Encoded(attribute.DefaultEncoder()): 0, putAttrs.Encoded(attribute.DefaultEncoder()): 0},
			counters(t, got[name]), name)
	}

	for _, m := range []string{"Get", "Put"} {
		hs := st.Methods["/game.Inventory/"+m].Histograms
		requireHistogramOf(t, hs.Latency, histogram(t, got["prpc.call.duration"], methodAttrs(m)), m+" duration")
		requireHistogramOf(t, hs.QueueWait, histogram(t, got["prpc.call.queue_wait"], methodAttrs(m)), m+" queue wait")
		requireHistogramOf(t, hs.Transport, histogram(t, got["prpc.call.transport"], methodAttrs(m)), m+" transport")
		requireHistogramOf(t, hs.TickWait, histogram(t, got["prpc.call.tick_wait"], methodAttrs(m)), m+" tick wait")
	}
	duration := func(m string) metricdata.HistogramDataPoint[float64] {
		return histogram(t, got["prpc.call.duration"], methodAttrs(m))
	}
	require.Equal(t, uint64(3), duration("Get").Count, "the admitted Gets; the rejected one counts in no histogram")
	require.Equal(t, uint64(2), duration("Put").Count)
	require.Equal(t, 1.0, duration("Put").Sum, "the timed-out Put took its second on the manual clock; the rest took no time")
	require.Equal(t, uint64(2), histogram(t, got["prpc.call.transport"], methodAttrs("Put")).Count, "both Puts reached gRPC")

	empty := *attribute.EmptySet()
	for name, v := range map[string]float64{
		"prpc.calls.pending": 0, "prpc.calls.max_outstanding": 1, "prpc.calls.queued": 0, "prpc.calls.in_flight": 0,
		"prpc.calls.in_flight_limit": float64(st.InFlightLimit), "prpc.delivery.oldest_wait": 0,
	} {
		require.Equal(t, v, gauge(t, got[name], empty), name)
	}
	require.Positive(t, st.InFlightLimit, "the adaptive limit is on by default")

	starts, ends := times(got)
	for i := range starts {
		require.False(t, starts[i].Before(before) || starts[i].After(after), "every series starts when the reactor was added")
		require.False(t, ends[i].Before(after), "every point is timed at the collection")
	}
}

// TestOldestWait checks the gauges while calls wait: the age of the oldest outcome that waits
// for Tick, in seconds, and the calls pending.
func TestOldestWait(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.Handle(b, get, func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("item"), nil
	})
	clk := reactortest.NewManualClock(epoch)
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: clk})
	p := otelprpc.NewProducer()
	p.AddReactor(r, "")
	reader := newReader(t, p)

	reactor.Call(r, get, wrapperspb.String("a"), nil)
	select {
	case <-r.Ready(): // the outcome waits for Tick
	case <-time.After(patience):
		t.Fatalf("the call did not complete within %v", patience)
	}
	clk.Advance(1500 * time.Millisecond)
	got := collect(t, reader)
	empty := *attribute.EmptySet()
	require.Equal(t, 1.5, gauge(t, got["prpc.delivery.oldest_wait"], empty))
	require.Equal(t, 1.0, gauge(t, got["prpc.calls.pending"], empty))
	reactortest.Flush(t, r)
	got = collect(t, reader)
	require.Equal(t, 0.0, gauge(t, got["prpc.delivery.oldest_wait"], empty))
	require.Equal(t, 0.0, gauge(t, got["prpc.calls.pending"], empty))
}

// TestCumulative checks that counters and histograms are cumulative across collections, from
// the same start time, and that a collection's data are its own: the next one does not
// change them.
func TestCumulative(t *testing.T) {
	r := reactortest.NewReactor(t, newInventory().Backend, reactor.Config{})
	p := otelprpc.NewProducer()
	p.AddReactor(r, "")
	reader := newReader(t, p)

	callGet(t, r, "a")
	callGet(t, r, "b")
	first := collect(t, reader)
	for range 3 {
		callGet(t, r, "c")
	}
	second := collect(t, reader)

	submitted := func(got map[string]metricdata.Metrics) int64 {
		return counterValue(t, got["prpc.call.submitted"], methodAttrs("Get"))
	}
	require.Equal(t, int64(2), submitted(first))
	require.Equal(t, int64(5), submitted(second))
	require.Equal(t, int64(5), counterValue(t, second["prpc.call.completed"], withCode("Get", 0)))
	h1, h2 := histogram(t, first["prpc.call.duration"], methodAttrs("Get")), histogram(t, second["prpc.call.duration"], methodAttrs("Get"))
	require.Equal(t, uint64(2), h1.Count)
	require.Equal(t, uint64(5), h2.Count)
	var sum uint64
	for _, n := range h1.BucketCounts {
		sum += n
	}
	require.Equal(t, uint64(2), sum, "the first collection's bucket counts are unchanged by the second")
	require.Equal(t, h1.StartTime, h2.StartTime, "one start time")
	require.True(t, h2.Time.After(h1.Time) || h2.Time.Equal(h1.Time))

	s1, _ := times(first)
	s2, _ := times(second)
	for _, s := range append(s1, s2...) {
		require.Equal(t, h1.StartTime, s, "every series of the reactor starts when it was added")
	}
}

// TestSeveralReactors checks that the series of reactors added with names carry them, each
// metric once with the data points of every reactor.
func TestSeveralReactors(t *testing.T) {
	inv := newInventory()
	lobby := reactortest.NewReactor(t, inv.Backend, reactor.Config{})
	world := reactortest.NewReactor(t, inv.Backend, reactor.Config{MaxOutstanding: 7})
	p := otelprpc.NewProducer()
	p.AddReactor(lobby, "lobby")
	p.AddReactor(world, "world")
	reader := newReader(t, p)

	callGet(t, lobby, "a")
	for range 3 {
		callGet(t, world, "b")
	}
	got := collect(t, reader)
	requireSpec(t, got, reactorSpec, "prpc.reactor")
	name := func(n string) attribute.KeyValue { return attribute.String("prpc.reactor", n) }
	require.Equal(t, int64(1), counterValue(t, got["prpc.call.submitted"], methodAttrs("Get", name("lobby"))))
	require.Equal(t, int64(3), counterValue(t, got["prpc.call.submitted"], methodAttrs("Get", name("world"))))
	require.Equal(t, int64(3), counterValue(t, got["prpc.call.completed"], withCode("Get", 0, name("world"))))
	require.Equal(t, uint64(3), histogram(t, got["prpc.call.duration"], methodAttrs("Get", name("world"))).Count)
	require.Equal(t, float64(reactor.DefaultMaxOutstanding), gauge(t, got["prpc.calls.max_outstanding"], attrs(name("lobby"))))
	require.Equal(t, 7.0, gauge(t, got["prpc.calls.max_outstanding"], attrs(name("world"))))
	require.Len(t, got["prpc.calls.max_outstanding"].Data.(metricdata.Gauge[int64]).DataPoints, 2)
}

// TestAddPanics checks the misuses AddReactor and AddLoop refuse.
func TestAddPanics(t *testing.T) {
	r1 := reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{})
	r2 := reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{})
	l1, l2 := newLoop(t), newLoop(t)
	tests := []struct {
		name string
		add  func(p *otelprpc.Producer)
		want string
	}{
		{"nil reactor", func(p *otelprpc.Producer) { p.AddReactor(nil, "") }, "otelprpc: AddReactor: nil reactor"},
		{"reactor twice", func(p *otelprpc.Producer) { p.AddReactor(r1, "a"); p.AddReactor(r1, "b") }, "otelprpc: AddReactor: the reactor was added already"},
		{"two reactors, one name", func(p *otelprpc.Producer) { p.AddReactor(r1, "a"); p.AddReactor(r2, "a") },
			`otelprpc: AddReactor: a reactor named "a" was added already; name each reactor differently`},
		{"two reactors, no name", func(p *otelprpc.Producer) { p.AddReactor(r1, ""); p.AddReactor(r2, "") },
			`otelprpc: AddReactor: a reactor named "" was added already; name each reactor differently`},
		{"nil loop", func(p *otelprpc.Producer) { p.AddLoop(nil, "") }, "otelprpc: AddLoop: nil loop"},
		{"loop twice", func(p *otelprpc.Producer) { p.AddLoop(l1, ""); p.AddLoop(l1, "b") }, "otelprpc: AddLoop: the loop was added already"},
		{"two loops, one name", func(p *otelprpc.Producer) { p.AddLoop(l1, "a"); p.AddLoop(l2, "a") },
			`otelprpc: AddLoop: a loop named "a" was added already; name each loop differently`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.PanicsWithValue(t, tt.want, func() { tt.add(otelprpc.NewProducer()) })
		})
	}
	p := otelprpc.NewProducer()
	p.AddReactor(r1, "")
	p.RemoveReactor(r1)
	p.AddReactor(r1, "") // removed, it may be added again
	p.AddReactor(r2, "second")
}

// TestOptionsAdd checks that NewProducer's options add reactors and loops as AddReactor and
// AddLoop do: with their names as attributes, and the same panics.
func TestOptionsAdd(t *testing.T) {
	r1 := reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{})
	r2 := reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{})
	l := newLoop(t)
	p := otelprpc.NewProducer(otelprpc.WithNamedReactor("lobby", r1), otelprpc.WithNamedReactor("world", r2), otelprpc.WithNamedLoop("main", l))
	sms, err := p.Produce(context.Background())
	require.NoError(t, err)
	require.Len(t, sms, 1)
	seen := map[string]bool{}
	for _, m := range sms[0].Metrics {
		g, ok := m.Data.(metricdata.Gauge[int64])
		if !ok {
			continue
		}
		for _, dp := range g.DataPoints {
			for _, key := range []attribute.Key{"prpc.reactor", "prpc.loop"} {
				if v, ok := dp.Attributes.Value(key); ok {
					seen[string(key)+"="+v.AsString()] = true
				}
			}
		}
	}
	require.Equal(t, map[string]bool{"prpc.reactor=lobby": true, "prpc.reactor=world": true}, seen, "the reactors' gauges carry their names")
	require.PanicsWithValue(t, `otelprpc: AddReactor: a reactor named "" was added already; name each reactor differently`,
		func() { otelprpc.NewProducer(otelprpc.WithReactor(r1), otelprpc.WithReactor(r2)) })
	require.PanicsWithValue(t, "otelprpc: AddLoop: nil loop", func() { otelprpc.NewProducer(otelprpc.WithLoop(nil)) })
}

// TestClosedAndRemovedReactor checks that a closed reactor goes on reporting its final counts,
// with a call submitted after Close among them, and that a removed one reports nothing, while
// the Producer's other sources go on.
func TestClosedAndRemovedReactor(t *testing.T) {
	r := reactortest.NewReactor(t, newInventory().Backend, reactor.Config{})
	l := newLoop(t)
	p := otelprpc.NewProducer()
	p.AddReactor(r, "")
	p.AddLoop(l, "")
	reader := newReader(t, p)

	callGet(t, r, "a")
	require.NoError(t, r.Close(context.Background()))
	var closedErr error
	reactor.Call(r, get, wrapperspb.String("late"), nil).OnError(func(err error) { closedErr = err })
	got := collect(t, reader)
	for name, want := range map[string]int64{"prpc.call.submitted": 2, "prpc.call.closed": 1, "prpc.call.never_sent": 1} {
		require.Equal(t, want, counterValue(t, got[name], methodAttrs("Get")), name)
	}
	require.Equal(t, int64(1), counterValue(t, got["prpc.call.completed"], withCode("Get", 0)))
	require.Equal(t, int64(1), counterValue(t, got["prpc.call.completed"], withCode("Get", int64(codes.Canceled))))
	require.Equal(t, uint64(1), histogram(t, got["prpc.call.duration"], methodAttrs("Get")).Count)
	r.Tick(time.Second) // delivers the rejection's callback
	require.ErrorIs(t, closedErr, calls.ErrClosed)

	p.RemoveReactor(r)
	p.RemoveReactor(r) // a reactor not added: nothing to do
	got = collect(t, reader)
	requireSpec(t, got, loopSpec, "")
	for _, s := range reactorSpec {
		require.NotContains(t, got, s.name, "the reactor was removed")
	}
	p.RemoveLoop(l)
	require.Empty(t, collect(t, reader), "nothing added, nothing produced")
	res, err := p.Produce(context.Background())
	require.NoError(t, err)
	require.Nil(t, res)
}

// TestScope checks the instrumentation scope: named for the module, with its version.
func TestScope(t *testing.T) {
	p := otelprpc.NewProducer()
	p.AddReactor(reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{}), "")
	res, err := p.Produce(context.Background())
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Equal(t, "github.com/trixnew/prpc/metrics/otelprpc", res[0].Scope.Name)
	require.Equal(t, "(devel)", res[0].Scope.Version, "a test binary of the module itself, built from its working tree")
}
