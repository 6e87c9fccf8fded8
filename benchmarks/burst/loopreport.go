package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rendering of the loop suite's result, in Markdown and JSON.

// median returns the median of each figure over the trials (errors summed), as a LoopTrial
// with Trial 0.
func (lr *LoopResult) median() LoopTrial {
	ts := lr.Trials
	med := func(f func(LoopTrial) float64) float64 { return medianOf(ts, f) }
	dur := func(f func(LoopTrial) time.Duration) time.Duration { return medianDur(ts, f) }
	count := func(f func(LoopTrial) uint64) uint64 {
		return uint64(med(func(t LoopTrial) float64 { return float64(f(t)) }))
	}
	m := LoopTrial{Calls: lr.Shape.Calls}
	m.OK = int(med(func(t LoopTrial) float64 { return float64(t.OK) }))
	m.Ticks = count(func(t LoopTrial) uint64 { return t.Ticks })
	m.Skipped = count(func(t LoopTrial) uint64 { return t.Skipped })
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
	}
	return m
}

// meeting returns the number of trials that meet the target.
func (lr *LoopResult) meeting() int {
	n := 0
	for _, t := range lr.Trials {
		if t.MeetsTarget() {
			n++
		}
	}
	return n
}

// targetMet reports whether every trial met the target.
func (lr *LoopResult) targetMet() bool {
	return len(lr.Trials) > 0 && lr.meeting() == len(lr.Trials)
}

// verdict is the one-line verdict on the target, with a caveat when the run's conditions are
// not the target's.
func (lr *LoopResult) verdict(inProcess bool) string {
	met := "**not met**"
	if lr.targetMet() {
		met = "**met**"
	}
	v := fmt.Sprintf("Target (%d TPS, %g ms of game work per tick, extreme burst, unpinned): tick interval p99 ≤ %g ms and %d skipped ticks, in every trial: %s (%d of %d trials).",
		lr.TPS, ms(lr.GameWork), ms(loopTargetP99), loopTargetSkips, met, lr.meeting(), len(lr.Trials))
	var differ []string
	if s := lr.Shape; s.Calls != loopShape.Calls || s.Workers != loopShape.Workers || s.Batch != loopShape.Batch {
		differ = append(differ, fmt.Sprintf("the burst is %s, not the extreme %s", s, loopShape))
	}
	if inProcess {
		differ = append(differ, "the backend ran in the client's process")
	}
	if len(differ) > 0 {
		v += " This run's conditions are not the target's: " + strings.Join(differ, "; ") + "."
	}
	return v
}

// writeLoopMarkdown writes the loop suite's notes, table and verdict.
func (r *Report) writeLoopMarkdown(b *strings.Builder) {
	lr := r.Loop
	s := lr.Shape
	fmt.Fprintf(b, "A prpc reactor (Workers %d, BatchSize %d, every call's timeout %v) driven by loop.Run at %d TPS with Budget %v, woken between ticks by Ready. "+
		"OnTick burns %g ms of CPU every tick; on tick %d it first submits %s GetPlayer calls, every response checked. "+
		"Warm-up: %d calls through each trial's reactor before its loop starts. The loop stops %d ticks after the first tick to start once every call has its outcome.\n",
		s.Workers, s.Batch, r.Timeout, lr.TPS, r.Budget, ms(lr.GameWork), lr.SubmitTick, thousands(s.Calls), r.Warmup, lr.TailTicks)
	b.WriteString("Tick intervals: between successive tick starts, from the tick that submits the burst to the first tick after the last outcome; " +
		"percentiles by nearest rank, so with fewer than 100 intervals p99 is the longest. " +
		"Max after submit tick: the longest of them but the first, whose tick submitted the burst. " +
		"Skipped, overruns, tick p99 and max (OnTick plus the reactor's Tick) and delivery (time in the reactor's Tick, in ticks and wake-ups): loop.Stats over the whole run. " +
		"Submit: submitting every call. Submit faults: minor page faults of the process while submitting every call (getrusage ru_minflt), " +
		"each a first touch of a fresh page; process-wide, so they include any the reactor's goroutines took meanwhile. " +
		"Submit CPU, sys, thread faults and preempted: what submitting cost the loop's own OS thread, the goroutine locked to it: " +
		"its CPU time (CLOCK_THREAD_CPUTIME_ID), and from getrusage(RUSAGE_THREAD) the part in the kernel (to the thread's last scheduler tick, a few ms), " +
		"the minor page faults it took itself, and its involuntary context switches (the kernel gave its CPU to another thread); " +
		"submit minus submit CPU is time it waited for a CPU. " +
		"Burst: first submission to last outcome.\n")
	b.WriteString("\n")
	b.WriteString("| calls | W×B | trial | ticks | burst intervals | interval p50 | interval p99 | interval max | max after submit tick | skipped | overruns | tick p99 | tick max | delivery | wake-ups | submit | submit faults | submit CPU | submit sys | submit thread faults | submit preempted | burst | calls ok | errors |\n")
	b.WriteString("|---:|:-:|:-:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(trial string, t LoopTrial) {
		fmt.Fprintf(b, "| %s | %d×%d | %s | %d | %d | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %d | %d | %.2f ms | %.2f ms | %.1f ms | %d | %.2f ms | %s | %.2f ms | %.2f ms | %s | %d | %.3f s | %s | %d |\n",
			thousands(s.Calls), s.Workers, s.Batch, trial, t.Ticks, t.Interval.N,
			ms(t.Interval.P50), ms(t.Interval.P99), ms(t.Interval.Max), ms(t.AfterSubmit), t.Skipped, t.Overruns,
			ms(t.TickP99), ms(t.TickMax), ms(t.Delivery), t.Wakeups, ms(t.Submit), thousands(int(t.SubmitFaults)),
			ms(t.SubmitThread.CPU), ms(t.SubmitThread.Sys), thousands(int(t.SubmitThread.Faults)), t.SubmitThread.Preempted, t.Burst.Seconds(),
			thousands(t.OK), t.Errors())
	}
	for _, t := range lr.Trials {
		row(strconv.Itoa(t.Trial), t)
	}
	if len(lr.Trials) > 1 {
		row("**median**", lr.median())
	}
	for _, t := range lr.Trials {
		if t.FirstErr != "" {
			fmt.Fprintf(b, "\nFirst error of trial %d: %s\n", t.Trial, t.FirstErr)
		}
	}
	b.WriteString("\n" + lr.verdict(r.InProcess) + "\n")
}

