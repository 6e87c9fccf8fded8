package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pairedShape returns a made-up shape whose trial i runs each prpc client with its
// forms[…][i], then the baseline with base, all over s.Calls calls.
func pairedShape(s Shape, base TrialResult, forms ...[]TrialResult) ShapeResult {
	sh := ShapeResult{Shape: s}
	for i := range forms[0] {
		var trial []TrialResult
		for _, f := range forms {
			trial = append(trial, f[i])
		}
		for _, tr := range append(trial, base) {
			tr.Trial, tr.Calls, tr.OK, tr.BackendCPU, tr.PeakReset = i+1, s.Calls, s.Calls, -1, true
			sh.Trials = append(sh.Trials, tr)
		}
	}
	return sh
}

// goTrials are made-up trials of prpc-go, to pair with docReport's baseline: its calls/s
// ratios are 2.00, 1.00 and 1.25, its CPU/call ratios 0.50, 1.00 and 0.75, its p50 ratios
// 0.50, 1.00 and 1.00 and its p99 ratios 0.50, 1.00 and 1.50.
func goTrials() []TrialResult {
	ms := time.Millisecond
	return []TrialResult{
		trialOf(clientGo, 500*ms, 20*ms, 50*ms, 100*ms),
		trialOf(clientGo, time.Second, 40*ms, 100*ms, 200*ms),
		trialOf(clientGo, 800*ms, 30*ms, 100*ms, 300*ms),
	}
}

// trialOf is one made-up trial of client: total time, CPU time, p50 and p99 latency.
func trialOf(client string, total, cpu, p50, p99 time.Duration) TrialResult {
	return TrialResult{Client: client, Total: total, CPU: cpu, Lat: Latency{Avg: p50, P50: p50, P95: p99, P99: p99}}
}

// docReport returns a made-up report: the standard suite's first shape over three trials, in
// which prpc-then's calls/s ratios are 0.80, 1.00 and 0.90, its CPU/call ratios 1.10, 1.20
// and 1.00, its p50 ratios 1.00, 0.90 and 1.10 and its p99 ratios 1.00, 1.05 and 0.95; and the
// loop suite over three trials of 20,000 calls per client, in which prpc-then takes three
// times the pool's time to submit.
func docReport() *Report {
	ms := time.Millisecond
	base := trialOf(clientBaseline, time.Second, 40*ms, 100*ms, 200*ms)
	prpc := []TrialResult{
		trialOf(clientThen, 1250*ms, 44*ms, 100*ms, 200*ms),
		trialOf(clientThen, time.Second, 48*ms, 90*ms, 210*ms),
		trialOf(clientThen, 1111111111, 40*ms, 110*ms, 190*ms), // 1 s ÷ 0.9
	}
	lr := &LoopResult{TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks,
		Sizes: []LoopSize{loopSizeOf(20000, loopForm(clientThen, 3, cpus(2), 300*ms, 60*ms, 2), loopPool())}, Targets: testTargets}
	return &Report{
		Command: "go run ./benchmarks/burst -suite all,loop -markdown benchmarks/README.md",
		Machine: Machine{
			CPUs: 2, CPUModel: "Test CPU", GOOS: "linux", GOARCH: "amd64", Kernel: "6.0.0-test", OSName: "Test OS 1",
			GoVersion: "go1.26.0", GRPCVersion: "v1.85.0", GOMAXPROCS: 2, LoadStart: "0.10 0.20 0.30", LoadEnd: "1.10 0.40 0.35",
		},
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Elapsed: 90 * time.Second,
		Timeout: 10 * time.Second, Budget: 2 * time.Millisecond, Warmup: 1000,
		Suites: []SuiteResult{{Name: standardSuite.Name, Backend: backendData, Shapes: []ShapeResult{pairedShape(Shape{1000, 2, 2, 3}, base, prpc)}}},
		Loop:   lr,
	}
}

// headings returns the Markdown headings of doc, in order.
func headings(doc string) []string {
	var hs []string
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "#") {
			hs = append(hs, strings.TrimSpace(line))
		}
	}
	return hs
}

// checkTables checks that every row of every table in doc has as many cells as the table's
// header row.
func checkTables(t *testing.T, doc string) {
	t.Helper()
	want := -1
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		n := strings.Count(line, "|")
		if want < 0 {
			want = n
		} else if n != want {
			t.Errorf("row with %d bars in a table whose header has %d: %q", n, want, line)
		}
	}
}

