package main

import (
	"cmp"
	"encoding/json"
	"io"
	"time"
)

// JSON output.

type jsonReport struct {
	Command         string      `json:"command"`
	Machine         Machine     `json:"machine"`
	Started         time.Time   `json:"started"`
	ElapsedS        float64     `json:"elapsed_s"`
	Backend         string      `json:"backend"`
	Pinned          bool        `json:"pinned"`
	Metadata        bool        `json:"metadata"`
	ClientAffinity  string      `json:"client_affinity,omitempty"`
	BackendAffinity string      `json:"backend_affinity,omitempty"`
	TimeoutMs       float64     `json:"timeout_ms"`
	BudgetMs        float64     `json:"tick_budget_ms"`
	Warmup          int         `json:"warmup_calls"`
	Percentiles     string      `json:"percentiles"`
	Suites          []jsonSuite `json:"suites"`
	Loop            *jsonLoop   `json:"loop,omitempty"`
	Errors          int         `json:"errors"`
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
					PeakRSSBytes: t.PeakRSS, PeakRSSSinceTrial: t.PeakReset, GCs: t.GCs, FirstError: t.FirstErr,
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
	return jr
}
