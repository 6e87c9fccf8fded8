package main

import (
	"fmt"
	"time"
)

// The loop suite's comparison of prpc with the pool, per burst size, and its targets.

// loopRatios are prpc's figures divided by the pool's in one trial of the loop suite; 0 where
// the pool's figure is 0 (unknown).
type loopRatios struct {
	// Submit is the wall time of submitting the burst in its tick; SubmitCPU the CPU time of
	// the loop's thread over it.
	Submit    float64 `json:"submit"`
	SubmitCPU float64 `json:"submit_thread_cpu"`
	// ToLastDelivery is the time from the start of the submitting tick to the last outcome.
	ToLastDelivery float64 `json:"to_last_delivery"`
}

// pair returns the trials of prpc and of the pool numbered t, if both ran.
func (sz LoopSize) pair(t int) (p, b LoopTrial, ok bool) { return pairOf(sz.Trials, t) }

// trialOf implements clientTrial.
func (t LoopTrial) trialOf() (int, string) { return t.Trial, t.Client }

func loopRatioOf(p, b LoopTrial) loopRatios {
	return loopRatios{
		Submit:         div(float64(p.Submit), float64(b.Submit)),
		SubmitCPU:      div(float64(p.SubmitThread.CPU), float64(b.SubmitThread.CPU)),
		ToLastDelivery: div(float64(p.Burst), float64(b.Burst)),
	}
}

// trialRatios returns the ratios of every trial in which both clients ran.
func (sz LoopSize) trialRatios() []loopRatios {
	var rs []loopRatios
	for t := 1; t <= sz.Shape.Trials; t++ {
		if p, b, ok := sz.pair(t); ok {
			rs = append(rs, loopRatioOf(p, b))
		}
	}
	return rs
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

// loopComparison is prpc against the pool over the trials of one burst size.
type loopComparison struct {
	Calls      int
	PRPC, Pool loopFigures
	// Paired is the number of trials in which both clients ran; the spreads are of their
	// ratios.
	Paired                            int
	Submit, SubmitCPU, ToLastDelivery spread
}

func (sz LoopSize) compare() loopComparison {
	rs := sz.trialRatios()
	return loopComparison{
		Calls:          sz.Shape.Calls,
		PRPC:           figuresOf(sz.clientTrials(clientPRPC)),
		Pool:           figuresOf(sz.clientTrials(clientBaseline)),
		Paired:         len(rs),
		Submit:         spreadOf(rs, func(r loopRatios) float64 { return r.Submit }),
		SubmitCPU:      spreadOf(rs, func(r loopRatios) float64 { return r.SubmitCPU }),
		ToLastDelivery: spreadOf(rs, func(r loopRatios) float64 { return r.ToLastDelivery }),
	}
}

// loopTarget is one of the loop suite's targets for one burst size, and whether prpc met it.
type loopTarget struct {
	Figure string `json:"figure"`
	Target string `json:"target"`
	// Known is false when the run cannot tell: one client did not run, or a ratio is
	// unknown.
	Known bool `json:"known"`
	Met   bool `json:"met"`
}

// Names of the loop suite's figures, in the report and its JSON.
const (
	figSubmit    = "submit the burst in its tick"
	figSubmitCPU = "submit: the loop thread's CPU time"
	figLongest   = "longest tick interval, all trials"
	figLate      = "late ticks (> 52 ms), all trials"
	figDelivery  = "submitting tick to last delivery"
)

// targets returns the loop suite's targets: the medians of the submission and delivery
// ratios at most loopRatioTarget, prpc's longest tick interval at most the pool's plus
// loopLongestSlack, and prpc's late ticks no more than the pool's.
func (c loopComparison) targets() []loopTarget {
	both := c.PRPC.Trials > 0 && c.Pool.Trials > 0
	ratio := func(fig string, s spread) loopTarget {
		return loopTarget{Figure: fig, Target: fmt.Sprintf("≤ %.1f×", loopRatioTarget),
			Known: c.Paired > 0 && s.median > 0, Met: c.Paired > 0 && s.median > 0 && s.median <= loopRatioTarget}
	}
	return []loopTarget{
		ratio(figSubmit, c.Submit),
		{Figure: figLongest, Target: fmt.Sprintf("≤ the pool's + %g ms", ms(loopLongestSlack)),
			Known: both, Met: both && c.PRPC.Longest <= c.Pool.Longest+loopLongestSlack},
		{Figure: figLate, Target: "≤ the pool's", Known: both, Met: both && c.PRPC.Late <= c.Pool.Late},
		ratio(figDelivery, c.ToLastDelivery),
	}
}

// verdictCell formats whether t was met, for a table.
func (t loopTarget) verdictCell() string {
	switch {
	case !t.Known:
		return "–"
	case t.Met:
		return "met"
	default:
		return "**not met**"
	}
}
