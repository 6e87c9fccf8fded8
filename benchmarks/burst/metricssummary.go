package main

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// The comparison of the metrics client with prpc-go: what registering both metrics adapters
// and scraping them costs, as the ratio prpc-go-metrics ÷ prpc-go in the same trial, per shape
// of the burst suites and per burst size of the loop suite.

// metricsBounds bound the median ratio prpc-go-metrics ÷ prpc-go: the client process's CPU time
// per call in the burst suites, and the loop thread's CPU time per call over the submission in
// the loop suite. The report states them beside the ratios.
type metricsBounds struct {
	ClientCPUMax     float64 `json:"clientCPUMax"`
	LoopThreadCPUMax float64 `json:"loopThreadCPUMax"`
}

// metricsGoals is targets.json's metrics bounds, read once: the bounds a run states
// (Report.MetricsBounds).
var metricsGoals = func() metricsBounds {
	b, err := parseMetricsBounds(targetsJSON)
	if err != nil {
		panic("burst: targets.json: " + err.Error())
	}
	return b
}()

// parseMetricsBounds reads the metrics bounds as targets.json holds them, under "metrics", and
// checks that both are there and at least 1, since the adapters cannot make prpc cheaper.
func parseMetricsBounds(data []byte) (metricsBounds, error) {
	nan := math.NaN()
	var file struct {
		Metrics *metricsBounds `json:"metrics"`
	}
	file.Metrics = &metricsBounds{nan, nan}
	if err := json.Unmarshal(data, &file); err != nil {
		return metricsBounds{}, err
	}
	b := file.Metrics
	if b == nil {
		return metricsBounds{}, fmt.Errorf("metrics missing")
	}
	for _, v := range []struct {
		key string
		v   float64
	}{{"clientCPUMax", b.ClientCPUMax}, {"loopThreadCPUMax", b.LoopThreadCPUMax}} {
		switch {
		case math.IsNaN(v.v):
			return metricsBounds{}, fmt.Errorf("metrics.%s missing", v.key)
		case v.v < 1:
			return metricsBounds{}, fmt.Errorf("metrics.%s is %v, want a ratio of at least 1", v.key, v.v)
		}
	}
	return *b, nil
}

// metricsRatios are prpc-go-metrics's figures ÷ prpc-go's in one trial number of a burst
// suite's shape (Throughput and CPUPerCall) or of a loop suite's burst size (SubmitCPU and
// Delivery); a ratio the suite does not measure, or whose prpc-go figure is 0 (unknown), is 0.
// Scrapes is how many times prpc-go-metrics's scraper read the adapters in the trial.
type metricsRatios struct {
	Trial      int     `json:"trial"`
	Throughput float64 `json:"calls_per_s,omitempty"`
	CPUPerCall float64 `json:"cpu_per_call,omitempty"`
	SubmitCPU  float64 `json:"submit_thread_cpu,omitempty"`
	Delivery   float64 `json:"delivery,omitempty"`
	Scrapes    int     `json:"scrapes"`
}

// metricsRow is the comparison over one shape of a burst suite or one burst size of the loop
// suite: Suite is the suite's name (suiteLoop for the loop suite), Ratios the ratios of every
// trial number both clients ran, in order.
type metricsRow struct {
	Suite  string
	Shape  Shape
	Ratios []metricsRatios
}

