package main

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// goldenRuns are the made-up runs the golden tests render.
func goldenRuns() map[string]Run {
	return map[string]Run{"placements": goldenRun(), "single": goldenSingle(), "policies": goldenPolicies()}
}

// TestChartsGolden renders every chart of the made-up runs and checks that each is a
// well-formed SVG document with neither script nor external reference, that rendering it
// again gives the same bytes, and that it matches its file in testdata byte for byte (go test
// -update rewrites them). The policies suite alone has no chart.
func TestChartsGolden(t *testing.T) {
	wantCharts := map[string][]string{
		"placements": {"burst-ratios-unpinned.svg", "burst-latency-unpinned.svg", "loop-cpu-unpinned.svg",
			"burst-ratios-pinned.svg", "burst-latency-pinned.svg", "loop-cpu-pinned.svg"},
		// No shape has both a prpc client and the pool: no ratio to chart.
		"single":   {"burst-latency-inprocess.svg", "loop-cpu-inprocess.svg"},
		"policies": nil,
	}
	for name, run := range goldenRuns() {
		var names []string
		for _, f := range run.chartFiles() {
			names = append(names, f.Name)
			got := f.chart.SVG()
			if again := f.chart.SVG(); !bytes.Equal(got, again) {
				t.Errorf("%s: %s differs from one rendering to the next", name, f.Name)
			}
			checkSVG(t, name+" "+f.Name, got)
			path := filepath.Join("testdata", name+"."+f.Name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the golden file (go test -update rewrites it)", path)
			}
		}
		if !slices.Equal(names, wantCharts[name]) {
			t.Errorf("%s: charts %q, want %q", name, names, wantCharts[name])
		}
	}
}

// imageLink matches a Markdown image: its text and its path.
var imageLink = regexp.MustCompile(`!\[([^\]]*)\]\(([^)]*)\)`)

