package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

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

// loopSizeOf interleaves the trials of prpc and the pool into a size of calls calls, each
// answered right.
func loopSizeOf(calls int, prpc, pool []LoopTrial) LoopSize {
	sz := LoopSize{Shape: Shape{Calls: calls, Workers: 6, Batch: 16, Trials: max(len(prpc), len(pool))}}
	for i := range sz.Shape.Trials {
		if i < len(prpc) {
			sz.Trials = append(sz.Trials, prpc[i])
		}
		if i < len(pool) {
			sz.Trials = append(sz.Trials, pool[i])
		}
	}
	for i := range sz.Trials {
		sz.Trials[i].Calls, sz.Trials[i].OK = calls, calls
	}
	return sz
}

const msec = time.Millisecond

// loopPool is three made-up trials of the pool: submission 10, 12 and 8 ms (thread CPU 5 ms),
// 200 ms to the last delivery, the longest interval 52 ms and no late tick.
func loopPool() []LoopTrial {
	return []LoopTrial{
		loopTrialOf(clientBaseline, 1, 10*msec, 5*msec, 200*msec, 52*msec, 0),
		loopTrialOf(clientBaseline, 2, 12*msec, 5*msec, 200*msec, 50*msec, 0),
		loopTrialOf(clientBaseline, 3, 8*msec, 5*msec, 200*msec, 51*msec, 0),
	}
}

// loopPRPC is three made-up trials of prpc whose submission takes factor times the pool's,
// its thread's CPU 10 ms, with toLast to the last delivery, longest as its longest interval in
// trial 2 (51 ms otherwise) and late late ticks in trial 3.
func loopPRPC(factor float64, toLast, longest time.Duration, late int) []LoopTrial {
	pool := loopPool()
	var ts []LoopTrial
	for i, b := range pool {
		l, lt := 51*msec, 0
		if i == 1 {
			l = longest
		}
		if i == 2 {
			lt = late
		}
		ts = append(ts, loopTrialOf(clientPRPC, i+1, time.Duration(float64(b.Submit)*factor), 10*msec, toLast, l, lt))
	}
	return ts
}

