package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

const msec = time.Millisecond

// testTargets are the bounds the tests of the loop suite's verdicts judge by, given to the
// code as input so that the tests do not follow targets.json: prpc-go at most 1.5× (aim 1.2×),
// prpc-onsettled 2.0×, prpc-then 2.81×, 3.64× and 4.01× at 2,000, 5,000 and 20,000 calls, and
// every form's delivery 1.05×.
var testTargets = loopTargets{
	GoCPUMax: 1.5, GoCPUAim: 1.2, OnSettledCPUMax: 2.0, DeliveryMax: 1.05,
	ThenCPUReference: map[int]float64{2000: 2.81, 5000: 3.64, 20000: 4.01},
}

// loopTrialOf is one made-up trial of the loop suite, over 2,000 calls: the submission's wall
// and thread CPU time, the time to the last delivery, the longest tick interval and the late
// ones.
func loopTrialOf(client string, trial int, submit, cpu, toLast, longest time.Duration, late int) LoopTrial {
	return LoopTrial{
		Client: client, Trial: trial, Calls: 2000, OK: 2000, Ticks: 20,
		Interval: Intervals{N: 9, P50: 50 * time.Millisecond, P99: longest, Max: longest, Late: late},
		Submit:   submit, SubmitThread: SubmitThread{CPU: cpu}, Burst: toLast,
	}
}

// loopSizeOf interleaves the trials of each client into a size of calls calls, each answered
// right: trial 1 of every client in the order given, then trial 2, and so on.
func loopSizeOf(calls int, clients ...[]LoopTrial) LoopSize {
	sz := LoopSize{Shape: Shape{Calls: calls, Workers: 6, Batch: 16}}
	for _, ts := range clients {
		sz.Shape.Trials = max(sz.Shape.Trials, len(ts))
	}
	for i := range sz.Shape.Trials {
		for _, ts := range clients {
			if i < len(ts) {
				sz.Trials = append(sz.Trials, ts[i])
			}
		}
	}
	for i := range sz.Trials {
		sz.Trials[i].Calls, sz.Trials[i].OK = calls, calls
	}
	return sz
}

// loopPool is three made-up trials of the pool: submission 10, 12 and 8 ms, its thread's
// CPU 5 ms, 200 ms to the last delivery, the longest interval 52, 50 and 51 ms and one late
// tick, in trial 1.
func loopPool() []LoopTrial {
	return []LoopTrial{
		loopTrialOf(clientBaseline, 1, 10*msec, 5*msec, 200*msec, 52*msec, 1),
		loopTrialOf(clientBaseline, 2, 12*msec, 5*msec, 200*msec, 50*msec, 0),
		loopTrialOf(clientBaseline, 3, 8*msec, 5*msec, 200*msec, 51*msec, 0),
	}
}

// loopForm is three made-up trials of the prpc client form against loopPool's: its
// submission's wall time wall times the pool's in every trial, its thread's CPU time cpu[i]
// in trial i+1 (against the pool's 5 ms), toLast to the last delivery (against 200 ms), its
// longest tick interval longest in trial 2 (51 ms otherwise) and late late ticks in trial 3.
func loopForm(form string, wall float64, cpu [3]time.Duration, toLast, longest time.Duration, late int) []LoopTrial {
	var ts []LoopTrial
	for i, b := range loopPool() {
		l, lt := 51*msec, 0
		if i == 1 {
			l = longest
		}
		if i == 2 {
			lt = late
		}
		ts = append(ts, loopTrialOf(form, i+1, time.Duration(float64(b.Submit)*wall), cpu[i], toLast, l, lt))
	}
	return ts
}

// cpus returns the thread CPU times of three trials whose ratios to the pool's 5 ms are r.
func cpus(r ...float64) [3]time.Duration {
	var d [3]time.Duration
	for i := range d {
		d[i] = time.Duration(r[i%len(r)] * float64(5*msec))
	}
	return d
}