func TestWriteDocument(t *testing.T) {
	const (
		summaryHead  = "| suite | backend | calls | W×B | prpc form | trials | calls/s | client CPU/call | p50 | p99 |"
		summaryRatio = "| 3 | 0.90× (0.80–1.00) | 1.10× (1.00–1.20) | 1.00× (0.90–1.10) | 1.00× (0.95–1.05) |"
		summaryRow   = "| standard | data service (in-memory store) | 1,000 | 2×2 | prpc-then " + summaryRatio
		goRatio      = "| 3 | 1.25× (1.00–2.00) | 0.75× (0.50–1.00) | 1.00× (0.50–1.00) | 1.00× (0.50–1.50) |"
		loopLine     = "| 20,000 | submission wall time | 10.00 ms (8.00–12.00) | 3.00× (3.00–3.00) | – |"
		dataNote     = "\n### standard\n\nBackend: data service (in-memory store): the data-service example (examples/dataservice/server), seeded with every player before the first burst.\n"
		fastNote     = "\n### fast-extreme\n\nBackend: fast backend: a handler that does no work. GetPlayer answers from a table of responses built before serving"
	)
	tests := []struct {
		name     string
		edit     func(*Report)
		headings []string
		want     []string // lines or parts of lines the document has
		wantNot  []string
	}{
		{
			name: "burst and loop suites",
			edit: func(*Report) {},
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard",
				"## Loop suite", "## How to reproduce"},
			want: []string{summaryHead, summaryRow, loopLine, dataNote,
				"prpc: client prpc-then, every call submitted by reactor.Call, then the promise's Then and OnError, " +
					"the form earlier reports measured, so that these figures compare with theirs (-clients chooses the forms)."},
			wantNot: []string{"Backend: fast backend", "| fast-"},
		},
		{
			name: "two prpc forms, both backends",
			edit: func(r *Report) {
				ms := time.Millisecond
				base := trialOf(clientBaseline, time.Second, 40*ms, 100*ms, 200*ms)
				then := trialOf(clientThen, time.Second, 40*ms, 100*ms, 200*ms)
				sh := &r.Suites[0].Shapes[0]
				var prpc []TrialResult
				for _, tr := range sh.Trials {
					if tr.Client == clientThen {
						prpc = append(prpc, tr)
					}
				}
				*sh = pairedShape(sh.Shape, base, goTrials(), prpc)
				r.Suites = append(r.Suites, SuiteResult{Name: fastExtremeSuite.Name, Backend: backendFast,
					Shapes: []ShapeResult{pairedShape(Shape{20000, 6, 16, 3}, base, []TrialResult{then, then, then}, goTrials())}})
			},
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard", "### fast-extreme",
				"## Loop suite", "## How to reproduce"},
			want: []string{summaryHead, dataNote, fastNote,
				// One summary row per prpc form and shape, in prpcForms order, naming the backend.
				"| standard | data service (in-memory store) | 1,000 | 2×2 | prpc-go " + goRatio + "\n" + summaryRow + "\n" +
					"| fast-extreme | fast backend: a handler that does no work | 20,000 | 6×16 | prpc-go " + goRatio + "\n" +
					"| fast-extreme | fast backend: a handler that does no work | 20,000 | 6×16 | prpc-then | 3 | 1.00× (1.00–1.00) | 1.00× (1.00–1.00) | 1.00× (1.00–1.00) | 1.00× (1.00–1.00) |\n",
				// Each prpc row's ratios are to the pool's row of the same trial.
				"| 1,000 | 2×2 | 1 | prpc-go | 0.500 s |", "| 2.00× | 0.50× | 0.50× |\n| 1,000 | 2×2 | 1 | prpc-then | 1.250 s |",
				"| 0.80× | 1.10× | 1.00× |\n| 1,000 | 2×2 | 1 | grpc-go | 1.000 s |",
				"| 1.25× | 0.75× | 1.50× |\n| 1,000 | 2×2 | 3 | prpc-then |",
				"| 1,000 | 2×2 | **median** | prpc-go |", "| 1,000 | 2×2 | **median** | prpc-then |", "| 1,000 | 2×2 | **median** | grpc-go |",
				"| 20,000 | 6×16 | **median** | prpc-go |", "| 20,000 | 6×16 | **median** | prpc-then |",
				"prpc: client prpc-go, every call submitted by reactor.Go with one callback, no promise; " +
					"client prpc-then, every call submitted by reactor.Call, then the promise's Then and OnError, the form earlier reports measured",
			},
		},
		{
			name: "burst suites with the callback form",
			edit: func(r *Report) {
				sh := &r.Suites[0].Shapes[0]
				for i := range sh.Trials {
					if sh.Trials[i].Client == clientThen {
						sh.Trials[i].Client = clientGo
					}
				}
			},
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard",
				"## Loop suite", "## How to reproduce"},
			want: []string{"| standard | data service (in-memory store) | 1,000 | 2×2 | prpc-go " + summaryRatio,
				"prpc: client prpc-go, every call submitted by reactor.Go with one callback, no promise (-clients chooses the forms).",
				"| 1,000 | 2×2 | 1 | prpc-go | 1.250 s |", "| 1,000 | 2×2 | **median** | prpc-go |"},
			wantNot: []string{"earlier reports measured"},
		},
		{
			name:     "burst suites only",
			edit:     func(r *Report) { r.Loop = nil },
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard", "## How to reproduce"},
			want:     []string{summaryRow},
			wantNot:  []string{"## Loop suite", "Loop suite: prpc"},
		},
		{
			name:     "loop suite only",
			edit:     func(r *Report) { r.Suites = nil },
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Loop suite", "## How to reproduce"},
			want:     []string{loopLine},
			wantNot:  []string{summaryHead, "## Burst suites"},
		},
		{
			name: "one trial: no spread",
			edit: func(r *Report) {
				sh := &r.Suites[0].Shapes[0]
				sh.Shape.Trials, sh.Trials = 1, sh.Trials[:2]
				r.Loop.Sizes[0].Shape.Trials, r.Loop.Sizes[0].Trials = 1, r.Loop.Sizes[0].Trials[:2]
			},
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard",
				"## Loop suite", "## How to reproduce"},
			want: []string{"| standard | data service (in-memory store) | 1,000 | 2×2 | prpc-then | 1 | 0.80× | 1.10× | 1.00× | 1.00× |",
				"| 20,000 | submission wall time | 10.00 ms | 3.00× | – |"},
			wantNot: []string{"**median**"},
		},
		{
			name: "prpc alone: no ratios",
			edit: func(r *Report) {
				sh := &r.Suites[0].Shapes[0]
				sh.Trials = slices.DeleteFunc(sh.Trials, func(t TrialResult) bool { return t.Client == clientBaseline })
			},
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard",
				"## Loop suite", "## How to reproduce"},
			want: []string{"| standard | data service (in-memory store) | 1,000 | 2×2 | prpc-then | 3 | – | – | – | – |"},
		},
		{
			name: "the pool alone: one row, no ratios",
			edit: func(r *Report) {
				sh := &r.Suites[0].Shapes[0]
				sh.Trials = slices.DeleteFunc(sh.Trials, func(t TrialResult) bool { return t.Client != clientBaseline })
			},
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard",
				"## Loop suite", "## How to reproduce"},
			want: []string{"| standard | data service (in-memory store) | 1,000 | 2×2 | – | 3 | – | – | – | – |"},
		},
		{
			name: "pinned, separate process",
			edit: func(r *Report) { r.Pinned, r.ClientAffinity, r.BackendAffinity = true, "0", "1" },
			headings: []string{"# Performance report", "## Machine", "## Summary", "## Burst suites", "### standard",
				"## Loop suite", "## How to reproduce"},
			want: []string{"- Backend: a separate process. Pinned: client threads on CPU 0, backend threads on CPU 1."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := docReport()
			tt.edit(r)
			var doc, body bytes.Buffer
			if err := r.WriteDocument(&doc); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteMarkdown(&body); err != nil {
				t.Fatal(err)
			}
			got := doc.String()
			if h := headings(got); !slices.Equal(h, tt.headings) {
				t.Errorf("headings = %q, want %q", h, tt.headings)
			}
			if !strings.HasPrefix(got, "# Performance report\n\n<!-- Generated by `"+r.Command+"`. Do not edit") {
				t.Errorf("the document does not open with its title and the generating command:\n%s", got)
			}
			// The document is what WriteMarkdown writes, between its own opening and reproduce section.
			if !strings.Contains(got, "\n"+body.String()+"\n## How to reproduce\n") {
				t.Errorf("the document does not hold WriteMarkdown's output whole:\ndocument:\n%s\nWriteMarkdown:\n%s", got, body.String())
			}
			if strings.Contains(body.String(), "# Performance report") || strings.Contains(body.String(), "## How to reproduce") {
				t.Errorf("WriteMarkdown writes the document's own parts:\n%s", body.String())
			}
			machine := []string{
				"Command: `" + r.Command + "`\n",
				"- CPU: Test CPU, 2 cores (GOMAXPROCS 2)\n",
				"- OS: Test OS 1, kernel 6.0.0-test, linux/amd64\n",
				"- Go: go1.26.0; grpc-go: v1.85.0\n",
				"- Run: started 2026-01-02 03:04 UTC, took 1m30s\n",
				"- Load average (1, 5, 15 min): 0.10 0.20 0.30 at the start, 1.10 0.40 0.35 at the end.",
			}
			for _, want := range append(machine, tt.want...) {
				if !strings.Contains(got, want) {
					t.Errorf("the document lacks %q:\n%s", want, got)
				}
			}
			for _, not := range tt.wantNot {
				if strings.Contains(got, not) {
					t.Errorf("the document has %q:\n%s", not, got)
				}
			}
			checkTables(t, got)
			// One per-trial row per client and trial, and a median row per client over several.
			if len(r.Suites) > 0 {
				sh := r.Suites[0].Shapes[0]
				clients := map[string]bool{}
				for _, tr := range sh.Trials {
					clients[tr.Client] = true
				}
				want := len(sh.Trials)
				if sh.Shape.Trials > 1 {
					want += len(clients)
				}
				if n := strings.Count(got, "\n| 1,000 | 2×2 |"); n != want {
					t.Errorf("%d rows of the shape, want %d:\n%s", n, want, got)
				}
			}
		})
	}
}

