package main

// The report in Markdown: report.tmpl over a view of each report, whose tables are prepared
// here, cell by cell.

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// Run is the reports of one run of the suite, one per placement (-placements), in the order
// they ran.
type Run []*Report

// Errors returns the calls that failed or were answered wrongly over all the run's reports.
func (run Run) Errors() int {
	n := 0
	for _, r := range run {
		n += r.Errors()
	}
	return n
}

//go:embed report.tmpl
var reportTemplate string

var tmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"row": row, "join": strings.Join, "backendText": backendText, "formText": formText,
	"msg": func(d time.Duration) string { return fmt.Sprintf("%g", ms(d)) },
}).Parse(reportTemplate))

// WriteMarkdown writes the report as Markdown: the command, the machine, the summary of the
// ratios, then the burst suites' notes and tables and the loop suite's.
func (r *Report) WriteMarkdown(w io.Writer) error { return Run{r}.WriteMarkdown(w) }

// WriteDocument writes the report as a complete Markdown document, such as
// benchmarks/README.md: a title and a notice naming the command that generated it, what
// WriteMarkdown writes with links to its charts, and how to reproduce it.
func (r *Report) WriteDocument(w io.Writer) error { return Run{r}.WriteDocument(w) }

// WriteMarkdown writes the run's reports as Markdown: the command, then each report, under a
// heading naming its placement when there are several, its own headings a level deeper.
func (run Run) WriteMarkdown(w io.Writer) error {
	body, err := run.markdown(false)
	if err == nil {
		_, err = io.WriteString(w, body)
	}
	return err
}

// WriteDocument writes the run's reports as one complete Markdown document, as WriteDocument
// of Report does for one. It links the charts of each report (Report.charts) in the chart
// directory beside the document, which writeDocument writes.
func (run Run) WriteDocument(w io.Writer) error {
	body, err := run.markdown(true)
	if err != nil {
		return err
	}
	return tmpl.ExecuteTemplate(w, "document", map[string]any{"Command": run[0].Command, "Body": body, "PoliciesOnly": run.policiesOnly(), "ScrapeEvery": scrapeEvery})
}

// policiesOnly reports whether every report of the run holds the policies suite alone.
func (run Run) policiesOnly() bool {
	for _, r := range run {
		if len(r.Suites) > 0 || r.Loop != nil || len(r.Policies) == 0 {
			return false
		}
	}
	return true
}

// markdown renders the run's reports, with links to their charts if charts.
func (run Run) markdown(charts bool) (string, error) {
	b := strings.Builder{}
	fmt.Fprintf(&b, "Command: `%s`\n", run[0].Command)
	for _, r := range run {
		v := r.view()
		if charts {
			v.Charts = r.charts()
		}
		var body strings.Builder
		if err := tmpl.ExecuteTemplate(&body, "report", v); err != nil {
			return "", err
		}
		if len(run) == 1 {
			b.WriteString(body.String())
			continue
		}
		title, _ := r.placement()
		fmt.Fprintf(&b, "\n## %s\n", title)
		for line := range strings.Lines(body.String()) {
			if strings.HasPrefix(line, "#") {
				b.WriteString("#")
			}
			b.WriteString(line)
		}
	}
	return b.String(), nil
}

// writeDocument writes run's charts to the chart directory beside path, then its document to
// path, each file replaced, if it exists, only once it is whole: through a temporary file in
// the same directory, renamed over it.
func writeDocument(path string, run Run) error {
	var doc bytes.Buffer
	err := run.WriteDocument(&doc)
	if err == nil {
		err = run.writeCharts(filepath.Dir(path))
	}
	if err == nil {
		err = writeFileAtomic(path, doc.Bytes())
	}
	if err != nil {
		return fmt.Errorf("-markdown %s: %w", path, err)
	}
	return nil
}

// table is a Markdown table: its header, each column's alignment and its rows of cells.
type table struct {
	Head, Align []string
	Rows        [][]string
}

// newTable returns a table with the header head, whose columns align as align says, a letter
// a column: l left, c centre, r right.
func newTable(align string, head ...string) *table {
	t := &table{Head: head}
	for _, a := range align {
		t.Align = append(t.Align, map[rune]string{'l': ":--", 'c': ":-:", 'r': "---:"}[a])
	}
	return t
}

func (t *table) add(cells ...string) { t.Rows = append(t.Rows, cells) }

// row formats the cells as a row of a Markdown table.
func row(cells []string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cells {
		if c != "" {
			b.WriteString(" " + c)
		}
		b.WriteString(" |")
	}
	return b.String() + "\n"
}