func TestLoopCompare(t *testing.T) {
	type verdicts struct{ submit, longest, late, delivery string } // "met", "not met" or "unknown"
	for _, c := range []struct {
		name      string
		size      LoopSize
		submit    spread // of the ratios
		cpu       spread
		toLast    spread
		longest   [2]time.Duration // prpc, pool
		late      [2]int
		paired    int
		want      verdicts
		wantTrial [2]int // trials of prpc and of the pool
	}{
		{
			name:   "all met",
			size:   loopSizeOf(2000, loopPRPC(0.5, 150*msec, 53*msec, 0), loopPool()),
			submit: spread{0.5, 0.5, 0.5}, cpu: spread{2, 2, 2}, toLast: spread{0.75, 0.75, 0.75},
			longest: [2]time.Duration{53 * msec, 52 * msec}, paired: 3, wantTrial: [2]int{3, 3},
			want: verdicts{"met", "met", "met", "met"},
		},
		{
			name:   "exactly the bounds",
			size:   loopSizeOf(2000, loopPRPC(1, 200*msec, 53*msec, 0), loopPool()),
			submit: spread{1, 1, 1}, cpu: spread{2, 2, 2}, toLast: spread{1, 1, 1},
			longest: [2]time.Duration{53 * msec, 52 * msec}, paired: 3, wantTrial: [2]int{3, 3},
			want: verdicts{"met", "met", "met", "met"},
		},
		{
			name:   "all missed",
			size:   loopSizeOf(2000, loopPRPC(3, 300*msec, 53*msec+1, 2), loopPool()),
			submit: spread{3, 3, 3}, cpu: spread{2, 2, 2}, toLast: spread{1.5, 1.5, 1.5},
			longest: [2]time.Duration{53*msec + 1, 52 * msec}, late: [2]int{2, 0}, paired: 3, wantTrial: [2]int{3, 3},
			want: verdicts{"not met", "not met", "not met", "not met"},
		},
		{
			name: "median of the per-trial ratios",
			size: func() LoopSize {
				p := loopPRPC(1, 200*msec, 51*msec, 0)
				p[0].Submit, p[1].Submit, p[2].Submit = 5*msec, 24*msec, 8*msec // ratios 0.5, 2, 1
				p[0].Burst = 100 * msec                                         // ratio 0.5
				return loopSizeOf(2000, p, loopPool())
			}(),
			submit: spread{1, 0.5, 2}, cpu: spread{2, 2, 2}, toLast: spread{1, 0.5, 1},
			longest: [2]time.Duration{51 * msec, 52 * msec}, paired: 3, wantTrial: [2]int{3, 3},
			want: verdicts{"met", "met", "met", "met"},
		},
		{
			name: "late ticks summed over the trials",
			size: func() LoopSize {
				pool := loopPool()
				pool[0].Interval.Late, pool[1].Interval.Late = 1, 1
				return loopSizeOf(2000, loopPRPC(1, 200*msec, 51*msec, 2), pool)
			}(),
			submit: spread{1, 1, 1}, cpu: spread{2, 2, 2}, toLast: spread{1, 1, 1},
			longest: [2]time.Duration{51 * msec, 52 * msec}, late: [2]int{2, 2}, paired: 3, wantTrial: [2]int{3, 3},
			want: verdicts{"met", "met", "met", "met"},
		},
		{
			name:    "prpc alone",
			size:    loopSizeOf(2000, loopPRPC(1, 200*msec, 51*msec, 1), nil),
			longest: [2]time.Duration{51 * msec, 0}, late: [2]int{1, 0}, wantTrial: [2]int{3, 0},
			want: verdicts{"unknown", "unknown", "unknown", "unknown"},
		},
		{
			name: "unknown thread CPU",
			size: func() LoopSize {
				sz := loopSizeOf(2000, loopPRPC(1, 200*msec, 51*msec, 0), loopPool())
				for i := range sz.Trials {
					sz.Trials[i].SubmitThread.CPU = 0
				}
				return sz
			}(),
			submit: spread{1, 1, 1}, toLast: spread{1, 1, 1},
			longest: [2]time.Duration{51 * msec, 52 * msec}, paired: 3, wantTrial: [2]int{3, 3},
			want: verdicts{"met", "met", "met", "met"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmp := c.size.compare()
			near := func(a, b spread) bool {
				const eps = 1e-9
				return abs(a.median-b.median) < eps && abs(a.min-b.min) < eps && abs(a.max-b.max) < eps
			}
			if !near(cmp.Submit, c.submit) || !near(cmp.SubmitCPU, c.cpu) || !near(cmp.ToLastDelivery, c.toLast) || cmp.Paired != c.paired {
				t.Errorf("ratios: submit %+v, CPU %+v, to last delivery %+v, %d paired; want %+v, %+v, %+v, %d",
					cmp.Submit, cmp.SubmitCPU, cmp.ToLastDelivery, cmp.Paired, c.submit, c.cpu, c.toLast, c.paired)
			}
			if cmp.PRPC.Longest != c.longest[0] || cmp.Pool.Longest != c.longest[1] || cmp.PRPC.Late != c.late[0] || cmp.Pool.Late != c.late[1] {
				t.Errorf("longest %v / %v, late %d / %d; want %v, %d", cmp.PRPC.Longest, cmp.Pool.Longest, cmp.PRPC.Late, cmp.Pool.Late, c.longest, c.late)
			}
			if cmp.PRPC.Trials != c.wantTrial[0] || cmp.Pool.Trials != c.wantTrial[1] {
				t.Errorf("trials %d / %d, want %v", cmp.PRPC.Trials, cmp.Pool.Trials, c.wantTrial)
			}
			verdict := func(tg loopTarget) string {
				switch {
				case !tg.Known:
					return "unknown"
				case tg.Met:
					return "met"
				}
				return "not met"
			}
			tg := cmp.targets()
			got := verdicts{verdict(tg[0]), verdict(tg[1]), verdict(tg[2]), verdict(tg[3])}
			if got != c.want || tg[0].Figure != figSubmit || tg[1].Figure != figLongest || tg[2].Figure != figLate || tg[3].Figure != figDelivery {
				t.Errorf("targets %+v, want %+v", tg, c.want)
			}
		})
	}
}

func abs(x float64) float64 { return max(x, -x) }

func TestLoopMedian(t *testing.T) {
	sz := loopSizeOf(2000, loopPRPC(2, 300*msec, 60*msec, 2), loopPool())
	sz.Trials[0].Failed, sz.Trials[2].Wrong, sz.Trials[4].Skipped, sz.Trials[2].Skipped = 1, 2, 1, 3
	m, ok := sz.median(clientPRPC)
	if !ok {
		t.Fatal("no median of prpc")
	}
	want := LoopTrial{
		Client: clientPRPC, Calls: 2000, OK: 2000, Ticks: 20, Failed: 1, Wrong: 2, Skipped: 4,
		Interval: Intervals{N: 9, P50: 50 * msec, P99: 51 * msec, Max: 51 * msec, Late: 2},
		Submit:   20 * msec, SubmitThread: SubmitThread{CPU: 10 * msec}, Burst: 300 * msec,
	}
	if m != want {
		t.Errorf("median of prpc = %+v, want %+v", m, want)
	}
	if _, ok := loopSizeOf(2000, loopPool(), nil).median(clientPRPC); ok {
		t.Error("a median of prpc with no trial of it")
	}
}

