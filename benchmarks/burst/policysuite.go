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
// tell its cases apart, its figures, its series (a value per point, such as the goodput in
// each second) if any, and its cases, each of which runs one trial. The report renders every
// scenario the same way, one table each and one more per series, so that a scenario added
// to policyScenarios (policyscenarios.go) needs nothing else.
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

// policySeries is a series of values a scenario measures in each trial, a value per point,
// such as the goodput in each second of a run: its JSON key, the sentence that introduces
// its table, the headings of its points, and the decimals its cells show.
type policySeries struct {
	Key    string   `json:"key"`
	Head   string   `json:"heading"`
	Points []string `json:"points"`
	Digits int      `json:"-"`
}

// policyScenario is one scenario of the policies suite, ready to run.
type policyScenario struct {
	Name, Title, About string
	// Labels are the headings of the columns that tell the cases apart.
	Labels  []string
	Figures []policyFigure
	// Series are the series the scenario measures besides its figures, if any: each renders
	// as a table of its own, below the scenario's.
	Series []policySeries
	Cases  []policyCase
	// apart, if set, returns the scenario with its server at addr, in a process of its own
	// (startStreamServer): how a pinned placement runs it, its server pinned to another CPU
	// than the client. A scenario without it starts its servers in the client's process, where
	// pinning cannot separate them.
	apart func(addr string) policyScenario
}

// policyCase is one case of a scenario: its name (the Go benchmark's sub-benchmark), its
// cells under the scenario's Labels, and its trial, which returns its figures, in the
// scenario's Figures order, its series, in its Series order, and the calls that failed
// otherwise than the scenario expects.
type policyCase struct {
	Name   string
	Labels []string
	trial  func() (PolicyTrial, error)
}

// PolicyResult holds every trial of one scenario of the policies suite.
type PolicyResult struct {
	Name, Title, About string
	Labels             []string
	Figures            []policyFigure
	Series             []policySeries
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

// PolicyTrial is one trial of one case: its figures, in its scenario's Figures order, its
// series, in its scenario's Series order, each a value per point, and the calls that failed
// otherwise than the scenario expects.
type PolicyTrial struct {
	Figures []float64
	Series  [][]float64
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

// seriesMedian returns the median of each point of series i over the case's trials.
func (c PolicyCaseResult) seriesMedian(i int) []float64 {
	if len(c.Trials) == 0 {
		return nil
	}
	out := make([]float64, len(c.Trials[0].Series[i]))
	for p := range out {
		out[p] = spreadOf(c.Trials, func(t PolicyTrial) float64 { return t.Series[i][p] }).median
	}
	return out
}

// runPolicies runs every case of each scenario trials times, interleaved: trial 1 of every
// case of the scenario, then trial 2, and so on, so that drifting load on the machine does
// not favour one case. It writes a line per trial to progress.
func runPolicies(scenarios []policyScenario, trials int, progress io.Writer) ([]PolicyResult, error) {
	var out []PolicyResult
	for _, s := range scenarios {
		pr := PolicyResult{Name: s.Name, Title: s.Title, About: s.About, Labels: s.Labels, Figures: s.Figures, Series: s.Series, Trials: trials}
		for _, c := range s.Cases {
			pr.Cases = append(pr.Cases, PolicyCaseResult{Name: c.Name, Labels: c.Labels})
		}
		for t := 1; t <= trials; t++ {
			for i, c := range s.Cases {
				var tr PolicyTrial
				var err error
				asClient(suitePolicies+"/"+s.Name, func() { tr, err = c.trial() })
				if err == nil {
					err = s.check(tr)
				}
				if err != nil {
					return nil, fmt.Errorf("%s %s trial %d: %w", s.Name, c.Name, t, err)
				}
				pr.Cases[i].Trials = append(pr.Cases[i].Trials, tr)
				var figs []string
				for j, f := range s.Figures {
					figs = append(figs, f.Head+" "+strconv.FormatFloat(tr.Figures[j], 'f', f.Digits, 64))
				}
				for j, sr := range s.Series {
					var vs []string
					for _, v := range tr.Series[j] {
						vs = append(vs, strconv.FormatFloat(v, 'f', sr.Digits, 64))
					}
					figs = append(figs, sr.Key+" "+strings.Join(vs, " "))
				}
				fmt.Fprintf(progress, "burst: %s %-15s %-29s trial %d/%d  %s  errors %d\n",
					suitePolicies, s.Name, c.Name, t, trials, strings.Join(figs, "  "), tr.Errors)
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

// check reports whether tr holds a figure for each of s's Figures and a value for each point
// of each of its Series.
func (s policyScenario) check(tr PolicyTrial) error {
	if len(tr.Figures) != len(s.Figures) || len(tr.Series) != len(s.Series) {
		return fmt.Errorf("%d figures and %d series, want %d and %d", len(tr.Figures), len(tr.Series), len(s.Figures), len(s.Series))
	}
	for i, sr := range s.Series {
		if len(tr.Series[i]) != len(sr.Points) {
			return fmt.Errorf("series %s: %d values, want one per point, %d", sr.Key, len(tr.Series[i]), len(sr.Points))
		}
	}
	return nil
}

// policyView is what report.tmpl renders of one scenario: its title, its sentence and its
// table, a row per case with the median of each figure over the trials and, after several,
// the least and the greatest in brackets; then a table per series, each introduced by its
// sentence.
type policyView struct {
	Title, About string
	Table        *table
	Series       []seriesView
}

// seriesView is a series' table: its sentence, and a row per case with the median of each
// point over the trials.
type seriesView struct {
	Head  string
	Table *table
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
	v := policyView{Title: p.Title, About: p.About, Table: tb}
	for i, sr := range p.Series {
		st := newTable("l"+strings.Repeat("l", len(p.Labels))+strings.Repeat("r", len(sr.Points)), append(append([]string{"case"}, p.Labels...), sr.Points...)...)
		for _, c := range p.Cases {
			cells := append([]string{c.Name}, c.Labels...)
			medians := c.seriesMedian(i)
			for p := range sr.Points {
				if p >= len(medians) {
					cells = append(cells, "–") // no trials
					continue
				}
				cells = append(cells, policyFigure{Digits: sr.Digits}.cell(spread{median: medians[p]}, 1))
			}
			st.add(cells...)
		}
		v.Series = append(v.Series, seriesView{Head: sr.Head + " Each cell: the median over the case's trials.", Table: st})
	}
	return v
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