// TestDocumentLinksCharts writes each made-up run's document as -markdown does and checks that
// it links every chart it wrote, each once, and nothing else, that writing it again over the
// same files leaves them as they were, and that the Markdown on stdout links no chart.
func TestDocumentLinksCharts(t *testing.T) {
	for name, run := range goldenRuns() {
		dir := t.TempDir()
		path := filepath.Join(dir, "README.md")
		if err := writeDocument(path, run); err != nil {
			t.Fatal(err)
		}
		before := readDir(t, dir)
		// Run again over the same files, it writes the same bytes.
		if err := writeDocument(path, run); err != nil {
			t.Fatal(err)
		}
		if after := readDir(t, dir); !maps.Equal(after, before) {
			t.Errorf("%s: writing the document again changed the files", name)
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var links []string
		for _, m := range imageLink.FindAllStringSubmatch(string(doc), -1) {
			links = append(links, m[2])
			if m[1] == "" {
				t.Errorf("%s: the image %s has no text", name, m[2])
			}
		}
		var files []string
		entries, err := os.ReadDir(filepath.Join(dir, chartDir))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, e := range entries {
			files = append(files, chartDir+"/"+e.Name())
		}
		slices.Sort(links)
		if !slices.Equal(links, files) {
			t.Errorf("%s: the document links %q, the chart directory holds %q", name, links, files)
		}
		if name != "policies" && len(files) == 0 {
			t.Errorf("%s: no chart written", name)
		}
		var md bytes.Buffer
		if err := run.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if imageLink.Match(md.Bytes()) {
			t.Errorf("%s: the Markdown on stdout links a chart", name)
		}
	}
}

// readDir returns the contents of every file under dir by its path.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRatioChart checks the figures of the ratio chart of docReport with prpc-go added to its
// shape: per form, the median of its trials' ratios and their least and greatest.
func TestRatioChart(t *testing.T) {
	r := docReport()
	sh := &r.Suites[0].Shapes[0]
	var then []TrialResult
	for _, tr := range sh.Trials {
		if tr.Client == clientThen {
			then = append(then, tr)
		}
	}
	*sh = pairedShape(sh.Shape, trialOf(clientBaseline, 1e9, 40e6, 100e6, 200e6), goTrials(), then)
	c := r.ratioChart("unpinned")
	if c == nil || len(c.Panels) != 2 {
		t.Fatalf("ratio chart %+v, want two panels", c)
	}
	want := map[string][][3]float64{
		// calls/s: prpc-go 2.00, 1.00, 1.25; prpc-then 0.80, 1.00, 0.90.
		c.Panels[0].Title: {{1.25, 1, 2}, {0.9, 0.8, 1}},
		// CPU/call: prpc-go 0.50, 1.00, 0.75; prpc-then 1.10, 1.20, 1.00.
		c.Panels[1].Title: {{0.75, 0.5, 1}, {1.1, 1, 1.2}},
	}
	for _, p := range c.Panels {
		if p.Ref != 1 || len(p.Rows) != 1 || p.Rows[0].Label != "standard\n1,000 calls, 2×2" {
			t.Fatalf("panel %q: reference %v, rows %+v", p.Title, p.Ref, p.Rows)
		}
		checkItems(t, p.Title, p.Rows[0].Items, []string{clientGo, clientThen}, want[p.Title])
	}
	if got, want := c.Panels[0].Rows[0].Items[0].Tip, "standard, 1,000 calls, 2×2, prpc-go: calls/s 1.25× (1.00–2.00)"; got != want {
		t.Errorf("tip %q, want %q", got, want)
	}
	if got := legendTexts(c.Legend); !slices.Equal(got, []string{clientGo, clientThen, spreadKey.Text}) {
		t.Errorf("legend %q", got)
	}
}

// TestLatencyChart checks the latency chart of goldenRun's unpinned report: a panel per shape,
// a row per client, prpc's forms before the pool, each marking its median trial's p50 and
// p99 (hollow) over a line from its fastest call to its slowest.
func TestLatencyChart(t *testing.T) {
	r := goldenRun()[0]
	c := r.latencyChart("unpinned")
	if c == nil || len(c.Panels) != 2 || c.Cols != 2 {
		t.Fatalf("latency chart %+v, want two panels side by side", c)
	}
	p := c.Panels[0]
	if p.Title != "standard: 1,000 calls, 2×2" || !p.FromZero {
		t.Errorf("first panel %q, from zero %v", p.Title, p.FromZero)
	}
	var labels []string
	for _, row := range p.Rows {
		labels = append(labels, row.Label)
	}
	if !slices.Equal(labels, []string{clientGo, clientThen, clientBaseline}) {
		t.Fatalf("rows %q", labels)
	}
	// The pool: p50 100 ms and p99 200 ms in every trial, the fastest call a third of p50,
	// the slowest twice p99.
	pool := p.Rows[2].Items[0]
	want := chartItem{Colour: "#555555", Shape: markSquare, Lo: 100.0 / 3, Hi: 400, Marks: []chartMark{{X: 100}, {X: 200, Hollow: true}}}
	if math.Abs(pool.Lo-want.Lo) > 1e-6 || pool.Hi != want.Hi || pool.Colour != want.Colour || pool.Shape != want.Shape || !slices.Equal(pool.Marks, want.Marks) {
		t.Errorf("the pool's item %+v, want %+v", pool, want)
	}
}

// TestLoopChart checks the loop chart of a made-up size of 2,000 calls (loopSizeAll): the
// loop thread's CPU time per call of each client, and each prpc form's ratios to the pool.
func TestLoopChart(t *testing.T) {
	r := docReport()
	r.Loop.Sizes = []LoopSize{loopSizeAll(2000)}
	c := r.loopChart("unpinned")
	if c == nil || len(c.Panels) != 2 {
		t.Fatalf("loop chart %+v, want two panels", c)
	}
	clients := []string{clientGo, clientOnSettled, clientThen, clientBaseline}
	// The pool's thread: 5 ms per burst of 2,000 calls, 2,500 ns a call; prpc-go 1.2 times
	// as much, prpc-onsettled 2, 2.2 and 2.4 times, prpc-then 2.5 times.
	checkItems(t, "CPU per call", c.Panels[0].Rows[0].Items, clients,
		[][3]float64{{3000, 3000, 3000}, {5500, 5000, 6000}, {6250, 6250, 6250}, {2500, 2500, 2500}})
	checkItems(t, "ratio", c.Panels[1].Rows[0].Items, clients[:3],
		[][3]float64{{1.2, 1.2, 1.2}, {2.2, 2, 2.4}, {2.5, 2.5, 2.5}})
	if c.Panels[0].Ref != 0 || !c.Panels[0].FromZero || c.Panels[1].Ref != 1 {
		t.Errorf("panels' references %v and %v, from zero %v", c.Panels[0].Ref, c.Panels[1].Ref, c.Panels[0].FromZero)
	}
	if got := legendTexts(c.Legend); !slices.Equal(got, []string{clientGo, clientOnSettled, clientThen, poolName, spreadKey.Text}) {
		t.Errorf("legend %q", got)
	}
	r.Loop = nil
	if c := r.loopChart("unpinned"); c != nil {
		t.Errorf("a report without the loop suite has a loop chart %+v", c)
	}
}

// checkItems checks that items are the clients', in order, in their colours and shapes, each
// with one filled mark at want's median and a line from its least to its greatest.
func checkItems(t *testing.T, what string, items []chartItem, clients []string, want [][3]float64) {
	t.Helper()
	if len(items) != len(clients) {
		t.Fatalf("%s: %d items, want %d", what, len(items), len(clients))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*max(1, math.Abs(b)) }
	for i, it := range items {
		m := clientMarks[clients[i]]
		w := want[i]
		if it.Colour != m.colour || it.Shape != m.shape || len(it.Marks) != 1 || it.Marks[0].Hollow ||
			!near(it.Marks[0].X, w[0]) || !near(it.Lo, w[1]) || !near(it.Hi, w[2]) {
			t.Errorf("%s: item %d %+v, want %s's mark at %v, line %v–%v", what, i, it, clients[i], w[0], w[1], w[2])
		}
	}
}

func legendTexts(es []legendEntry) []string {
	var ts []string
	for _, e := range es {
		ts = append(ts, e.Text)
	}
	return ts
}

// TestChartSkipsUnknown checks that a ratio the report shows as unknown ("–", the pool's
// figure 0) is left out of the chart, and that a shape with no known ratio gives no chart.
func TestChartSkipsUnknown(t *testing.T) {
	r := docReport()
	for i := range r.Suites[0].Shapes[0].Trials {
		if tr := &r.Suites[0].Shapes[0].Trials[i]; tr.Client == clientBaseline && tr.Trial == 2 {
			tr.CPU = 0
		}
	}
	c := r.ratioChart("unpinned")
	// prpc-then's CPU/call ratios: 1.10 and 1.00, trial 2 unknown.
	checkItems(t, "CPU/call", c.Panels[1].Rows[0].Items, []string{clientThen}, [][3]float64{{1.05, 1, 1.1}})
	for i := range r.Suites[0].Shapes[0].Trials {
		if tr := &r.Suites[0].Shapes[0].Trials[i]; tr.Client == clientBaseline {
			tr.CPU, tr.Calls = 0, 0
		}
	}
	if c := r.ratioChart("unpinned"); c != nil {
		t.Errorf("a report with no known ratio has a ratio chart %+v", c)
	}
}
