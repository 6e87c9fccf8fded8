package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The policies suite: the scenarios of prpc's call policies (benchmarks/internal/policybench),
// which the Go benchmarks BenchmarkCoalescedBurst, BenchmarkCoalescedSpread, BenchmarkOverload,
// BenchmarkHedgedReads and BenchmarkHedgedFailover run too, each case a few trials,
// interleaved, against loopback servers each trial starts in this process.
//
// A scenario is a policyScenario: its title, a sentence saying what it is, the columns that
// tell its cases apart, its figures and its cases, each of which runs one trial. The report
// renders every scenario the same way, one table each, so that a scenario added to
// policyScenarios (policyscenarios.go) needs nothing else.
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
				fmt.Fprintf(progress, "burst: %s %-15s %-29s trial %d/%d  %s  errors %d\n",
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