// JSON output.

type jsonLoop struct {
	Calls               int             `json:"calls"`
	Workers             int             `json:"workers"`
	Batch               int             `json:"batch"`
	TPS                 int             `json:"tps"`
	GameWorkMs          float64         `json:"game_work_ms"`
	SubmitTick          int             `json:"submit_tick"`
	TailTicks           int             `json:"tail_ticks"`
	TargetIntervalP99Ms float64         `json:"target_interval_p99_ms"`
	TargetSkipped       int             `json:"target_skipped"`
	Trials              []jsonLoopTrial `json:"trials"`
	Median              *jsonLoopTrial  `json:"median,omitempty"`
	TrialsMeetingTarget int             `json:"trials_meeting_target"`
	TargetMet           bool            `json:"target_met"`
}

type jsonLoopTrial struct {
	Trial              int     `json:"trial,omitempty"`
	Ticks              uint64  `json:"ticks"`
	BurstIntervals     int     `json:"burst_intervals"`
	IntervalP50Ms      float64 `json:"interval_p50_ms"`
	IntervalP99Ms      float64 `json:"interval_p99_ms"`
	IntervalMaxMs      float64 `json:"interval_max_ms"`
	AfterSubmitMs      float64 `json:"interval_max_after_submit_tick_ms"`
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
	BurstS             float64 `json:"burst_s"`
	Calls              int     `json:"calls"`
	OK                 int     `json:"ok"`
	Failed             int     `json:"failed"`
	Wrong              int     `json:"wrong"`
	FirstError         string  `json:"first_error,omitempty"`
	MeetsTarget        bool    `json:"meets_target"`
}

func (t LoopTrial) toJSON() jsonLoopTrial {
	return jsonLoopTrial{
		Trial: t.Trial, Ticks: t.Ticks, BurstIntervals: t.Interval.N,
		IntervalP50Ms: ms(t.Interval.P50), IntervalP99Ms: ms(t.Interval.P99), IntervalMaxMs: ms(t.Interval.Max),
		AfterSubmitMs: ms(t.AfterSubmit),
		Skipped:       t.Skipped, Overruns: t.Overruns, TickP99Ms: ms(t.TickP99), TickMaxMs: ms(t.TickMax),
		DeliveryMs: ms(t.Delivery), Wakeups: t.Wakeups, SubmitMs: ms(t.Submit), SubmitFaults: t.SubmitFaults,
		SubmitCPUMs: ms(t.SubmitThread.CPU), SubmitSysMs: ms(t.SubmitThread.Sys),
		SubmitThreadFaults: t.SubmitThread.Faults, SubmitPreempted: t.SubmitThread.Preempted,
		BurstS: t.Burst.Seconds(),
		Calls:  t.Calls, OK: t.OK, Failed: t.Failed, Wrong: t.Wrong, FirstError: t.FirstErr,
		MeetsTarget: t.MeetsTarget(),
	}
}

func (lr *LoopResult) toJSON() *jsonLoop {
	jl := &jsonLoop{
		Calls: lr.Shape.Calls, Workers: lr.Shape.Workers, Batch: lr.Shape.Batch,
		TPS: lr.TPS, GameWorkMs: ms(lr.GameWork), SubmitTick: lr.SubmitTick, TailTicks: lr.TailTicks,
		TargetIntervalP99Ms: ms(loopTargetP99), TargetSkipped: loopTargetSkips,
		TrialsMeetingTarget: lr.meeting(), TargetMet: lr.targetMet(),
	}
	for _, t := range lr.Trials {
		jl.Trials = append(jl.Trials, t.toJSON())
	}
	if len(lr.Trials) > 1 {
		m := lr.median().toJSON()
		jl.Median = &m
	}
	return jl
}
