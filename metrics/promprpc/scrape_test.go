package promprpc_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// specNames are the Prometheus names of docs/metrics.md's table, and of its backend metrics.
var specNames = []string{
	"prpc_call_duration_seconds",
	"prpc_call_queue_wait_seconds",
	"prpc_call_transport_seconds",
	"prpc_call_tick_wait_seconds",
	"prpc_call_submitted_total",
	"prpc_call_completed_total",
	"prpc_call_timed_out_total",
	"prpc_call_overloaded_total",
	"prpc_call_cancelled_total",
	"prpc_call_closed_total",
	"prpc_call_shed_total",
	"prpc_call_never_sent_total",
	"prpc_call_coalesced_total",
	"prpc_hedge_sent_total",
	"prpc_hedge_won_total",
	"prpc_hedge_lost_total",
	"prpc_calls_pending",
	"prpc_calls_max_outstanding",
	"prpc_calls_queued",
	"prpc_calls_in_flight",
	"prpc_calls_in_flight_limit",
	"prpc_delivery_oldest_wait_seconds",
	"prpc_loop_tick_duration_seconds",
	"prpc_loop_ticks_total",
	"prpc_loop_overruns_total",
	"prpc_loop_skipped_total",
	"prpc_loop_delivered_total",
	"prpc_backend_calls_total",
	"prpc_backend_failed_total",
	"prpc_backend_hedges_lost_total",
}

// streamNames are the Prometheus names of docs/metrics.md's streams' metrics, which a
// reactor exports once a stream has been opened.
var streamNames = []string{
	"prpc_streams_open",
	"prpc_stream_messages_total",
	"prpc_stream_messages_waiting",
	"prpc_stream_stalls_total",
	"prpc_stream_reopens_total",
	"prpc_stream_ends_total",
}

// scrape GETs url and parses the text exposition format it returns.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Ask for the text format: the one a person reads, and the one parsed here.
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// serve serves reg's metrics over HTTP on loopback until the test ends, and returns the URL
// of its /metrics.
func serve(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// A scrape through promhttp returns text that expfmt parses, with every name of the spec, of
// the kind the spec gives.
func TestScrapeHTTP(t *testing.T) {
	srv := testserver.Start(t)
	r, err := reactor.New(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close(context.Background())) }()
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "hello"}, nil)
	reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.NotFound)}, nil)
	reactortest.Flush(t, r)
	l, err := loop.New(loop.Config{})
	require.NoError(t, err)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l), promprpc.WithBackends()))
	families, err := scrape(t.Context(), serve(t, reg))
	require.NoError(t, err)

	for _, name := range specNames {
		mf, ok := families[name]
		if !assert.True(t, ok, "%s missing from the scrape", name) {
			continue
		}
		want := dto.MetricType_COUNTER // the spec's gauges are the reactor's, its histograms the other _seconds
		switch {
		case strings.HasPrefix(name, "prpc_calls_"), name == "prpc_delivery_oldest_wait_seconds":
			want = dto.MetricType_GAUGE
		case strings.HasSuffix(name, "_seconds"):
			want = dto.MetricType_HISTOGRAM
		}
		assert.Equal(t, want, mf.GetType(), name)
	}
	assert.Len(t, families, len(specNames), "no name beyond the spec's")
	ok := families["prpc_call_completed_total"]
	require.NotNil(t, ok)
	byCode := map[string]float64{}
	for _, m := range ok.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "rpc_grpc_status_code" {
				byCode[lp.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	assert.Equal(t, map[string]float64{"0": 1, "5": 1}, byCode)
}

// Scrapes while a loop runs calls: every scrape parses and is consistent within itself (one
// snapshot per reactor), and counters never go down from one scrape to the next. Run with
// -race, it also checks that collecting is safe while the reactor, its lanes and the loop run.
func TestScrapeWhileCallsRun(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	require.NoError(t, err)
	l, err := loop.New(loop.Config{
		TPS:      500,
		Reactors: []loop.Reactor{r},
		OnTick: func(uint64) {
			for range 4 {
				reactor.Call(r, echo, &testpb.EchoRequest{Message: "tick"}, nil)
			}
		},
	})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l), promprpc.WithBackends()))
	url := serve(t, reg)

	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- l.Run(ctx) }() // Run closes the reactor when it returns

	const scrapers, scrapes = 3, 20
	var wg sync.WaitGroup
	for range scrapers {
		wg.Go(func() {
			var last snapshot
			for range scrapes {
				families, err := scrape(t.Context(), url)
				if !assert.NoError(t, err) {
					return
				}
				s := read(families)
				assert.Equal(t, s.submitted, s.completed+s.pending, "one snapshot: submitted = completed + pending")
				assert.GreaterOrEqual(t, s.submitted, last.submitted)
				assert.GreaterOrEqual(t, s.completed, last.completed)
				assert.GreaterOrEqual(t, s.durationCount, last.durationCount)
				assert.GreaterOrEqual(t, s.ticks, last.ticks)
				last = s
			}
		})
	}
	wg.Wait()
	cancel()
	require.NoError(t, <-ran)

	// After the run: every call submitted has been delivered, and counted in the histogram.
	families, err := scrape(t.Context(), url)
	require.NoError(t, err)
	s := read(families)
	require.Positive(t, s.submitted)
	require.Equal(t, s.submitted, s.completed)
	require.Equal(t, s.completed, s.durationCount)
	require.Positive(t, s.ticks)
}

