package main

import (
	"slices"
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
