package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is everything one run measured.
type Report struct {
	Command string
	Machine Machine
	// InProcess is true when the backend ran in the client's process, whose CPU time then
	// includes the backend's.
	InProcess bool
	// BaselineMetadata is true when the grpc-go baseline captured every response's header
	// and trailer, as prpc does.
	BaselineMetadata bool
	// PRPCNoMetadata is true when prpc's GetPlayer policy turned response metadata off.
	PRPCNoMetadata bool
	// Pinned is true when the client ran on CPU 0 and the backend on CPU 1.
	Pinned                          bool
	ClientAffinity, BackendAffinity string
	Timeout, Budget                 time.Duration
	Warmup                          int
	Suites                          []SuiteResult
	// Loop is the loop suite's result, if it ran.
	Loop *LoopResult
}

// Machine describes where the run happened.
type Machine struct {
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	GoVersion   string `json:"go_version"`
	GRPCVersion string `json:"grpc_version"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	// LoadStart and LoadEnd are the 1, 5 and 15-minute load averages when the run started
	// and ended (Linux), since other work on the machine skews every figure.
	LoadStart string `json:"load_average_start,omitempty"`
	LoadEnd   string `json:"load_average_end,omitempty"`
}

// SuiteResult holds the shapes of one suite.
type SuiteResult struct {
	Name   string
	Shapes []ShapeResult
}

// Errors counts the calls that failed or were answered wrongly, over every trial.
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
		for _, t := range r.Loop.Trials {
			n += t.Errors()
		}
	}
	return n
}

// ratios are prpc's figures divided by the baseline's in one trial.
type ratios struct {
	Throughput float64 `json:"calls_per_s"`
	CPUPerCall float64 `json:"cpu_per_call"`
	P99        float64 `json:"p99"`
}

// pair returns the trial results of prpc and the baseline for trial t, if both ran.
func (s ShapeResult) pair(t int) (p, b TrialResult, ok bool) {
	var hasP, hasB bool
	for _, tr := range s.Trials {
		if tr.Trial != t {
			continue
		}
		switch tr.Client {
		case clientPRPC:
			p, hasP = tr, true
		case clientBaseline:
			b, hasB = tr, true
		}
	}
	return p, b, hasP && hasB
}

func ratioOf(p, b TrialResult) ratios {
	return ratios{
		Throughput: div(p.Throughput(), b.Throughput()),
		CPUPerCall: div(float64(p.CPU), float64(b.CPU)),
		P99:        div(float64(p.Lat.P99), float64(b.Lat.P99)),
	}
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0 // unknown; shown as "–"
	}
	return a / b
}

// trialRatios returns the ratios of every trial in which both clients ran.
func (s ShapeResult) trialRatios() []ratios {
	var rs []ratios
	for t := 1; t <= s.Shape.Trials; t++ {
		if p, b, ok := s.pair(t); ok {
			rs = append(rs, ratioOf(p, b))
		}
	}
	return rs
}

// medianRatios returns the median of each ratio over the trials.
func medianRatios(rs []ratios) ratios {
	pick := func(f func(ratios) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return medianFloat(v)
	}
	return ratios{
		Throughput: pick(func(r ratios) float64 { return r.Throughput }),
		CPUPerCall: pick(func(r ratios) float64 { return r.CPUPerCall }),
		P99:        pick(func(r ratios) float64 { return r.P99 }),
	}
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
	m.Lat.Avg = dur(func(t TrialResult) time.Duration { return t.Lat.Avg })
	m.Lat.P50 = dur(func(t TrialResult) time.Duration { return t.Lat.P50 })
	m.Lat.P95 = dur(func(t TrialResult) time.Duration { return t.Lat.P95 })
	m.Lat.P99 = dur(func(t TrialResult) time.Duration { return t.Lat.P99 })
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

// WriteMarkdown writes the report as Markdown: a short header, then one table per suite, then
// the loop suite's table.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s/%s, %s, grpc-go %s, GOMAXPROCS %d.\n",
		m.CPUs, m.CPUModel, m.GOOS, m.GOARCH, m.GoVersion, m.GRPCVersion, m.GOMAXPROCS)
	if m.LoadStart != "" {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min): %s at the start, %s at the end.\n", m.LoadStart, m.LoadEnd)
	}
	switch {
	case r.InProcess:
		b.WriteString("Backend: in the client's process (`-inprocess`), so client CPU/call **includes the backend's**, as do faults/call.\n")
	case r.Pinned:
		fmt.Fprintf(&b, "Backend: a separate process. Pinned: client threads on CPU %s, backend threads on CPU %s.\n",
			r.ClientAffinity, r.BackendAffinity)
	default:
		b.WriteString("Backend: a separate process; not pinned, so client and backend share both CPUs.\n")
	}
	if len(r.Suites) > 0 {
		r.writeSuitesMarkdown(&b)
	}
	if r.Loop != nil {
		r.writeLoopMarkdown(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSuitesMarkdown writes the burst suites' notes and tables.
func (r *Report) writeSuitesMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "Every call: GetPlayer of a seeded player, timeout %v, response checked. Warm-up: %d calls per client per shape. prpc drains with Tick(%v) woken by Ready.\n",
		r.Timeout, r.Warmup, r.Budget)
	b.WriteString("Latency: submit → outcome on the loop goroutine, percentiles by nearest rank. " +
		"CPU/call: user+system CPU time of the process over the trial ÷ calls (getrusage). " +
		"allocs/call: heap allocations of the process over the trial ÷ calls. " +
		"faults/call: minor page faults of the client process over the trial ÷ calls (getrusage ru_minflt): each is a first touch of a fresh page; " +
		"the trial starts after freed memory is returned to the OS, so they include pages the heap had held before. " +
		peakRSSNote(r) +
		"Ratios: prpc ÷ grpc-go in the same trial (calls/s: above 1 is better for prpc; CPU/call and p99: below 1 is better).\n")
	if r.PRPCNoMetadata {
		b.WriteString("prpc's GetPlayer policy turns response metadata off (MethodPolicy.NoResponseMetadata, -prpc-no-metadata): neither client captures each response's header and trailer.\n")
	}
	if r.BaselineMetadata {
		b.WriteString("The grpc-go baseline captures every response's header and trailer (grpc.Header, grpc.Trailer), as prpc does for Promise.Header and Promise.Trailer (-baseline-metadata).\n")
	}
	for _, s := range r.Suites {
		backendCol := !r.InProcess && hasBackendCPU(s)
		fmt.Fprintf(b, "\n#### %s\n\n", s.Name)
		b.WriteString("| calls | W×B | trial | client | total | calls/s | avg | p50 | p95 | p99 | CPU/call |")
		sep := "|---:|:-:|:-:|:--|---:|---:|---:|---:|---:|---:|---:|"
		if backendCol {
			b.WriteString(" backend CPU/call |")
			sep += "---:|"
		}
		b.WriteString(" allocs/call | faults/call | peak RSS | errors | calls/s ratio | CPU/call ratio | p99 ratio |\n")
		sep += "---:|---:|---:|---:|---:|---:|---:|\n"
		b.WriteString(sep)
		for _, sh := range s.Shapes {
			row := func(trial string, t TrialResult, rs *ratios) {
				fmt.Fprintf(b, "| %s | %d×%d | %s | %s | %.3f s | %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f µs |",
					thousands(sh.Shape.Calls), sh.Shape.Workers, sh.Shape.Batch, trial, t.Client,
					t.Total.Seconds(), thousands(int(t.Throughput()+0.5)),
					ms(t.Lat.Avg), ms(t.Lat.P50), ms(t.Lat.P95), ms(t.Lat.P99), us(t.CPUPerCall()))
				if backendCol {
					if d := t.BackendCPUPerCall(); d >= 0 {
						fmt.Fprintf(b, " %.1f µs |", us(d))
					} else {
						b.WriteString(" – |")
					}
				}
				fmt.Fprintf(b, " %.1f | %.1f | %s | %d |", t.AllocsPerCall(), t.FaultsPerCall(), mib(t.PeakRSS), t.Errors())
				if rs != nil {
					fmt.Fprintf(b, " %s | %s | %s |\n", times(rs.Throughput), times(rs.CPUPerCall), times(rs.P99))
				} else {
					b.WriteString(" | | |\n")
				}
			}
			for t := 1; t <= sh.Shape.Trials; t++ {
				p, base, both := sh.pair(t)
				for _, tr := range sh.Trials {
					if tr.Trial != t {
						continue
					}
					var rs *ratios
					if both && tr.Client == clientPRPC {
						x := ratioOf(p, base)
						rs = &x
					}
					row(strconv.Itoa(t), tr, rs)
				}
			}
			if sh.Shape.Trials > 1 {
				trs := sh.trialRatios()
				for _, name := range []string{clientPRPC, clientBaseline} {
					mt, ok := sh.medianTrial(name)
					if !ok {
						continue
					}
					var rs *ratios
					if name == clientPRPC && len(trs) > 0 {
						x := medianRatios(trs)
						rs = &x
					}
					row("**median**", mt, rs)
				}
			}
		}
	}
	b.WriteString("\nMedian rows: the median of each figure over the trials; their ratios are the medians of the per-trial ratios. Errors: failed calls plus wrong responses, summed.\n")
}

// peakRSSNote says what the peak RSS column means in r.
func peakRSSNote(r *Report) string {
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			for _, t := range sh.Trials {
				if !t.PeakReset {
					return "Peak RSS: the process's peak resident set since it started (ru_maxrss; this OS did not let it be reset per trial). "
				}
			}
		}
	}
	return "Peak RSS: the process's peak resident set during the trial (ru_maxrss, reset before each trial after returning freed memory to the OS). "
}

func hasBackendCPU(s SuiteResult) bool {
	for _, sh := range s.Shapes {
		for _, t := range sh.Trials {
			if t.BackendCPU >= 0 {
				return true
			}
		}
	}
	return false
}

// JSON output.

type jsonReport struct {
	Command         string      `json:"command"`
	Machine         Machine     `json:"machine"`
	Backend         string      `json:"backend"`
	Pinned          bool        `json:"pinned"`
	BaselineMD      bool        `json:"baseline_captures_metadata"`
	PRPCNoMD        bool        `json:"prpc_skips_metadata"`
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
	Name   string      `json:"name"`
	Shapes []jsonShape `json:"shapes"`
}

type jsonShape struct {
	Shape
	Results      []jsonTrial `json:"results"`
	Ratios       []ratios    `json:"ratios,omitempty"`
	MedianRatios *ratios     `json:"median_ratios,omitempty"`
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
func (r *Report) WriteJSON(w io.Writer) error {
	jr := jsonReport{
		Command:         r.Command,
		Machine:         r.Machine,
		Backend:         "separate process",
		Pinned:          r.Pinned,
		ClientAffinity:  r.ClientAffinity,
		BackendAffinity: r.BackendAffinity,
		TimeoutMs:       ms(r.Timeout),
		BudgetMs:        ms(r.Budget),
		Warmup:          r.Warmup,
		Percentiles:     "nearest rank: the smallest sample with at least q% of the samples at or below it",
		Errors:          r.Errors(),
		BaselineMD:      r.BaselineMetadata,
		PRPCNoMD:        r.PRPCNoMetadata,
	}
	if r.InProcess {
		jr.Backend = "in process"
	}
	for _, s := range r.Suites {
		js := jsonSuite{Name: s.Name}
		for _, sh := range s.Shapes {
			jsh := jsonShape{Shape: sh.Shape, Ratios: sh.trialRatios()}
			if len(jsh.Ratios) > 0 {
				m := medianRatios(jsh.Ratios)
				jsh.MedianRatios = &m
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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jr)
}

// Formatting helpers.

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func mib(n int64) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func times(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x)
}

// thousands formats n with commas: 20000 → "20,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
