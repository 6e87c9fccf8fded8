package main

import (
	"slices"
	"time"
)

// Report is everything one run measured.
type Report struct {
	Command string
	Machine Machine
	// Started is when the run started and Elapsed how long it took, seeding and warm-ups
	// included.
	Started time.Time
	Elapsed time.Duration
	// InProcess is true when the backend ran in the client's process, whose CPU time then
	// includes the backend's.
	InProcess bool
	// Metadata is true when every client captured every response's header and trailer
	// (-metadata).
	Metadata bool
	// Pinned is true when the client ran on CPU 0 and the backend on CPU 1.
	Pinned                          bool
	ClientAffinity, BackendAffinity string
	Timeout, Budget                 time.Duration
	Warmup                          int
	Suites                          []SuiteResult
	// Loop is the loop suite's result, if it ran.
	Loop *LoopResult
	// Policies holds the policies suite's scenarios, in the order they ran, if it ran.
	Policies []PolicyResult
	// PoliciesElsewhere is true when the placement ran some of the policies suite's scenarios
	// and left the others to another placement: those whose servers share the client's
	// process, where pinning cannot separate them.
	PoliciesElsewhere bool
	// PolicyServerAffinity describes the CPUs of the process that served the scenarios run
	// apart from the client, if any ran so, as ClientAffinity does the client's.
	PolicyServerAffinity string
	// MetricsBounds are the bounds of the ratios prpc-go-metrics ÷ prpc-go that the report
	// states: targets.json's for a run.
	MetricsBounds metricsBounds
}

// SuiteResult holds the shapes of one suite, and the backend it ran against (backendData or
// backendFast).
type SuiteResult struct {
	Name    string
	Backend string
	Shapes  []ShapeResult
}

// Errors counts the calls that failed or were answered wrongly, over every trial; in the
// policies suite, the calls that failed otherwise than their scenario expects.
func (r *Report) Errors() int {
	n := 0
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			for _, t := range sh.Trials {
				n += t.Errors()
			}
		}
	}
	if r.Loop != nil {
		for _, sz := range r.Loop.Sizes {
			for _, t := range sz.Trials {
				n += t.Errors()
			}
		}
	}
	for _, p := range r.Policies {
		n += p.Errors()
	}
	return n
}