// TestWriteDocumentPlacements: a run in two placements is one document, with the command once
// and each placement's report whole under a heading naming it, its own headings a level
// deeper; its JSON is an array of the two reports.
func TestWriteDocumentPlacements(t *testing.T) {
	unpinned, pinned := docReport(), docReport()
	pinned.Pinned, pinned.ClientAffinity, pinned.BackendAffinity = true, "0", "1"
	run := Run{unpinned, pinned}
	var doc bytes.Buffer
	if err := run.WriteDocument(&doc); err != nil {
		t.Fatal(err)
	}
	got := doc.String()
	report := []string{"### Machine", "### Summary", "### Burst suites", "#### standard", "### Loop suite"}
	want := append(append(append(append([]string{"# Performance report", "## Unpinned: client and backend share the CPUs, as the targets are judged"},
		report...), "## Pinned: client on CPU 0, backend on CPU 1"), report...), "## How to reproduce")
	if h := headings(got); !slices.Equal(h, want) {
		t.Errorf("headings = %q, want %q", h, want)
	}
	if n := strings.Count(got, "Command: `"); n != 1 {
		t.Errorf("the command is given %d times, want once:\n%s", n, got)
	}
	for _, part := range []string{
		"- Backend: a separate process; not pinned, so client and backend share the machine's CPUs.",
		"- Backend: a separate process. Pinned: client threads on CPU 0, backend threads on CPU 1.",
		"; unpinned, as the targets are judged.",
		"; pinned (client on CPU 0, backend on CPU 1); the targets are judged on an unpinned run.",
	} {
		if strings.Count(got, part) != 1 {
			t.Errorf("the document has %q %d times, want once:\n%s", part, strings.Count(got, part), got)
		}
	}
	checkTables(t, got)

	var js bytes.Buffer
	if err := run.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var reports []jsonReport
	if err := json.Unmarshal(js.Bytes(), &reports); err != nil {
		t.Fatalf("the JSON of two placements is not an array of reports: %v\n%s", err, js.String())
	}
	if len(reports) != 2 || reports[0].Pinned || !reports[1].Pinned {
		t.Errorf("JSON reports: %d, pinned %v and %v; want the unpinned then the pinned", len(reports), reports[0].Pinned, reports[1].Pinned)
	}
}

