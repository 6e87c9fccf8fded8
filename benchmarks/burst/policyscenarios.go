package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// The policies suite's scenarios, each made of policybench's cases. A scenario is added here,
// as a function that turns its cases into a policyScenario, and in policyScenarios.

// policyScenarios returns the suite's scenarios, in running order: the full shapes, or, if
// short, the short ones the tests run.
func policyScenarios(short bool) []policyScenario {
	co, ov, he := policybench.DefaultCoalesce(), policybench.DefaultOverload(), policybench.DefaultHedge()
	if short {
		co, ov, he = co.Short(), ov.Short(), he.Short()
	}
	return []policyScenario{coalesceScenario(co), overloadScenario(ov), hedgeScenario(he)}
}

// coalesceScenario is the coalesced-reads scenario over base: policybench.CoalesceCases.
func coalesceScenario(base policybench.CoalesceConfig) policyScenario {
	s := policyScenario{
		Name: "coalesce", Title: "Coalesced reads",
		About: fmt.Sprintf("Bursts of %s identical calls, all submitted in one tick as when a crowd of players asks for the leaderboard at once, "+
			"to a server that answers each call it receives after %s, with MethodPolicy.Coalesce off, on with its default CoalesceMax, and on with a CoalesceMax of one burst; "+
			"each trial starts a server and a fresh reactor with the default lanes, runs one burst to warm up, then %d measured bursts, each ticked, woken by Ready, until its last call is delivered: "+
			"the transport calls the server received per burst, the time from a burst's first submission to its last delivery, "+
			"and the host goroutine's time in reactor.Call, Then, OnError and Tick per call, each the mean over the trial's bursts.",
			thousands(base.Burst), durationText(base.Service), base.Bursts),
		Labels: []string{"Coalesce", "CoalesceMax"},
		Figures: []policyFigure{
			{Key: "backend_calls_per_burst", Head: "backend calls per burst", Digits: 1},
			{Key: "to_last_delivery_ms", Head: "to last delivery (ms)", Digits: 2},
			{Key: "host_ns_per_call", Head: "host time per call (ns)", Digits: 0},
		},
	}
	for _, c := range policybench.CoalesceCases(base) {
		on, most := "off", "–"
		if c.Config.Coalesce {
			on, most = "on", "64 (default)"
			if c.Config.CoalesceMax > 0 {
				most = thousands(c.Config.CoalesceMax)
			}
		}
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: []string{on, most}, trial: func() ([]float64, int, error) {
			res, err := policybench.RunCoalesce(c.Config)
			return []float64{res.BackendCallsPerBurst(), ms(res.LastDeliveryPerBurst()), res.HostNsPerCall()}, res.Failed, err
		}})
	}
	return s
}

// overloadScenario is the overload scenario over base: policybench.OverloadCases.
func overloadScenario(base policybench.OverloadConfig) policyScenario {
	load := float64(base.PerTick) / base.TickEvery.Seconds()
	capacity := float64(base.Workers) / base.Service.Seconds()
	s := policyScenario{
		Name: "overload", Title: "Adaptive in-flight limit",
		About: fmt.Sprintf("A backend of %d workers behind a queue, each call waiting for a free worker in order and then holding it for %s, "+
			"driven open-loop at %.3g× its capacity, %d calls every %s for %s, each with a timeout of %s, by a reactor with fixed lanes or with Config.AdaptiveLimit's defaults, "+
			"against a backend that drops a call cancelled while it waits for a worker and against one that serves every call it received: "+
			"the calls that succeeded per second of the run and their latency from submission to callback, the calls that timed out and of them those prpc never sent, "+
			"the calls the backend served after their client had given up, the submissions reactor.Go refused with ErrOverloaded, and Stats.InFlightLimit at the end of the run.",
			base.Workers, durationText(base.Service), load/capacity, base.PerTick, durationText(base.TickEvery), durationText(base.Run), durationText(base.Timeout)),
		Labels: []string{"backend", "lanes", "in-flight limit"},
		Figures: []policyFigure{
			{Key: "goodput_per_s", Head: "goodput (calls/s)"},
			{Key: "p50_ms", Head: "p50 (ms)", Digits: 2},
			{Key: "p99_ms", Head: "p99 (ms)", Digits: 2},
			{Key: "timeouts", Head: "timeouts (calls)"},
			{Key: "never_sent", Head: "never sent (calls)"},
			{Key: "wasted", Head: "wasted (calls)"},
			{Key: "refused", Head: "refused (calls)"},
			{Key: "in_flight_limit", Head: "InFlightLimit at the end (calls)", noneIfZero: true},
		},
	}
	for _, c := range policybench.OverloadCases(base) {
		labels := []string{c.Backend(), fmt.Sprintf("%d×%d", c.LaneWorkers, c.BatchSize), c.Limit()}
		s.Cases = append(s.Cases, policyCase{Name: c.Name(), Labels: labels, trial: func() ([]float64, int, error) {
			res, err := policybench.RunOverload(c)
			return []float64{res.Goodput(), ms(res.P50), ms(res.P99), float64(res.Timeouts), float64(res.NeverSent),
				float64(res.Wasted), float64(res.Rejected), float64(res.Limit)}, int(res.Failed), err
		}})
	}
	return s
}