// loopReport is a made-up report of the loop suite alone: two sizes, each over the three
// trials of loopPool and of prpc.
func loopReport() *Report {
	small := loopSizeOf(2000, loopPRPC(0.5, 150*msec, 53*msec, 0), loopPool())
	large := loopSizeOf(20000, loopPRPC(3, 300*msec, 60*msec, 2), loopPool())
	return &Report{
		Command: "go run ./benchmarks/burst -suite loop", Timeout: 10 * time.Second, Budget: 2 * time.Millisecond, Warmup: 1000,
		Loop: &LoopResult{TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks,
			Sizes: []LoopSize{small, large}},
	}
}

func TestLoopMarkdown(t *testing.T) {
	const (
		summaryHead = "| calls | figure | prpc | grpc-go pool | prpc ÷ pool | target | verdict |"
		tableHead   = "| calls | workers | trial | client | ticks | burst intervals | interval p50 | interval p99 | interval max | max after submit tick | late | skipped |"
	)
	for _, c := range []struct {
		name    string
		edit    func(*Report)
		want    []string
		wantNot []string
	}{
		{
			name: "two sizes",
			edit: func(*Report) {},
			want: []string{
				summaryHead, tableHead,
				"3 interleaved trials per client and burst size; unpinned, as the targets are judged.",
				"| 2,000 | submit the burst in its tick | 5.00 ms (4.00–6.00) | 10.00 ms (8.00–12.00) | 0.50× (0.50–0.50) | ≤ 1.0× | met |",
				"| 2,000 | submit: the loop thread's CPU time | 10.00 ms (10.00–10.00) | 5.00 ms (5.00–5.00) | 2.00× (2.00–2.00) | – | – |",
				"| 2,000 | longest tick interval, all trials | 53.00 ms | 52.00 ms | +1.00 ms | ≤ the pool's + 1 ms | met |",
				"| 2,000 | late ticks (> 52 ms), all trials | 0 | 0 | – | ≤ the pool's | met |",
				"| 2,000 | submitting tick to last delivery | 150.00 ms (150.00–150.00) | 200.00 ms (200.00–200.00) | 0.75× (0.75–0.75) | ≤ 1.0× | met |",
				"| 20,000 | submit the burst in its tick | 30.00 ms (24.00–36.00) | 10.00 ms (8.00–12.00) | 3.00× (3.00–3.00) | ≤ 1.0× | **not met** |",
				"| 20,000 | longest tick interval, all trials | 60.00 ms | 52.00 ms | +8.00 ms | ≤ the pool's + 1 ms | **not met** |",
				"| 20,000 | late ticks (> 52 ms), all trials | 2 | 0 | – | ≤ the pool's | **not met** |",
				"| 20,000 | submitting tick to last delivery | 300.00 ms (300.00–300.00) | 200.00 ms (200.00–200.00) | 1.50× (1.50–1.50) | ≤ 1.0× | **not met** |",
				// Trial rows: prpc's with its ratios, the pool's without; then the medians.
				"| 2,000 | 6×16 | 1 | prpc | 20 | 9 | 50.00 ms | 51.00 ms | 51.00 ms | 0.00 ms | 0 | 0 | 0 | 0.00 ms | 0.00 ms | 0.0 ms | 0 | 5.00 ms | 0 | 10.00 ms | 0.00 ms | 0 | 0 | 150.0 ms | 2,000 | 0 | 0.50× | 2.00× | 0.75× |",
				"| 2,000 | 96 | 1 | grpc-go | 20 | 9 | 50.00 ms | 52.00 ms | 52.00 ms | 0.00 ms | 0 | 0 | 0 | 0.00 ms | 0.00 ms | 0.0 ms | 0 | 10.00 ms | 0 | 5.00 ms | 0.00 ms | 0 | 0 | 200.0 ms | 2,000 | 0 | | | |",
				"| 20,000 | 6×16 | 3 | prpc | 20 | 9 | 50.00 ms | 51.00 ms | 51.00 ms | 0.00 ms | 2 |",
				"| 20,000 | 6×16 | **median** | prpc |",
				"| 20,000 | 96 | **median** | grpc-go |",
				"Late: intervals over 52 ms.",
			},
		},
		{
			name: "pinned",
			edit: func(r *Report) { r.Pinned = true },
			want: []string{"; pinned (client on CPU 0, backend on CPU 1); the targets are judged on an unpinned run."},
		},
		{
			name: "in process",
			edit: func(r *Report) { r.InProcess = true },
			want: []string{"; backend in the client's process, so this run's conditions are not the targets'."},
		},
		{
			name: "prpc alone, one trial",
			edit: func(r *Report) {
				for i := range r.Loop.Sizes {
					sz := &r.Loop.Sizes[i]
					sz.Shape.Trials, sz.Trials = 1, sz.clientTrials(clientPRPC)[:1]
				}
			},
			want: []string{
				"| 2,000 | submit the burst in its tick | 5.00 ms | – | – | ≤ 1.0× | – |",
				"| 2,000 | longest tick interval, all trials | 51.00 ms | – | – | ≤ the pool's + 1 ms | – |",
				"| 2,000 | late ticks (> 52 ms), all trials | 0 | – | – | ≤ the pool's | – |",
				"| 2,000 | 6×16 | 1 | prpc | 20 | 9 |",
				"one trial per client and burst size",
			},
			wantNot: []string{"**median**", "| grpc-go |", "interleaved trials per client"},
		},
		{
			name: "failed call",
			edit: func(r *Report) {
				tr := &r.Loop.Sizes[1].Trials[3] // the pool's trial 2
				tr.OK, tr.Failed, tr.FirstErr = 19999, 1, "call 7: deadline exceeded"
			},
			want: []string{"First error of grpc-go trial 2 of 20,000 calls: call 7: deadline exceeded", "| 19,999 | 1 | | | |"},
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
			// The summary has five rows per size; the table a row per trial and a median per
			// client over several trials.
			for _, sz := range r.Loop.Sizes {
				calls := thousands(sz.Shape.Calls)
				if n := strings.Count(got, "\n| "+calls+" | ") - strings.Count(got, "\n| "+calls+" | 6×16 |") - strings.Count(got, "\n| "+calls+" | 96 |"); n != 5 {
					t.Errorf("%d summary rows of %s calls, want 5", n, calls)
				}
				rows := len(sz.Trials)
				if sz.Shape.Trials > 1 {
					rows += 2
				}
				if n := strings.Count(got, "\n| "+calls+" | 6×16 |") + strings.Count(got, "\n| "+calls+" | 96 |"); n != rows {
					t.Errorf("%d trial rows of %s calls, want %d", n, calls, rows)
				}
			}
		})
	}
}

