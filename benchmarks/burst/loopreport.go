package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rendering of the loop suite's result, in Markdown and JSON.

// median returns, for one client, the median of each figure over its trials (errors, late
// ticks and skipped ticks summed), as a LoopTrial with Trial 0.
func (sz LoopSize) median(client string) (LoopTrial, bool) {
	ts := sz.clientTrials(client)
	if len(ts) == 0 {
		return LoopTrial{}, false
	}
	med := func(f func(LoopTrial) float64) float64 { return medianOf(ts, f) }
	dur := func(f func(LoopTrial) time.Duration) time.Duration { return medianDur(ts, f) }
	count := func(f func(LoopTrial) uint64) uint64 {
		return uint64(med(func(t LoopTrial) float64 { return float64(f(t)) }))
	}
	m := LoopTrial{Client: client, Calls: sz.Shape.Calls}
	m.OK = int(med(func(t LoopTrial) float64 { return float64(t.OK) }))
	m.Ticks = count(func(t LoopTrial) uint64 { return t.Ticks })
	m.Overruns = count(func(t LoopTrial) uint64 { return t.Overruns })
	m.Wakeups = count(func(t LoopTrial) uint64 { return t.Wakeups })
	m.Interval.N = int(med(func(t LoopTrial) float64 { return float64(t.Interval.N) }))
	m.Interval.P50 = dur(func(t LoopTrial) time.Duration { return t.Interval.P50 })
	m.Interval.P99 = dur(func(t LoopTrial) time.Duration { return t.Interval.P99 })
	m.Interval.Max = dur(func(t LoopTrial) time.Duration { return t.Interval.Max })
	m.AfterSubmit = dur(func(t LoopTrial) time.Duration { return t.AfterSubmit })
	m.TickP99 = dur(func(t LoopTrial) time.Duration { return t.TickP99 })
	m.TickMax = dur(func(t LoopTrial) time.Duration { return t.TickMax })
	m.Delivery = dur(func(t LoopTrial) time.Duration { return t.Delivery })
	m.Submit = dur(func(t LoopTrial) time.Duration { return t.Submit })
	m.SubmitFaults = int64(med(func(t LoopTrial) float64 { return float64(t.SubmitFaults) }))
	m.SubmitThread.CPU = dur(func(t LoopTrial) time.Duration { return t.SubmitThread.CPU })
	m.SubmitThread.Sys = dur(func(t LoopTrial) time.Duration { return t.SubmitThread.Sys })
	m.SubmitThread.Faults = int64(med(func(t LoopTrial) float64 { return float64(t.SubmitThread.Faults) }))
	m.SubmitThread.Preempted = int64(med(func(t LoopTrial) float64 { return float64(t.SubmitThread.Preempted) }))
	m.Burst = dur(func(t LoopTrial) time.Duration { return t.Burst })
	for _, t := range ts {
		m.Failed += t.Failed
		m.Wrong += t.Wrong
		m.Interval.Late += t.Interval.Late
		m.Skipped += t.Skipped
	}
	return m, true
}

// poolName names the pool in the report.
const poolName = "grpc-go pool"

// placement says where the run put client and backend: as a heading, for a run of several
// placements, and as a clause saying how that bears on the targets.
func (r *Report) placement() (title, clause string) {
	switch {
	case r.InProcess:
		return "Backend in the client's process", "backend in the client's process, so this run's conditions are not the targets'"
	case r.Pinned:
		return "Pinned: client on CPU 0, backend on CPU 1", "pinned (client on CPU 0, backend on CPU 1); the targets are judged on an unpinned run"
	default:
		return "Unpinned: client and backend share the CPUs, as the targets are judged", "unpinned, as the targets are judged"
	}
}

