package main

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/loop"
)

// gathered returns the sum of the values of the Prometheus family name in m's registry: its
// counters' values, or its histograms' sample counts.
func gathered(t *testing.T, m *metricsAdapters, name string) (float64, bool) {
	t.Helper()
	families, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		sum := 0.0
		for _, mt := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				sum += mt.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				sum += float64(mt.GetHistogram().GetSampleCount())
			}
		}
		return sum, true
	}
	return 0, false
}

// collected returns the sum of the OpenTelemetry counter name's points in a collection of m's
// reader.
func collected(t *testing.T, m *metricsAdapters, name string) (int64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != name {
				continue
			}
			sum, ok := mt.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s is a %T, want a Sum[int64]", name, mt.Data)
			}
			var n int64
			for _, p := range sum.DataPoints {
				n += p.Value
			}
			return n, true
		}
	}
	return 0, false
}

// TestMetricsClient runs a burst through the metrics client against the fast backend and
// checks that both adapters are registered over its reactor, that its scraper ran during the
// burst and was stopped at its end, and that a loop added later is exported by both; and that
// prpc-go has no adapters and no scrapes.
func TestMetricsClient(t *testing.T) {
	const n = 40
	f, err := startFastBackend(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	defer f.stop()
	xuids, players := make([]string, n), make([]*networkpb.Player, n)
	for i := range n {
		xuids[i], players[i] = xuidOf(i), playerOf(i)
	}
	s := Shape{Calls: n, Workers: 1, Batch: 2, Trials: 1}

	plain, err := newPRPCClient(clientGo, f.addr, s, 10*time.Second, 2*time.Millisecond, n, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(players)
	if err := plain.burst(xuids, rec); err != nil || rec.ok != n || rec.scrapes != 0 || plain.metricsOf() != nil {
		t.Errorf("prpc-go: burst %v, %d right answers, %d scrapes, adapters %v; want %d answers and no adapters", err, rec.ok, rec.scrapes, plain.metricsOf(), n)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}

	c, err := newPRPCClient(clientGoMetrics, f.addr, s, 10*time.Second, 2*time.Millisecond, n, false)
	if err != nil {
		t.Fatal(err)
	}
	m := c.metricsOf()
	if m == nil {
		t.Fatal("prpc-go-metrics has no metrics adapters")
	}
	rec = newRecorder(players)
	if err := c.burst(xuids, rec); err != nil || rec.ok != n {
		t.Fatalf("burst: %v, %d of %d right answers", err, rec.ok, n)
	}
	// The scraper scrapes once as the burst starts, and is stopped as it ends.
	if rec.scrapes < 1 || m.stop != nil {
		t.Errorf("%d scrapes in the burst, scraper still running: %v; want at least one, and stopped", rec.scrapes, m.stop != nil)
	}
	// Both adapters read this reactor: every call completed, in the histogram too.
	for _, name := range []string{"prpc_call_completed_total", "prpc_call_duration_seconds"} {
		if v, ok := gathered(t, m, name); !ok || v != n {
			t.Errorf("Prometheus %s: %v (found %v), want %d", name, v, ok, n)
		}
	}
	if v, ok := collected(t, m, "prpc.call.completed"); !ok || v != n {
		t.Errorf("OpenTelemetry prpc.call.completed: %v (found %v), want %d", v, ok, n)
	}
	// A loop added to the adapters is exported by both, with its reactor still.
	l, err := loop.New(loop.Config{TPS: 20, Reactors: []loop.Reactor{c.driven()}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gathered(t, m, "prpc_loop_ticks_total"); ok {
		t.Error("the loop's metrics before addLoop")
	}
	if err := m.addLoop(l); err != nil {
		t.Fatal(err)
	}
	if _, ok := gathered(t, m, "prpc_loop_ticks_total"); !ok {
		t.Error("Prometheus: no prpc_loop_ticks_total after addLoop")
	}
	if v, ok := gathered(t, m, "prpc_call_completed_total"); !ok || v != n {
		t.Errorf("Prometheus prpc_call_completed_total after addLoop: %v (found %v), want %d", v, ok, n)
	}
	if _, ok := collected(t, m, "prpc.loop.ticks"); !ok {
		t.Error("OpenTelemetry: no prpc.loop.ticks after addLoop")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsScraper checks the scraper's bookkeeping: a scrape as soon as it starts, a
// count and no error when stopped, nothing to stop once stopped, and a scrape that fails
// stopping it with its error.
func TestMetricsScraper(t *testing.T) {
	f, err := startFastBackend(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.stop()
	c, err := newPRPCClient(clientGoMetrics, f.addr, Shape{Calls: 1, Workers: 1, Batch: 1}, 10*time.Second, 2*time.Millisecond, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	m := c.metricsOf()
	m.startScraping()
	if n, err := m.stopScraping(); n < 1 || err != nil {
		t.Errorf("stopScraping = %d, %v; want at least the first scrape, no error", n, err)
	}
	if n, err := m.stopScraping(); n != 0 || err != nil {
		t.Errorf("stopScraping with no scraper = %d, %v; want 0, nil", n, err)
	}
	// A reader whose provider is shut down fails to collect: the scraper stops at its first
	// scrape and stopScraping returns the error.
	if err := m.provider.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.startScraping()
	if n, err := m.stopScraping(); n != 1 || err == nil || !strings.Contains(err.Error(), "collecting the OpenTelemetry reader") {
		t.Errorf("stopScraping after a failed scrape = %d, %v; want 1 and the reader's error", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.r.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// namedClient is a client that only has a name, for trialClients.
type namedClient struct {
	client
	name string
}

func (c namedClient) Name() string { return c.name }

// TestTrialClients checks the burst suites' order of the clients in each trial: as given, but
// that prpc-go and prpc-go-metrics swap places in even trials.
func TestTrialClients(t *testing.T) {
	names := func(cs []client) []string {
		var ns []string
		for _, c := range cs {
			ns = append(ns, c.Name())
		}
		return ns
	}
	clients := func(ns ...string) []client {
		var cs []client
		for _, n := range ns {
			cs = append(cs, namedClient{name: n})
		}
		return cs
	}
	for _, c := range []struct {
		clients []string
		trial   int
		want    []string
	}{
		{[]string{clientGo, clientGoMetrics, clientThen, clientBaseline}, 1, []string{clientGo, clientGoMetrics, clientThen, clientBaseline}},
		{[]string{clientGo, clientGoMetrics, clientThen, clientBaseline}, 2, []string{clientGoMetrics, clientGo, clientThen, clientBaseline}},
		{[]string{clientGo, clientGoMetrics, clientThen, clientBaseline}, 3, []string{clientGo, clientGoMetrics, clientThen, clientBaseline}},
		{[]string{clientGoMetrics, clientBaseline, clientGo}, 4, []string{clientGo, clientBaseline, clientGoMetrics}},
		{[]string{clientGoMetrics, clientBaseline}, 2, []string{clientGoMetrics, clientBaseline}},
		{[]string{clientThen, clientGo, clientBaseline}, 2, []string{clientThen, clientGo, clientBaseline}},
	} {
		cs := clients(c.clients...)
		if got := names(trialClients(cs, c.trial)); !slices.Equal(got, c.want) {
			t.Errorf("trialClients(%q, %d) = %q, want %q", c.clients, c.trial, got, c.want)
		}
		if got := names(cs); !slices.Equal(got, c.clients) {
			t.Errorf("trialClients(%q, %d) changed its argument to %q", c.clients, c.trial, got)
		}
	}
}

// TestClientsOf checks which clients each burst suite runs: by default prpc-go-metrics in the
// standard suite alone; named in -clients, in every suite.
func TestClientsOf(t *testing.T) {
	for _, c := range []struct {
		args []string
		want map[string][]string // by suite
	}{
		{args: nil, want: map[string][]string{
			"standard":      {clientGo, clientGoMetrics, clientThen, clientBaseline},
			"extreme":       {clientGo, clientThen, clientBaseline},
			"fast-standard": {clientGo, clientThen, clientBaseline},
			"fast-extreme":  {clientGo, clientThen, clientBaseline},
		}},
		{args: []string{"-calls", "100"}, want: map[string][]string{
			customSuite:     {clientGo, clientThen, clientBaseline},
			fastCustomSuite: {clientGo, clientThen, clientBaseline},
		}},
		{args: []string{"-suite", "extreme,fast-standard", "-clients", "prpc-go-metrics,grpc-go,prpc-go"}, want: map[string][]string{
			"extreme":       {clientGoMetrics, clientBaseline, clientGo},
			"fast-standard": {clientGoMetrics, clientBaseline, clientGo},
		}},
	} {
		o, err := parseFlags(c.args, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		rn := &runner{burstClients: o.burstClients, defaultClients: o.clients == ""}
		got := map[string][]string{}
		for _, s := range o.suites() {
			got[s.Name] = rn.clientsOf(s)
		}
		if !maps.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("%q: clients by suite %q, want %q", c.args, got, c.want)
		}
		if rn.defaultClients && !slices.Contains(o.loopClients, clientGoMetrics) {
			t.Errorf("%q: the loop suite's clients %q lack %s", c.args, o.loopClients, clientGoMetrics)
		}
	}
}

// metricsReport returns a made-up report whose two burst shapes and two loop sizes pair
// prpc-go-metrics with prpc-go over the trials given: in the burst suites trial i's calls/s
// ratio thr[i] and CPU ratio cpu[i], in the loop suite its loop-thread CPU ratio sub[i] and its
// time in Tick ratio del[i]; the metrics client's trials scrape i+1 times.
func metricsReport(thr, cpu, sub, del []float64) *Report {
	r := &Report{MetricsBounds: testMetricsBounds, Loop: &LoopResult{}}
	for _, calls := range []int{1000, 5000} {
		sh := ShapeResult{Shape: Shape{Calls: calls, Workers: 2, Batch: 2, Trials: len(thr)}}
		for i := range thr {
			g := TrialResult{Client: clientGo, Trial: i + 1, Calls: calls, Total: time.Second, CPU: 100 * time.Millisecond}
			m := g
			m.Client, m.Scrapes = clientGoMetrics, i+1
			m.Total = time.Duration(float64(time.Second) / thr[i])
			m.CPU = time.Duration(float64(g.CPU) * cpu[i])
			base := g
			base.Client = clientBaseline
			sh.Trials = append(sh.Trials, m, g, base)
		}
		r.Suites = append(r.Suites, SuiteResult{Name: "standard", Backend: backendData, Shapes: []ShapeResult{sh}})
	}
	for _, calls := range []int{2000, 20000} {
		sz := LoopSize{Shape: Shape{Calls: calls, Workers: 6, Batch: 16, Trials: len(sub)}}
		for i := range sub {
			g := LoopTrial{Client: clientGo, Trial: i + 1, Calls: calls, SubmitThread: SubmitThread{CPU: 4 * time.Millisecond}, Delivery: 8 * time.Millisecond}
			m := g
			m.Client, m.Scrapes = clientGoMetrics, i+1
			m.SubmitThread.CPU = time.Duration(float64(g.SubmitThread.CPU) * sub[i])
			m.Delivery = time.Duration(float64(g.Delivery) * del[i])
			sz.Trials = append(sz.Trials, g, m)
		}
		r.Loop.Sizes = append(r.Loop.Sizes, sz)
	}
	return r
}

// TestMetricsTable checks the comparison of prpc-go-metrics with prpc-go: the ratios of each
// trial against prpc-go's of the same number, their spreads per shape and pooled per kind of
// suite, "–" for what a suite does not measure, and no table or JSON without a pair.
func TestMetricsTable(t *testing.T) {
	r := metricsReport([]float64{0.98, 1, 1.01}, []float64{1.01, 1.03, 0.99}, []float64{1.02, 0.96, 1.1}, []float64{1.05, 1, 1.2})
	rows := r.metricsRows()
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 burst shapes and 2 loop sizes", len(rows))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for i, row := range rows {
		if len(row.Ratios) != 3 {
			t.Fatalf("row %d: %d ratios, want 3", i, len(row.Ratios))
		}
		for k, rt := range row.Ratios {
			if rt.Trial != k+1 || rt.Scrapes != k+1 {
				t.Errorf("row %d: ratios %+v, want trial and scrapes %d", i, rt, k+1)
			}
		}
	}
	if rt := rows[0].Ratios[2]; !near(rt.Throughput, 1.01) || !near(rt.CPUPerCall, 0.99) || rt.SubmitCPU != 0 || rt.Delivery != 0 {
		t.Errorf("burst trial 3: %+v, want calls/s 1.01, CPU 0.99 and nothing of the loop", rt)
	}
	if rt := rows[3].Ratios[2]; !near(rt.SubmitCPU, 1.1) || !near(rt.Delivery, 1.2) || rt.Throughput != 0 || rt.CPUPerCall != 0 {
		t.Errorf("loop trial 3: %+v, want submit CPU 1.10, delivery 1.20 and nothing of the burst suites", rt)
	}
	tb := r.metricsTable()
	want := [][]string{
		{"standard", "1,000", "2×2", "3", "1.00× (0.98–1.01)", "1.01× (0.99–1.03)", "–", "–", "2"},
		{"standard", "5,000", "2×2", "3", "1.00× (0.98–1.01)", "1.01× (0.99–1.03)", "–", "–", "2"},
		{"loop", "2,000", "6×16", "3", "–", "–", "1.02× (0.96–1.10)", "1.05× (1.00–1.20)", "2"},
		{"loop", "20,000", "6×16", "3", "–", "–", "1.02× (0.96–1.10)", "1.05× (1.00–1.20)", "2"},
		{"**burst suites, every shape**", "", "", "6", "1.00× (0.98–1.01)", "1.01× (0.99–1.03)", "–", "–", "2"},
		{"**loop suite, every burst size**", "", "", "6", "–", "–", "1.02× (0.96–1.10)", "1.05× (1.00–1.20)", "2"},
	}
	if !slices.EqualFunc(tb.Rows, want, slices.Equal) {
		t.Errorf("rows\n%q\nwant\n%q", tb.Rows, want)
	}
	if !slices.Contains(tb.Head, "client CPU/call (bound ≤ 1.02×)") || !slices.Contains(tb.Head, "loop-thread CPU/call, submitting (bound ≤ 1.05×)") {
		t.Errorf("head %q, want the report's bounds", tb.Head)
	}
	// One shape and one size: no pooled rows.
	r.Suites, r.Loop.Sizes = r.Suites[:1], r.Loop.Sizes[:1]
	if n := len(r.metricsTable().Rows); n != 2 {
		t.Errorf("one shape and one size: %d rows, want 2", n)
	}
	jm := r.metricsJSON()
	if jm == nil || len(jm.Rows) != 2 || jm.Rows[0].SubmitCPU != nil || jm.Rows[1].CPUPerCall != nil ||
		jm.Rows[0].CPUPerCall == nil || !near(jm.Rows[0].CPUPerCall.Median, 1.01) || jm.Bounds != testMetricsBounds || jm.ScrapeEveryMs != 100 {
		b, _ := json.Marshal(jm)
		t.Errorf("JSON %s", b)
	}
	// prpc-go-metrics without prpc-go, or prpc-go without it: nothing to compare.
	for _, drop := range []string{clientGo, clientGoMetrics} {
		r := metricsReport([]float64{1}, []float64{1}, []float64{1}, []float64{1})
		for i := range r.Suites {
			sh := &r.Suites[i].Shapes[0]
			sh.Trials = slices.DeleteFunc(sh.Trials, func(t TrialResult) bool { return t.Client == drop })
		}
		for i := range r.Loop.Sizes {
			sz := &r.Loop.Sizes[i]
			sz.Trials = slices.DeleteFunc(sz.Trials, func(t LoopTrial) bool { return t.Client == drop })
		}
		if r.metricsTable() != nil || r.metricsJSON() != nil {
			t.Errorf("without %s: a table or JSON of the metrics adapters", drop)
		}
	}
}

// TestParseMetricsBounds checks that targets.json's metrics bounds are read, and that a file
// with one missing or below 1 is rejected with an error naming it.
func TestParseMetricsBounds(t *testing.T) {
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(targetsJSON, &m); err != nil {
			t.Fatal(err)
		}
		b := maps.Clone(m["metrics"].(map[string]any))
		f(b)
		m["metrics"] = b
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, c := range []struct {
		name    string
		data    []byte
		wantErr string // "" for none
	}{
		{name: "targets.json", data: targetsJSON},
		{name: "metrics missing", data: []byte(`{"goCPUMax": 1.5}`), wantErr: "metrics.clientCPUMax missing"},
		{name: "metrics null", data: []byte(`{"metrics": null}`), wantErr: "metrics missing"},
		{name: "a bound missing", data: edit(func(m map[string]any) { delete(m, "loopThreadCPUMax") }), wantErr: "metrics.loopThreadCPUMax missing"},
		{name: "a bound below 1", data: edit(func(m map[string]any) { m["clientCPUMax"] = 0.98 }), wantErr: "metrics.clientCPUMax is 0.98, want a ratio of at least 1"},
		{name: "not JSON", data: []byte("metrics: 1"), wantErr: "invalid character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMetricsBounds(c.data)
			switch {
			case c.wantErr == "" && (err != nil || got != metricsGoals):
				t.Fatalf("%+v, %v; want targets.json's bounds %+v", got, err, metricsGoals)
			case c.wantErr != "" && err == nil:
				t.Fatalf("bounds %+v, want an error with %q", got, c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Fatalf("error %q, want one with %q", err, c.wantErr)
			}
		})
	}
}

// TestBurstMetricsInProcess runs a small burst suite with prpc-go-metrics beside prpc-go and
// the pool: the two swap places in trial 2, the metrics client alone scrapes, and the report's
// comparison holds the ratios of its trials to prpc-go's, while the pool's ratios are prpc-go's
// alone.
func TestBurstMetricsInProcess(t *testing.T) {
	rep := runJSON(t, "-suite", "standard", "-clients", "prpc-go,prpc-go-metrics,grpc-go", "-inprocess",
		"-calls", "100", "-workers", "2", "-batch", "2", "-trials", "2", "-warmup", "10")
	if rep.Errors != 0 || len(rep.Suites) != 1 {
		t.Fatalf("errors %d, suites %+v", rep.Errors, rep.Suites)
	}
	sh := rep.Suites[0].Shapes[0]
	var order []string
	byTrial := map[[2]any]jsonTrial{}
	for _, tr := range sh.Results {
		order = append(order, tr.Client)
		byTrial[[2]any{tr.Trial, tr.Client}] = tr
		if (tr.Client == clientGoMetrics) != (tr.Scrapes > 0) || tr.OK != 100 {
			t.Errorf("trial %d of %s: %d scrapes, %d right answers", tr.Trial, tr.Client, tr.Scrapes, tr.OK)
		}
	}
	if want := []string{clientGo, clientGoMetrics, clientBaseline, clientGoMetrics, clientGo, clientBaseline}; !slices.Equal(order, want) {
		t.Errorf("trials ran in the order %q, want %q", order, want)
	}
	for _, r := range sh.Ratios {
		if r.Client != clientGo {
			t.Errorf("a ratio to the pool of %s, want prpc-go's alone", r.Client)
		}
	}
	jm := rep.Metrics
	if jm == nil || len(jm.Rows) != 1 || len(jm.Rows[0].Ratios) != 2 || jm.Client != clientGoMetrics || jm.Base != clientGo {
		t.Fatalf("metrics %+v, want one row of two trials", jm)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	for _, r := range jm.Rows[0].Ratios {
		m, g := byTrial[[2]any{r.Trial, clientGoMetrics}], byTrial[[2]any{r.Trial, clientGo}]
		if !near(r.Throughput, m.CallsPerS/g.CallsPerS) || !near(r.CPUPerCall, m.CPUPerCallUs/g.CPUPerCallUs) || r.Scrapes != m.Scrapes || r.SubmitCPU != 0 {
			t.Errorf("trial %d: ratios %+v, from %+v and %+v", r.Trial, r, m, g)
		}
	}
}
