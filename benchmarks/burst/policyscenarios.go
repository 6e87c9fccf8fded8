package main

import (
	"fmt"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// The policies suite's scenarios, each made of policybench's cases. A scenario is added here:
// hedged reads, once MethodPolicy.Hedge exists, as a hedgeScenario over policybench.HedgeConfig
// whose cases run policybench.RunHedge unhedged and hedged, with the figures p50, p99 and the
// extra load (HedgeResult.ExtraLoad).

// policyScenarios returns the suite's scenarios, in running order: the full shapes, or, if
// short, the short ones the tests run.
func policyScenarios(short bool) []policyScenario {
	co, ov := policybench.DefaultCoalesce(), policybench.DefaultOverload()
	if short {
		co, ov = co.Short(), ov.Short()
	}
	return []policyScenario{coalesceScenario(co), overloadScenario(ov)}
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

// durationText formats d for prose: whole seconds as "3 s", anything else in milliseconds, as
// "20 ms".
func durationText(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%g ms", ms(d))
}