func TestSpreadText(t *testing.T) {
	for _, c := range []struct {
		s    spread
		n    int
		unit string
		want string
	}{
		{spread{0.97, 0.9, 1.02}, 3, "×", "0.97× (0.90–1.02)"},
		{spread{0.97, 0.97, 0.97}, 1, "×", "0.97×"},
		{spread{55.091, 50.63, 59.555}, 2, " ms", "55.09 ms (50.63–59.55)"},
	} {
		if got := spreadText(c.s, c.n, c.unit); got != c.want {
			t.Errorf("spreadText(%+v, %d, %q) = %q, want %q", c.s, c.n, c.unit, got, c.want)
		}
	}
	for _, c := range []struct {
		s    spread
		n    int
		want string
	}{
		{spread{1.1, 1, 1.2}, 3, "1.10× (1.00–1.20)"},
		{spread{}, 0, "–"},
		{spread{}, 2, "–"}, // an unknown ratio, as when the baseline's figure was 0
	} {
		if got := ratioCell(c.s, c.n); got != c.want {
			t.Errorf("ratioCell(%+v, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{2}, spread{2, 2, 2}},
		{[]float64{3, 1, 2}, spread{2, 1, 3}},
		{[]float64{4, 1, 2, 3}, spread{2.5, 1, 4}},
	} {
		if got := spreadOf(c.v, func(x float64) float64 { return x }); got != c.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", c.v, got, c.want)
		}
	}
}

// TestMarkdownFlag runs a small burst with -markdown and checks that it replaces the file with
// the document, and that a run that fails leaves the file as it was.
func TestMarkdownFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	const old = "an older report\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-inprocess", "-calls", "-1", "-markdown", path}, &stdout, &stderr); err == nil {
		t.Fatal("run with -calls -1 succeeded")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != old {
		t.Fatalf("a run that failed changed the file: %q, %v", b, err)
	}
	args := []string{"-inprocess", "-calls", "50", "-workers", "2", "-batch", "2", "-trials", "1", "-warmup", "0", "-markdown", path}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	cmd := "go run ./benchmarks/burst " + strings.Join(args, " ")
	if !strings.HasPrefix(doc, "# Performance report\n\n<!-- Generated by `"+cmd+"`.") || strings.Contains(doc, old) {
		t.Errorf("the file is not the run's document:\n%s", doc)
	}
	for _, want := range []string{"## Machine", "| custom | data service (in-memory store) | 50 | 2×2 | prpc-go | 1 |",
		"| custom | data service (in-memory store) | 50 | 2×2 | prpc-then | 1 |",
		"| fast-custom | fast backend: a handler that does no work | 50 | 2×2 | prpc-go | 1 |",
		"| 50 | 2×2 | 1 | prpc-then |", "## How to reproduce"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	// The document is written through a temporary file, which is gone.
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want the report alone", entries, err)
	}
}