// reportView is what report.tmpl renders of one report.
type reportView struct {
	*Report
	RunLine, Clause, Forms string
	PeakReset              bool
	Summary                *table
	SuiteViews             []suiteView
	LoopView               *loopView
	PolicyViews            []policyView
	// Charts are the charts the document links, none in the Markdown on stdout.
	Charts reportCharts

	// Metrics compares prpc-go-metrics with prpc-go, nil if they never ran the same trial;
	// ScrapeEvery is how often its scraper reads the adapters.
	Metrics                    *table
	ScrapeEvery                time.Duration
	MetricsClient, MetricsBase string
}

type suiteView struct {
	SuiteResult
	Table *table
}

type loopView struct {
	*LoopResult
	Late                 time.Duration
	Count                string
	AllForms             []string
	TargetTable, Summary *table
	Trials               *table
	Errors               []string

	// Metrics is true if prpc-go-metrics ran.
	Metrics bool
}

func (r *Report) view() reportView {
	v := reportView{Report: r, PeakReset: true, Forms: r.burstFormText(), Metrics: r.metricsTable(), ScrapeEvery: scrapeEvery,
		MetricsClient: clientGoMetrics, MetricsBase: clientGo}
	_, v.Clause = r.placement()
	if !r.Started.IsZero() {
		v.RunLine = fmt.Sprintf("started %s, took %v", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second))
	}
	v.Summary = newTable("llrclrrrrr", "suite", "backend", "calls", "W×B", "prpc form", "trials", "calls/s", "client CPU/call", "p50", "p99")
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			forms := sh.prpcClients()
			if len(forms) == 0 {
				forms = []string{""} // the shape's row, without ratios
			}
			for _, f := range forms {
				rs := sh.trialRatios(f)
				cell := func(f func(ratios) float64) string { return ratioCell(spreadOf(rs, f), len(rs)) }
				v.Summary.add(s.Name, backendText(s.Backend), thousands(sh.Shape.Calls), wxb(sh.Shape), cmp.Or(f, "–"), strconv.Itoa(sh.Shape.Trials),
					cell(func(r ratios) float64 { return r.Throughput }), cell(func(r ratios) float64 { return r.CPUPerCall }),
					cell(func(r ratios) float64 { return r.P50 }), cell(func(r ratios) float64 { return r.P99 }))
			}
			for _, t := range sh.Trials {
				v.PeakReset = v.PeakReset && t.PeakReset
			}
		}
		v.SuiteViews = append(v.SuiteViews, suiteView{s, r.suiteTable(s)})
	}
	if r.Loop != nil {
		v.LoopView = r.Loop.view()
	}
	for _, p := range r.Policies {
		v.PolicyViews = append(v.PolicyViews, p.view())
	}
	return v
}

func wxb(s Shape) string { return fmt.Sprintf("%d×%d", s.Workers, s.Batch) }

// suiteTable is the table of every trial of the burst suite s, and the medians.
func (r *Report) suiteTable(s SuiteResult) *table {
	backendCol := !r.InProcess && slices.ContainsFunc(s.Shapes, func(sh ShapeResult) bool {
		return slices.ContainsFunc(sh.Trials, func(t TrialResult) bool { return t.BackendCPU >= 0 })
	})
	head := []string{"calls", "W×B", "trial", "client", "total", "calls/s", "avg", "p50", "p95", "p99", "CPU/call"}
	align := "rcclrrrrrrr"
	if backendCol {
		head, align = append(head, "backend CPU/call"), align+"r"
	}
	tb := newTable(align+"rrrrrrr", append(head, "allocs/call", "faults/call", "peak RSS", "errors", "calls/s ratio", "CPU/call ratio", "p99 ratio")...)
	for _, sh := range s.Shapes {
		add := func(trial string, t TrialResult, rs *ratios) {
			c := []string{thousands(sh.Shape.Calls), wxb(sh.Shape), trial, t.Client,
				fmt.Sprintf("%.3f s", t.Total.Seconds()), thousands(int(t.Throughput() + 0.5)),
				msText(t.Lat.Avg), msText(t.Lat.P50), msText(t.Lat.P95), msText(t.Lat.P99), fmt.Sprintf("%.1f µs", us(t.CPUPerCall()))}
			if backendCol {
				c = append(c, "–")
				if d := t.BackendCPUPerCall(); d >= 0 {
					c[len(c)-1] = fmt.Sprintf("%.1f µs", us(d))
				}
			}
			c = append(c, fmt.Sprintf("%.1f", t.AllocsPerCall()), fmt.Sprintf("%.1f", t.FaultsPerCall()), mib(t.PeakRSS), strconv.Itoa(t.Errors()))
			if rs != nil {
				c = append(c, times(rs.Throughput), times(rs.CPUPerCall), times(rs.P99))
			} else {
				c = append(c, "", "", "")
			}
			tb.add(c...)
		}
		for t := 1; t <= sh.Shape.Trials; t++ {
			for _, tr := range sh.Trials {
				if tr.Trial != t {
					continue
				}
				var rs *ratios
				if p, base, both := sh.pair(tr.Client, t); both && isPRPC(tr.Client) {
					x := ratioOf(p, base)
					rs = &x
				}
				add(strconv.Itoa(t), tr, rs)
			}
		}
		if sh.Shape.Trials > 1 {
			for _, name := range sh.reportedClients() {
				if mt, ok := sh.medianTrial(name); ok {
					var rs *ratios
					if trs := sh.trialRatios(name); isPRPC(name) && len(trs) > 0 {
						x := medianRatios(trs)
						rs = &x
					}
					add("**median**", mt, rs)
				}
			}
		}
	}
	return tb
}