// writeLoopSummaryMarkdown writes the loop suite's part of the summary: per burst size, each
// client's figures, the ratios prpc ÷ pool and the targets.
func (r *Report) writeLoopSummaryMarkdown(b *strings.Builder) {
	lr := r.Loop
	trials := 0
	for _, sz := range lr.Sizes {
		trials = max(trials, sz.Shape.Trials)
	}
	count := "one trial"
	if trials > 1 {
		count = fmt.Sprintf("%d interleaved trials", trials)
	}
	_, placement := r.placement()
	fmt.Fprintf(b, "Loop suite: prpc against the hand-written %s in the same game loop (%d TPS, %g ms of game work per tick, the burst submitted on tick %d), "+
		"%s per client and burst size; %s. "+
		"Submission and the time to the last delivery: each client's median in ms with the least and the greatest in brackets, and the median of the per-trial ratios with their spread. "+
		"Longest tick interval: over the burst windows of all the trials; late ticks: intervals over %g ms, summed over all the trials.\n\n",
		poolName, lr.TPS, ms(lr.GameWork), lr.SubmitTick, count, placement, ms(loopLate))
	b.WriteString("| calls | figure | prpc | " + poolName + " | prpc ÷ pool | target | verdict |\n")
	b.WriteString("|---:|:--|---:|---:|---:|:--|:--|\n")
	for _, sz := range lr.Sizes {
		c := sz.compare()
		tg := map[string]loopTarget{}
		for _, t := range c.targets() {
			tg[t.Figure] = t
		}
		msCell := func(f loopFigures, s spread) string {
			if f.Trials == 0 {
				return "–"
			}
			return spreadText(s, f.Trials, " ms")
		}
		row := func(fig, p, pool, ratio string) {
			target, verdict := "–", "–"
			if t, ok := tg[fig]; ok {
				target, verdict = t.Target, t.verdictCell()
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", thousands(c.Calls), fig, p, pool, ratio, target, verdict)
		}
		row(figSubmit, msCell(c.PRPC, c.PRPC.Submit), msCell(c.Pool, c.Pool.Submit), ratioCell(c.Submit, c.Paired))
		row(figSubmitCPU, msCell(c.PRPC, c.PRPC.SubmitCPU), msCell(c.Pool, c.Pool.SubmitCPU), ratioCell(c.SubmitCPU, c.Paired))
		longest := func(f loopFigures) string {
			if f.Trials == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f ms", ms(f.Longest))
		}
		diff := "–"
		if c.PRPC.Trials > 0 && c.Pool.Trials > 0 {
			diff = fmt.Sprintf("%+.2f ms", ms(c.PRPC.Longest-c.Pool.Longest))
		}
		row(figLongest, longest(c.PRPC), longest(c.Pool), diff)
		late := func(f loopFigures) string {
			if f.Trials == 0 {
				return "–"
			}
			return strconv.Itoa(f.Late)
		}
		row(figLate, late(c.PRPC), late(c.Pool), "–")
		row(figDelivery, msCell(c.PRPC, c.PRPC.ToLastDelivery), msCell(c.Pool, c.Pool.ToLastDelivery), ratioCell(c.ToLastDelivery, c.Paired))
	}
}

// writeLoopMarkdown writes the loop suite's notes and its table of every trial.
func (r *Report) writeLoopMarkdown(b *strings.Builder) {
	lr := r.Loop
	fmt.Fprintf(b, "Each trial hands a fresh client to loop.Run at %d TPS with Budget %v, woken between ticks by Ready. "+
		"OnTick burns %g ms of CPU every tick; on tick %d it first submits the burst of GetPlayer calls as game logic does, "+
		"a new request per call and callbacks that capture the call's own state, and every response is checked. "+
		"prpc: a reactor with Workers × BatchSize as given, every call's timeout %v; it runs the callbacks (Then, OnError) in its Tick. "+
		"%s: the hand-written pool, as many goroutines as Workers × BatchSize fed by a buffered channel of {request, callback}, "+
		"each calling the generated stub's GetPlayer with a timeout of %v from when it takes the call and sending the reply to a buffered channel, "+
		"which the loop drains with Tick(Budget), running one callback per call, as it drains the reactor. "+
		"Warm-up: %d calls through each trial's client before its loop starts, after which freed memory is returned to the OS. "+
		"The trials are interleaved, prpc then the pool. The loop stops %d ticks after the first tick to start once every call has its outcome.\n",
		lr.TPS, r.Budget, ms(lr.GameWork), lr.SubmitTick, r.Timeout, poolName, r.Timeout, r.Warmup, lr.TailTicks)
	b.WriteString("Tick intervals: between successive tick starts, from the tick that submits the burst to the first tick after the last outcome; " +
		"percentiles by nearest rank, so with fewer than 100 intervals p99 is the longest. " +
		"Max after submit tick: the longest of them but the first, whose tick submitted the burst. " +
		fmt.Sprintf("Late: intervals over %g ms. ", ms(loopLate)) +
		"Skipped, overruns, tick p99 and max (OnTick plus the client's Tick) and delivery (time in the client's Tick, in ticks and wake-ups): loop.Stats over the whole run. " +
		"Submit: submitting every call. Submit faults: minor page faults of the process while submitting every call (getrusage ru_minflt), " +
		"each a first touch of a fresh page; process-wide, so they include any the client's goroutines took meanwhile. " +
		"Submit CPU, sys, thread faults and preempted: what submitting cost the loop's own OS thread, the goroutine locked to it: " +
		"its CPU time (CLOCK_THREAD_CPUTIME_ID), and from getrusage(RUSAGE_THREAD) the part in the kernel (to the thread's last scheduler tick, a few ms), " +
		"the minor page faults it took itself, and its involuntary context switches (the kernel gave its CPU to another thread); " +
		"submit minus submit CPU is time it waited for a CPU. " +
		"To last delivery: from the start of the submitting tick to the last outcome. " +
		"Ratios: prpc ÷ pool in the same trial number.\n")
	b.WriteString("\n")
	b.WriteString("| calls | workers | trial | client | ticks | burst intervals | interval p50 | interval p99 | interval max | max after submit tick | late | skipped | overruns | tick p99 | tick max | delivery | wake-ups | submit | submit faults | submit CPU | submit sys | submit thread faults | submit preempted | to last delivery | calls ok | errors | submit ratio | submit CPU ratio | to last delivery ratio |\n")
	b.WriteString("|---:|:-:|:-:|:--|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sz := range lr.Sizes {
		s := sz.Shape
		row := func(trial string, t LoopTrial, rs *loopRatios) {
			workers := fmt.Sprintf("%d×%d", s.Workers, s.Batch)
			if t.Client == clientBaseline {
				workers = strconv.Itoa(s.Workers * s.Batch)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %d | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %d | %d | %d | %.2f ms | %.2f ms | %.1f ms | %d | %.2f ms | %s | %.2f ms | %.2f ms | %s | %d | %.1f ms | %s | %d |",
				thousands(s.Calls), workers, trial, t.Client, t.Ticks, t.Interval.N,
				ms(t.Interval.P50), ms(t.Interval.P99), ms(t.Interval.Max), ms(t.AfterSubmit), t.Interval.Late, t.Skipped, t.Overruns,
				ms(t.TickP99), ms(t.TickMax), ms(t.Delivery), t.Wakeups, ms(t.Submit), thousands(int(t.SubmitFaults)),
				ms(t.SubmitThread.CPU), ms(t.SubmitThread.Sys), thousands(int(t.SubmitThread.Faults)), t.SubmitThread.Preempted, ms(t.Burst),
				thousands(t.OK), t.Errors())
			if rs != nil {
				fmt.Fprintf(b, " %s | %s | %s |\n", times(rs.Submit), times(rs.SubmitCPU), times(rs.ToLastDelivery))
			} else {
				b.WriteString(" | | |\n")
			}
		}
		for _, t := range sz.Trials {
			var rs *loopRatios
			if p, base, ok := sz.pair(t.Trial); ok && t.Client == clientPRPC {
				x := loopRatioOf(p, base)
				rs = &x
			}
			row(strconv.Itoa(t.Trial), t, rs)
		}
		if s.Trials > 1 {
			c := sz.compare()
			for _, name := range []string{clientPRPC, clientBaseline} {
				m, ok := sz.median(name)
				if !ok {
					continue
				}
				var rs *loopRatios
				if name == clientPRPC && c.Paired > 0 {
					rs = &loopRatios{Submit: c.Submit.median, SubmitCPU: c.SubmitCPU.median, ToLastDelivery: c.ToLastDelivery.median}
				}
				row("**median**", m, rs)
			}
		}
	}
	b.WriteString("\nMedian rows: the median of each figure over the client's trials, but late ticks, skipped ticks and errors, which are summed; " +
		"their ratios are the medians of the per-trial ratios.\n")
	for _, sz := range lr.Sizes {
		for _, t := range sz.Trials {
			if t.FirstErr != "" {
				fmt.Fprintf(b, "\nFirst error of %s trial %d of %s calls: %s\n", t.Client, t.Trial, thousands(sz.Shape.Calls), t.FirstErr)
			}
		}
	}
}

// JSON output.

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
	// Medians holds a median trial per client that ran more than one trial.
	Medians    []jsonLoopTrial    `json:"medians,omitempty"`
	Ratios     []loopRatios       `json:"ratios,omitempty"`
	Comparison jsonLoopComparison `json:"comparison"`
	Targets    []loopTarget       `json:"targets"`
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
	PRPC                jsonLoopFigures `json:"prpc"`
	Pool                jsonLoopFigures `json:"pool"`
	PairedTrials        int             `json:"paired_trials"`
	SubmitRatio         jsonSpread      `json:"submit_ratio"`
	SubmitCPURatio      jsonSpread      `json:"submit_thread_cpu_ratio"`
	ToLastDeliveryRatio jsonSpread      `json:"to_last_delivery_ratio"`
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
		Calls:            t.Calls, OK: t.OK, Failed: t.Failed, Wrong: t.Wrong, FirstError: t.FirstErr,
	}
}