// TestShapeRatiosPairTrials checks that each prpc client's ratios are to the pool's trial of
// the same number, whatever the order of the clients within a trial: the pool takes t
// seconds in trial t, prpc-go half as long and prpc-then as long, so that any other pairing
// shows in the ratios.
func TestShapeRatiosPairTrials(t *testing.T) {
	sh := ShapeResult{Shape: Shape{Calls: 1000, Workers: 2, Batch: 2, Trials: 3}}
	order := [][]string{{clientThen, clientBaseline, clientGo}, {clientBaseline, clientGo, clientThen}, {clientGo, clientThen, clientBaseline}}
	for i, clients := range order {
		n := time.Duration(i + 1)
		for _, c := range clients {
			total := n * time.Second
			if c == clientGo {
				total /= 2
			}
			tr := trialOf(c, total, n*time.Millisecond, total, total)
			tr.Trial, tr.Calls = i+1, 1000
			sh.Trials = append(sh.Trials, tr)
		}
	}
	if got := sh.prpcClients(); !slices.Equal(got, []string{clientGo, clientThen}) {
		t.Errorf("prpcClients = %q, want prpc-go and prpc-then, in prpcForms order", got)
	}
	for _, c := range []struct {
		form       string
		throughput float64
		p99        float64
	}{
		{clientGo, 2, 0.5},
		{clientThen, 1, 1},
	} {
		rs := sh.trialRatios(c.form)
		if len(rs) != 3 {
			t.Fatalf("%s: %d ratios, want 3", c.form, len(rs))
		}
		for i, r := range rs {
			if r.Client != c.form || r.Throughput != c.throughput || r.P99 != c.p99 || r.CPUPerCall != 1 {
				t.Errorf("%s trial %d: ratios %+v, want calls/s %v, p99 %v, CPU/call 1", c.form, i+1, r, c.throughput, c.p99)
			}
		}
		if m := medianRatios(rs); m.Client != c.form || m.Throughput != c.throughput {
			t.Errorf("%s: median ratios %+v", c.form, m)
		}
	}
	if rs := sh.trialRatios(clientOnSettled); len(rs) != 0 {
		t.Errorf("ratios of a client that did not run: %+v", rs)
	}
}
