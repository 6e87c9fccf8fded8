package main

// The report's charts: per placement, the burst suites' ratios to the pool and their
// latencies, and the loop suite's cost to the loop's thread, each an SVG file in the charts
// directory beside the document, which links them.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// chartDir is the directory beside the document that holds its charts.
const chartDir = "charts"

// chartFile is one chart of a report and the file it goes to.
type chartFile struct {
	// Name is the file's name in chartDir; Alt the image's text in the document.
	Name, Alt string
	chart     *chart
}

// Path is the file's path relative to the document, as the document links it.
func (f *chartFile) Path() string { return chartDir + "/" + f.Name }

// reportCharts are the charts of one report, nil where it has nothing to show.
type reportCharts struct {
	// Ratios pictures the burst suites' ratios to the pool, Latency their latencies, Loop
	// the loop suite's cost to the loop's thread.
	Ratios, Latency, Loop *chartFile
}

func (rc reportCharts) files() []*chartFile {
	return slices.DeleteFunc([]*chartFile{rc.Ratios, rc.Latency, rc.Loop}, func(f *chartFile) bool { return f == nil })
}

// charts returns the report's charts, their files named after its placement.
func (r *Report) charts() reportCharts {
	key, where := "unpinned", "unpinned"
	switch {
	case r.InProcess:
		key, where = "inprocess", "backend in the client's process"
	case r.Pinned:
		key, where = "pinned", "pinned (client on CPU 0, backend on CPU 1)"
	}
	file := func(name string, c *chart) *chartFile {
		if c == nil {
			return nil
		}
		return &chartFile{Name: name + "-" + key + ".svg", Alt: c.Title, chart: c}
	}
	return reportCharts{
		Ratios:  file("burst-ratios", r.ratioChart(where)),
		Latency: file("burst-latency", r.latencyChart(where)),
		Loop:    file("loop-cpu", r.loopChart(where)),
	}
}

// chartFiles returns the charts of every report of the run, in order.
func (run Run) chartFiles() []*chartFile {
	var fs []*chartFile
	for _, r := range run {
		fs = append(fs, r.charts().files()...)
	}
	return fs
}