// metricsRows returns the report's comparisons of prpc-go-metrics with prpc-go: one per shape
// of the burst suites, in order, then one per burst size of the loop suite, in each of which
// both ran at least one trial of the same number.
func (r *Report) metricsRows() []metricsRow {
	var rows []metricsRow
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			row := metricsRow{Suite: s.Name, Shape: sh.Shape}
			for t := 1; t <= sh.Shape.Trials; t++ {
				if m, g, ok := pairAgainst(sh.Trials, clientGoMetrics, clientGo, t); ok {
					row.Ratios = append(row.Ratios, metricsRatios{
						Trial: t, Throughput: div(m.Throughput(), g.Throughput()), CPUPerCall: div(float64(m.CPU), float64(g.CPU)), Scrapes: m.Scrapes,
					})
				}
			}
			if len(row.Ratios) > 0 {
				rows = append(rows, row)
			}
		}
	}
	if r.Loop != nil {
		for _, sz := range r.Loop.Sizes {
			row := metricsRow{Suite: suiteLoop, Shape: sz.Shape}
			for t := 1; t <= sz.Shape.Trials; t++ {
				if m, g, ok := pairAgainst(sz.Trials, clientGoMetrics, clientGo, t); ok {
					row.Ratios = append(row.Ratios, metricsRatios{
						Trial: t, SubmitCPU: div(float64(m.SubmitThread.CPU), float64(g.SubmitThread.CPU)),
						Delivery: div(float64(m.Delivery), float64(g.Delivery)), Scrapes: m.Scrapes,
					})
				}
			}
			if len(row.Ratios) > 0 {
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// metricsFigures are the spreads of each ratio over a row's trials, each over the trials
// that measured it, with their count, and the median of the scrapes per trial.
type metricsFigures struct {
	Throughput, CPUPerCall, SubmitCPU, Delivery     spread
	NThroughput, NCPUPerCall, NSubmitCPU, NDelivery int
	Scrapes                                         float64
}

func figuresOfRatios(rs []metricsRatios) metricsFigures {
	var f metricsFigures
	f.Throughput, f.NThroughput = knownSpread(rs, func(r metricsRatios) float64 { return r.Throughput })
	f.CPUPerCall, f.NCPUPerCall = knownSpread(rs, func(r metricsRatios) float64 { return r.CPUPerCall })
	f.SubmitCPU, f.NSubmitCPU = knownSpread(rs, func(r metricsRatios) float64 { return r.SubmitCPU })
	f.Delivery, f.NDelivery = knownSpread(rs, func(r metricsRatios) float64 { return r.Delivery })
	f.Scrapes = medianOf(rs, func(r metricsRatios) float64 { return float64(r.Scrapes) })
	return f
}

// metricsTable is the summary's table of the comparison of prpc-go-metrics with prpc-go: a
// row per shape of the burst suites and per burst size of the loop suite, and when a kind of
// suite has several, a row that pools their trials; nil if no trial of the two pairs up.
func (r *Report) metricsTable() *table {
	rows := r.metricsRows()
	if len(rows) == 0 {
		return nil
	}
	b := r.MetricsBounds
	tb := newTable("lrcrrrrrr", "suite", "calls", "W×B", "trials", "calls/s",
		"client CPU/call (bound ≤ "+trimRatio(b.ClientCPUMax)+"×)", "loop-thread CPU/call, submitting (bound ≤ "+trimRatio(b.LoopThreadCPUMax)+"×)",
		"time in Tick/call, delivering", "scrapes/trial")
	add := func(suite, calls, wxb string, rs []metricsRatios) {
		f := figuresOfRatios(rs)
		scrapes := strconv.FormatFloat(f.Scrapes, 'f', -1, 64)
		tb.add(suite, calls, wxb, strconv.Itoa(len(rs)), ratioCell(f.Throughput, f.NThroughput), ratioCell(f.CPUPerCall, f.NCPUPerCall),
			ratioCell(f.SubmitCPU, f.NSubmitCPU), ratioCell(f.Delivery, f.NDelivery), scrapes)
	}
	var burst, loop []metricsRatios
	nBurst, nLoop := 0, 0
	for _, row := range rows {
		add(row.Suite, thousands(row.Shape.Calls), wxb(row.Shape), row.Ratios)
		if row.Suite == suiteLoop {
			loop, nLoop = append(loop, row.Ratios...), nLoop+1
		} else {
			burst, nBurst = append(burst, row.Ratios...), nBurst+1
		}
	}
	if nBurst > 1 {
		add("**burst suites, every shape**", "", "", burst)
	}
	if nLoop > 1 {
		add("**loop suite, every burst size**", "", "", loop)
	}
	return tb
}

// pairAgainst returns the trials numbered t of the client named client and of the client
// named base among trials, if both ran.
func pairAgainst[T clientTrial](trials []T, client, base string, t int) (c, b T, ok bool) {
	var hasC, hasB bool
	for _, tr := range trials {
		n, name := tr.trialOf()
		if n != t {
			continue
		}
		switch name {
		case client:
			c, hasC = tr, true
		case base:
			b, hasB = tr, true
		}
	}
	return c, b, hasC && hasB && client != ""
}

// ranMetrics reports whether the metrics client ran any of trials.
func ranMetrics[T clientTrial](trials []T) bool {
	return slices.ContainsFunc(trials, func(t T) bool { _, c := t.trialOf(); return c == clientGoMetrics })
}