// hedgeScenario is the hedged-reads scenario over base: policybench.HedgeCases.
func hedgeScenario(base policybench.HedgeConfig) policyScenario {
	cases := policybench.HedgeCases(base)
	var fixed time.Duration // the fixed Delay of the case that has one
	var quantile string     // the DelayQuantile of the case that has one
	for _, c := range cases {
		switch h := c.Config.Hedge; {
		case h == nil:
		case h.DelayQuantile > 0:
			quantile = strconv.FormatFloat(h.DelayQuantile, 'g', -1, 64)
		default:
			fixed = h.Delay
		}
	}
	s := policyScenario{
		Name: "hedge", Title: "Hedged reads",
		About: fmt.Sprintf("Reads spread by round_robin over %d backends (Config.Targets), of which the first delays one call in %d of those it receives by %s and the others answer at once; "+
			"the host submits %s calls open-loop, %d every %s, each with a timeout of %s, and ticks the reactor every %s in between, so that a call's latency includes its wait for the tick that delivers it; "+
			"unhedged, with MethodPolicy.Hedge's fixed Delay of %s (half the tick interval: a hedge's answer still makes the tick that delivers the fast calls), "+
			"and with DelayQuantile %s and no floor (no hedge until 32 attempts have succeeded, the warm-up's included), HedgePolicy's defaults otherwise (two attempts, Budget 0.1); "+
			"each trial starts the backends and a fresh reactor with the default lanes and warms up until every backend has served a call: "+
			"p50 and p99 of the measured calls' latency from submission to callback, the transport calls the backends received beyond one per call as a percentage of the calls (the extra load), "+
			"and the hedges sent and those that won, MethodStats.Hedges and HedgesWon over the measured calls.",
			base.Backends, base.SlowEvery, durationText(base.SlowDelay), thousands(base.Calls), base.PerTick, durationText(base.TickEvery),
			durationText(base.Timeout), durationText(base.TickEvery), durationText(fixed), quantile),
		Labels: []string{"Hedge", "Delay", "DelayQuantile"},
		Figures: []policyFigure{
			{Key: "p50_ms", Head: "p50 (ms)", Digits: 2},
			{Key: "p99_ms", Head: "p99 (ms)", Digits: 2},
			{Key: "extra_load_pct", Head: "extra load (%)", Digits: 2},
			{Key: "hedges", Head: "hedges sent"},
			{Key: "hedges_won", Head: "hedges won"},
		},
	}
	for _, c := range cases {
		labels := []string{"off", "–", "–"}
		if h := c.Config.Hedge; h != nil {
			labels = []string{"on", durationText(h.Delay), "–"}
			if h.DelayQuantile > 0 {
				labels[1], labels[2] = durationText(h.Delay)+" (floor)", strconv.FormatFloat(h.DelayQuantile, 'g', -1, 64)
			}
		}
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: labels, trial: func() ([]float64, int, error) {
			res, err := policybench.RunHedge(c.Config)
			return []float64{ms(res.P50), ms(res.P99), 100 * res.ExtraLoad(), float64(res.Hedges), float64(res.HedgesWon)}, res.Failed, err
		}})
	}
	return s
}

// durationText formats d for prose: whole seconds as "3 s", anything else in milliseconds, as
// "20 ms".
func durationText(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%g ms", ms(d))
}