// writeCharts writes the run's charts into the chart directory in dir, which it creates if
// the run has any chart (but not dir), each file replaced only once it is written.
func (run Run) writeCharts(dir string) error {
	fs := run.chartFiles()
	if len(fs) == 0 {
		return nil
	}
	dir = filepath.Join(dir, chartDir)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	for _, f := range fs {
		if err := writeFileAtomic(filepath.Join(dir, f.Name), f.chart.SVG()); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic writes b to path through a temporary file in the same directory, renamed
// over path.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Each client's colour (Okabe and Ito's, which readers with any colour vision tell apart) and
// shape, the same in every chart.
var clientMarks = map[string]struct {
	colour string
	shape  markShape
}{
	clientBaseline:  {"#555555", markSquare},
	clientGo:        {"#0072B2", markCircle},
	clientOnSettled: {"#009E73", markTriangle},
	clientThen:      {"#D55E00", markDiamond},
}

// itemOf returns client's item of a chart: a mark at the median of s and a line over its
// spread, which tip says in words.
func itemOf(client string, s spread, tip string) chartItem {
	m := clientMarks[client]
	return chartItem{Colour: m.colour, Shape: m.shape, Lo: s.min, Hi: s.max, Marks: []chartMark{{X: s.median}}, Tip: tip}
}

// legendOf returns the legend entries of the clients, in the order of clients that appear
// in ran, then the entries of keys.
func legendOf(ran map[string]bool, keys ...legendEntry) []legendEntry {
	var es []legendEntry
	for _, c := range append(slices.Clone(prpcForms), clientBaseline) {
		if ran[c] {
			name := c
			if c == clientBaseline {
				name = poolName
			}
			es = append(es, legendEntry{Text: name, Colour: clientMarks[c].colour, Shape: clientMarks[c].shape})
		}
	}
	return append(es, keys...)
}

// spreadKey is the legend's entry for a line over a spread.
var spreadKey = legendEntry{Text: "least to greatest over the trials", Colour: "#555555", Line: true}

// knownSpread returns the spread of the known values of f over ts, those above 0 and finite,
// and how many there are.
func knownSpread[T any](ts []T, f func(T) float64) (spread, int) {
	var vs []float64
	for _, t := range ts {
		if v := f(t); v > 0 && !math.IsInf(v, 0) {
			vs = append(vs, v)
		}
	}
	return spreadOf(vs, func(v float64) float64 { return v }), len(vs)
}

// trialsText says how many trials a chart's medians are over: "its 15 trials" when every
// shape ran as many, "its trials" otherwise.
func trialsText(counts []int) string {
	slices.Sort(counts)
	if counts = slices.Compact(counts); len(counts) == 1 {
		if counts[0] == 1 {
			return "its one trial"
		}
		return "its " + strconv.Itoa(counts[0]) + " trials"
	}
	return "its trials"
}

// shapeLabel names a shape of a suite on two lines.
func shapeLabel(suite string, s Shape) string {
	return fmt.Sprintf("%s\n%s calls, %s", suite, thousands(s.Calls), wxb(s))
}

// ratioChart pictures each prpc form's calls/s and client CPU per call ÷ the pool's, shape
// by shape, where is the report's placement; nil if no shape has a ratio.
func (r *Report) ratioChart(where string) *chart {
	thr := panel{Title: "calls/s ÷ the pool's: above 1 favours prpc", Axis: "ratio (×)", Ref: 1}
	cpu := panel{Title: "client CPU per call ÷ the pool's: below 1 favours prpc", Axis: "ratio (×)", Ref: 1}
	ran, fast := map[string]bool{}, false
	var counts []int
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			var ti, ci []chartItem
			tip := func(f, what string, sp spread, n int) string {
				return fmt.Sprintf("%s, %s, %s: %s %s", s.Name, sh.Shape, f, what, spreadText(sp, n, "×"))
			}
			for _, f := range sh.prpcClients() {
				rs := sh.trialRatios(f)
				if st, n := knownSpread(rs, func(r ratios) float64 { return r.Throughput }); n > 0 {
					ti = append(ti, itemOf(f, st, tip(f, "calls/s", st, n)))
					ran[f] = true
				}
				if sc, n := knownSpread(rs, func(r ratios) float64 { return r.CPUPerCall }); n > 0 {
					ci = append(ci, itemOf(f, sc, tip(f, "client CPU/call", sc, n)))
					ran[f] = true
				}
			}
			if len(ti)+len(ci) == 0 {
				continue
			}
			counts = append(counts, sh.Shape.Trials)
			fast = fast || s.Backend == backendFast
			thr.Rows = append(thr.Rows, chartRow{Label: shapeLabel(s.Name, sh.Shape), Items: ti})
			cpu.Rows = append(cpu.Rows, chartRow{Label: shapeLabel(s.Name, sh.Shape), Items: ci})
		}
	}
	if len(counts) == 0 {
		return nil
	}
	note := "Each mark: the median over " + trialsText(counts) + " of the trial's ratio of the prpc form to the pool, which ran the same burst in the same trial; its line: the least to the greatest. Dashed: 1, the pool's own figure."
	if fast {
		note += " Suites named fast-… ran against the fast backend, a handler that does no work; the others against the data service."
	}
	return &chart{
		Title:  "Burst suites, " + where + ": each prpc form ÷ the grpc-go pool",
		Legend: legendOf(ran, spreadKey),
		Note:   note,
		Cols:   1,
		Panels: []panel{thr, cpu},
	}
}

