package main

import (
	"bytes"
	"math"
	"runtime"
	"slices"
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
		{"late tick", startsAt(50, 60, 50), Intervals{N: 3, P50: 50 * msec, P99: 60 * msec, Max: 60 * msec, Late: 1}},
		{"early tick after a late one", startsAt(50, 70, 30, 50), Intervals{N: 4, P50: 50 * msec, P99: 70 * msec, Max: 70 * msec, Late: 1}},
		// An interval of exactly 52 ms is not late; one of 53 ms is.
		{"52 ms is on time", startsAt(52, 50, 52), Intervals{N: 3, P50: 52 * msec, P99: 52 * msec, Max: 52 * msec}},
		{"two late", startsAt(53, 50, 60), Intervals{N: 3, P50: 53 * msec, P99: 60 * msec, Max: 60 * msec, Late: 2}},
		// Below 100 intervals p99 is the longest; from 100 on one long interval is not p99.
		{"99 intervals", startsAt(steady(98, 80)...), Intervals{N: 99, P50: 50 * msec, P99: 80 * msec, Max: 80 * msec, Late: 1}},
		{"100 intervals", startsAt(steady(99, 80)...), Intervals{N: 100, P50: 50 * msec, P99: 50 * msec, Max: 80 * msec, Late: 1}},
	} {
		if got := intervalsOf(c.starts); got != c.want {
			t.Errorf("%s: intervalsOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestLoopFlags(t *testing.T) {
	// sizes returns the loop suite's shapes of the given sizes with trials trials, 6×16.
	sizes := func(trials int, calls ...int) []Shape {
		var shapes []Shape
		for _, n := range calls {
			shapes = append(shapes, Shape{n, 6, 16, trials})
		}
		return shapes
	}
	for _, c := range []struct {
		args    []string
		want    []Shape // nil: the loop suite is off
		burst   int     // burst suites run besides the loop suite
		pin     bool
		wantErr string
	}{
		{args: []string{"-suite", "loop"}, want: sizes(7, 2000, 5000, 20000)},
		{args: []string{"-suite", "loop", "-trials", "1"}, want: sizes(1, 2000, 5000, 20000)},
		{args: []string{"-suite", "loop", "-calls", "5000"}, want: sizes(7, 5000)},
		{args: []string{"-suite", "loop", "-calls", "500", "-workers", "2"}, want: []Shape{{500, 2, 16, 7}}},
		{args: nil},
		{args: []string{"-suite", "all"}},
		{args: []string{"-suite", "extreme"}},
		{args: []string{"-suite", "all,loop"}, want: sizes(7, 2000, 5000, 20000), burst: 4},
		{args: []string{"-suite", "fast,loop"}, want: sizes(7, 2000, 5000, 20000), burst: 2},
		{args: []string{"-suite", "fast,loop", "-calls", "100"}, wantErr: `-calls resizes the loop suite's burst with -suite loop alone`},
		{args: []string{"-suite", "loop,extreme", "-trials", "2"}, want: sizes(2, 2000, 5000, 20000), burst: 1},
		{args: []string{"-suite", "loop", "-pin"}, want: sizes(7, 2000, 5000, 20000), pin: true},
		{args: []string{"-suite", "all,loop", "-calls", "100"}, wantErr: `-calls resizes the loop suite's burst with -suite loop alone`},
		{args: []string{"-suite", "loop", "-pin", "-inprocess"}, wantErr: "pinning puts the backend on its own CPU"},
	} {
		if c.pin && !pinSupported {
			continue
		}
		o, err := parseFlags(c.args, &bytes.Buffer{})
		if c.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Errorf("parseFlags(%q) = %v, want %q", c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseFlags(%q): %v", c.args, err)
			continue
		}
		got := o.loopShapes()
		if !slices.Equal(got, c.want) || o.pin != c.pin {
			t.Errorf("%q: loop shapes %+v, pin %v; want %+v, pin %v", c.args, got, o.pin, c.want, c.pin)
		}
		if c.want != nil && len(o.suites()) != c.burst {
			t.Errorf("%q: runs the burst suites %+v, want %d", c.args, o.suites(), c.burst)
		}
		if c.want == nil && len(o.suites()) == 0 {
			t.Errorf("%q: runs nothing", c.args)
		}
	}
}

func TestTrialOrder(t *testing.T) {
	// Rows of the design for a few client counts, trial 1 first.
	for _, c := range []struct {
		n    int
		want [][]int
	}{
		{1, [][]int{{0}, {0}}},
		{2, [][]int{{0, 1}, {1, 0}, {0, 1}}},
		{3, [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 1, 2}}},
		{4, [][]int{{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}, {0, 1, 3, 2}}},
	} {
		for i, want := range c.want {
			if got := trialOrder(c.n, i+1); !slices.Equal(got, want) {
				t.Errorf("trialOrder(%d, %d) = %v, want %v", c.n, i+1, got, want)
			}
		}
	}
	// Over n trials, every client runs once in each position; with an even n, right after
	// each other client once.
	for n := 1; n <= 6; n++ {
		pos := map[[2]int]int{}
		after := map[[2]int]int{}
		for tr := 1; tr <= n; tr++ {
			order := trialOrder(n, tr)
			if s := slices.Sorted(slices.Values(order)); len(s) != n || s[0] != 0 || s[n-1] != n-1 || len(slices.Compact(s)) != n {
				t.Fatalf("trialOrder(%d, %d) = %v, not an order of %d clients", n, tr, order, n)
			}
			for j, c := range order {
				pos[[2]int{c, j}]++
				if j > 0 {
					after[[2]int{order[j-1], c}]++
				}
			}
		}
		for k, v := range pos {
			if v != 1 {
				t.Errorf("%d clients: client %d ran %d times in position %d over %d trials, want once", n, k[0], v, k[1], n)
			}
		}
		if n%2 == 0 && len(after) != n*(n-1) {
			t.Errorf("%d clients: %d ordered pairs ran back to back, want %d, each once: %v", n, len(after), n*(n-1), after)
		}
	}
}

// TestLoopSuiteInProcess runs a small loop suite end to end, one burst size, one trial of each
// of the five clients; each takes about 11 ticks of the 20 TPS loop. It checks counts and the
// order of figures, never timings; that the metrics client alone scraped its adapters; and
// that its ratios to prpc-go are those of their trials.
func TestLoopSuiteInProcess(t *testing.T) {
	rep := runJSON(t, "-suite", "loop", "-inprocess", "-calls", "200", "-workers", "2", "-batch", "4", "-trials", "1", "-warmup", "20")
	if rep.Errors != 0 || len(rep.Suites) != 0 {
		t.Errorf("errors %d, burst suites %+v; want neither", rep.Errors, rep.Suites)
	}
	lr := rep.Loop
	if lr == nil {
		t.Fatal("no loop result in the report")
	}
	if lr.TPS != loopTPS || lr.GameWorkMs != ms(loopGameWork) || lr.LateIntervalMs != 52 || len(lr.Sizes) != 1 {
		t.Fatalf("loop = %+v, want 20 TPS, 10 ms work, late over 52 ms, one size", lr)
	}
	sz := lr.Sizes[0]
	if sz.Calls != 200 || sz.Workers != 2 || sz.Batch != 4 || sz.PoolWorkers != 8 || sz.Trials != 1 || sz.Medians != nil {
		t.Fatalf("size = %+v, want 200 calls, 2×4, a pool of 8, one trial and no medians", sz)
	}
	var clients []string
	byClient := map[string]jsonLoopTrial{}
	for _, tr := range sz.Results {
		clients = append(clients, tr.Client)
		byClient[tr.Client] = tr
		checkLoopTrial(t, tr)
	}
	// Trial 1 runs the clients in the first order of the rotation.
	if want := []string{clientGo, clientOnSettled, clientBaseline, clientThen, clientGoMetrics}; !slices.Equal(clients, want) {
		t.Fatalf("trials of %q, want %q", clients, want)
	}
	for _, tr := range sz.Results {
		if (tr.Client == clientGoMetrics) != (tr.Scrapes > 0) {
			t.Errorf("%s: %d scrapes; want some for %s alone", tr.Client, tr.Scrapes, clientGoMetrics)
		}
	}
	if jm := rep.Metrics; jm == nil || len(jm.Rows) != 1 || jm.Rows[0].Suite != suiteLoop || len(jm.Rows[0].Ratios) != 1 {
		t.Errorf("metrics %+v, want one row of the loop suite, of one trial", jm)
	} else {
		r, m, g := jm.Rows[0].Ratios[0], byClient[clientGoMetrics], byClient[clientGo]
		if r.Scrapes != m.Scrapes || math.Abs(r.Delivery-m.DeliveryMs/g.DeliveryMs) > 1e-9*r.Delivery || r.Throughput != 0 ||
			(runtime.GOOS == "linux" && math.Abs(r.SubmitCPU-m.SubmitCPUMs/g.SubmitCPUMs) > 1e-9*r.SubmitCPU) {
			t.Errorf("ratios %+v, from %+v and %+v", r, m, g)
		}
	}
	pool := byClient[clientBaseline]
	if sz.Pool.LongestMs != pool.IntervalMaxMs || sz.Pool.Late != pool.Late || sz.Pool.Trials != 1 {
		t.Errorf("pool figures %+v, from its trial %+v", sz.Pool, pool)
	}
	if len(sz.Ratios) != 3 || len(sz.Comparisons) != 3 {
		t.Fatalf("ratios %+v, comparisons %+v; want one of each per prpc client", sz.Ratios, sz.Comparisons)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	for i, form := range prpcForms {
		r, c, p := sz.Ratios[i], sz.Comparisons[i], byClient[form]
		if r.Client != form || r.Trial != 1 || !near(r.Submit, p.SubmitMs/pool.SubmitMs) || !near(r.ToLastDelivery, p.ToLastDeliveryMs/pool.ToLastDeliveryMs) ||
			(runtime.GOOS == "linux" && !near(r.SubmitCPU, p.SubmitCPUMs/pool.SubmitCPUMs)) {
			t.Errorf("ratios %+v, from %s %+v and the pool %+v", r, form, p, pool)
		}
		if c.Client != form || c.PairedTrials != 1 || c.Figures.LongestMs != p.IntervalMaxMs || c.Figures.Late != p.Late {
			t.Errorf("comparison %+v, from %s %+v", c, form, p)
		}
		var figures []string
		for _, tg := range c.Targets {
			figures = append(figures, tg.Figure)
			if !tg.Known && (tg.Figure != figSubmitCPU || form != clientThen) {
				t.Errorf("%s: target %+v unknown with both clients run", form, tg)
			}
			// A run judges by targets.json.
			if tg.Figure == figDelivery && tg.Target != boundText(targets.DeliveryMax, 0) {
				t.Errorf("%s: target %+v, want targets.json's delivery bound, %v", form, tg, targets.DeliveryMax)
			}
		}
		if !slices.Equal(figures, []string{figSubmitCPU, figDelivery, figLate}) {
			t.Errorf("%s: targets %q", form, figures)
		}
	}
}

// TestLoopSuiteClients runs the loop suite with -clients naming two clients, and checks that
// it runs those alone, rotated.
func TestLoopSuiteClients(t *testing.T) {
	rep := runJSON(t, "-suite", "loop", "-inprocess", "-clients", "grpc-go,prpc-go", "-calls", "100", "-workers", "1", "-batch", "4", "-trials", "2", "-warmup", "10")
	if rep.Loop == nil || len(rep.Loop.Sizes) != 1 {
		t.Fatalf("loop %+v, want one size", rep.Loop)
	}
	sz := rep.Loop.Sizes[0]
	var clients []string
	for _, tr := range sz.Results {
		clients = append(clients, tr.Client)
	}
	if want := []string{clientBaseline, clientGo, clientGo, clientBaseline}; !slices.Equal(clients, want) {
		t.Errorf("trials of %q, want %q", clients, want)
	}
	if len(sz.Comparisons) != 1 || sz.Comparisons[0].Client != clientGo || sz.Comparisons[0].PairedTrials != 2 {
		t.Errorf("comparisons %+v, want prpc-go's over 2 trials", sz.Comparisons)
	}
}

// checkLoopTrial checks one trial of TestLoopSuiteInProcess.
func checkLoopTrial(t *testing.T, tr jsonLoopTrial) {
	t.Helper()
	if tr.Trial != 1 || tr.Calls != 200 || tr.OK != 200 || tr.Failed != 0 || tr.Wrong != 0 || tr.FirstError != "" {
		t.Errorf("%s trial %d: calls %d ok %d failed %d wrong %d (%s), want 200 right answers",
			tr.Client, tr.Trial, tr.Calls, tr.OK, tr.Failed, tr.Wrong, tr.FirstError)
	}
	// Ticks 0…submit, the burst window of BurstIntervals ticks after it, then the tail.
	if tr.BurstIntervals < 1 || tr.Ticks != uint64(loopSubmitTick+1+tr.BurstIntervals+loopTailTicks) {
		t.Errorf("%s: ticks %d with %d burst intervals; want %d + 1 + intervals + %d", tr.Client, tr.Ticks, tr.BurstIntervals, loopSubmitTick, loopTailTicks)
	}
	if !(0 < tr.IntervalP50Ms && tr.IntervalP50Ms <= tr.IntervalP99Ms && tr.IntervalP99Ms <= tr.IntervalMaxMs) {
		t.Errorf("%s: intervals out of order: p50 %v p99 %v max %v", tr.Client, tr.IntervalP50Ms, tr.IntervalP99Ms, tr.IntervalMaxMs)
	}
	if tr.AfterSubmitMs > tr.IntervalMaxMs || (tr.BurstIntervals > 1) != (tr.AfterSubmitMs > 0) {
		t.Errorf("%s: max after the submit tick %v ms, of %d intervals with max %v ms", tr.Client, tr.AfterSubmitMs, tr.BurstIntervals, tr.IntervalMaxMs)
	}
	if tr.Late < 0 || tr.Late > tr.BurstIntervals || (tr.Late > 0) != (tr.IntervalMaxMs > 52) {
		t.Errorf("%s: %d late of %d intervals, the longest %v ms", tr.Client, tr.Late, tr.BurstIntervals, tr.IntervalMaxMs)
	}
	// Every tick burns the game work. (Intervals are not bounded here: after a late tick the
	// fixed-rate loop's next interval is shorter than the period.)
	if !(tr.TickP99Ms >= ms(loopGameWork) && tr.TickMaxMs >= tr.TickP99Ms) {
		t.Errorf("%s: tick p99 %v ms, max %v ms", tr.Client, tr.TickP99Ms, tr.TickMaxMs)
	}
	// The last delivery comes after the submission, and both are within the burst window.
	if !(tr.SubmitMs > 0 && tr.ToLastDeliveryMs > tr.SubmitMs && tr.DeliveryMs > 0 && tr.SubmitFaults >= 0) {
		t.Errorf("%s: to last delivery %v ms, submit %v ms (%d minor faults), delivery %v ms; want all measured",
			tr.Client, tr.ToLastDeliveryMs, tr.SubmitMs, tr.SubmitFaults, tr.DeliveryMs)
	}
	// The loop thread's share of the submission: within its wall time (1 ms for the two
	// clocks' readings) and its window of the process's faults, which encloses the thread's.
	// Its system time is to a scheduler tick, so only its sign is checked.
	if runtime.GOOS == "linux" && !(0 < tr.SubmitCPUMs && tr.SubmitCPUMs <= tr.SubmitMs+1 && tr.SubmitSysMs >= 0 &&
		0 <= tr.SubmitThreadFaults && tr.SubmitThreadFaults <= tr.SubmitFaults && tr.SubmitPreempted >= 0) {
		t.Errorf("%s: submit %v ms with %d faults; its thread: CPU %v ms, sys %v ms, %d faults, preempted %d",
			tr.Client, tr.SubmitMs, tr.SubmitFaults, tr.SubmitCPUMs, tr.SubmitSysMs, tr.SubmitThreadFaults, tr.SubmitPreempted)
	}
}