// ratios are one prpc client's figures divided by the baseline's in one trial, or their
// medians over the trials.
type ratios struct {
	// Client is the prpc client.
	Client     string  `json:"client"`
	Throughput float64 `json:"calls_per_s"`
	CPUPerCall float64 `json:"cpu_per_call"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
}

// prpcClients returns the prpc clients, one per form of submission, that ran trials of s, in
// prpcForms order: those compared with the baseline.
func (s ShapeResult) prpcClients() []string {
	var fs []string
	for _, f := range prpcForms {
		if slices.ContainsFunc(s.Trials, func(t TrialResult) bool { return t.Client == f }) {
			fs = append(fs, f)
		}
	}
	return fs
}

// pair returns the trial results of the prpc client form and of the baseline for trial t, if
// both ran.
func (s ShapeResult) pair(form string, t int) (p, b TrialResult, ok bool) {
	return pairOf(s.Trials, form, t)
}

// trialOf implements clientTrial.
func (t TrialResult) trialOf() (int, string) { return t.Trial, t.Client }

// clientTrial is one trial of one client: its number and the client.
type clientTrial interface {
	trialOf() (trial int, client string)
}

// pairOf returns the trials numbered t of the prpc client named form and of the baseline
// among trials, if both ran.
func pairOf[T clientTrial](trials []T, form string, t int) (p, b T, ok bool) {
	return pairAgainst(trials, form, clientBaseline, t)
}

func ratioOf(p, b TrialResult) ratios {
	return ratios{
		Client:     p.Client,
		Throughput: div(p.Throughput(), b.Throughput()),
		CPUPerCall: div(float64(p.CPU), float64(b.CPU)),
		P50:        div(float64(p.Lat.P50), float64(b.Lat.P50)),
		P99:        div(float64(p.Lat.P99), float64(b.Lat.P99)),
	}
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0 // unknown; shown as "–"
	}
	return a / b
}

// trialRatios returns the ratios of the prpc client form in every trial in which it and the
// baseline both ran.
func (s ShapeResult) trialRatios(form string) []ratios {
	var rs []ratios
	for t := 1; t <= s.Shape.Trials; t++ {
		if p, b, ok := s.pair(form, t); ok {
			rs = append(rs, ratioOf(p, b))
		}
	}
	return rs
}

// medianRatios returns the median of each ratio over the trials, all of one prpc client.
func medianRatios(rs []ratios) ratios {
	pick := func(f func(ratios) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return medianFloat(v)
	}
	var client string
	if len(rs) > 0 {
		client = rs[0].Client
	}
	return ratios{
		Client:     client,
		Throughput: pick(func(r ratios) float64 { return r.Throughput }),
		CPUPerCall: pick(func(r ratios) float64 { return r.CPUPerCall }),
		P50:        pick(func(r ratios) float64 { return r.P50 }),
		P99:        pick(func(r ratios) float64 { return r.P99 }),
	}
}

// spread is the median, the least and the greatest of one figure over the trials.
type spread struct{ median, min, max float64 }

// spreadOf returns the spread of f over ts, or zeros for no ts.
func spreadOf[T any](ts []T, f func(T) float64) spread {
	if len(ts) == 0 {
		return spread{}
	}
	v := make([]float64, len(ts))
	for i, t := range ts {
		v[i] = f(t)
	}
	return spread{median: medianFloat(v), min: slices.Min(v), max: slices.Max(v)}
}

// medianOf returns the median of f over ts.
func medianOf[T any](ts []T, f func(T) float64) float64 {
	v := make([]float64, len(ts))
	for i, t := range ts {
		v[i] = f(t)
	}
	return medianFloat(v)
}

// medianDur returns the median of the duration f over ts.
func medianDur[T any](ts []T, f func(T) time.Duration) time.Duration {
	return time.Duration(medianOf(ts, func(t T) float64 { return float64(f(t)) }))
}

// medianFloat returns the median of v (the mean of the middle two for an even count).
func medianFloat(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// medianTrial returns, for one client, the median of each figure over its trials.
func (s ShapeResult) medianTrial(clientName string) (TrialResult, bool) {
	var ts []TrialResult
	for _, t := range s.Trials {
		if t.Client == clientName {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return TrialResult{}, false
	}
	med := func(f func(TrialResult) float64) float64 { return medianOf(ts, f) }
	dur := func(f func(TrialResult) time.Duration) time.Duration { return medianDur(ts, f) }
	m := TrialResult{Client: clientName, Calls: ts[0].Calls, BackendCPU: -1}
	m.Total = dur(func(t TrialResult) time.Duration { return t.Total })
	m.Lat.Min = dur(func(t TrialResult) time.Duration { return t.Lat.Min })
	m.Lat.Avg = dur(func(t TrialResult) time.Duration { return t.Lat.Avg })
	m.Lat.P50 = dur(func(t TrialResult) time.Duration { return t.Lat.P50 })
	m.Lat.P95 = dur(func(t TrialResult) time.Duration { return t.Lat.P95 })
	m.Lat.P99 = dur(func(t TrialResult) time.Duration { return t.Lat.P99 })
	m.Lat.Max = dur(func(t TrialResult) time.Duration { return t.Lat.Max })
	m.CPU = dur(func(t TrialResult) time.Duration { return t.CPU })
	if ts[0].BackendCPU >= 0 {
		m.BackendCPU = dur(func(t TrialResult) time.Duration { return t.BackendCPU })
	}
	m.PeakRSS = int64(med(func(t TrialResult) float64 { return float64(t.PeakRSS) }))
	m.Allocs = uint64(med(func(t TrialResult) float64 { return float64(t.Allocs) }))
	m.AllocBytes = uint64(med(func(t TrialResult) float64 { return float64(t.AllocBytes) }))
	m.MinorFaults = int64(med(func(t TrialResult) float64 { return float64(t.MinorFaults) }))
	m.PeakReset = ts[0].PeakReset
	for _, t := range ts {
		m.Failed += t.Failed
		m.Wrong += t.Wrong
	}
	return m, true
}