func (lr *LoopResult) toJSON() *jsonLoop {
	jl := &jsonLoop{
		TPS: lr.TPS, GameWorkMs: ms(lr.GameWork), SubmitTick: lr.SubmitTick, TailTicks: lr.TailTicks,
		LateIntervalMs: ms(loopLate),
	}
	for _, sz := range lr.Sizes {
		s := sz.Shape
		c := sz.compare()
		js := jsonLoopSize{
			Calls: s.Calls, Workers: s.Workers, Batch: s.Batch, PoolWorkers: s.Workers * s.Batch, Trials: s.Trials,
			Ratios: sz.trialRatios(),
			Comparison: jsonLoopComparison{
				PRPC: c.PRPC.toJSON(), Pool: c.Pool.toJSON(), PairedTrials: c.Paired,
				SubmitRatio: c.Submit.toJSON(), SubmitCPURatio: c.SubmitCPU.toJSON(), ToLastDeliveryRatio: c.ToLastDelivery.toJSON(),
			},
			Targets: c.targets(),
		}
		for _, t := range sz.Trials {
			js.Results = append(js.Results, t.toJSON())
		}
		for _, name := range []string{clientPRPC, clientBaseline} {
			if m, ok := sz.median(name); ok && len(sz.clientTrials(name)) > 1 {
				js.Medians = append(js.Medians, m.toJSON())
			}
		}
		jl.Sizes = append(jl.Sizes, js)
	}
	return jl
}