// burstFormText says how each of the burst suites' prpc clients submits its calls, and which
// is the form earlier reports measured.
func (r *Report) burstFormText() string {
	var forms, parts []string
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			forms = append(forms, sh.prpcClients()...)
		}
	}
	for _, f := range prpcForms {
		if !slices.Contains(forms, f) {
			continue
		}
		part := fmt.Sprintf("client %s, every call submitted by %s", f, formText(f))
		if f == clientThen {
			part += ", the form earlier reports measured, so that these figures compare with theirs"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	text := "prpc: " + strings.Join(parts, "; ") + " (-clients chooses the forms)."
	if slices.ContainsFunc(r.Suites, func(s SuiteResult) bool {
		return slices.ContainsFunc(s.Shapes, func(sh ShapeResult) bool { return ranMetrics(sh.Trials) })
	}) {
		text += " Client " + clientGoMetrics + ": " + clientGo + " with both metrics adapters registered and scraped; the suites' tables give its ratios to the pool, the summary's table of the metrics adapters its ratios to " + clientGo + "."
	}
	return text
}

// reportedClients returns the clients whose median rows the suite's table has, those that
// ran trials of s: the prpc forms in prpcForms order, the metrics client, then the baseline.
func (s ShapeResult) reportedClients() []string {
	names := s.prpcClients()
	if ranMetrics(s.Trials) {
		names = append(names, clientGoMetrics)
	}
	return append(names, clientBaseline)
}

// view prepares the loop suite's part of the summary (the targets of each prpc client that
// ran, then per burst size and figure the pool's figure and each client's ratio to it, or its
// own count, with the verdict of its target) and its table of every trial.
func (lr *LoopResult) view() *loopView {
	v := &loopView{LoopResult: lr, Late: loopLate, Count: "one trial", AllForms: prpcForms,
		Metrics: slices.ContainsFunc(lr.Sizes, func(sz LoopSize) bool { return ranMetrics(sz.Trials) })}
	trials := 0
	for _, sz := range lr.Sizes {
		trials = max(trials, sz.Shape.Trials)
	}
	if trials > 1 {
		v.Count = fmt.Sprintf("%d interleaved trials", trials)
	}
	forms := lr.forms()
	if len(forms) > 0 {
		v.TargetTable = newTable("lllll", "client", "form", figSubmitCPU, figDelivery, figLate)
		for _, f := range forms {
			v.TargetTable.add(f, formText(f), lr.Targets.cpuText(f), boundText(lr.Targets.DeliveryMax, 0), "≤ the pool's")
		}
	}
	v.Summary = newTable("rlr"+strings.Repeat("rl", len(forms)), "calls", "figure", poolName)
	for _, f := range forms {
		v.Summary.Head = append(v.Summary.Head, f, "verdict")
	}
	own := func(f loopFigures, s string) string {
		if f.Trials == 0 {
			return "–"
		}
		return s
	}
	for _, sz := range lr.Sizes {
		pool := figuresOf(sz.clientTrials(clientBaseline))
		cs := make([]loopComparison, len(forms))
		for i, f := range forms {
			cs[i] = sz.compare(f)
		}
		add := func(fig, poolCell string, cell func(loopComparison) string) {
			c := []string{thousands(sz.Shape.Calls), fig, poolCell}
			for _, x := range cs {
				verdict := "–"
				for _, t := range x.targets(lr.Targets) {
					if t.Figure == fig {
						verdict = t.verdictCell()
					}
				}
				c = append(c, cell(x), verdict)
			}
			v.Summary.add(c...)
		}
		msCell := func(s spread) string { return own(pool, spreadText(s, pool.Trials, " ms")) }
		add(figSubmitCPU, msCell(pool.SubmitCPU), func(c loopComparison) string { return ratioCell(c.SubmitCPU, c.Paired) })
		add(figSubmit, msCell(pool.Submit), func(c loopComparison) string { return ratioCell(c.Submit, c.Paired) })
		add(figDelivery, msCell(pool.ToLastDelivery), func(c loopComparison) string { return ratioCell(c.ToLastDelivery, c.Paired) })
		late := func(f loopFigures) string { return own(f, strconv.Itoa(f.Late)) }
		add(figLate, late(pool), func(c loopComparison) string { return late(c.PRPC) })
		longest := func(f loopFigures) string { return own(f, msText(f.Longest)) }
		add(figLongest, longest(pool), func(c loopComparison) string { return longest(c.PRPC) })
	}
	v.Trials = newTable("rccl"+strings.Repeat("r", 25), "calls", "workers", "trial", "client", "ticks", "burst intervals",
		"interval p50", "interval p99", "interval max", "max after submit tick", "late", "skipped", "overruns", "tick p99", "tick max",
		"delivery", "wake-ups", "submit", "submit faults", "submit CPU", "submit sys", "submit thread faults", "submit preempted",
		"to last delivery", "calls ok", "errors", "submit ratio", "submit CPU ratio", "to last delivery ratio")
	for _, sz := range lr.Sizes {
		s := sz.Shape
		add := func(trial string, t LoopTrial, rs *loopRatios) {
			workers := wxb(s)
			if t.Client == clientBaseline {
				workers = strconv.Itoa(s.Workers * s.Batch)
			}
			n := func(x uint64) string { return strconv.FormatUint(x, 10) }
			c := []string{thousands(s.Calls), workers, trial, t.Client, n(t.Ticks), strconv.Itoa(t.Interval.N),
				msText(t.Interval.P50), msText(t.Interval.P99), msText(t.Interval.Max), msText(t.AfterSubmit),
				strconv.Itoa(t.Interval.Late), n(t.Skipped), n(t.Overruns), msText(t.TickP99), msText(t.TickMax),
				fmt.Sprintf("%.1f ms", ms(t.Delivery)), n(t.Wakeups), msText(t.Submit), thousands(int(t.SubmitFaults)),
				msText(t.SubmitThread.CPU), msText(t.SubmitThread.Sys), thousands(int(t.SubmitThread.Faults)),
				strconv.FormatInt(t.SubmitThread.Preempted, 10), fmt.Sprintf("%.1f ms", ms(t.Burst)), thousands(t.OK), strconv.Itoa(t.Errors()), "", "", ""}
			if rs != nil {
				c = append(c[:len(c)-3], times(rs.Submit), times(rs.SubmitCPU), times(rs.ToLastDelivery))
			}
			v.Trials.add(c...)
		}
		for _, t := range sz.Trials {
			var rs *loopRatios
			if p, base, ok := sz.pair(t.Client, t.Trial); ok {
				x := loopRatioOf(p, base)
				rs = &x
			}
			add(strconv.Itoa(t.Trial), t, rs)
			if t.FirstErr != "" {
				v.Errors = append(v.Errors, fmt.Sprintf("First error of %s trial %d of %s calls: %s", t.Client, t.Trial, thousands(s.Calls), t.FirstErr))
			}
		}
		if s.Trials > 1 {
			for _, name := range sz.reportedClients() {
				if m, ok := sz.median(name); ok {
					var rs *loopRatios
					if c := sz.compare(name); isPRPC(name) && c.Paired > 0 {
						rs = &loopRatios{Submit: c.Submit.median, SubmitCPU: c.SubmitCPU.median, ToLastDelivery: c.ToLastDelivery.median}
					}
					add("**median**", m, rs)
				}
			}
		}
	}
	return v
}

// Formatting helpers.

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func msText(d time.Duration) string { return fmt.Sprintf("%.2f ms", ms(d)) }

func mib(n int64) string {
	if n <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func times(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x)
}

// thousands formats n with commas: 20000 → "20,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// ratioCell formats the spread of a ratio over n trials: "0.97× (0.90–1.02)", or "0.97×" for
// one trial, or "–" for none or an unknown ratio.
func ratioCell(s spread, n int) string {
	if n == 0 || times(s.median) == "–" {
		return "–"
	}
	return spreadText(s, n, "×")
}

// spreadText formats the spread s of n values in unit: the median, then the least and the
// greatest in brackets when there are several, as in "55.09 ms (50.63–59.56)".
func spreadText(s spread, n int, unit string) string {
	if n < 2 {
		return fmt.Sprintf("%.2f%s", s.median, unit)
	}
	return fmt.Sprintf("%.2f%s (%.2f–%.2f)", s.median, unit, s.min, s.max)
}
