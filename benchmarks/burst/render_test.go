package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pairedShape returns a made-up shape whose trial i runs each prpc client with its
// forms[…][i], then the baseline with base, all over s.Calls calls.
func pairedShape(s Shape, base TrialResult, forms ...[]TrialResult) ShapeResult {
	sh := ShapeResult{Shape: s}
	for i := range forms[0] {
		var trial []TrialResult
		for _, f := range forms {
			trial = append(trial, f[i])
		}
		for _, tr := range append(trial, base) {
			tr.Trial, tr.Calls, tr.OK, tr.BackendCPU, tr.PeakReset = i+1, s.Calls, s.Calls, -1, true
			sh.Trials = append(sh.Trials, tr)
		}
	}
	return sh
}

// goTrials are made-up trials of prpc-go, to pair with docReport's baseline: its calls/s
// ratios are 2.00, 1.00 and 1.25, its CPU/call ratios 0.50, 1.00 and 0.75, its p50 ratios
// 0.50, 1.00 and 1.00 and its p99 ratios 0.50, 1.00 and 1.50.
func goTrials() []TrialResult {
	ms := time.Millisecond
	return []TrialResult{
		trialOf(clientGo, 500*ms, 20*ms, 50*ms, 100*ms),
		trialOf(clientGo, time.Second, 40*ms, 100*ms, 200*ms),
		trialOf(clientGo, 800*ms, 30*ms, 100*ms, 300*ms),
	}
}

// trialOf is one made-up trial of client: total time, CPU time, p50 and p99 latency.
func trialOf(client string, total, cpu, p50, p99 time.Duration) TrialResult {
	return TrialResult{Client: client, Total: total, CPU: cpu, Lat: Latency{Avg: p50, P50: p50, P95: p99, P99: p99}}
}

// docReport returns a made-up report: the standard suite's first shape over three trials, in
// which prpc-then's calls/s ratios are 0.80, 1.00 and 0.90, its CPU/call ratios 1.10, 1.20
// and 1.00, its p50 ratios 1.00, 0.90 and 1.10 and its p99 ratios 1.00, 1.05 and 0.95; and the
// loop suite over three trials of 20,000 calls per client, in which prpc-then takes three
// times the pool's time to submit; it states testMetricsBounds.
func docReport() *Report {
	ms := time.Millisecond
	base := trialOf(clientBaseline, time.Second, 40*ms, 100*ms, 200*ms)
	prpc := []TrialResult{
		trialOf(clientThen, 1250*ms, 44*ms, 100*ms, 200*ms),
		trialOf(clientThen, time.Second, 48*ms, 90*ms, 210*ms),
		trialOf(clientThen, 1111111111, 40*ms, 110*ms, 190*ms), // 1 s ÷ 0.9
	}
	lr := &LoopResult{TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks,
		Sizes: []LoopSize{loopSizeOf(20000, loopForm(clientThen, 3, cpus(2), 300*ms, 60*ms, 2), loopPool())}, Targets: testTargets}
	return &Report{
		Command: "go run ./benchmarks/burst -suite all,loop -markdown benchmarks/README.md",
		Machine: Machine{
			CPUs: 2, CPUModel: "Test CPU", GOOS: "linux", GOARCH: "amd64", Kernel: "6.0.0-test", OSName: "Test OS 1",
			GoVersion: "go1.26.0", GRPCVersion: "v1.85.0", GOMAXPROCS: 2, LoadStart: "0.10 0.20 0.30", LoadEnd: "1.10 0.40 0.35",
		},
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Elapsed: 90 * time.Second,
		Timeout: 10 * time.Second, Budget: 2 * time.Millisecond, Warmup: 1000,
		Suites: []SuiteResult{{Name: standardSuite.Name, Backend: backendData, Shapes: []ShapeResult{pairedShape(Shape{1000, 2, 2, 3}, base, prpc)}}},
		Loop:   lr,

		MetricsBounds: testMetricsBounds,
	}
}

// testMetricsBounds are the bounds of the ratios prpc-go-metrics ÷ prpc-go the made-up reports
// state, given as input so that the tests do not follow targets.json.
var testMetricsBounds = metricsBounds{ClientCPUMax: 1.02, LoopThreadCPUMax: 1.05}