// snapshot is what TestScrapeWhileCallsRun reads of a scrape.
type snapshot struct {
	submitted, completed, pending, durationCount, ticks float64
}

// read sums the series of a scrape that TestScrapeWhileCallsRun checks.
func read(families map[string]*dto.MetricFamily) snapshot {
	sum := func(name string) float64 {
		var v float64
		for _, m := range families[name].GetMetric() {
			switch {
			case m.Counter != nil:
				v += m.GetCounter().GetValue()
			case m.Gauge != nil:
				v += m.GetGauge().GetValue()
			case m.Histogram != nil:
				v += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return v
	}
	return snapshot{
		submitted:     sum("prpc_call_submitted_total"),
		completed:     sum("prpc_call_completed_total"),
		pending:       sum("prpc_calls_pending"),
		durationCount: sum("prpc_call_duration_seconds"),
		ticks:         sum("prpc_loop_ticks_total"),
	}
}

// BenchmarkCollect measures one Collect over a reactor with five methods, each called with
// successes and a failure, and a loop: one Stats and the metrics built from it.
func BenchmarkCollect(b *testing.B) {
	c := benchCollector(b)
	ch := make(chan prometheus.Metric, 1024)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c.Collect(ch)
		n = len(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
	b.ReportMetric(float64(n), "metrics/op")
}

// BenchmarkScrape measures what a scrape of the same costs through a registry: Collect,
// Gather and the text encoding promhttp writes.
func BenchmarkScrape(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(benchCollector(b))
	b.ReportAllocs()
	for b.Loop() {
		families, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range families {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// A Collector keeps each series' label pairs from one scrape to the next and hands the same
// slices to every registry: a registry that wraps it with a label of its own, gathered at the
// same time as one that does not, must add its label to its own copy, never to the pairs the
// other registry and later scrapes see.
func TestScrapesShareNoLabels(t *testing.T) {
	c := benchCollector(t)
	plain := prometheus.NewRegistry()
	plain.MustRegister(c)
	wrapped := prometheus.NewRegistry()
	prometheus.WrapRegistererWith(prometheus.Labels{"shard": "a"}, wrapped).MustRegister(c)

	check := func(reg *prometheus.Registry, wantShard bool) error {
		families, err := reg.Gather()
		if err != nil {
			return err
		}
		for _, mf := range families {
			for _, m := range mf.GetMetric() {
				has := false
				for _, lp := range m.GetLabel() {
					has = has || lp.GetName() == "shard"
				}
				if has != wantShard {
					return fmt.Errorf("%s: shard label %v, want %v: %v", mf.GetName(), has, wantShard, m.GetLabel())
				}
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() { errs <- check(map[bool]*prometheus.Registry{false: plain, true: wrapped}[i%2 == 1], i%2 == 1) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	before, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain)
	require.NoError(t, err)
	require.NoError(t, check(wrapped, true))
	after, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "a wrapped scrape changed the series a later scrape sends")
}

var errNotFound = status.Error(codes.NotFound, "not found")

// benchCollector returns a Collector over a reactor whose five methods have been called, and
// a loop.
func benchCollector(b testing.TB) *promprpc.Collector {
	be := reactortest.NewBackend()
	r, err := reactor.New(reactor.Config{Conn: be})
	require.NoError(b, err)
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	for _, name := range []string{"GetPlayer", "SavePlayer", "Leaderboard", "Inventory", "Matchmake"} {
		m := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/game.v1.Data/" + name)
		reactortest.Handle(be, m, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
			if req.GetMessage() == "fail" {
				return nil, errNotFound
			}
			return &testpb.EchoResponse{}, nil
		})
		for range 50 {
			reactor.Call(r, m, &testpb.EchoRequest{}, nil)
		}
		reactor.Call(r, m, &testpb.EchoRequest{Message: "fail"}, nil)
	}
	require.NoError(b, reactortest.Drain(r, 10*time.Second))
	l, err := loop.New(loop.Config{})
	require.NoError(b, err)
	return promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l))
}
