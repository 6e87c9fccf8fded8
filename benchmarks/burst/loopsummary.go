package main

import (
	"slices"
	"time"
)

// The loop suite's comparison of each prpc client with the pool, per burst size, and their
// targets.

// loopRatios are one prpc client's figures divided by the pool's in the same trial number of
// the loop suite; 0 where the pool's figure is 0 (unknown).
type loopRatios struct {
	// Client is the prpc client, Trial the trial number.
	Client string `json:"client"`
	Trial  int    `json:"trial"`
	// Submit is the wall time of submitting the burst in its tick; SubmitCPU the CPU time of
	// the loop's thread over it.
	Submit    float64 `json:"submit"`
	SubmitCPU float64 `json:"submit_thread_cpu"`
	// ToLastDelivery is the time from the start of the submitting tick to the last outcome.
	ToLastDelivery float64 `json:"to_last_delivery"`
}

// pair returns the trials numbered t of the prpc client form and of the pool, if both ran.
func (sz LoopSize) pair(form string, t int) (p, b LoopTrial, ok bool) {
	return pairOf(sz.Trials, form, t)
}

// trialOf implements clientTrial.
func (t LoopTrial) trialOf() (int, string) { return t.Trial, t.Client }

func loopRatioOf(p, b LoopTrial) loopRatios {
	return loopRatios{
		Client:         p.Client,
		Trial:          p.Trial,
		Submit:         div(float64(p.Submit), float64(b.Submit)),
		SubmitCPU:      div(float64(p.SubmitThread.CPU), float64(b.SubmitThread.CPU)),
		ToLastDelivery: div(float64(p.Burst), float64(b.Burst)),
	}
}

// trialRatios returns the ratios of the prpc client form in every trial in which it and the
// pool both ran, by trial number.
func (sz LoopSize) trialRatios(form string) []loopRatios {
	var rs []loopRatios
	for t := 1; t <= sz.Shape.Trials; t++ {
		if p, b, ok := sz.pair(form, t); ok {
			rs = append(rs, loopRatioOf(p, b))
		}
	}
	return rs
}

// forms returns the prpc clients that ran at least one trial of sz, in prpcForms order.
func (sz LoopSize) forms() []string {
	var fs []string
	for _, f := range prpcForms {
		if len(sz.clientTrials(f)) > 0 {
			fs = append(fs, f)
		}
	}
	return fs
}

// reportedClients returns the clients whose median rows the loop suite's table has, those that
// ran trials of sz: the prpc forms in prpcForms order, the metrics client, then the pool.
func (sz LoopSize) reportedClients() []string {
	names := sz.forms()
	if ranMetrics(sz.Trials) {
		names = append(names, clientGoMetrics)
	}
	return append(names, clientBaseline)
}

// clientTrials returns the trials of one client, in order.
func (sz LoopSize) clientTrials(name string) []LoopTrial {
	var ts []LoopTrial
	for _, t := range sz.Trials {
		if t.Client == name {
			ts = append(ts, t)
		}
	}
	return ts
}

// loopFigures are one client's figures over its trials of one burst size.
type loopFigures struct {
	Trials int
	// Submit, SubmitCPU and ToLastDelivery are spreads in milliseconds.
	Submit, SubmitCPU, ToLastDelivery spread
	// Longest is the longest tick interval of any trial's burst window.
	Longest time.Duration
	// Late is the number of late tick intervals (over loopLate), summed over the trials;
	// Skipped the skipped ticks, summed.
	Late    int
	Skipped uint64
}

func figuresOf(ts []LoopTrial) loopFigures {
	f := loopFigures{
		Trials:         len(ts),
		Submit:         spreadOf(ts, func(t LoopTrial) float64 { return ms(t.Submit) }),
		SubmitCPU:      spreadOf(ts, func(t LoopTrial) float64 { return ms(t.SubmitThread.CPU) }),
		ToLastDelivery: spreadOf(ts, func(t LoopTrial) float64 { return ms(t.Burst) }),
	}
	for _, t := range ts {
		f.Longest = max(f.Longest, t.Interval.Max)
		f.Late += t.Interval.Late
		f.Skipped += t.Skipped
	}
	return f
}

