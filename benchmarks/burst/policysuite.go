package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// The policies suite: the scenarios of prpc's call policies (benchmarks/internal/policybench),
// which the Go benchmarks BenchmarkCoalescedBurst and BenchmarkOverload run too, each case a
// few trials, interleaved, against loopback servers each trial starts in this process.
//
// A scenario is a policyScenario: its title, a sentence saying what it is, the columns that
// tell its cases apart, its figures and its cases, each of which runs one trial. The report
// renders every scenario the same way, one table each, so that a scenario added to
// policyScenarios needs nothing else: hedged reads (policybench.RunHedge: p50, p99 and the
// extra load, with and without hedging) join there once MethodPolicy.Hedge exists.
const (
	suitePolicies = "policies"
	policyTrials  = 3 // trials per case by default
)

// policyFigure is one figure a scenario measures: its JSON key, its column's heading with
// its unit, and the decimals its cells show. With noneIfZero, a case whose every trial
// measured 0 shows "–": the figure does not apply to it.
type policyFigure struct {
	Key        string `json:"key"`
	Head       string `json:"heading"`
	Digits     int    `json:"-"`
	noneIfZero bool
}

// policyScenario is one scenario of the policies suite, ready to run.
type policyScenario struct {
	Name, Title, About string
	// Labels are the headings of the columns that tell the cases apart.
	Labels  []string
	Figures []policyFigure
	Cases   []policyCase
}

// policyCase is one case of a scenario: its name (the Go benchmark's sub-benchmark), its
// cells under the scenario's Labels, and its trial, which returns its figures, in the
// scenario's Figures order, and the calls that failed otherwise than the scenario expects.
type policyCase struct {
	Name   string
	Labels []string
	trial  func() (figures []float64, errors int, err error)
}

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

// PolicyResult holds every trial of one scenario of the policies suite.
type PolicyResult struct {
	Name, Title, About string
	Labels             []string
	Figures            []policyFigure
	// Trials is the trials each case ran.
	Trials int
	Cases  []PolicyCaseResult
}

// PolicyCaseResult holds the trials of one case, in running order.
type PolicyCaseResult struct {
	Name   string
	Labels []string
	Trials []PolicyTrial
}

// PolicyTrial is one trial of one case: its figures, in its scenario's Figures order, and the
// calls that failed otherwise than the scenario expects.
type PolicyTrial struct {
	Figures []float64
	Errors  int
}

// Errors sums the errors of every trial of every case.
func (p PolicyResult) Errors() int {
	n := 0
	for _, c := range p.Cases {
		for _, t := range c.Trials {
			n += t.Errors
		}
	}
	return n
}

// figure returns the spread of figure i over the case's trials.
func (c PolicyCaseResult) figure(i int) spread {
	return spreadOf(c.Trials, func(t PolicyTrial) float64 { return t.Figures[i] })
}

// runPolicies runs every case of each scenario trials times, interleaved: trial 1 of every
// case of the scenario, then trial 2, and so on, so that drifting load on the machine does
// not favour one case. It writes a line per trial to progress.
func runPolicies(scenarios []policyScenario, trials int, progress io.Writer) ([]PolicyResult, error) {
	var out []PolicyResult
	for _, s := range scenarios {
		pr := PolicyResult{Name: s.Name, Title: s.Title, About: s.About, Labels: s.Labels, Figures: s.Figures, Trials: trials}
		for _, c := range s.Cases {
			pr.Cases = append(pr.Cases, PolicyCaseResult{Name: c.Name, Labels: c.Labels})
		}
		for t := 1; t <= trials; t++ {
			for i, c := range s.Cases {
				var tr PolicyTrial
				var err error
				asClient(suitePolicies+"/"+s.Name, func() { tr.Figures, tr.Errors, err = c.trial() })
				if err != nil {
					return nil, fmt.Errorf("%s %s trial %d: %w", s.Name, c.Name, t, err)
				}
				pr.Cases[i].Trials = append(pr.Cases[i].Trials, tr)
				var figs []string
				for j, f := range s.Figures {
					figs = append(figs, f.Head+" "+strconv.FormatFloat(tr.Figures[j], 'f', f.Digits, 64))
				}
				fmt.Fprintf(progress, "burst: %s %-8s %-29s trial %d/%d  %s  errors %d\n",
					suitePolicies, s.Name, c.Name, t, trials, strings.Join(figs, "  "), tr.Errors)
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

// policyView is what report.tmpl renders of one scenario: its title, its sentence and its
// table, a row per case with the median of each figure over the trials and, after several,
// the least and the greatest in brackets.
type policyView struct {
	Title, About string
	Table        *table
}

func (p PolicyResult) view() policyView {
	head := append(append([]string{"case"}, p.Labels...), "trials")
	align := "l" + strings.Repeat("l", len(p.Labels)) + "r"
	for _, f := range p.Figures {
		head = append(head, f.Head)
		align += "r"
	}
	tb := newTable(align+"r", append(head, "errors")...)
	for _, c := range p.Cases {
		cells := append(append([]string{c.Name}, c.Labels...), strconv.Itoa(len(c.Trials)))
		errors := 0
		for _, t := range c.Trials {
			errors += t.Errors
		}
		for i, f := range p.Figures {
			cells = append(cells, f.cell(c.figure(i), len(c.Trials)))
		}
		tb.add(append(cells, strconv.Itoa(errors))...)
	}
	return policyView{Title: p.Title, About: p.About, Table: tb}
}

// durationText formats d for prose: whole seconds as "3 s", anything else in milliseconds, as
// "20 ms".
func durationText(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%g ms", ms(d))
}

// cell formats the spread s of the figure over n trials: its median and, over several, the
// least and the greatest in brackets, to f.Digits decimals, a whole figure with commas.
func (f policyFigure) cell(s spread, n int) string {
	if n == 0 || (f.noneIfZero && s.min == 0 && s.max == 0) {
		return "–"
	}
	num := func(v float64) string {
		if f.Digits == 0 {
			return thousands(int(v + 0.5))
		}
		return strconv.FormatFloat(v, 'f', f.Digits, 64)
	}
	if n < 2 {
		return num(s.median)
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.median), num(s.min), num(s.max))
}
