package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/reactor"
)

// TestMain also serves the backend when the test binary is re-executed as one, as the burst
// binary is, so that the separate-process path can be tested; and it checks that the tests
// leave no goroutine behind.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveBackendFlag {
		if err := serveBackend(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("burst backend: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runJSON runs the burst with args and -json, and returns its report.
func runJSON(t *testing.T, args ...string) jsonReport {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append(args, "-json"), &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep jsonReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stderr.String(), " trial 1/") {
		t.Errorf("no progress on stderr (%d bytes):\n%q", stderr.Len(), stderr.String())
	}
	return rep
}

// checkSane checks a report of one custom shape of calls calls, run by the prpc client form
// and the baseline for one trial: no errors, every call answered right, and figures that make sense together (no
// timing bounds: those belong to the benchmark, not to a test).
func checkSane(t *testing.T, rep jsonReport, calls int, form string) {
	t.Helper()
	if rep.Errors != 0 {
		t.Errorf("report has %d errors", rep.Errors)
	}
	if len(rep.Suites) != 1 || len(rep.Suites[0].Shapes) != 1 {
		t.Fatalf("want one suite with one shape, got %+v", rep.Suites)
	}
	sh := rep.Suites[0].Shapes[0]
	if sh.Calls != calls || sh.Workers != 2 || sh.Batch != 2 || sh.Shape.Trials != 1 {
		t.Errorf("shape = %+v, want %d calls, 2×2, 1 trial", sh.Shape, calls)
	}
	clients := map[string]bool{}
	for _, tr := range sh.Results {
		clients[tr.Client] = true
		if tr.Calls != calls || tr.OK != calls || tr.Failed != 0 || tr.Wrong != 0 || tr.FirstError != "" {
			t.Errorf("%s: calls %d ok %d failed %d wrong %d (%s), want %d right answers",
				tr.Client, tr.Calls, tr.OK, tr.Failed, tr.Wrong, tr.FirstError, calls)
		}
		if !(tr.TotalS > 0 && tr.CallsPerS > 0) {
			t.Errorf("%s: total %v s, %v calls/s", tr.Client, tr.TotalS, tr.CallsPerS)
		}
		if !(0 < tr.MinMs && tr.MinMs <= tr.P50Ms && tr.P50Ms <= tr.P95Ms && tr.P95Ms <= tr.P99Ms && tr.P99Ms <= tr.MaxMs) {
			t.Errorf("%s: latencies out of order: min %v p50 %v p95 %v p99 %v max %v",
				tr.Client, tr.MinMs, tr.P50Ms, tr.P95Ms, tr.P99Ms, tr.MaxMs)
		}
		if !(tr.MinMs <= tr.AvgMs && tr.AvgMs <= tr.MaxMs) {
			t.Errorf("%s: average %v outside [%v, %v]", tr.Client, tr.AvgMs, tr.MinMs, tr.MaxMs)
		}
		// The burst takes at least as long as its slowest call.
		if tr.MaxMs > tr.TotalS*1000 {
			t.Errorf("%s: slowest call %v ms is longer than the burst, %v s", tr.Client, tr.MaxMs, tr.TotalS)
		}
		// Each trial starts after the heap's free pages went back to the OS, so its allocations
		// fault pages in again.
		if runtime.GOOS == "linux" && (tr.CPUPerCallUs <= 0 || tr.PeakRSSBytes <= 0 || tr.FaultsPerCall <= 0) {
			t.Errorf("%s: CPU/call %v µs, peak RSS %v bytes, minor faults/call %v; want all measured",
				tr.Client, tr.CPUPerCallUs, tr.PeakRSSBytes, tr.FaultsPerCall)
		}
	}
	if !clients[form] || !clients[clientBaseline] || len(sh.Results) != 2 {
		t.Errorf("want one trial of each client, got %+v", sh.Results)
	}
	if sh.MedianRatios == nil || !(sh.MedianRatios.Throughput > 0 && sh.MedianRatios.P99 > 0) {
		t.Errorf("ratios missing: %+v", sh.MedianRatios)
	}
}

// TestBurstInProcess runs a small burst through each prpc client and the baseline; without
// -clients, the burst suites run prpc-then.
func TestBurstInProcess(t *testing.T) {
	for _, c := range []struct {
		clients []string // -clients, if any
		form    string
	}{
		{form: clientThen},
		{clients: []string{"-clients", "prpc-go,grpc-go"}, form: clientGo},
		{clients: []string{"-clients", "grpc-go,prpc-onsettled"}, form: clientOnSettled},
	} {
		t.Run(c.form, func(t *testing.T) {
			rep := runJSON(t, append(c.clients, "-inprocess", "-calls", "200", "-workers", "2", "-batch", "2", "-trials", "1", "-warmup", "20")...)
			if rep.Backend != "in process" {
				t.Errorf("backend = %q", rep.Backend)
			}
			checkSane(t, rep, 200, c.form)
			for _, tr := range rep.Suites[0].Shapes[0].Results {
				if !tr.CPUIncludesBack || tr.BackendCPUPerCall != nil {
					t.Errorf("%s: in process, the client's CPU time includes the backend's and the backend has none of its own", tr.Client)
				}
			}
		})
	}
}

// TestBurstSeparateProcess runs the backend as a child process (this test binary,
// re-executed). run returns an error if the child does not exit when its stdin closes.
func TestBurstSeparateProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	rep := runJSON(t, "-calls", "100", "-workers", "2", "-batch", "2", "-trials", "1", "-warmup", "10")
	if rep.Backend != "separate process" {
		t.Errorf("backend = %q", rep.Backend)
	}
	checkSane(t, rep, 100, clientThen)
	if runtime.GOOS == "linux" {
		for _, tr := range rep.Suites[0].Shapes[0].Results {
			if tr.CPUIncludesBack || tr.BackendCPUPerCall == nil || *tr.BackendCPUPerCall <= 0 {
				t.Errorf("%s: want the backend's CPU time measured apart", tr.Client)
			}
		}
	}
}