// loopComparison is one prpc client against the pool over the trials of one burst size.
type loopComparison struct {
	Calls int
	// Client is the prpc client; PRPC its figures, Pool the pool's.
	Client     string
	PRPC, Pool loopFigures
	// Paired is the number of trial numbers in which both clients ran; the spreads are of
	// their ratios.
	Paired                            int
	Submit, SubmitCPU, ToLastDelivery spread
}

// compare returns the prpc client form against the pool over sz.
func (sz LoopSize) compare(form string) loopComparison {
	rs := sz.trialRatios(form)
	return loopComparison{
		Calls:          sz.Shape.Calls,
		Client:         form,
		PRPC:           figuresOf(sz.clientTrials(form)),
		Pool:           figuresOf(sz.clientTrials(clientBaseline)),
		Paired:         len(rs),
		Submit:         spreadOf(rs, func(r loopRatios) float64 { return r.Submit }),
		SubmitCPU:      spreadOf(rs, func(r loopRatios) float64 { return r.SubmitCPU }),
		ToLastDelivery: spreadOf(rs, func(r loopRatios) float64 { return r.ToLastDelivery }),
	}
}

// loopTarget is one of the loop suite's targets for one prpc client and burst size, and
// whether the client met it.
type loopTarget struct {
	Figure string `json:"figure"`
	Target string `json:"target"`
	// Known is false when the run cannot tell: one client did not run, a ratio is unknown, or
	// the form has no target at this burst size.
	Known bool `json:"known"`
	Met   bool `json:"met"`
	// Aim is a goal within the target, if it has one, and AimMet whether it was reached.
	Aim    string `json:"aim,omitempty"`
	AimMet bool   `json:"aim_met,omitempty"`
}

// Names of the loop suite's figures, in the report and its JSON.
const (
	figSubmitCPU = "loop-thread CPU for the submission (judged)"
	figSubmit    = "submission wall time"
	figDelivery  = "submitting tick to last delivery"
	figLate      = "late ticks (> 52 ms), all trials"
	figLongest   = "longest tick interval, all trials"
)

// targets returns the targets of c's prpc client under the bounds tg (targets.go), in this
// order: the median of its loop-thread CPU ratios at most tg.cpu, the median of its ratios of
// the time to the last delivery at most tg.DeliveryMax, and its late ticks no more than the
// pool's. Ratios are judged as the reports show them, to two decimals.
func (c loopComparison) targets(tg loopTargets) []loopTarget {
	both := c.PRPC.Trials > 0 && c.Pool.Trials > 0
	ratio := func(fig string, s spread, bound, aim float64, ok bool) loopTarget {
		t := loopTarget{Figure: fig, Target: boundText(bound, 0)}
		if !ok {
			t.Target = "none at " + thousands(c.Calls) + " calls"
		}
		if aim > 0 {
			t.Aim = "≤ " + trimRatio(aim) + "×"
		}
		t.Known = ok && c.Paired > 0 && s.median > 0
		t.Met = t.Known && shown(s.median) <= bound
		t.AimMet = t.Known && aim > 0 && shown(s.median) <= aim
		return t
	}
	bound, aim, ok := tg.cpu(c.Client, c.Calls)
	return []loopTarget{
		ratio(figSubmitCPU, c.SubmitCPU, bound, aim, ok),
		ratio(figDelivery, c.ToLastDelivery, tg.DeliveryMax, 0, true),
		{Figure: figLate, Target: "≤ the pool's", Known: both, Met: both && c.PRPC.Late <= c.Pool.Late},
	}
}

// verdictCell formats whether t was met, and its aim if it has one, for a table.
func (t loopTarget) verdictCell() string {
	switch {
	case !t.Known:
		return "–"
	case !t.Met:
		return "**not met**"
	case t.Aim == "":
		return "met"
	case t.AimMet:
		return "met (aim met)"
	default:
		return "met (aim missed)"
	}
}

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