// loopSizeAll is a made-up burst size of calls calls run by the four clients: prpc-go at
// 1.2× the pool's loop-thread CPU, prpc-onsettled at 2.2×, prpc-then at 2.5×, each with its
// own wall time, delivery and tick figures; in running order, as runLoop rotates them.
func loopSizeAll(calls int) LoopSize {
	gof := loopForm(clientGo, 0.5, cpus(1.2), 150*msec, 53*msec, 0)
	onSettled := loopForm(clientOnSettled, 1, cpus(2, 2.2, 2.4), 210*msec, 51*msec, 1)
	then := loopForm(clientThen, 3, cpus(2.5), 300*msec, 60*msec, 2)
	pool := loopPool()
	sz := loopSizeOf(calls)
	sz.Shape.Trials = 3
	clients := [][]LoopTrial{gof, onSettled, then, pool}
	for t := 1; t <= 3; t++ {
		for _, c := range trialOrder(len(clients), t) {
			sz.Trials = append(sz.Trials, clients[c][t-1])
		}
	}
	for i := range sz.Trials {
		sz.Trials[i].Calls, sz.Trials[i].OK = calls, calls
	}
	return sz
}

// verdictOf names a target's verdict for a test: "met", "met, aim met", "met, aim missed",
// "not met" or "unknown".
func verdictOf(tg loopTarget) string {
	switch {
	case !tg.Known:
		return "unknown"
	case !tg.Met:
		return "not met"
	case tg.Aim == "":
		return "met"
	case tg.AimMet:
		return "met, aim met"
	}
	return "met, aim missed"
}

