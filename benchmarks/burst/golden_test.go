package main

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenRun returns a made-up run of two placements, unpinned then pinned, each with the
// standard suite (data service) and the fast-extreme suite (fast backend), both run by
// prpc-go, prpc-then and the pool over three trials, the standard suite by prpc-go-metrics
// too, and the loop suite over two burst sizes of three trials of the five clients, one with a
// failed call; and the policies suite (madeUpPolicies): every scenario in the unpinned
// placement, the stream scenario with its server apart in the pinned one.
func goldenRun() Run {
	report := func() *Report {
		r := docReport()
		ms := time.Millisecond
		base := trialOf(clientBaseline, time.Second, 40*ms, 100*ms, 200*ms)
		then := trialOf(clientThen, 900*ms, 50*ms, 95*ms, 230*ms)
		sh := &r.Suites[0].Shapes[0]
		var prpc []TrialResult
		for _, tr := range sh.Trials {
			if tr.Client == clientThen {
				prpc = append(prpc, tr)
			}
		}
		*sh = pairedShape(sh.Shape, base, goTrials(), metricsTrials(goTrials()), prpc)
		r.Suites = append(r.Suites, SuiteResult{Name: fastExtremeSuite.Name, Backend: backendFast,
			Shapes: []ShapeResult{pairedShape(Shape{20000, 6, 16, 3}, base, []TrialResult{then, then, then}, goTrials())}})
		for i := range r.Suites {
			for j := range r.Suites[i].Shapes {
				for k := range r.Suites[i].Shapes[j].Trials {
					t := &r.Suites[i].Shapes[j].Trials[k]
					t.BackendCPU = time.Duration(k+1) * 7 * ms
					t.Allocs, t.AllocBytes, t.MinorFaults = uint64(k*1000+4321), uint64(k*9000+123456), int64(k*37+250)
					t.PeakRSS, t.GCs = int64(k+20)<<20, uint32(k)
					t.Lat.Min, t.Lat.Max = t.Lat.P50/3, t.Lat.P99*2
				}
			}
		}
		r.Suites[1].Shapes[0].Trials[4].Failed, r.Suites[1].Shapes[0].Trials[4].FirstErr = 2, "call 3: deadline exceeded"
		r.Loop.Sizes = []LoopSize{loopSizeAll(2000), loopSizeAll(20000)}
		tr := &r.Loop.Sizes[1].Trials[4]
		tr.OK, tr.Failed, tr.FirstErr = 19999, 1, "call 7: deadline exceeded"
		for i := range r.Loop.Sizes {
			r.Loop.Sizes[i] = withMetrics(r.Loop.Sizes[i])
		}
		for i := range r.Loop.Sizes {
			for j := range r.Loop.Sizes[i].Trials {
				t := &r.Loop.Sizes[i].Trials[j]
				t.Skipped, t.Overruns, t.Wakeups = uint64(j%2), uint64(j%3), uint64(j+4)
				t.TickP99, t.TickMax, t.Delivery, t.AfterSubmit = 21*msec, 33*msec, time.Duration(j+1)*msec, 50*msec
				t.SubmitFaults, t.SubmitThread.Sys = int64(1234*j), 1*msec
				t.SubmitThread.Faults, t.SubmitThread.Preempted = int64(j*11), int64(j%4)
			}
		}
		return r
	}
	unpinned, pinned := report(), report()
	pinned.Pinned, pinned.ClientAffinity, pinned.BackendAffinity = true, "0", "1"
	unpinned.Policies = madeUpPolicies(policyScenarios(false))
	pinned.Policies, pinned.PoliciesElsewhere, pinned.PolicyServerAffinity = madeUpPolicies(pinnedApart()), true, "1"
	return Run{unpinned, pinned}
}

// pinnedApart returns the policies suite's scenarios that the pinned placement of a run of
// both placements runs, as it runs them: the stream scenario, its server in a process apart.
func pinnedApart() []policyScenario {
	o := options{policies: policyScenarios(false), placements: []bool{false, true}}
	var out []policyScenario
	for _, s := range o.policiesIn(true) {
		out = append(out, s.apart("127.0.0.1:1"))
	}
	return out
}

// metricsTrials returns made-up trials of prpc-go-metrics, one per trial of prpc-go in
// goTrials: their calls/s ratios to prpc-go's 0.98, 1.00 and 1.02 in turn, their CPU ratios
// 1.01, 0.99 and 1.05, and their scrapes 2, 3 and 2.
func metricsTrials(goTrials []TrialResult) []TrialResult {
	var ts []TrialResult
	for i, g := range goTrials {
		m := g
		m.Client = clientGoMetrics
		m.Total = time.Duration(float64(g.Total) / []float64{0.98, 1, 1.02}[i%3])
		m.CPU = time.Duration(float64(g.CPU) * []float64{1.01, 0.99, 1.05}[i%3])
		m.Scrapes = []int{2, 3, 2}[i%3]
		ts = append(ts, m)
	}
	return ts
}

// withMetrics returns sz with a made-up trial of prpc-go-metrics after each trial of prpc-go,
// with the same number: its loop thread's CPU time over the submission 1.03, 0.97 and 1.10
// times prpc-go's in turn, its time in Tick 1.04 times, and 12 scrapes.
func withMetrics(sz LoopSize) LoopSize {
	var ts []LoopTrial
	k := 0
	for _, t := range sz.Trials {
		ts = append(ts, t)
		if t.Client != clientGo {
			continue
		}
		m := t
		m.Client, m.Scrapes = clientGoMetrics, 12
		m.SubmitThread.CPU = time.Duration(float64(t.SubmitThread.CPU) * []float64{1.03, 0.97, 1.10}[k%3])
		m.Delivery = time.Duration(float64(t.Delivery) * 1.04)
		ts = append(ts, m)
		k++
	}
	sz.Trials = ts
	return sz
}