func TestMarkdown(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-inprocess", "-calls", "50", "-workers", "2", "-batch", "2", "-trials", "2", "-warmup", "0"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"| calls | W×B | trial | client |", "calls/s ratio | CPU/call ratio | p99 ratio |",
		"| allocs/call | faults/call | peak RSS | errors |", "faults/call: minor page faults of the client process over the trial ÷ calls (getrusage ru_minflt)",
		"| 50 | 2×2 | 1 | prpc-then |", "| 50 | 2×2 | 2 | grpc-go |", "| **median** | prpc-then |",
		"includes the backend",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-suite", "huge"},
		{"-workers", "3"},
		{"-calls", "-1"},
		{"-clients", "prpc-then,curl"},
		{"-clients", "prpc,grpc-go"},
		{"-clients", "prpc-go,prpc-then,grpc-go"},
		{"-suite", "loop", "-clients", "prpc-go,prpc-go"},
		{"-inprocess", "-pin"},
		{"-timeout", "0s"},
		{"extra"},
		{"-suite", ""},
		{"-suite", "all,huge"},
		{"-suite", "loop", "-pin", "-inprocess"},
		{"-placements", "unpinned,pinned", "-inprocess"},
		{"-placements", "sideways"},
		{"-pin", "-placements", "unpinned,pinned"},
		{"-suite", "all,loop", "-calls", "100"},
		{"-markdown", filepath.Join("no", "such", "dir", "report.md"), "-inprocess", "-calls", "10", "-trials", "1", "-warmup", "0"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestClientLists(t *testing.T) {
	all := []string{clientGo, clientOnSettled, clientThen, clientBaseline}
	for _, c := range []struct {
		list      string
		burst     bool // a burst suite runs
		wantBurst []string
		wantLoop  []string
		wantErr   string
	}{
		{list: "", burst: true, wantBurst: []string{clientThen, clientBaseline}, wantLoop: all},
		{list: "", wantBurst: []string{clientThen, clientBaseline}, wantLoop: all},
		{list: "prpc-go,grpc-go", burst: true, wantBurst: []string{clientGo, clientBaseline}, wantLoop: []string{clientGo, clientBaseline}},
		{list: "grpc-go,prpc-onsettled", wantBurst: []string{clientBaseline, clientOnSettled}, wantLoop: []string{clientBaseline, clientOnSettled}},
		{list: "prpc-then,prpc-go,grpc-go", wantBurst: []string{clientThen, clientGo, clientBaseline}, wantLoop: []string{clientThen, clientGo, clientBaseline}},
		{list: "prpc-onsettled", burst: true, wantBurst: []string{clientOnSettled}, wantLoop: []string{clientOnSettled}},
		{list: "prpc-then,prpc-go,grpc-go", burst: true,
			wantErr: `-clients "prpc-then,prpc-go,grpc-go" names 2 prpc clients, and the burst suites compare one with grpc-go: name one, or run the loop suite apart`},
		{list: "prpc,grpc-go", wantErr: `-clients "prpc,grpc-go": unknown client "prpc"; want prpc-go, prpc-onsettled, prpc-then or grpc-go`},
		{list: "prpc-go,", wantErr: `-clients "prpc-go,": unknown client ""`},
		{list: "grpc-go,prpc-go,grpc-go", wantErr: `-clients "grpc-go,prpc-go,grpc-go": grpc-go is named twice`},
	} {
		burst, loop, err := clientLists(c.list, c.burst)
		if c.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Errorf("clientLists(%q, %v) = %v; want error %q", c.list, c.burst, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(burst, c.wantBurst) || !slices.Equal(loop, c.wantLoop) {
			t.Errorf("clientLists(%q, %v) = %q, %q, %v; want %q, %q", c.list, c.burst, burst, loop, err, c.wantBurst, c.wantLoop)
		}
	}
}

func TestSuites(t *testing.T) {
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got := o.suites()
	if len(got) != 2 || got[0].Name != "standard" || got[1].Name != "extreme" {
		t.Fatalf("default suites = %+v", got)
	}
	want := []Shape{{1000, 2, 2, 3}, {5000, 4, 4, 3}, {6000, 6, 4, 3}, {20000, 6, 16, 3}}
	all := append(append([]Shape(nil), got[0].Shapes...), got[1].Shapes...)
	if len(all) != len(want) {
		t.Fatalf("shapes = %+v, want %+v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("shape %d = %+v, want %+v", i, all[i], want[i])
		}
	}
	o, err = parseFlags([]string{"-suite", "extreme", "-trials", "5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.suites(); len(got) != 1 || got[0].Shapes[0] != (Shape{20000, 6, 16, 5}) {
		t.Errorf("-suite extreme -trials 5 = %+v", got)
	}
	if standardSuite.Shapes[0].Trials != 3 {
		t.Error("-trials changed the suite's own table")
	}
}

func TestPlacementList(t *testing.T) {
	for _, c := range []struct {
		list    string
		pin     bool
		want    []bool
		wantErr string
	}{
		{list: "", want: []bool{false}},
		{list: "", pin: true, want: []bool{true}},
		{list: "unpinned", want: []bool{false}},
		{list: "pinned", want: []bool{true}},
		{list: "pinned", pin: true, want: []bool{true}},
		{list: "pinned,unpinned", want: []bool{false, true}}, // unpinned first: pinning is for good
		{list: "unpinned,pinned,unpinned", want: []bool{false, true}},
		{list: "unpinned,pinned", pin: true, wantErr: `-pin asks for the pinned placement alone, and -placements "unpinned,pinned" for others`},
		{list: "unpinned", pin: true, wantErr: `-pin asks for the pinned placement alone`},
		{list: "pinned,", wantErr: `-placements "pinned,": unknown placement ""`},
		{list: "sideways", wantErr: `-placements "sideways": unknown placement "sideways"; want unpinned, pinned or both, comma-separated`},
	} {
		got, err := placementList(c.list, c.pin)
		if c.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Errorf("placementList(%q, %v) = %v, %v; want error %q", c.list, c.pin, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("placementList(%q, %v) = %v, %v; want %v", c.list, c.pin, got, err, c.want)
		}
	}
}

func TestSuiteNames(t *testing.T) {
	for _, c := range []struct {
		list    string
		want    []string
		wantErr string
	}{
		{list: "all", want: []string{"standard", "extreme"}},
		{list: "loop", want: []string{"loop"}},
		{list: "all,loop", want: []string{"standard", "extreme", "loop"}},
		{list: "loop,extreme,standard", want: []string{"standard", "extreme", "loop"}},
		{list: "extreme,all,extreme", want: []string{"standard", "extreme"}},
		{list: "all,huge", wantErr: `-suite "all,huge": unknown suite "huge"; want standard, extreme, all or loop, or a comma-separated list of them`},
		{list: "", wantErr: `-suite "": unknown suite ""`},
		{list: "standard,", wantErr: `-suite "standard,": unknown suite ""`},
	} {
		got, err := suiteNames(c.list)
		if c.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Errorf("suiteNames(%q) = %q, %v; want error %q", c.list, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("suiteNames(%q) = %q, %v; want %q", c.list, got, err, c.want)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	seq := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		return s
	}
	for _, c := range []struct {
		n    int
		q    float64
		want time.Duration
	}{
		{1000, 50, 500}, {1000, 95, 950}, {1000, 99, 990}, {1000, 100, 1000},
		{20000, 99, 19800}, {101, 50, 51}, {3, 50, 2}, {3, 99, 3}, {1, 99, 1}, {0, 99, 0},
		{10, 0.1, 1}, {7, 95, 7},
	} {
		if got := percentile(seq(c.n), c.q); got != c.want {
			t.Errorf("p%v of 1…%d = %d, want %d", c.q, c.n, got, c.want)
		}
	}
}

func TestCheckResponse(t *testing.T) {
	right := func() *networkpb.GetPlayerResponse {
		p := playerOf(7)
		p.Version = 1
		return &networkpb.GetPlayerResponse{Found: true, Player: p}
	}
	if err := checkResponse(7, playerOf(7), right()); err != nil {
		t.Fatalf("right answer rejected: %v", err)
	}
	for name, mutate := range map[string]func(*networkpb.GetPlayerResponse){
		"not found":     func(r *networkpb.GetPlayerResponse) { r.Found = false },
		"no player":     func(r *networkpb.GetPlayerResponse) { r.Player = nil },
		"other xuid":    func(r *networkpb.GetPlayerResponse) { r.Player.Xuid = xuidOf(8) },
		"wrong name":    func(r *networkpb.GetPlayerResponse) { r.Player.Name = "x" },
		"wrong coins":   func(r *networkpb.GetPlayerResponse) { r.Player.Coins++ },
		"wrong seen":    func(r *networkpb.GetPlayerResponse) { r.Player.LastSeen = nil },
		"never saved":   func(r *networkpb.GetPlayerResponse) { r.Player.Version = 0 },
		"wrong level":   func(r *networkpb.GetPlayerResponse) { r.Player.Level = 99 },
		"wrong playing": func(r *networkpb.GetPlayerResponse) { r.Player.PlaytimeSeconds = 1 },
	} {
		resp := proto.Clone(right()).(*networkpb.GetPlayerResponse)
		mutate(resp)
		if err := checkResponse(7, playerOf(7), resp); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := checkResponse(7, playerOf(7), nil); err == nil {
		t.Error("nil response accepted")
	}
}

func TestRecorderCountsEachCallOnce(t *testing.T) {
	rec := newRecorder([]*networkpb.Player{playerOf(0), playerOf(1)})
	start := time.Now()
	resp := &networkpb.GetPlayerResponse{Found: true, Player: playerOf(0)}
	resp.Player.Version = 1
	rec.success(0, start, resp)
	rec.success(0, start, resp) // a second outcome for call 0
	if rec.complete() {
		t.Fatal("complete after two outcomes of the same call")
	}
	rec.failure(1, start, context.DeadlineExceeded)
	if !rec.complete() || rec.ok != 1 || rec.failed != 1 || rec.wrong != 1 {
		t.Errorf("ok %d failed %d wrong %d complete %v; want 1, 1, 1, true", rec.ok, rec.failed, rec.wrong, rec.complete())
	}
}

func TestFaultsPerCall(t *testing.T) {
	for _, c := range []struct {
		calls  int
		faults int64
		want   float64
	}{
		{2000, 3000, 1.5},
		{20000, 0, 0},
		{1000, 123, 0.123},
		{0, 7, 7}, // no calls: divided by 1, as the other per-call figures
	} {
		tr := TrialResult{Calls: c.calls, MinorFaults: c.faults}
		if got := tr.FaultsPerCall(); got != c.want {
			t.Errorf("%d faults over %d calls: FaultsPerCall = %v, want %v", c.faults, c.calls, got, c.want)
		}
	}
}

// TestFaultsColumn renders a made-up shape of three trials per client and checks the
// faults/call figure of each trial and of the medians, in Markdown and JSON.
func TestFaultsColumn(t *testing.T) {
	sh := ShapeResult{Shape: Shape{Calls: 1000, Workers: 2, Batch: 2, Trials: 3}}
	for i, f := range [][2]int64{{1500, 4000}, {3500, 2000}, {2500, 3000}} {
		for j, name := range []string{clientThen, clientBaseline} {
			sh.Trials = append(sh.Trials, TrialResult{
				Client: name, Trial: i + 1, Calls: 1000, OK: 1000, BackendCPU: -1,
				Total: time.Second, CPU: 40 * time.Millisecond, Allocs: 42000, PeakRSS: 10 << 20, PeakReset: true,
				MinorFaults: f[j],
			})
		}
	}
	rep := &Report{Command: "go run ./benchmarks/burst", InProcess: true, Suites: []SuiteResult{{Name: "custom", Shapes: []ShapeResult{sh}}}}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	// Each row's allocs/call, faults/call, peak RSS and errors, by its trial and client.
	want := map[string]string{
		"| 1 | prpc-then |": "| 42.0 | 1.5 | 10.0 MiB | 0 |", "| 1 | grpc-go |": "| 42.0 | 4.0 | 10.0 MiB | 0 |",
		"| 2 | prpc-then |": "| 42.0 | 3.5 | 10.0 MiB | 0 |", "| 2 | grpc-go |": "| 42.0 | 2.0 | 10.0 MiB | 0 |",
		"| 3 | prpc-then |": "| 42.0 | 2.5 | 10.0 MiB | 0 |", "| 3 | grpc-go |": "| 42.0 | 3.0 | 10.0 MiB | 0 |",
		"| **median** | prpc-then |": "| 42.0 | 2.5 | 10.0 MiB | 0 |", "| **median** | grpc-go |": "| 42.0 | 3.0 | 10.0 MiB | 0 |",
	}
	for line := range strings.Lines(md.String()) {
		for row, cells := range want {
			if strings.HasPrefix(line, "| 1,000 | 2×2 "+row) {
				if !strings.Contains(line, cells) {
					t.Errorf("row %s: want %q in %q", row, cells, line)
				}
				delete(want, row)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("Markdown lacks the rows %v:\n%s", slices.Sorted(maps.Keys(want)), md.String())
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got jsonReport
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"minor_faults_per_call": 1.5`) {
		t.Errorf("JSON lacks minor_faults_per_call:\n%s", js.String())
	}
	var faults []float64
	for _, tr := range got.Suites[0].Shapes[0].Results {
		faults = append(faults, tr.FaultsPerCall)
	}
	if want := []float64{1.5, 4, 3.5, 2, 2.5, 3}; !slices.Equal(faults, want) {
		t.Errorf("JSON faults/call = %v, want %v", faults, want)
	}
}

// TestBaselineMetadata checks that -metadata makes the grpc-go baseline capture each response's
// header.
func TestBaselineMetadata(t *testing.T) {
	for _, capture := range []bool{false, true} {
		be, err := startBackend(context.Background(), true, -1, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		if err := seed(context.Background(), be.addr, n); err != nil {
			t.Fatal(err)
		}
		c, err := newBaselineClient(be.addr, Shape{Calls: n, Workers: 1, Batch: 2}, 10*time.Second, n, capture)
		if err != nil {
			t.Fatal(err)
		}
		xuids := make([]string, n)
		players := make([]*networkpb.Player, n)
		for i := range xuids {
			xuids[i], players[i] = xuidOf(i), playerOf(i)
		}
		rec := newRecorder(players)
		if err := c.burst(xuids, rec); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := be.stop(); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if capture {
			want = n
		}
		if got := c.withHeader.Load(); got != want || rec.ok != n {
			t.Errorf("metadata %v: %d of %d calls succeeded, %d captured a header; want %d", capture, rec.ok, n, got, want)
		}
	}
}

// TestPRPCMetadata checks that -metadata makes prpc capture each GetPlayer response's header,
// and that without it prpc captures none, the library's default.
func TestPRPCMetadata(t *testing.T) {
	be, err := startBackend(context.Background(), true, -1, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer be.stop()
	if err := seed(context.Background(), be.addr, 1); err != nil {
		t.Fatal(err)
	}
	for _, metadata := range []bool{false, true} {
		c, err := newPRPCClient(clientThen, be.addr, Shape{Calls: 1, Workers: 1, Batch: 1}, 10*time.Second, 2*time.Millisecond, 1, metadata)
		if err != nil {
			t.Fatal(err)
		}
		p := reactor.Call(c.r, getPlayer, &networkpb.GetPlayerRequest{Xuid: xuidOf(0)}, nil)
		deadline := time.After(10 * time.Second)
		for p.State() == calls.Pending {
			select {
			case <-c.r.Ready():
				c.r.Tick(time.Second)
			case <-deadline:
				t.Fatal("the call did not settle")
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if p.Err() != nil {
			t.Fatalf("metadata %v: %v", metadata, p.Err())
		}
		if got := p.Header() != nil; got != metadata {
			t.Errorf("metadata %v: header captured %v", metadata, got)
		}
	}
}

// TestMetadataFlagsReported checks that the JSON and Markdown reports say when -metadata made
// every client capture response metadata.
func TestMetadataFlagsReported(t *testing.T) {
	tests := []struct {
		flag   string
		inJSON func(jsonReport) bool
		report Report
	}{
		{"-metadata", func(r jsonReport) bool { return r.Metadata }, Report{Metadata: true}},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			rep := runJSON(t, "-inprocess", tt.flag, "-calls", "50", "-workers", "1", "-batch", "2", "-trials", "1", "-warmup", "5")
			if !tt.inJSON(rep) {
				t.Errorf("the JSON report does not say %s was set", tt.flag)
			}
			var with, without strings.Builder
			tt.report.writeSuitesMarkdown(&with)
			(&Report{}).writeSuitesMarkdown(&without)
			if !strings.Contains(with.String(), tt.flag) || strings.Contains(without.String(), tt.flag) {
				t.Errorf("the Markdown report must mention %s exactly when it was set:\nset:\n%s\nunset:\n%s", tt.flag, with.String(), without.String())
			}
		})
	}
}