func TestLoopJSON(t *testing.T) {
	r := loopReport()
	r.Loop.Sizes[1].Trials[1].Failed = 1
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
	if sz.Calls != 20000 || sz.Workers != 6 || sz.Batch != 16 || sz.PoolWorkers != 96 || sz.Trials != 3 || len(sz.Results) != 6 {
		t.Fatalf("size %+v", sz)
	}
	if len(sz.Medians) != 2 || sz.Medians[0].Client != clientPRPC || sz.Medians[1].Client != clientBaseline || sz.Medians[1].Failed != 1 || sz.Medians[0].Late != 2 {
		t.Errorf("medians %+v, want prpc's (2 late ticks) and the pool's (1 failed call)", sz.Medians)
	}
	if len(sz.Ratios) != 3 || sz.Ratios[0] != (loopRatios{Submit: 3, SubmitCPU: 2, ToLastDelivery: 1.5}) {
		t.Errorf("ratios %+v", sz.Ratios)
	}
	c := sz.Comparison
	if c.PairedTrials != 3 || c.SubmitRatio != (jsonSpread{3, 3, 3}) || c.PRPC.SubmitMs != (jsonSpread{30, 24, 36}) ||
		c.PRPC.LongestMs != 60 || c.Pool.LongestMs != 52 || c.PRPC.Late != 2 || c.Pool.Late != 0 || c.Pool.Trials != 3 {
		t.Errorf("comparison %+v", c)
	}
	want := []loopTarget{
		{Figure: figSubmit, Target: "≤ 1.0×", Known: true},
		{Figure: figLongest, Target: "≤ the pool's + 1 ms", Known: true},
		{Figure: figLate, Target: "≤ the pool's", Known: true},
		{Figure: figDelivery, Target: "≤ 1.0×", Known: true},
	}
	if len(sz.Targets) != len(want) {
		t.Fatalf("targets %+v, want %+v", sz.Targets, want)
	}
	for i := range want {
		if sz.Targets[i] != want[i] {
			t.Errorf("target %d = %+v, want %+v", i, sz.Targets[i], want[i])
		}
	}
	if !rep.Loop.Sizes[0].Targets[0].Met {
		t.Errorf("2,000 calls: submit target %+v, want met", rep.Loop.Sizes[0].Targets[0])
	}
}