// madeUpPolicies returns made-up results of scenarios of the policies suite, with their
// titles, sentences, figures and series, three trials per case: figure j of case i measures (i+1)×10^j scaled by 0.9, 1.0 and 1.2 in its three trials, but the overload
// scenario's last figure, the limit, which is 0 but under the adaptive limit; point p of a
// series measures (i+1)×10×(p+1) scaled likewise; and the first case of the overload
// scenario had an error in trial 2.
func madeUpPolicies(scenarios []policyScenario) []PolicyResult {
	var out []PolicyResult
	for _, s := range scenarios {
		pr := PolicyResult{Name: s.Name, Title: s.Title, About: s.About, Labels: s.Labels, Figures: s.Figures, Series: s.Series, Trials: 3}
		for i, c := range s.Cases {
			cr := PolicyCaseResult{Name: c.Name, Labels: c.Labels}
			for t, scale := range []float64{0.9, 1, 1.2} {
				tr := PolicyTrial{}
				for j, f := range s.Figures {
					v := float64(i+1) * math.Pow(10, float64(j)) * scale
					if f.noneIfZero && !strings.Contains(c.Name, "adaptive") {
						v = 0
					}
					tr.Figures = append(tr.Figures, v)
				}
				for _, sr := range s.Series {
					var vs []float64
					for p := range sr.Points {
						vs = append(vs, float64(i+1)*10*float64(p+1)*scale)
					}
					tr.Series = append(tr.Series, vs)
				}
				if s.Name == "overload" && i == 0 && t == 1 {
					tr.Errors = 1
				}
				cr.Trials = append(cr.Trials, tr)
			}
			pr.Cases = append(pr.Cases, cr)
		}
		out = append(out, pr)
	}
	return out
}

// goldenPolicies returns a made-up run of the policies suite alone, in one placement.
func goldenPolicies() Run {
	r := docReport()
	r.Command = "go run ./benchmarks/burst -suite policies -policy-trials 3 -markdown policies.md"
	r.Suites, r.Loop, r.Policies = nil, nil, madeUpPolicies(policyScenarios(false))
	return Run{r}
}

// goldenSingle returns a made-up run of one placement, the backend in process, every client
// capturing metadata and the peak RSS not reset per trial: one trial of a shape prpc-then ran
// alone and of one the pool ran alone, and the loop suite's prpc-then alone, one trial, under
// other targets.
func goldenSingle() Run {
	r := docReport()
	r.InProcess, r.Metadata = true, true
	r.Command = "go run ./benchmarks/burst -inprocess -metadata"
	sh := r.Suites[0].Shapes[0]
	alone := ShapeResult{Shape: sh.Shape}
	alone.Shape.Trials = 1
	pool := alone
	for _, t := range sh.Trials {
		if t.Trial != 1 {
			continue
		}
		t.PeakReset, t.PeakRSS = false, 30<<20
		if t.Client == clientBaseline {
			pool.Trials = append(pool.Trials, t)
		} else {
			alone.Trials = append(alone.Trials, t)
		}
	}
	r.Suites[0].Shapes = []ShapeResult{alone, pool}
	r.Loop.Sizes = []LoopSize{loopSizeAll(2000)}
	keepClients(r, 1, clientThen)
	r.Loop.Targets = loopTargets{GoCPUMax: 1.1, GoCPUAim: 1.0, OnSettledCPUMax: 2.25, DeliveryMax: 1.6, ThenCPUReference: map[int]float64{5000: 2.4}}
	return Run{r}
}

// TestGolden renders the made-up runs (goldenRun, goldenSingle, goldenPolicies) as the -markdown document, the Markdown on stdout and
// JSON, and compares each byte for byte with its file in testdata (go test -update rewrites
// them).
func TestGolden(t *testing.T) {
	for name, run := range map[string]Run{"placements": goldenRun(), "single": goldenSingle(), "policies": goldenPolicies()} {
		for _, out := range []struct {
			ext   string
			write func(Run, *bytes.Buffer) error
		}{
			{"doc.md", func(r Run, b *bytes.Buffer) error { return r.WriteDocument(b) }},
			{"md", func(r Run, b *bytes.Buffer) error { return r.WriteMarkdown(b) }},
			{"json", func(r Run, b *bytes.Buffer) error { return r.WriteJSON(b) }},
		} {
			path := filepath.Join("testdata", name+"."+out.ext+".golden")
			var got bytes.Buffer
			if err := out.write(run, &got); err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				gl, wl := bytes.Split(got.Bytes(), []byte("\n")), bytes.Split(want, []byte("\n"))
				i := 0
				for i < min(len(gl), len(wl)) && bytes.Equal(gl[i], wl[i]) {
					i++
				}
				line := func(ls [][]byte) string {
					if i < len(ls) {
						return string(ls[i])
					}
					return "<end>"
				}
				t.Errorf("%s differs from the golden file at line %d:\ngot:  %s\nwant: %s", path, i+1, line(gl), line(wl))
			}
		}
	}
}
