package main

import (
	"cmp"
	"encoding/json"
	"io"
	"time"
)

// JSON output.

type jsonReport struct {
	Command         string       `json:"command"`
	Machine         Machine      `json:"machine"`
	Started         time.Time    `json:"started"`
	ElapsedS        float64      `json:"elapsed_s"`
	Backend         string       `json:"backend"`
	Pinned          bool         `json:"pinned"`
	Metadata        bool         `json:"metadata"`
	ClientAffinity  string       `json:"client_affinity,omitempty"`
	BackendAffinity string       `json:"backend_affinity,omitempty"`
	TimeoutMs       float64      `json:"timeout_ms"`
	BudgetMs        float64      `json:"tick_budget_ms"`
	Warmup          int          `json:"warmup_calls"`
	Percentiles     string       `json:"percentiles"`
	Suites          []jsonSuite  `json:"suites"`
	Loop            *jsonLoop    `json:"loop,omitempty"`
	Policies        []jsonPolicy `json:"policies,omitempty"`
	// PoliciesElsewhere and PolicyServerAffinity are Report's.
	PoliciesElsewhere    bool   `json:"policies_elsewhere,omitempty"`
	PolicyServerAffinity string `json:"policy_server_affinity,omitempty"`
	// Metrics compares prpc-go-metrics with prpc-go, if they ran the same trial of any shape.
	Metrics *jsonMetrics `json:"metrics,omitempty"`
	Errors  int          `json:"errors"`
}

// jsonMetrics is the comparison of prpc-go-metrics with prpc-go: the bounds the report states,
// how often the metrics client's scraper read the adapters, and a row per shape of the burst
// suites and per burst size of the loop suite in which both ran.
type jsonMetrics struct {
	Client        string           `json:"client"`
	Base          string           `json:"base"`
	ScrapeEveryMs float64          `json:"scrape_every_ms"`
	Bounds        metricsBounds    `json:"bounds"`
	Rows          []jsonMetricsRow `json:"rows"`
}

// jsonMetricsRow is one row of jsonMetrics: the suite (loop for the loop suite) and shape, the
// ratios of every trial number both clients ran, and the spread of each ratio over them,
// absent where the suite does not measure it.
type jsonMetricsRow struct {
	Suite      string          `json:"suite"`
	Calls      int             `json:"calls"`
	Workers    int             `json:"workers"`
	Batch      int             `json:"batch"`
	Ratios     []metricsRatios `json:"ratios"`
	CallsPerS  *jsonSpread     `json:"calls_per_s,omitempty"`
	CPUPerCall *jsonSpread     `json:"cpu_per_call,omitempty"`
	SubmitCPU  *jsonSpread     `json:"submit_thread_cpu,omitempty"`
	Delivery   *jsonSpread     `json:"delivery,omitempty"`
}

// metricsJSON returns r's comparison of prpc-go-metrics with prpc-go, nil if there is none.
func (r *Report) metricsJSON() *jsonMetrics {
	rows := r.metricsRows()
	if len(rows) == 0 {
		return nil
	}
	jm := &jsonMetrics{Client: clientGoMetrics, Base: clientGo, ScrapeEveryMs: ms(scrapeEvery), Bounds: r.MetricsBounds}
	some := func(s spread, n int) *jsonSpread {
		if n == 0 {
			return nil
		}
		j := s.toJSON()
		return &j
	}
	for _, row := range rows {
		f := figuresOfRatios(row.Ratios)
		jm.Rows = append(jm.Rows, jsonMetricsRow{
			Suite: row.Suite, Calls: row.Shape.Calls, Workers: row.Shape.Workers, Batch: row.Shape.Batch, Ratios: row.Ratios,
			CallsPerS: some(f.Throughput, f.NThroughput), CPUPerCall: some(f.CPUPerCall, f.NCPUPerCall),
			SubmitCPU: some(f.SubmitCPU, f.NSubmitCPU), Delivery: some(f.Delivery, f.NDelivery),
		})
	}
	return jm
}

