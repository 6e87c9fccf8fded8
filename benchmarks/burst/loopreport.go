package main

import (
	"fmt"
	"slices"
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

// forms returns the prpc clients that ran at least one trial of lr, in prpcForms order: the
// union of the forms of its sizes.
func (lr *LoopResult) forms() []string {
	ran := map[string]bool{}
	for _, sz := range lr.Sizes {
		for _, f := range sz.forms() {
			ran[f] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(prpcForms), func(f string) bool { return !ran[f] })
}

// writeLoopSummaryMarkdown writes the loop suite's part of the summary: the targets of each
// prpc client that ran, then per burst size and figure the pool's figure and each client's
// ratio to it, or its own count, with the verdict of its target.
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
	forms := lr.forms()
	_, placement := r.placement()
	fmt.Fprintf(b, "Loop suite: prpc, in each form of submission that ran, against the hand-written %s in the same game loop (%d TPS, %g ms of game work per tick, the burst submitted on tick %d), "+
		"%s per client and burst size; %s. "+
		"The judged figure is the CPU time of the loop's thread over the submission; its wall time is beside it. "+
		"Each prpc client's cell: the median over the trials of its per-trial ratio to the pool, with the least and the greatest in brackets; for late ticks and the longest tick interval, its own figure. "+
		"The pool's cell: its median in ms with its spread, or its own figure. "+
		"Longest tick interval: over the burst windows of all the trials; late ticks: intervals over %g ms, summed over all the trials. "+
		"Verdicts judge the ratios as shown, to two decimals.\n\n",
		poolName, lr.TPS, ms(lr.GameWork), lr.SubmitTick, count, placement, ms(loopLate))
	if len(forms) > 0 {
		b.WriteString("| client | form | " + figSubmitCPU + " | " + figDelivery + " | " + figLate + " |\n")
		b.WriteString("|:--|:--|:--|:--|:--|\n")
		for _, f := range forms {
			fmt.Fprintf(b, "| %s | %s | %s | %s | ≤ the pool's |\n", f, formText(f), lr.Targets.cpuText(f), boundText(lr.Targets.DeliveryMax, 0))
		}
		b.WriteString("\n")
	}
	b.WriteString("| calls | figure | " + poolName + " |")
	sep := "|---:|:--|---:|"
	for _, f := range forms {
		b.WriteString(" " + f + " | verdict |")
		sep += "---:|:--|"
	}
	b.WriteString("\n" + sep + "\n")
	msCell := func(f loopFigures, s spread) string {
		if f.Trials == 0 {
			return "–"
		}
		return spreadText(s, f.Trials, " ms")
	}
	longest := func(f loopFigures) string {
		if f.Trials == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f ms", ms(f.Longest))
	}
	late := func(f loopFigures) string {
		if f.Trials == 0 {
			return "–"
		}
		return strconv.Itoa(f.Late)
	}
	for _, sz := range lr.Sizes {
		pool := figuresOf(sz.clientTrials(clientBaseline))
		cs := make([]loopComparison, len(forms))
		tgs := make([]map[string]loopTarget, len(forms))
		for i, f := range forms {
			cs[i] = sz.compare(f)
			tgs[i] = map[string]loopTarget{}
			for _, t := range cs[i].targets(lr.Targets) {
				tgs[i][t.Figure] = t
			}
		}
		row := func(fig, poolCell string, cell func(loopComparison) string) {
			fmt.Fprintf(b, "| %s | %s | %s |", thousands(sz.Shape.Calls), fig, poolCell)
			for i, c := range cs {
				verdict := "–"
				if t, ok := tgs[i][fig]; ok {
					verdict = t.verdictCell()
				}
				fmt.Fprintf(b, " %s | %s |", cell(c), verdict)
			}
			b.WriteString("\n")
		}
		row(figSubmitCPU, msCell(pool, pool.SubmitCPU), func(c loopComparison) string { return ratioCell(c.SubmitCPU, c.Paired) })
		row(figSubmit, msCell(pool, pool.Submit), func(c loopComparison) string { return ratioCell(c.Submit, c.Paired) })
		row(figDelivery, msCell(pool, pool.ToLastDelivery), func(c loopComparison) string { return ratioCell(c.ToLastDelivery, c.Paired) })
		row(figLate, late(pool), func(c loopComparison) string { return late(c.PRPC) })
		row(figLongest, longest(pool), func(c loopComparison) string { return longest(c.PRPC) })
	}
}

// writeLoopMarkdown writes the loop suite's notes and its table of every trial.
func (r *Report) writeLoopMarkdown(b *strings.Builder) {
	lr := r.Loop
	fmt.Fprintf(b, "Each trial hands a fresh client to loop.Run at %d TPS with Budget %v, woken between ticks by Ready. "+
		"OnTick burns %g ms of CPU every tick; on tick %d it first submits the burst of GetPlayer calls as game logic does, "+
		"a new request per call and callbacks that capture the call's own state, and every response is checked. "+
		"prpc: a reactor with Workers × BatchSize as given, every call's timeout %v, which runs the callbacks in its Tick; "+
		"each prpc client submits in one form, with callbacks that do what the pool's callback does and capture the same state: "+
		clientGo+" by "+formText(clientGo)+"; "+clientOnSettled+" by "+formText(clientOnSettled)+"; "+clientThen+" by "+formText(clientThen)+". "+
		"%s: the hand-written pool, as many goroutines as Workers × BatchSize fed by a buffered channel of {request, callback}, "+
		"each calling the generated stub's GetPlayer with a timeout of %v from when it takes the call and sending the reply to a buffered channel, "+
		"which the loop drains with Tick(Budget), running one callback per call, as it drains the reactor. "+
		"Warm-up: %d calls through each trial's client before its loop starts, after which freed memory is returned to the OS. "+
		"The trials are interleaved: trial 1 of every client, then trial 2, and so on; the order of the clients within a trial rotates by a Williams design, "+
		"so that over as many trials as clients each client runs once in each position and, with an even number of clients, right after each other client once, "+
		"lest the position in a trial or the client just before favour one client (the table lists the trials in running order). "+
		"The loop stops %d ticks after the first tick to start once every call has its outcome.\n",
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
		"Ratios: the prpc client's ÷ the pool's in the same trial number.\n")
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
			if p, base, ok := sz.pair(t.Client, t.Trial); ok {
				x := loopRatioOf(p, base)
				rs = &x
			}
			row(strconv.Itoa(t.Trial), t, rs)
		}
		if s.Trials > 1 {
			for _, name := range append(sz.forms(), clientBaseline) {
				m, ok := sz.median(name)
				if !ok {
					continue
				}
				var rs *loopRatios
				if c := sz.compare(name); isPRPC(name) && c.Paired > 0 {
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
	// Medians holds a median trial per client that ran more than one trial: the prpc
	// clients in prpcForms order, then the pool.
	Medians []jsonLoopTrial `json:"medians,omitempty"`
	// Ratios holds every prpc client's per-trial ratios to the pool: by client in prpcForms
	// order, then by trial.
	Ratios []loopRatios `json:"ratios,omitempty"`
	// Pool is the pool's figures; Comparisons holds, per prpc client that ran, in prpcForms
	// order, its figures, its ratios to the pool's and its targets.
	Pool        jsonLoopFigures      `json:"pool"`
	Comparisons []jsonLoopComparison `json:"comparisons"`
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
	Client              string          `json:"client"`
	Form                string          `json:"form"`
	Figures             jsonLoopFigures `json:"figures"`
	PairedTrials        int             `json:"paired_trials"`
	SubmitRatio         jsonSpread      `json:"submit_ratio"`
	SubmitCPURatio      jsonSpread      `json:"submit_thread_cpu_ratio"`
	ToLastDeliveryRatio jsonSpread      `json:"to_last_delivery_ratio"`
	Targets             []loopTarget    `json:"targets"`
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
		js := jsonLoopSize{
			Calls: s.Calls, Workers: s.Workers, Batch: s.Batch, PoolWorkers: s.Workers * s.Batch, Trials: s.Trials,
			Pool: figuresOf(sz.clientTrials(clientBaseline)).toJSON(),
		}
		for _, f := range sz.forms() {
			c := sz.compare(f)
			js.Ratios = append(js.Ratios, sz.trialRatios(f)...)
			js.Comparisons = append(js.Comparisons, jsonLoopComparison{
				Client: f, Form: formText(f), Figures: c.PRPC.toJSON(), PairedTrials: c.Paired,
				SubmitRatio: c.Submit.toJSON(), SubmitCPURatio: c.SubmitCPU.toJSON(), ToLastDeliveryRatio: c.ToLastDelivery.toJSON(),
				Targets: c.targets(lr.Targets),
			})
		}
		for _, t := range sz.Trials {
			js.Results = append(js.Results, t.toJSON())
		}
		for _, name := range append(sz.forms(), clientBaseline) {
			if m, ok := sz.median(name); ok && len(sz.clientTrials(name)) > 1 {
				js.Medians = append(js.Medians, m.toJSON())
			}
		}
		jl.Sizes = append(jl.Sizes, js)
	}
	return jl
}