func TestSpreadText(t *testing.T) {
	for _, c := range []struct {
		s    spread
		n    int
		unit string
		want string
	}{
		{spread{0.97, 0.9, 1.02}, 3, "×", "0.97× (0.90–1.02)"},
		{spread{0.97, 0.97, 0.97}, 1, "×", "0.97×"},
		{spread{55.091, 50.63, 59.555}, 2, " ms", "55.09 ms (50.63–59.55)"},
	} {
		if got := spreadText(c.s, c.n, c.unit); got != c.want {
			t.Errorf("spreadText(%+v, %d, %q) = %q, want %q", c.s, c.n, c.unit, got, c.want)
		}
	}
	for _, c := range []struct {
		s    spread
		n    int
		want string
	}{
		{spread{1.1, 1, 1.2}, 3, "1.10× (1.00–1.20)"},
		{spread{}, 0, "–"},
		{spread{}, 2, "–"}, // an unknown ratio, as when the baseline's figure was 0
	} {
		if got := ratioCell(c.s, c.n); got != c.want {
			t.Errorf("ratioCell(%+v, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{2}, spread{2, 2, 2}},
		{[]float64{3, 1, 2}, spread{2, 1, 3}},
		{[]float64{4, 1, 2, 3}, spread{2.5, 1, 4}},
	} {
		if got := spreadOf(c.v, func(x float64) float64 { return x }); got != c.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", c.v, got, c.want)
		}
	}
}

// TestMarkdownFlag runs a small burst with -markdown and checks that it replaces the file with
// the document, and that a run that fails leaves the file as it was.
func TestMarkdownFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	const old = "an older report\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-inprocess", "-calls", "-1", "-markdown", path}, &stdout, &stderr); err == nil {
		t.Fatal("run with -calls -1 succeeded")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != old {
		t.Fatalf("a run that failed changed the file: %q, %v", b, err)
	}
	args := []string{"-inprocess", "-calls", "50", "-workers", "2", "-batch", "2", "-trials", "1", "-warmup", "0", "-markdown", path}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	cmd := "go run ./benchmarks/burst " + strings.Join(args, " ")
	if !strings.HasPrefix(doc, "# Performance report\n\n<!-- Generated by `"+cmd+"`.") || strings.Contains(doc, old) {
		t.Errorf("the file is not the run's document:\n%s", doc)
	}
	for _, want := range []string{"## Machine", "| custom | data service (in-memory store) | 50 | 2×2 | prpc-go | 1 |",
		"| custom | data service (in-memory store) | 50 | 2×2 | prpc-then | 1 |",
		"| fast-custom | fast backend: a handler that does no work | 50 | 2×2 | prpc-go | 1 |",
		"| 50 | 2×2 | 1 | prpc-then |", "## How to reproduce"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	// The document and its charts are written through temporary files, which are gone: the
	// directory holds the document and the chart directory, which holds the charts the
	// document links.
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 2 || entries[0].Name() != "README.md" || entries[1].Name() != chartDir {
		t.Errorf("the directory holds %v (%v), want the report and %s alone", entries, err, chartDir)
	}
	var links, charts []string
	for _, m := range imageLink.FindAllStringSubmatch(doc, -1) {
		links = append(links, m[2])
	}
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(path), chartDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		charts = append(charts, chartDir+"/"+e.Name())
	}
	slices.Sort(links)
	if want := []string{"charts/burst-latency-inprocess.svg", "charts/burst-ratios-inprocess.svg"}; !slices.Equal(links, want) || !slices.Equal(charts, want) {
		t.Errorf("the document links %q and the chart directory holds %q, want %q", links, charts, want)
	}
}

// TestShapeRatiosPairTrials checks that each prpc client's ratios are to the pool's trial of
// the same number, whatever the order of the clients within a trial: the pool takes t
// seconds in trial t, prpc-go half as long and prpc-then as long, so that any other pairing
// shows in the ratios.
func TestShapeRatiosPairTrials(t *testing.T) {
	sh := ShapeResult{Shape: Shape{Calls: 1000, Workers: 2, Batch: 2, Trials: 3}}
	order := [][]string{{clientThen, clientBaseline, clientGo}, {clientBaseline, clientGo, clientThen}, {clientGo, clientThen, clientBaseline}}
	for i, clients := range order {
		n := time.Duration(i + 1)
		for _, c := range clients {
			total := n * time.Second
			if c == clientGo {
				total /= 2
			}
			tr := trialOf(c, total, n*time.Millisecond, total, total)
			tr.Trial, tr.Calls = i+1, 1000
			sh.Trials = append(sh.Trials, tr)
		}
	}
	if got := sh.prpcClients(); !slices.Equal(got, []string{clientGo, clientThen}) {
		t.Errorf("prpcClients = %q, want prpc-go and prpc-then, in prpcForms order", got)
	}
	for _, c := range []struct {
		form       string
		throughput float64
		p99        float64
	}{
		{clientGo, 2, 0.5},
		{clientThen, 1, 1},
	} {
		rs := sh.trialRatios(c.form)
		if len(rs) != 3 {
			t.Fatalf("%s: %d ratios, want 3", c.form, len(rs))
		}
		for i, r := range rs {
			if r.Client != c.form || r.Throughput != c.throughput || r.P99 != c.p99 || r.CPUPerCall != 1 {
				t.Errorf("%s trial %d: ratios %+v, want calls/s %v, p99 %v, CPU/call 1", c.form, i+1, r, c.throughput, c.p99)
			}
		}
		if m := medianRatios(rs); m.Client != c.form || m.Throughput != c.throughput {
			t.Errorf("%s: median ratios %+v", c.form, m)
		}
	}
	if rs := sh.trialRatios(clientOnSettled); len(rs) != 0 {
		t.Errorf("ratios of a client that did not run: %+v", rs)
	}
}