// latencyChart pictures the burst suites' latencies, client by client, a panel per shape,
// where is the report's placement; nil if no shape ran.
func (r *Report) latencyChart(where string) *chart {
	c := &chart{Title: "Burst suites, " + where + ": each call's latency, from its submission to its outcome", Cols: 2}
	ran := map[string]bool{}
	var counts []int
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			p := panel{Title: fmt.Sprintf("%s: %s calls, %s", s.Name, thousands(sh.Shape.Calls), wxb(sh.Shape)), Axis: "latency (ms)", FromZero: true}
			for _, name := range append(sh.prpcClients(), clientBaseline) {
				m, ok := sh.medianTrial(name)
				if !ok {
					continue
				}
				ran[name] = true
				it := itemOf(name, spread{min: ms(m.Lat.Min), max: ms(m.Lat.Max)}, fmt.Sprintf("%s, %s, %s: p50 %s, p99 %s, fastest %s, slowest %s",
					s.Name, sh.Shape, name, msText(m.Lat.P50), msText(m.Lat.P99), msText(m.Lat.Min), msText(m.Lat.Max)))
				it.Marks = []chartMark{{X: ms(m.Lat.P50)}, {X: ms(m.Lat.P99), Hollow: true}}
				p.Rows = append(p.Rows, chartRow{Label: name, Items: []chartItem{it}})
			}
			if len(p.Rows) > 0 {
				c.Panels = append(c.Panels, p)
				counts = append(counts, sh.Shape.Trials)
			}
		}
	}
	if len(c.Panels) == 0 {
		return nil
	}
	grey := clientMarks[clientBaseline].colour
	c.Legend = legendOf(ran, legendEntry{Text: "p50", Colour: grey, Shape: markCircle},
		legendEntry{Text: "p99", Colour: grey, Shape: markCircle, Hollow: true},
		legendEntry{Text: "fastest to slowest call", Colour: grey, Line: true})
	c.Note = "Per client and shape, the median over " + trialsText(counts) + " of each figure. Every call of a burst is submitted at once, so its latency runs from one round trip to the whole burst's time."
	return c
}

// loopChart pictures what submitting each burst of the loop suite cost the loop's thread,
// per call and as a ratio to the pool's, where is the report's placement; nil if the loop
// suite did not run.
func (r *Report) loopChart(where string) *chart {
	lr := r.Loop
	if lr == nil || len(lr.Sizes) == 0 {
		return nil
	}
	abs := panel{Title: "the loop thread's CPU time per call, submitting the burst", Axis: "CPU time per call (ns)", FromZero: true}
	rat := panel{Title: "the same ÷ the pool's in the same trial (the judged figure): below 1 favours prpc", Axis: "ratio (×)", Ref: 1}
	ran := map[string]bool{}
	var counts []int
	for _, sz := range lr.Sizes {
		label := thousands(sz.Shape.Calls) + " calls"
		var ai, ri []chartItem
		for _, name := range append(sz.forms(), clientBaseline) {
			perCall := func(t LoopTrial) float64 { return float64(t.SubmitThread.CPU) / float64(max(t.Calls, 1)) }
			if s, n := knownSpread(sz.clientTrials(name), perCall); n > 0 {
				ai = append(ai, itemOf(name, s, fmt.Sprintf("%s, %s: %s", label, name, nsText(s, n))))
				ran[name] = true
			}
			if !isPRPC(name) {
				continue
			}
			if s, n := knownSpread(sz.trialRatios(name), func(r loopRatios) float64 { return r.SubmitCPU }); n > 0 {
				ri = append(ri, itemOf(name, s, fmt.Sprintf("%s, %s: %s the pool's", label, name, spreadText(s, n, "×"))))
			}
		}
		abs.Rows = append(abs.Rows, chartRow{Label: label, Items: ai})
		rat.Rows = append(rat.Rows, chartRow{Label: label, Items: ri})
		counts = append(counts, sz.Shape.Trials)
	}
	panels := []panel{abs}
	if slices.ContainsFunc(rat.Rows, func(r chartRow) bool { return len(r.Items) > 0 }) {
		panels = append(panels, rat)
	}
	return &chart{
		Title:  "Loop suite, " + where + ": what submitting a burst costs the game loop's thread",
		Legend: legendOf(ran, spreadKey),
		Note: fmt.Sprintf("A loop at %d TPS doing %g ms of game work per tick submits the whole burst in one tick. Each mark: the median over %s; its line: the least to the greatest. Dashed: 1, the pool's own figure.",
			lr.TPS, ms(lr.GameWork), trialsText(counts)),
		Cols:   1,
		Panels: panels,
	}
}

// nsText formats the spread s of n values in ns a call, whole, as "1,250 ns per call
// (1,100–1,400)".
func nsText(s spread, n int) string {
	t := func(v float64) string { return thousands(int(math.Round(v))) }
	if n < 2 {
		return t(s.median) + " ns per call"
	}
	return fmt.Sprintf("%s ns per call (%s–%s)", t(s.median), t(s.min), t(s.max))
}