type jsonSuite struct {
	Name string `json:"name"`
	// Backend is the backend the suite ran against, backendData or backendFast;
	// BackendText describes it.
	Backend     string      `json:"backend"`
	BackendText string      `json:"backend_text"`
	Shapes      []jsonShape `json:"shapes"`
}

type jsonShape struct {
	Shape
	Results []jsonTrial `json:"results"`
	// Ratios are every prpc client's per-trial ratios to the baseline, client by client in
	// prpcForms order; MedianRatios their medians, one per client.
	Ratios       []ratios `json:"ratios,omitempty"`
	MedianRatios []ratios `json:"median_ratios,omitempty"`
}

type jsonTrial struct {
	Client            string   `json:"client"`
	Trial             int      `json:"trial"`
	Calls             int      `json:"calls"`
	OK                int      `json:"ok"`
	Failed            int      `json:"failed"`
	Wrong             int      `json:"wrong"`
	TotalS            float64  `json:"total_s"`
	CallsPerS         float64  `json:"calls_per_s"`
	MinMs             float64  `json:"min_ms"`
	AvgMs             float64  `json:"avg_ms"`
	P50Ms             float64  `json:"p50_ms"`
	P95Ms             float64  `json:"p95_ms"`
	P99Ms             float64  `json:"p99_ms"`
	MaxMs             float64  `json:"max_ms"`
	CPUPerCallUs      float64  `json:"cpu_per_call_us"`
	AllocsPerCall     float64  `json:"allocs_per_call"`
	AllocBytesPerCall float64  `json:"alloc_bytes_per_call"`
	FaultsPerCall     float64  `json:"minor_faults_per_call"`
	CPUIncludesBack   bool     `json:"cpu_includes_backend"`
	BackendCPUPerCall *float64 `json:"backend_cpu_per_call_us,omitempty"`
	PeakRSSBytes      int64    `json:"peak_rss_bytes"`
	PeakRSSSinceTrial bool     `json:"peak_rss_since_trial_start"`
	GCs               uint32   `json:"gcs"`
	Scrapes           int      `json:"scrapes,omitempty"`
	FirstError        string   `json:"first_error,omitempty"`
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error { return writeIndentedJSON(w, r.toJSON()) }

// WriteJSON writes the run's report as WriteJSON of Report does when it has one, and an array
// of them, in the order they ran, when it has several.
func (run Run) WriteJSON(w io.Writer) error {
	if len(run) == 1 {
		return run[0].WriteJSON(w)
	}
	all := make([]jsonReport, len(run))
	for i, r := range run {
		all[i] = r.toJSON()
	}
	return writeIndentedJSON(w, all)
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// toJSON converts r to its JSON form.
func (r *Report) toJSON() jsonReport {
	jr := jsonReport{
		Command:         r.Command,
		Machine:         r.Machine,
		Started:         r.Started,
		ElapsedS:        r.Elapsed.Seconds(),
		Backend:         "separate process",
		Pinned:          r.Pinned,
		ClientAffinity:  r.ClientAffinity,
		BackendAffinity: r.BackendAffinity,
		TimeoutMs:       ms(r.Timeout),
		BudgetMs:        ms(r.Budget),
		Warmup:          r.Warmup,
		Percentiles:     "nearest rank: the smallest sample with at least q% of the samples at or below it",
		Errors:          r.Errors(),
		Metadata:        r.Metadata,
	}
	if r.InProcess {
		jr.Backend = "in process"
	}
	for _, s := range r.Suites {
		js := jsonSuite{Name: s.Name, Backend: cmp.Or(s.Backend, backendData), BackendText: backendText(s.Backend)}
		for _, sh := range s.Shapes {
			jsh := jsonShape{Shape: sh.Shape}
			for _, f := range sh.prpcClients() {
				if rs := sh.trialRatios(f); len(rs) > 0 {
					jsh.Ratios = append(jsh.Ratios, rs...)
					jsh.MedianRatios = append(jsh.MedianRatios, medianRatios(rs))
				}
			}
			for _, t := range sh.Trials {
				jt := jsonTrial{
					Client: t.Client, Trial: t.Trial, Calls: t.Calls, OK: t.OK, Failed: t.Failed, Wrong: t.Wrong,
					TotalS: t.Total.Seconds(), CallsPerS: t.Throughput(),
					MinMs: ms(t.Lat.Min), AvgMs: ms(t.Lat.Avg), P50Ms: ms(t.Lat.P50), P95Ms: ms(t.Lat.P95),
					P99Ms: ms(t.Lat.P99), MaxMs: ms(t.Lat.Max),
					CPUPerCallUs: us(t.CPUPerCall()), CPUIncludesBack: r.InProcess,
					AllocsPerCall: t.AllocsPerCall(), AllocBytesPerCall: t.AllocBytesPerCall(), FaultsPerCall: t.FaultsPerCall(),
					PeakRSSBytes: t.PeakRSS, PeakRSSSinceTrial: t.PeakReset, GCs: t.GCs, Scrapes: t.Scrapes, FirstError: t.FirstErr,
				}
				if d := t.BackendCPUPerCall(); d >= 0 {
					v := us(d)
					jt.BackendCPUPerCall = &v
				}
				jsh.Results = append(jsh.Results, jt)
			}
			js.Shapes = append(js.Shapes, jsh)
		}
		jr.Suites = append(jr.Suites, js)
	}
	if r.Loop != nil {
		jr.Loop = r.Loop.toJSON()
	}
	for _, p := range r.Policies {
		jr.Policies = append(jr.Policies, p.toJSON())
	}
	jr.PoliciesElsewhere, jr.PolicyServerAffinity = r.PoliciesElsewhere, r.PolicyServerAffinity
	jr.Metrics = r.metricsJSON()
	return jr
}

type jsonLoop struct {
	TPS            int            `json:"tps"`
	GameWorkMs     float64        `json:"game_work_ms"`
	SubmitTick     int            `json:"submit_tick"`
	TailTicks      int            `json:"tail_ticks"`
	LateIntervalMs float64        `json:"late_interval_ms"`
	Sizes          []jsonLoopSize `json:"sizes"`
}

type jsonLoopSize struct {
	Calls       int `json:"calls"`
	Workers     int `json:"workers"`
	Batch       int `json:"batch"`
	PoolWorkers int `json:"pool_workers"`
	Trials      int `json:"trials"`
	// Results are in running order.
	Results []jsonLoopTrial `json:"results"`
	// Medians holds a median trial per client that ran more than one trial: the prpc forms
	// in prpcForms order, the metrics client, then the pool.
	Medians []jsonLoopTrial `json:"medians,omitempty"`
	// Ratios holds every prpc client's per-trial ratios to the pool: by client in prpcForms
	// order, then by trial.
	Ratios []loopRatios `json:"ratios,omitempty"`
	// Pool is the pool's figures; Comparisons holds, per prpc client that ran, in prpcForms
	// order, its figures, its ratios to the pool's and its targets.
	Pool        jsonLoopFigures      `json:"pool"`
	Comparisons []jsonLoopComparison `json:"comparisons"`
}

type jsonSpread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func (s spread) toJSON() jsonSpread { return jsonSpread{Median: s.median, Min: s.min, Max: s.max} }

type jsonLoopFigures struct {
	Trials           int        `json:"trials"`
	SubmitMs         jsonSpread `json:"submit_ms"`
	SubmitCPUMs      jsonSpread `json:"submit_thread_cpu_ms"`
	ToLastDeliveryMs jsonSpread `json:"to_last_delivery_ms"`
	LongestMs        float64    `json:"longest_interval_ms"`
	Late             int        `json:"late_ticks"`
	Skipped          uint64     `json:"skipped_ticks"`
}

func (f loopFigures) toJSON() jsonLoopFigures {
	return jsonLoopFigures{
		Trials: f.Trials, SubmitMs: f.Submit.toJSON(), SubmitCPUMs: f.SubmitCPU.toJSON(), ToLastDeliveryMs: f.ToLastDelivery.toJSON(),
		LongestMs: ms(f.Longest), Late: f.Late, Skipped: f.Skipped,
	}
}

type jsonLoopComparison struct {
	Client              string          `json:"client"`
	Form                string          `json:"form"`
	Figures             jsonLoopFigures `json:"figures"`
	PairedTrials        int             `json:"paired_trials"`
	SubmitRatio         jsonSpread      `json:"submit_ratio"`
	SubmitCPURatio      jsonSpread      `json:"submit_thread_cpu_ratio"`
	ToLastDeliveryRatio jsonSpread      `json:"to_last_delivery_ratio"`
	Targets             []loopTarget    `json:"targets"`
}

type jsonLoopTrial struct {
	Client             string  `json:"client"`
	Trial              int     `json:"trial,omitempty"`
	Ticks              uint64  `json:"ticks"`
	BurstIntervals     int     `json:"burst_intervals"`
	IntervalP50Ms      float64 `json:"interval_p50_ms"`
	IntervalP99Ms      float64 `json:"interval_p99_ms"`
	IntervalMaxMs      float64 `json:"interval_max_ms"`
	AfterSubmitMs      float64 `json:"interval_max_after_submit_tick_ms"`
	Late               int     `json:"late_intervals"`
	Skipped            uint64  `json:"skipped"`
	Overruns           uint64  `json:"overruns"`
	TickP99Ms          float64 `json:"tick_p99_ms"`
	TickMaxMs          float64 `json:"tick_max_ms"`
	DeliveryMs         float64 `json:"delivery_ms"`
	Wakeups            uint64  `json:"wakeups"`
	SubmitMs           float64 `json:"submit_ms"`
	SubmitFaults       int64   `json:"submit_minor_faults"`
	SubmitCPUMs        float64 `json:"submit_thread_cpu_ms"`
	SubmitSysMs        float64 `json:"submit_thread_sys_ms"`
	SubmitThreadFaults int64   `json:"submit_thread_minor_faults"`
	SubmitPreempted    int64   `json:"submit_thread_preempted"`
	ToLastDeliveryMs   float64 `json:"to_last_delivery_ms"`
	Calls              int     `json:"calls"`
	OK                 int     `json:"ok"`
	Failed             int     `json:"failed"`
	Wrong              int     `json:"wrong"`
	Scrapes            int     `json:"scrapes,omitempty"`
	FirstError         string  `json:"first_error,omitempty"`
}

func (t LoopTrial) toJSON() jsonLoopTrial {
	return jsonLoopTrial{
		Client: t.Client, Trial: t.Trial, Ticks: t.Ticks, BurstIntervals: t.Interval.N,
		IntervalP50Ms: ms(t.Interval.P50), IntervalP99Ms: ms(t.Interval.P99), IntervalMaxMs: ms(t.Interval.Max),
		AfterSubmitMs: ms(t.AfterSubmit), Late: t.Interval.Late,
		Skipped: t.Skipped, Overruns: t.Overruns, TickP99Ms: ms(t.TickP99), TickMaxMs: ms(t.TickMax),
		DeliveryMs: ms(t.Delivery), Wakeups: t.Wakeups, SubmitMs: ms(t.Submit), SubmitFaults: t.SubmitFaults,
		SubmitCPUMs: ms(t.SubmitThread.CPU), SubmitSysMs: ms(t.SubmitThread.Sys),
		SubmitThreadFaults: t.SubmitThread.Faults, SubmitPreempted: t.SubmitThread.Preempted,
		ToLastDeliveryMs: ms(t.Burst),
		Calls:            t.Calls, OK: t.OK, Failed: t.Failed, Wrong: t.Wrong, Scrapes: t.Scrapes, FirstError: t.FirstErr,
	}
}

func (lr *LoopResult) toJSON() *jsonLoop {
	jl := &jsonLoop{
		TPS: lr.TPS, GameWorkMs: ms(lr.GameWork), SubmitTick: lr.SubmitTick, TailTicks: lr.TailTicks,
		LateIntervalMs: ms(loopLate),
	}
	for _, sz := range lr.Sizes {
		s := sz.Shape
		js := jsonLoopSize{
			Calls: s.Calls, Workers: s.Workers, Batch: s.Batch, PoolWorkers: s.Workers * s.Batch, Trials: s.Trials,
			Pool: figuresOf(sz.clientTrials(clientBaseline)).toJSON(),
		}
		for _, f := range sz.forms() {
			c := sz.compare(f)
			js.Ratios = append(js.Ratios, sz.trialRatios(f)...)
			js.Comparisons = append(js.Comparisons, jsonLoopComparison{
				Client: f, Form: formText(f), Figures: c.PRPC.toJSON(), PairedTrials: c.Paired,
				SubmitRatio: c.Submit.toJSON(), SubmitCPURatio: c.SubmitCPU.toJSON(), ToLastDeliveryRatio: c.ToLastDelivery.toJSON(),
				Targets: c.targets(lr.Targets),
			})
		}
		for _, t := range sz.Trials {
			js.Results = append(js.Results, t.toJSON())
		}
		for _, name := range sz.reportedClients() {
			if m, ok := sz.median(name); ok && len(sz.clientTrials(name)) > 1 {
				js.Medians = append(js.Medians, m.toJSON())
			}
		}
		jl.Sizes = append(jl.Sizes, js)
	}
	return jl
}

// jsonPolicy is one scenario of the policies suite.
type jsonPolicy struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	About string `json:"about"`
	// Figures are the scenario's figures, each under its key in the cases' results.
	Figures []policyFigure `json:"figures"`
	// Series are the scenario's series, if any, each under its key in the cases' series.
	Series []policySeries   `json:"series,omitempty"`
	Trials int              `json:"trials"`
	Cases  []jsonPolicyCase `json:"cases"`
}

// jsonPolicyCase is one case of a scenario: what tells it apart, under the headings of the
// scenario's label columns; its figures in every trial, in running order; the median, the
// least and the greatest of each over the trials; and, if the scenario has series, each
// series in every trial, in running order, and the median of each point over the trials.
type jsonPolicyCase struct {
	Name         string                 `json:"name"`
	Labels       map[string]string      `json:"labels"`
	Results      []map[string]float64   `json:"results"`
	Errors       []int                  `json:"errors"`
	Median       map[string]float64     `json:"median"`
	Min          map[string]float64     `json:"min"`
	Max          map[string]float64     `json:"max"`
	Series       []map[string][]float64 `json:"series,omitempty"`
	SeriesMedian map[string][]float64   `json:"series_median,omitempty"`
}

func (p PolicyResult) toJSON() jsonPolicy {
	jp := jsonPolicy{Name: p.Name, Title: p.Title, About: p.About, Figures: p.Figures, Series: p.Series, Trials: p.Trials}
	for _, c := range p.Cases {
		jc := jsonPolicyCase{Name: c.Name, Labels: map[string]string{},
			Median: map[string]float64{}, Min: map[string]float64{}, Max: map[string]float64{}}
		for i, l := range p.Labels {
			jc.Labels[l] = c.Labels[i]
		}
		for _, t := range c.Trials {
			fs := map[string]float64{}
			for i, f := range p.Figures {
				fs[f.Key] = t.Figures[i]
			}
			jc.Results = append(jc.Results, fs)
			jc.Errors = append(jc.Errors, t.Errors)
			if len(p.Series) > 0 {
				ss := map[string][]float64{}
				for i, sr := range p.Series {
					ss[sr.Key] = t.Series[i]
				}
				jc.Series = append(jc.Series, ss)
			}
		}
		for i, f := range p.Figures {
			sp := c.figure(i)
			jc.Median[f.Key], jc.Min[f.Key], jc.Max[f.Key] = sp.median, sp.min, sp.max
		}
		for i, sr := range p.Series {
			if jc.SeriesMedian == nil {
				jc.SeriesMedian = map[string][]float64{}
			}
			jc.SeriesMedian[sr.Key] = c.seriesMedian(i)
		}
		jp.Cases = append(jp.Cases, jc)
	}
	return jp
}