func TestLoopTargets(t *testing.T) {
	type verdicts struct{ cpu, delivery, late string }
	pool := loopPool // one late tick over its trials
	for _, c := range []struct {
		name      string
		form      string
		calls     int
		cpu       [3]time.Duration
		toLast    time.Duration
		late      int
		pool      []LoopTrial
		want      verdicts
		cpuTarget string
	}{
		{name: "callback form within its aim", form: clientGo, calls: 2000, cpu: cpus(1.2), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met, aim met", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "callback form past its aim", form: clientGo, calls: 2000, cpu: cpus(1.21), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met, aim missed", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "callback form at its bound", form: clientGo, calls: 20000, cpu: cpus(1.5), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met, aim missed", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "judged as shown, to two decimals", form: clientGo, calls: 2000, cpu: cpus(1.504), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met, aim missed", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "callback form past its bound", form: clientGo, calls: 2000, cpu: cpus(1.51), toLast: 200 * msec,
			pool: pool(), want: verdicts{"not met", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "one callback at its bound", form: clientOnSettled, calls: 5000, cpu: cpus(2), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met", "met", "met"}, cpuTarget: "≤ 2.0×"},
		{name: "one callback past its bound", form: clientOnSettled, calls: 5000, cpu: cpus(2.01), toLast: 200 * msec,
			pool: pool(), want: verdicts{"not met", "met", "met"}, cpuTarget: "≤ 2.0×"},
		{name: "median of the trials", form: clientOnSettled, calls: 5000, cpu: cpus(1, 3, 1.9), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met", "met", "met"}, cpuTarget: "≤ 2.0×"},
		{name: "Then and OnError at 2,000 calls", form: clientThen, calls: 2000, cpu: cpus(2.81), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met", "met", "met"}, cpuTarget: "≤ 2.81×"},
		{name: "Then and OnError past 2,000 calls' reference", form: clientThen, calls: 2000, cpu: cpus(2.82), toLast: 200 * msec,
			pool: pool(), want: verdicts{"not met", "met", "met"}, cpuTarget: "≤ 2.81×"},
		{name: "Then and OnError at 5,000 calls", form: clientThen, calls: 5000, cpu: cpus(3.64), toLast: 200 * msec,
			pool: pool(), want: verdicts{"met", "met", "met"}, cpuTarget: "≤ 3.64×"},
		{name: "Then and OnError past 20,000 calls' reference", form: clientThen, calls: 20000, cpu: cpus(4.02), toLast: 200 * msec,
			pool: pool(), want: verdicts{"not met", "met", "met"}, cpuTarget: "≤ 4.01×"},
		{name: "Then and OnError at a size with no reference", form: clientThen, calls: 1000, cpu: cpus(1), toLast: 200 * msec,
			pool: pool(), want: verdicts{"unknown", "met", "met"}, cpuTarget: "none at 1,000 calls"},
		{name: "delivery at its bound", form: clientGo, calls: 2000, cpu: cpus(1), toLast: 210 * msec,
			pool: pool(), want: verdicts{"met, aim met", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "delivery past its bound", form: clientOnSettled, calls: 2000, cpu: cpus(1), toLast: 212 * msec,
			pool: pool(), want: verdicts{"met", "not met", "met"}, cpuTarget: "≤ 2.0×"},
		{name: "as many late ticks as the pool", form: clientThen, calls: 2000, cpu: cpus(1), toLast: 200 * msec, late: 1,
			pool: pool(), want: verdicts{"met", "met", "met"}, cpuTarget: "≤ 2.81×"},
		{name: "more late ticks than the pool", form: clientGo, calls: 2000, cpu: cpus(1), toLast: 200 * msec, late: 2,
			pool: pool(), want: verdicts{"met, aim met", "met", "not met"}, cpuTarget: "≤ 1.5×"},
		{name: "unknown thread CPU", form: clientGo, calls: 2000, cpu: cpus(0), toLast: 200 * msec,
			pool: pool(), want: verdicts{"unknown", "met", "met"}, cpuTarget: "≤ 1.5×"},
		{name: "no pool", form: clientGo, calls: 2000, cpu: cpus(1), toLast: 200 * msec,
			want: verdicts{"unknown", "unknown", "unknown"}, cpuTarget: "≤ 1.5×"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sz := loopSizeOf(c.calls, loopForm(c.form, 1, c.cpu, c.toLast, 51*msec, c.late), c.pool)
			tg := sz.compare(c.form).targets(testTargets)
			if len(tg) != 3 || tg[0].Figure != figSubmitCPU || tg[1].Figure != figDelivery || tg[2].Figure != figLate {
				t.Fatalf("targets %+v, want the loop-thread CPU's, the delivery's and the late ticks'", tg)
			}
			if got := (verdicts{verdictOf(tg[0]), verdictOf(tg[1]), verdictOf(tg[2])}); got != c.want {
				t.Errorf("verdicts %+v, want %+v (targets %+v)", got, c.want, tg)
			}
			if tg[0].Target != c.cpuTarget || tg[1].Target != "≤ 1.05×" || tg[2].Target != "≤ the pool's" {
				t.Errorf("targets %q, %q, %q; want %q, ≤ 1.05×, ≤ the pool's", tg[0].Target, tg[1].Target, tg[2].Target, c.cpuTarget)
			}
			if wantAim := c.form == clientGo; (tg[0].Aim == "≤ 1.2×") != wantAim || tg[1].Aim != "" || tg[2].Aim != "" {
				t.Errorf("aims %q, %q, %q; want ≤ 1.2× for the loop-thread CPU of %s alone", tg[0].Aim, tg[1].Aim, tg[2].Aim, clientGo)
			}
		})
	}
}

func TestLoopCompare(t *testing.T) {
	near := func(a, b spread) bool {
		const eps = 1e-9
		return abs(a.median-b.median) < eps && abs(a.min-b.min) < eps && abs(a.max-b.max) < eps
	}
	for _, c := range []struct {
		name                 string
		size                 LoopSize
		form                 string
		submit, cpu, toLast  spread // of the ratios
		longest              [2]time.Duration
		late                 [2]int
		paired               int
		trials               [2]int // of the form and of the pool
		forms                []string
		wantRatioClientTrial string
	}{
		{
			name: "callback form, rotated running order", size: loopSizeAll(2000), form: clientGo,
			submit: spread{0.5, 0.5, 0.5}, cpu: spread{1.2, 1.2, 1.2}, toLast: spread{0.75, 0.75, 0.75},
			longest: [2]time.Duration{53 * msec, 52 * msec}, late: [2]int{0, 1}, paired: 3, trials: [2]int{3, 3},
			forms: []string{clientGo, clientOnSettled, clientThen},
		},
		{
			name: "one callback, the median of the per-trial ratios", size: loopSizeAll(2000), form: clientOnSettled,
			submit: spread{1, 1, 1}, cpu: spread{2.2, 2, 2.4}, toLast: spread{1.05, 1.05, 1.05},
			longest: [2]time.Duration{51 * msec, 52 * msec}, late: [2]int{1, 1}, paired: 3, trials: [2]int{3, 3},
			forms: []string{clientGo, clientOnSettled, clientThen},
		},
		{
			name: "Then and OnError", size: loopSizeAll(2000), form: clientThen,
			submit: spread{3, 3, 3}, cpu: spread{2.5, 2.5, 2.5}, toLast: spread{1.5, 1.5, 1.5},
			longest: [2]time.Duration{60 * msec, 52 * msec}, late: [2]int{2, 1}, paired: 3, trials: [2]int{3, 3},
			forms: []string{clientGo, clientOnSettled, clientThen},
		},
		{
			name: "a form alone", size: loopSizeOf(2000, loopForm(clientThen, 1, cpus(1), 200*msec, 51*msec, 1)), form: clientThen,
			longest: [2]time.Duration{51 * msec, 0}, late: [2]int{1, 0}, trials: [2]int{3, 0}, forms: []string{clientThen},
		},
		{
			name: "a form that did not run", size: loopSizeOf(2000, loopPool()), form: clientGo,
			longest: [2]time.Duration{0, 52 * msec}, late: [2]int{0, 1}, trials: [2]int{0, 3},
		},
		{
			name: "pool's trial 2 missing", form: clientGo,
			size: func() LoopSize {
				sz := loopSizeOf(2000, loopForm(clientGo, 1, cpus(1, 4, 1), 200*msec, 51*msec, 0), loopPool())
				sz.Trials = slices.DeleteFunc(sz.Trials, func(t LoopTrial) bool { return t.Client == clientBaseline && t.Trial == 2 })
				return sz
			}(),
			submit: spread{1, 1, 1}, cpu: spread{1, 1, 1}, toLast: spread{1, 1, 1},
			longest: [2]time.Duration{51 * msec, 52 * msec}, late: [2]int{0, 1}, paired: 2, trials: [2]int{3, 2},
			forms: []string{clientGo},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmp := c.size.compare(c.form)
			if cmp.Client != c.form || cmp.Calls != c.size.Shape.Calls {
				t.Errorf("comparison of %s over %d calls, want %s over %d", cmp.Client, cmp.Calls, c.form, c.size.Shape.Calls)
			}
			if !near(cmp.Submit, c.submit) || !near(cmp.SubmitCPU, c.cpu) || !near(cmp.ToLastDelivery, c.toLast) || cmp.Paired != c.paired {
				t.Errorf("ratios: submit %+v, CPU %+v, to last delivery %+v, %d paired; want %+v, %+v, %+v, %d",
					cmp.Submit, cmp.SubmitCPU, cmp.ToLastDelivery, cmp.Paired, c.submit, c.cpu, c.toLast, c.paired)
			}
			if cmp.PRPC.Longest != c.longest[0] || cmp.Pool.Longest != c.longest[1] || cmp.PRPC.Late != c.late[0] || cmp.Pool.Late != c.late[1] {
				t.Errorf("longest %v / %v, late %d / %d; want %v, %d", cmp.PRPC.Longest, cmp.Pool.Longest, cmp.PRPC.Late, cmp.Pool.Late, c.longest, c.late)
			}
			if cmp.PRPC.Trials != c.trials[0] || cmp.Pool.Trials != c.trials[1] {
				t.Errorf("trials %d / %d, want %v", cmp.PRPC.Trials, cmp.Pool.Trials, c.trials)
			}
			if got := c.size.forms(); !slices.Equal(got, c.forms) {
				t.Errorf("forms %q, want %q", got, c.forms)
			}
			for _, r := range c.size.trialRatios(c.form) {
				if r.Client != c.form || r.Trial < 1 || r.Trial > 3 {
					t.Errorf("ratio %+v, want one of %s in trials 1 to 3", r, c.form)
				}
			}
		})
	}
}

func abs(x float64) float64 { return max(x, -x) }

// TestLoopResultForms checks that the forms of a loop suite's result are those that ran at
// any of its sizes, in prpcForms order whatever the order of the sizes.
func TestLoopResultForms(t *testing.T) {
	form := func(f string) []LoopTrial { return loopForm(f, 1, cpus(1), 200*msec, 51*msec, 0) }
	for _, c := range []struct {
		name  string
		sizes []LoopSize
		want  []string
	}{
		{name: "no sizes"},
		{name: "the pool alone", sizes: []LoopSize{loopSizeOf(2000, loopPool())}},
		{name: "every form", sizes: []LoopSize{loopSizeAll(2000), loopSizeAll(20000)}, want: prpcForms},
		{
			name:  "a form per size, in reverse order",
			sizes: []LoopSize{loopSizeOf(2000, form(clientThen), loopPool()), loopSizeOf(5000, form(clientGo), loopPool())},
			want:  []string{clientGo, clientThen},
		},
		{
			name:  "a form at one size of two",
			sizes: []LoopSize{loopSizeOf(2000, loopPool()), loopSizeOf(5000, form(clientOnSettled), form(clientGo))},
			want:  []string{clientGo, clientOnSettled},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			lr := &LoopResult{Sizes: c.sizes}
			if got := lr.forms(); !slices.Equal(got, c.want) {
				t.Errorf("forms %q, want %q", got, c.want)
			}
		})
	}
}

func TestLoopMedian(t *testing.T) {
	sz := loopSizeOf(2000, loopForm(clientThen, 2, cpus(2), 300*msec, 60*msec, 2), loopPool())
	sz.Trials[0].Failed, sz.Trials[2].Wrong, sz.Trials[4].Skipped, sz.Trials[2].Skipped = 1, 2, 1, 3
	m, ok := sz.median(clientThen)
	if !ok {
		t.Fatal("no median of prpc-then")
	}
	want := LoopTrial{
		Client: clientThen, Calls: 2000, OK: 2000, Ticks: 20, Failed: 1, Wrong: 2, Skipped: 4,
		Interval: Intervals{N: 9, P50: 50 * msec, P99: 51 * msec, Max: 51 * msec, Late: 2},
		Submit:   20 * msec, SubmitThread: SubmitThread{CPU: 10 * msec}, Burst: 300 * msec,
	}
	if m != want {
		t.Errorf("median of prpc-then = %+v, want %+v", m, want)
	}
	if _, ok := loopSizeOf(2000, loopPool()).median(clientThen); ok {
		t.Error("a median of prpc-then with no trial of it")
	}
}

// loopReport is a made-up report of the loop suite alone: two sizes, each over three trials
// of the four clients (loopSizeAll), judged by testTargets.
func loopReport() *Report {
	return &Report{
		Command: "go run ./benchmarks/burst -suite loop", Timeout: 10 * time.Second, Budget: 2 * time.Millisecond, Warmup: 1000,
		Loop: &LoopResult{TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks,
			Sizes: []LoopSize{loopSizeAll(2000), loopSizeAll(20000)}, Targets: testTargets},
	}
}

// keepClients leaves in r's loop suite the trials of the clients named, and the first trials
// of each, if trials > 0.
func keepClients(r *Report, trials int, names ...string) {
	for i := range r.Loop.Sizes {
		sz := &r.Loop.Sizes[i]
		sz.Trials = slices.DeleteFunc(sz.Trials, func(t LoopTrial) bool {
			return !slices.Contains(names, t.Client) || (trials > 0 && t.Trial > trials)
		})
		if trials > 0 {
			sz.Shape.Trials = trials
		}
	}
}

func TestLoopMarkdown(t *testing.T) {
	const (
		targetsHead = "| client | form | loop-thread CPU for the submission (judged) | submitting tick to last delivery | late ticks (> 52 ms), all trials |"
		allHead     = "| calls | figure | grpc-go pool | prpc-go | verdict | prpc-onsettled | verdict | prpc-then | verdict |"
		tableHead   = "| calls | workers | trial | client | ticks | burst intervals | interval p50 | interval p99 | interval max | max after submit tick | late | skipped |"
	)
	for _, c := range []struct {
		name    string
		edit    func(*Report)
		want    []string
		wantNot []string
		forms   int // prpc clients in the summary
	}{
		{
			name:  "four clients, two sizes",
			edit:  func(*Report) {},
			forms: 3,
			want: []string{
				targetsHead, allHead, tableHead,
				"| prpc-go | reactor.Go with one callback, no promise | ≤ 1.5× (aim 1.2×) | ≤ 1.05× | ≤ the pool's |",
				"| prpc-onsettled | reactor.Call, then the promise's OnSettled | ≤ 2.0× | ≤ 1.05× | ≤ the pool's |",
				"| prpc-then | reactor.Call, then the promise's Then and OnError | ≤ the report before requests were encoded on the lanes: " +
					"2.81× at 2,000 calls, 3.64× at 5,000 calls, 4.01× at 20,000 calls | ≤ 1.05× | ≤ the pool's |",
				"3 interleaved trials per client and burst size; unpinned, as the targets are judged.",
				"| 2,000 | loop-thread CPU for the submission (judged) | 5.00 ms (5.00–5.00) | 1.20× (1.20–1.20) | met (aim met) | 2.20× (2.00–2.40) | **not met** | 2.50× (2.50–2.50) | met |",
				"| 2,000 | submission wall time | 10.00 ms (8.00–12.00) | 0.50× (0.50–0.50) | – | 1.00× (1.00–1.00) | – | 3.00× (3.00–3.00) | – |",
				"| 2,000 | submitting tick to last delivery | 200.00 ms (200.00–200.00) | 0.75× (0.75–0.75) | met | 1.05× (1.05–1.05) | met | 1.50× (1.50–1.50) | **not met** |",
				"| 2,000 | late ticks (> 52 ms), all trials | 1 | 0 | met | 1 | met | 2 | **not met** |",
				"| 2,000 | longest tick interval, all trials | 52.00 ms | 53.00 ms | – | 51.00 ms | – | 60.00 ms | – |",
				"| 20,000 | loop-thread CPU for the submission (judged) | 5.00 ms (5.00–5.00) | 1.20× (1.20–1.20) | met (aim met) | 2.20× (2.00–2.40) | **not met** | 2.50× (2.50–2.50) | met |",
				// Trial rows in running order, each prpc client's with its ratios, the pool's without;
				// then the medians.
				"| 2,000 | 6×16 | 1 | prpc-go | 20 | 9 | 50.00 ms | 51.00 ms | 51.00 ms | 0.00 ms | 0 | 0 | 0 | 0.00 ms | 0.00 ms | 0.0 ms | 0 | 5.00 ms | 0 | 6.00 ms | 0.00 ms | 0 | 0 | 150.0 ms | 2,000 | 0 | 0.50× | 1.20× | 0.75× |",
				"| 2,000 | 96 | 1 | grpc-go | 20 | 9 | 50.00 ms | 52.00 ms | 52.00 ms | 0.00 ms | 1 | 0 | 0 | 0.00 ms | 0.00 ms | 0.0 ms | 0 | 10.00 ms | 0 | 5.00 ms | 0.00 ms | 0 | 0 | 200.0 ms | 2,000 | 0 | | | |",
				"| 2,000 | 6×16 | 2 | prpc-onsettled | 20 | 9 | 50.00 ms | 51.00 ms | 51.00 ms | 0.00 ms | 0 | 0 | 0 | 0.00 ms | 0.00 ms | 0.0 ms | 0 | 12.00 ms | 0 | 11.00 ms | 0.00 ms | 0 | 0 | 210.0 ms | 2,000 | 0 | 1.00× | 2.20× | 1.05× |",
				"| 20,000 | 6×16 | 3 | prpc-then | 20 | 9 | 50.00 ms | 51.00 ms | 51.00 ms | 0.00 ms | 2 |",
				"| 20,000 | 6×16 | **median** | prpc-go |",
				"| 20,000 | 6×16 | **median** | prpc-onsettled | 20 | 9 | 50.00 ms | 51.00 ms | 51.00 ms | 0.00 ms | 1 | 0 | 0 | 0.00 ms | 0.00 ms | 0.0 ms | 0 | 10.00 ms | 0 | 11.00 ms | 0.00 ms | 0 | 0 | 210.0 ms | 20,000 | 0 | 1.00× | 2.20× | 1.05× |",
				"| 20,000 | 6×16 | **median** | prpc-then |",
				"| 20,000 | 96 | **median** | grpc-go |",
				"Late: intervals over 52 ms.",
				"the order of the clients within a trial rotates by a Williams design",
			},
		},
		{
			name:  "the callback form and the pool",
			edit:  func(r *Report) { keepClients(r, 0, clientGo, clientBaseline) },
			forms: 1,
			want: []string{
				"| calls | figure | grpc-go pool | prpc-go | verdict |\n|---:|:--|---:|---:|:--|\n",
				"| prpc-go | reactor.Go with one callback, no promise | ≤ 1.5× (aim 1.2×) | ≤ 1.05× | ≤ the pool's |\n\n",
				"| 2,000 | loop-thread CPU for the submission (judged) | 5.00 ms (5.00–5.00) | 1.20× (1.20–1.20) | met (aim met) |",
				"| 20,000 | late ticks (> 52 ms), all trials | 1 | 0 | met |",
			},
			wantNot: []string{"| prpc-onsettled |", "| prpc-then |", "| **median** | prpc-then |"},
		},
		{
			name: "other targets",
			edit: func(r *Report) {
				r.Loop.Targets = loopTargets{GoCPUMax: 1.1, GoCPUAim: 1.0, OnSettledCPUMax: 2.25, DeliveryMax: 1.6, ThenCPUReference: map[int]float64{2000: 2.4}}
			},
			forms: 3,
			want: []string{
				"| prpc-go | reactor.Go with one callback, no promise | ≤ 1.1× (aim 1.0×) | ≤ 1.6× | ≤ the pool's |",
				"| prpc-onsettled | reactor.Call, then the promise's OnSettled | ≤ 2.25× | ≤ 1.6× | ≤ the pool's |",
				"| prpc-then | reactor.Call, then the promise's Then and OnError | ≤ the report before requests were encoded on the lanes: " +
					"2.40× at 2,000 calls | ≤ 1.6× | ≤ the pool's |",
				"| 2,000 | loop-thread CPU for the submission (judged) | 5.00 ms (5.00–5.00) | 1.20× (1.20–1.20) | **not met** | 2.20× (2.00–2.40) | met | 2.50× (2.50–2.50) | **not met** |",
				"| 2,000 | submitting tick to last delivery | 200.00 ms (200.00–200.00) | 0.75× (0.75–0.75) | met | 1.05× (1.05–1.05) | met | 1.50× (1.50–1.50) | met |",
				"| 20,000 | loop-thread CPU for the submission (judged) | 5.00 ms (5.00–5.00) | 1.20× (1.20–1.20) | **not met** | 2.20× (2.00–2.40) | met | 2.50× (2.50–2.50) | – |",
			},
			wantNot: []string{"≤ 1.05×", "≤ 1.5×", "2.81× at"},
		},
		{
			name: "pinned",
			edit: func(r *Report) { r.Pinned = true },
			want: []string{"; pinned (client on CPU 0, backend on CPU 1); the targets are judged on an unpinned run."}, forms: 3,
		},
		{
			name: "in process",
			edit: func(r *Report) { r.InProcess = true },
			want: []string{"; backend in the client's process, so this run's conditions are not the targets'."}, forms: 3,
		},
		{
			name:  "a form alone, one trial",
			edit:  func(r *Report) { keepClients(r, 1, clientThen) },
			forms: 1,
			want: []string{
				"| 2,000 | loop-thread CPU for the submission (judged) | – | – | – |",
				"| 2,000 | late ticks (> 52 ms), all trials | – | 0 | – |",
				"| 2,000 | longest tick interval, all trials | – | 51.00 ms | – |",
				"| 2,000 | 6×16 | 1 | prpc-then | 20 | 9 |",
				"one trial per client and burst size",
			},
			wantNot: []string{"**median**", "| grpc-go |", "interleaved trials per client"},
		},
		{
			name:    "the pool alone",
			edit:    func(r *Report) { keepClients(r, 0, clientBaseline) },
			want:    []string{"| calls | figure | grpc-go pool |\n|---:|:--|---:|\n", "| 2,000 | late ticks (> 52 ms), all trials | 1 |\n"},
			wantNot: []string{targetsHead},
		},
		{
			name: "failed call",
			edit: func(r *Report) {
				tr := &r.Loop.Sizes[1].Trials[4] // the first of trial 2: prpc-onsettled
				tr.OK, tr.Failed, tr.FirstErr = 19999, 1, "call 7: deadline exceeded"
			},
			forms: 3,
			want:  []string{"First error of prpc-onsettled trial 2 of 20,000 calls: call 7: deadline exceeded", "| 19,999 | 1 | 1.00× | 2.20× | 1.05× |"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := loopReport()
			c.edit(r)
			var out bytes.Buffer
			if err := r.WriteMarkdown(&out); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			for _, want := range append(c.want, "\n## Loop suite\n", "## Summary") {
				if !strings.Contains(got, want) {
					t.Errorf("Markdown lacks %q:\n%s", want, got)
				}
			}
			for _, not := range append(c.wantNot, "Ratios: prpc ÷ grpc-go in the same trial (calls/s") {
				if strings.Contains(got, not) {
					t.Errorf("Markdown has %q:\n%s", not, got)
				}
			}
			checkTables(t, got)
			// The table of targets has a row per prpc client; the summary five rows per size,
			// with a ratio and a verdict per prpc client; the table a row per trial and a median
			// per client over several.
			if n := strings.Count(got, "| ≤ the pool's |\n"); n != c.forms {
				t.Errorf("%d rows of targets, want %d", n, c.forms)
			}
			for _, sz := range r.Loop.Sizes {
				calls := thousands(sz.Shape.Calls)
				trialRows := strings.Count(got, "\n| "+calls+" | 6×16 |") + strings.Count(got, "\n| "+calls+" | 96 |")
				if n := strings.Count(got, "\n| "+calls+" | ") - trialRows; n != 5 {
					t.Errorf("%d summary rows of %s calls, want 5", n, calls)
				}
				rows := len(sz.Trials)
				if sz.Shape.Trials > 1 {
					rows += len(sz.forms())
					if len(sz.clientTrials(clientBaseline)) > 0 {
						rows++
					}
				}
				if trialRows != rows {
					t.Errorf("%d trial rows of %s calls, want %d", trialRows, calls, rows)
				}
			}
		})
	}
}

func TestLoopJSON(t *testing.T) {
	r := loopReport()
	r.Loop.Sizes[1].Trials[2].Failed = 1 // the pool's trial 1, third in its trial
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var rep jsonReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 1 || rep.Loop == nil || len(rep.Loop.Sizes) != 2 || rep.Loop.LateIntervalMs != 52 {
		t.Fatalf("errors %d, loop %+v; want 1 error, two sizes, late over 52 ms", rep.Errors, rep.Loop)
	}
	sz := rep.Loop.Sizes[1]
	if sz.Calls != 20000 || sz.Workers != 6 || sz.Batch != 16 || sz.PoolWorkers != 96 || sz.Trials != 3 || len(sz.Results) != 12 {
		t.Fatalf("size %+v", sz)
	}
	var order []string
	for _, res := range sz.Results[:4] {
		order = append(order, res.Client)
	}
	if want := []string{clientGo, clientOnSettled, clientBaseline, clientThen}; !slices.Equal(order, want) {
		t.Errorf("trial 1 ran %q, want %q: results in running order", order, want)
	}
	var medians []string
	for _, m := range sz.Medians {
		medians = append(medians, m.Client)
	}
	if want := []string{clientGo, clientOnSettled, clientThen, clientBaseline}; !slices.Equal(medians, want) || sz.Medians[3].Failed != 1 || sz.Medians[2].Late != 2 {
		t.Errorf("medians %+v, want %q (prpc-then with 2 late ticks, the pool with 1 failed call)", sz.Medians, want)
	}
	if len(sz.Ratios) != 9 || sz.Ratios[0] != (loopRatios{Client: clientGo, Trial: 1, Submit: 0.5, SubmitCPU: 1.2, ToLastDelivery: 0.75}) ||
		sz.Ratios[8] != (loopRatios{Client: clientThen, Trial: 3, Submit: 3, SubmitCPU: 2.5, ToLastDelivery: 1.5}) {
		t.Errorf("ratios %+v", sz.Ratios)
	}
	if sz.Pool.Trials != 3 || sz.Pool.LongestMs != 52 || sz.Pool.Late != 1 || sz.Pool.SubmitCPUMs != (jsonSpread{5, 5, 5}) {
		t.Errorf("pool %+v", sz.Pool)
	}
	if len(sz.Comparisons) != 3 {
		t.Fatalf("comparisons %+v, want one per prpc client", sz.Comparisons)
	}
	for i, want := range []struct {
		client  string
		cpu     jsonSpread
		targets []loopTarget
	}{
		{clientGo, jsonSpread{1.2, 1.2, 1.2}, []loopTarget{
			{Figure: figSubmitCPU, Target: "≤ 1.5×", Known: true, Met: true, Aim: "≤ 1.2×", AimMet: true},
			{Figure: figDelivery, Target: "≤ 1.05×", Known: true, Met: true},
			{Figure: figLate, Target: "≤ the pool's", Known: true, Met: true},
		}},
		{clientOnSettled, jsonSpread{2.2, 2, 2.4}, []loopTarget{
			{Figure: figSubmitCPU, Target: "≤ 2.0×", Known: true},
			{Figure: figDelivery, Target: "≤ 1.05×", Known: true, Met: true},
			{Figure: figLate, Target: "≤ the pool's", Known: true, Met: true},
		}},
		{clientThen, jsonSpread{2.5, 2.5, 2.5}, []loopTarget{
			{Figure: figSubmitCPU, Target: "≤ 4.01×", Known: true, Met: true},
			{Figure: figDelivery, Target: "≤ 1.05×", Known: true},
			{Figure: figLate, Target: "≤ the pool's", Known: true},
		}},
	} {
		c := sz.Comparisons[i]
		if c.Client != want.client || c.Form != formText(want.client) || c.PairedTrials != 3 || c.Figures.Trials != 3 {
			t.Errorf("comparison %d: %+v, want %s over 3 paired trials", i, c, want.client)
		}
		if d := c.SubmitCPURatio; abs(d.Median-want.cpu.Median) > 1e-9 || abs(d.Min-want.cpu.Min) > 1e-9 || abs(d.Max-want.cpu.Max) > 1e-9 {
			t.Errorf("%s: loop-thread CPU ratio %+v, want %+v", c.Client, d, want.cpu)
		}
		if !slices.Equal(c.Targets, want.targets) {
			t.Errorf("%s: targets %+v, want %+v", c.Client, c.Targets, want.targets)
		}
	}
}
