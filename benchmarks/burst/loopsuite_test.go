package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestIntervalsOf(t *testing.T) {
	// startsAt returns tick starts separated by the given gaps, in milliseconds.
	startsAt := func(gaps ...int) []time.Time {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s := []time.Time{t0}
		for _, g := range gaps {
			t0 = t0.Add(time.Duration(g) * time.Millisecond)
			s = append(s, t0)
		}
		return s
	}
	// steady returns n gaps of 50 ms followed by extra.
	steady := func(n int, extra ...int) []int {
		g := make([]int, n)
		for i := range g {
			g[i] = 50
		}
		return append(g, extra...)
	}
	const msec = time.Millisecond
	for _, c := range []struct {
		name   string
		starts []time.Time
		want   Intervals
	}{
		{"no tick", nil, Intervals{}},
		{"one tick", startsAt(), Intervals{}},
		{"one interval", startsAt(50), Intervals{N: 1, P50: 50 * msec, P99: 50 * msec, Max: 50 * msec}},
		{"late tick", startsAt(50, 60, 50), Intervals{N: 3, P50: 50 * msec, P99: 60 * msec, Max: 60 * msec}},
		{"early tick after a late one", startsAt(50, 70, 30, 50), Intervals{N: 4, P50: 50 * msec, P99: 70 * msec, Max: 70 * msec}},
		// Below 100 intervals p99 is the longest; from 100 on one long interval is not p99.
		{"99 intervals", startsAt(steady(98, 80)...), Intervals{N: 99, P50: 50 * msec, P99: 80 * msec, Max: 80 * msec}},
		{"100 intervals", startsAt(steady(99, 80)...), Intervals{N: 100, P50: 50 * msec, P99: 50 * msec, Max: 80 * msec}},
	} {
		if got := intervalsOf(c.starts); got != c.want {
			t.Errorf("%s: intervalsOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestLoopFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		want    Shape // zero: the loop suite is off
		burst   int   // burst suites run besides the loop suite
		wantErr string
	}{
		{args: []string{"-suite", "loop"}, want: Shape{20000, 6, 16, 3}},
		{args: []string{"-suite", "loop", "-trials", "1"}, want: Shape{20000, 6, 16, 1}},
		{args: []string{"-suite", "loop", "-calls", "500", "-workers", "2"}, want: Shape{500, 2, 16, 3}},
		{args: nil},
		{args: []string{"-suite", "all"}},
		{args: []string{"-suite", "extreme"}},
		{args: []string{"-suite", "all,loop"}, want: Shape{20000, 6, 16, 3}, burst: 2},
		{args: []string{"-suite", "loop,extreme", "-trials", "2"}, want: Shape{20000, 6, 16, 2}, burst: 1},
		{args: []string{"-suite", "loop", "-pin"}, wantErr: "the loop suite runs client and backend unpinned, on the machine's CPUs: drop -pin"},
	} {
		o, err := parseFlags(c.args, &bytes.Buffer{})
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr {
				t.Errorf("parseFlags(%q) = %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseFlags(%q): %v", c.args, err)
			continue
		}
		got, on := o.loopShape()
		if on != (c.want != Shape{}) || got != c.want {
			t.Errorf("%q: loop shape %+v (on %v), want %+v", c.args, got, on, c.want)
		}
		if on && len(o.suites()) != c.burst {
			t.Errorf("%q: runs the burst suites %+v, want %d", c.args, o.suites(), c.burst)
		}
		if !on && len(o.suites()) == 0 {
			t.Errorf("%q: runs nothing", c.args)
		}
	}
}

// TestLoopSuiteInProcess runs a small loop suite end to end; it takes about 11 ticks of the
// 20 TPS loop. It checks counts and the order of figures, never timings.
func TestLoopSuiteInProcess(t *testing.T) {
	rep := runJSON(t, "-suite", "loop", "-inprocess", "-calls", "200", "-workers", "2", "-batch", "4", "-trials", "1", "-warmup", "20")
	if rep.Errors != 0 || len(rep.Suites) != 0 {
		t.Errorf("errors %d, burst suites %+v; want neither", rep.Errors, rep.Suites)
	}
	lr := rep.Loop
	if lr == nil {
		t.Fatal("no loop result in the report")
	}
	if lr.Calls != 200 || lr.Workers != 2 || lr.Batch != 4 || lr.TPS != loopTPS || lr.GameWorkMs != ms(loopGameWork) ||
		lr.TargetIntervalP99Ms != 52 || lr.TargetSkipped != 0 || len(lr.Trials) != 1 || lr.Median != nil {
		t.Fatalf("loop = %+v, want 200 calls, 2×4, 20 TPS, 10 ms work, one trial and no median", lr)
	}
	tr := lr.Trials[0]
	if tr.Trial != 1 || tr.Calls != 200 || tr.OK != 200 || tr.Failed != 0 || tr.Wrong != 0 || tr.FirstError != "" {
		t.Errorf("trial %d: calls %d ok %d failed %d wrong %d (%s), want 200 right answers",
			tr.Trial, tr.Calls, tr.OK, tr.Failed, tr.Wrong, tr.FirstError)
	}
	// Ticks 0…submit, the burst window of BurstIntervals ticks after it, then the tail.
	if tr.BurstIntervals < 1 || tr.Ticks != uint64(loopSubmitTick+1+tr.BurstIntervals+loopTailTicks) {
		t.Errorf("ticks %d with %d burst intervals; want %d + 1 + intervals + %d", tr.Ticks, tr.BurstIntervals, loopSubmitTick, loopTailTicks)
	}
	if !(0 < tr.IntervalP50Ms && tr.IntervalP50Ms <= tr.IntervalP99Ms && tr.IntervalP99Ms <= tr.IntervalMaxMs) {
		t.Errorf("intervals out of order: p50 %v p99 %v max %v", tr.IntervalP50Ms, tr.IntervalP99Ms, tr.IntervalMaxMs)
	}
	if tr.AfterSubmitMs > tr.IntervalMaxMs || (tr.BurstIntervals > 1) != (tr.AfterSubmitMs > 0) {
		t.Errorf("max after the submit tick %v ms, of %d intervals with max %v ms", tr.AfterSubmitMs, tr.BurstIntervals, tr.IntervalMaxMs)
	}
	// Every tick burns the game work. (Intervals are not bounded here: after a late tick the
	// fixed-rate loop's next interval is shorter than the period.)
	if !(tr.TickP99Ms >= lr.GameWorkMs && tr.TickMaxMs >= tr.TickP99Ms) {
		t.Errorf("tick p99 %v ms, max %v ms", tr.TickP99Ms, tr.TickMaxMs)
	}
	if !(tr.BurstS > 0 && tr.SubmitMs > 0 && tr.DeliveryMs > 0 && tr.SubmitFaults >= 0) {
		t.Errorf("burst %v s, submit %v ms (%d minor faults), delivery %v ms; want all measured",
			tr.BurstS, tr.SubmitMs, tr.SubmitFaults, tr.DeliveryMs)
	}
	// The loop thread's share of the submission: within its wall time (1 ms for the two
	// clocks' readings) and its window of the process's faults, which encloses the thread's.
	// Its system time is to a scheduler tick, so only its sign is checked.
	if runtime.GOOS == "linux" && !(0 < tr.SubmitCPUMs && tr.SubmitCPUMs <= tr.SubmitMs+1 && tr.SubmitSysMs >= 0 &&
		0 <= tr.SubmitThreadFaults && tr.SubmitThreadFaults <= tr.SubmitFaults && tr.SubmitPreempted >= 0) {
		t.Errorf("submit %v ms with %d faults; its thread: CPU %v ms, sys %v ms, %d faults, preempted %d",
			tr.SubmitMs, tr.SubmitFaults, tr.SubmitCPUMs, tr.SubmitSysMs, tr.SubmitThreadFaults, tr.SubmitPreempted)
	}
	if tr.MeetsTarget != (tr.IntervalP99Ms <= 52 && tr.Skipped == 0) || lr.TargetMet != tr.MeetsTarget {
		t.Errorf("meets target %v, target met %v, with p99 %v ms and %d skipped", tr.MeetsTarget, lr.TargetMet, tr.IntervalP99Ms, tr.Skipped)
	}
}

func TestLoopMarkdown(t *testing.T) {
	good := LoopTrial{
		Calls: 20000, OK: 20000, Ticks: 60, Interval: Intervals{N: 50, P50: 50 * time.Millisecond, P99: 51 * time.Millisecond, Max: 51 * time.Millisecond},
		AfterSubmit: 50 * time.Millisecond,
		TickP99:     14 * time.Millisecond, TickMax: 40 * time.Millisecond, Delivery: 300 * time.Millisecond,
		Submit: 25 * time.Millisecond, SubmitFaults: 1234, Burst: 2 * time.Second,
		SubmitThread: SubmitThread{CPU: 20 * time.Millisecond, Sys: 8 * time.Millisecond, Faults: 1001, Preempted: 17},
	}
	slow, skipped, failed := good, good, good
	slow.Interval.P99, slow.Interval.Max = 53*time.Millisecond, 53*time.Millisecond
	skipped.Skipped = 1
	failed.OK, failed.Failed, failed.FirstErr = 19999, 1, "call 7: deadline exceeded"
	for _, c := range []struct {
		name      string
		trials    []LoopTrial
		shape     Shape
		inProcess bool
		want      []string
	}{
		{"all met", []LoopTrial{good, good, good}, loopShape, false, []string{
			"| 20,000 | 6×16 | 1 | 60 | 50 | 50.00 ms | 51.00 ms | 51.00 ms | 50.00 ms | 0 | 0 | 14.00 ms | 40.00 ms | 300.0 ms | 0 | 25.00 ms | 1,234 | 20.00 ms | 8.00 ms | 1,001 | 17 | 2.000 s | 20,000 | 0 |",
			"| 20,000 | 6×16 | **median** |",
			"tick interval p99 ≤ 52 ms and 0 skipped ticks, in every trial: **met** (3 of 3 trials).",
		}},
		{"one slow", []LoopTrial{good, slow, good}, loopShape, false, []string{"| 2 | 60 | 50 | 50.00 ms | 53.00 ms |", "**not met** (2 of 3 trials)."}},
		{"one skipped", []LoopTrial{skipped}, loopShape, false, []string{"**not met** (0 of 1 trials)."}},
		{"failed call", []LoopTrial{failed}, loopShape, false, []string{"| 19,999 | 1 |", "First error of trial 1: call 7: deadline exceeded", "**met** (1 of 1"}},
		{"other conditions", []LoopTrial{good}, Shape{200, 2, 4, 1}, true, []string{
			"**met** (1 of 1 trials). This run's conditions are not the target's: the burst is 200 calls, 2×4, not the extreme 20,000 calls, 6×16; the backend ran in the client's process.",
		}},
	} {
		lr := &LoopResult{Shape: c.shape, TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks}
		for i, tr := range c.trials {
			tr.Trial = i + 1
			lr.Trials = append(lr.Trials, tr)
		}
		rep := &Report{Command: "go run ./benchmarks/burst -suite loop", InProcess: c.inProcess, Timeout: 10 * time.Second, Budget: 2 * time.Millisecond, Loop: lr}
		var out bytes.Buffer
		if err := rep.WriteMarkdown(&out); err != nil {
			t.Fatal(err)
		}
		for _, want := range append(c.want, "\n## Loop suite\n", "| calls | W×B | trial | ticks | burst intervals | interval p50 | interval p99 | interval max | max after submit tick | skipped |",
			"| submit | submit faults | submit CPU | submit sys | submit thread faults | submit preempted | burst |",
			"Submit faults: minor page faults of the process while submitting every call (getrusage ru_minflt)",
			"Submit CPU, sys, thread faults and preempted: what submitting cost the loop's own OS thread, the goroutine locked to it: its CPU time (CLOCK_THREAD_CPUTIME_ID)") {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: Markdown lacks %q:\n%s", c.name, want, out.String())
			}
		}
		// Every trial of "all met" is good, so its median row repeats their submission figures.
		if n := strings.Count(out.String(), "| 25.00 ms | 1,234 | 20.00 ms | 8.00 ms | 1,001 | 17 | 2.000 s |"); c.name == "all met" && n != 4 {
			t.Errorf("%s: %d rows with good's submission figures, want 3 trials and the median:\n%s", c.name, n, out.String())
		}
		if strings.Contains(out.String(), "Ratios:") {
			t.Errorf("%s: the burst suites' notes are in a loop-only report:\n%s", c.name, out.String())
		}
		if wantErrs := failed.Errors() * strings.Count(c.name, "failed"); rep.Errors() != wantErrs {
			t.Errorf("%s: Errors() = %d, want %d", c.name, rep.Errors(), wantErrs)
		}
	}
}
