package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// TestMain also serves the backend, or the stream scenario's server, when the test binary is
// re-executed as one, as the burst binary is, so that the separate-process paths can be
// tested; and it checks that the tests leave no goroutine behind.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && children[os.Args[1]] != nil {
		if err := children[os.Args[1]](os.Args[2:], os.Stdin, os.Stdout); err != nil {
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

// checkSane checks a report of one custom shape of calls calls per suite in suites (each a
// name and its backend), run by the prpc clients forms and the baseline for one trial: no
// errors, every call answered right, and figures that make sense together (no timing
// bounds: those belong to the benchmark, not to a test).
func checkSane(t *testing.T, rep jsonReport, calls int, suites [][2]string, forms []string) {
	t.Helper()
	if rep.Errors != 0 {
		t.Errorf("report has %d errors", rep.Errors)
	}
	if len(rep.Suites) != len(suites) {
		t.Fatalf("want the suites %q, got %+v", suites, rep.Suites)
	}
	for i, js := range rep.Suites {
		if js.Name != suites[i][0] || js.Backend != suites[i][1] || js.BackendText != backendText(suites[i][1]) || len(js.Shapes) != 1 {
			t.Fatalf("suite %d: %s against %s (%q) with %d shapes; want %s against %s with one",
				i, js.Name, js.Backend, js.BackendText, len(js.Shapes), suites[i][0], suites[i][1])
		}
		checkShapeSane(t, js.Shapes[0], calls, forms)
	}
}

// checkShapeSane checks one shape of checkSane's.
func checkShapeSane(t *testing.T, sh jsonShape, calls int, forms []string) {
	t.Helper()
	if sh.Calls != calls || sh.Workers != 2 || sh.Batch != 2 || sh.Shape.Trials != 1 {
		t.Errorf("shape = %+v, want %d calls, 2×2, 1 trial", sh.Shape, calls)
	}
	var clients []string
	for _, tr := range sh.Results {
		clients = append(clients, tr.Client)
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
	// One trial of each client, in the order they ran.
	if want := append(slices.Clone(forms), clientBaseline); !slices.Equal(slices.Sorted(slices.Values(clients)), slices.Sorted(slices.Values(want))) {
		t.Errorf("clients %q, want one trial of each of %q", clients, want)
	}
	// One ratio and one median per prpc client, each its own.
	var ratioClients, medianClients []string
	for _, r := range sh.Ratios {
		ratioClients = append(ratioClients, r.Client)
	}
	for _, m := range sh.MedianRatios {
		medianClients = append(medianClients, m.Client)
		if !(m.Throughput > 0 && m.P99 > 0) {
			t.Errorf("%s: median ratios missing: %+v", m.Client, m)
		}
	}
	if !slices.Equal(ratioClients, forms) || !slices.Equal(medianClients, forms) {
		t.Errorf("ratios of %q, medians of %q; want one each of %q", ratioClients, medianClients, forms)
	}
}

// The suites -calls runs, by the suites named: against the data service, the fast backend or
// both.
var (
	customData = [][2]string{{customSuite, backendData}}
	customFast = [][2]string{{fastCustomSuite, backendFast}}
	customBoth = [][2]string{{customSuite, backendData}, {fastCustomSuite, backendFast}}
)

// TestBurstInProcess runs a small burst through each prpc client and the baseline, against
// each backend; without -clients, the burst suites run prpc-go and prpc-then.
func TestBurstInProcess(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string // -suite, -clients, if any
		suites [][2]string
		forms  []string // in prpcForms order
	}{
		{name: "default clients", suites: customBoth, forms: []string{clientGo, clientThen}},
		{name: "prpc-go", args: []string{"-suite", "standard", "-clients", "prpc-go,grpc-go"}, suites: customData, forms: []string{clientGo}},
		{name: "prpc-onsettled", args: []string{"-suite", "fast", "-clients", "grpc-go,prpc-onsettled"}, suites: customFast, forms: []string{clientOnSettled}},
		{name: "three forms", args: []string{"-suite", "fast-extreme", "-clients", "prpc-then,grpc-go,prpc-onsettled,prpc-go"}, suites: customFast,
			forms: []string{clientGo, clientOnSettled, clientThen}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := runJSON(t, append(c.args, "-inprocess", "-calls", "200", "-workers", "2", "-batch", "2", "-trials", "1", "-warmup", "20")...)
			if rep.Backend != "in process" {
				t.Errorf("backend = %q", rep.Backend)
			}
			checkSane(t, rep, 200, c.suites, c.forms)
			for _, js := range rep.Suites {
				for _, tr := range js.Shapes[0].Results {
					if !tr.CPUIncludesBack || tr.BackendCPUPerCall != nil {
						t.Errorf("%s: in process, the client's CPU time includes the backend's and the backend has none of its own", tr.Client)
					}
				}
			}
		})
	}
}

// TestBurstInterleaved checks that every trial runs each client once, back to back, in the
// order -clients names them: trial 1 of every client, then trial 2.
func TestBurstInterleaved(t *testing.T) {
	rep := runJSON(t, "-suite", "fast", "-clients", "prpc-then,grpc-go,prpc-go", "-inprocess",
		"-calls", "50", "-workers", "2", "-batch", "2", "-trials", "2", "-warmup", "0")
	var got []string
	for _, tr := range rep.Suites[0].Shapes[0].Results {
		got = append(got, fmt.Sprintf("%d %s", tr.Trial, tr.Client))
	}
	want := []string{"1 prpc-then", "1 grpc-go", "1 prpc-go", "2 prpc-then", "2 grpc-go", "2 prpc-go"}
	if !slices.Equal(got, want) {
		t.Errorf("trials ran in the order %q, want %q", got, want)
	}
	// Each prpc client's ratios are against the pool's trial of the same number.
	for _, r := range rep.Suites[0].Shapes[0].Ratios {
		if r.Client != clientGo && r.Client != clientThen {
			t.Errorf("a ratio of %q", r.Client)
		}
	}
	if n := len(rep.Suites[0].Shapes[0].Ratios); n != 4 {
		t.Errorf("%d ratios, want 2 per prpc client", n)
	}
}

// TestBurstSeparateProcess runs the backends as a child process (this test binary,
// re-executed), against each of them. run returns an error if the child does not exit when
// its stdin closes.
func TestBurstSeparateProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	rep := runJSON(t, "-calls", "100", "-workers", "2", "-batch", "2", "-trials", "1", "-warmup", "10", "-clients", "prpc-then,grpc-go")
	if rep.Backend != "separate process" {
		t.Errorf("backend = %q", rep.Backend)
	}
	checkSane(t, rep, 100, customBoth, []string{clientThen})
	if runtime.GOOS == "linux" {
		for _, js := range rep.Suites {
			for _, tr := range js.Shapes[0].Results {
				if tr.CPUIncludesBack || tr.BackendCPUPerCall == nil || *tr.BackendCPUPerCall <= 0 {
					t.Errorf("%s %s: want the backend's CPU time measured apart", js.Name, tr.Client)
				}
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
		{"-suite", "loop", "-clients", "prpc-go,prpc-go"},
		{"-inprocess", "-pin"},
		{"-timeout", "0s"},
		{"extra"},
		{"-suite", ""},
		{"-suite", "all,huge"},
		{"-suite", "fast,fast-huge"},
		{"-suite", "loop", "-pin", "-inprocess"},
		{"-placements", "unpinned,pinned", "-inprocess"},
		{"-placements", "sideways"},
		{"-pin", "-placements", "unpinned,pinned"},
		{"-suite", "all,loop", "-calls", "100"},
		{"-suite", "fast,loop", "-calls", "100"},
		{"-suite", "policies", "-calls", "100"},
		{"-suite", "policies", "-calls", "100", "-workers", "2"},
		{"-suite", "loop,policies", "-calls", "100"},
		{"-markdown", filepath.Join("no", "such", "dir", "report.md"), "-inprocess", "-calls", "10", "-trials", "1", "-warmup", "0"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out, &out); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestClientLists(t *testing.T) {
	all := []string{clientGo, clientOnSettled, clientThen, clientGoMetrics, clientBaseline}
	for _, c := range []struct {
		list      string
		wantBurst []string
		wantLoop  []string
		wantErr   string
	}{
		{list: "", wantBurst: []string{clientGo, clientGoMetrics, clientThen, clientBaseline}, wantLoop: all},
		{list: "prpc-go-metrics,grpc-go,prpc-go", wantBurst: []string{clientGoMetrics, clientBaseline, clientGo}, wantLoop: []string{clientGoMetrics, clientBaseline, clientGo}},
		{list: "prpc-go,grpc-go", wantBurst: []string{clientGo, clientBaseline}, wantLoop: []string{clientGo, clientBaseline}},
		{list: "grpc-go,prpc-onsettled", wantBurst: []string{clientBaseline, clientOnSettled}, wantLoop: []string{clientBaseline, clientOnSettled}},
		// Several prpc forms, for the burst suites as for the loop suite.
		{list: "prpc-then,prpc-go,grpc-go", wantBurst: []string{clientThen, clientGo, clientBaseline}, wantLoop: []string{clientThen, clientGo, clientBaseline}},
		{list: "prpc-then,prpc-onsettled,prpc-go,grpc-go", wantBurst: []string{clientThen, clientOnSettled, clientGo, clientBaseline},
			wantLoop: []string{clientThen, clientOnSettled, clientGo, clientBaseline}},
		{list: "prpc-onsettled", wantBurst: []string{clientOnSettled}, wantLoop: []string{clientOnSettled}},
		{list: "prpc,grpc-go", wantErr: `-clients "prpc,grpc-go": unknown client "prpc"; want prpc-go, prpc-onsettled, prpc-then, prpc-go-metrics or grpc-go`},
		{list: "prpc-go,", wantErr: `-clients "prpc-go,": unknown client ""`},
		{list: "grpc-go,prpc-go,grpc-go", wantErr: `-clients "grpc-go,prpc-go,grpc-go": grpc-go is named twice`},
		{list: "prpc-go,prpc-then,prpc-go", wantErr: `-clients "prpc-go,prpc-then,prpc-go": prpc-go is named twice`},
	} {
		burst, loop, err := clientLists(c.list)
		if c.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
				t.Errorf("clientLists(%q) = %v; want error %q", c.list, err, c.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(burst, c.wantBurst) || !slices.Equal(loop, c.wantLoop) {
			t.Errorf("clientLists(%q) = %q, %q, %v; want %q, %q", c.list, burst, loop, err, c.wantBurst, c.wantLoop)
		}
	}
	// The flags reach the burst suites whole: several prpc forms, with a burst suite named.
	o, err := parseFlags([]string{"-suite", "all,loop", "-clients", "prpc-onsettled,grpc-go,prpc-go"}, &bytes.Buffer{})
	if want := []string{clientOnSettled, clientBaseline, clientGo}; err != nil || !slices.Equal(o.burstClients, want) || !slices.Equal(o.loopClients, want) {
		t.Errorf("-clients prpc-onsettled,grpc-go,prpc-go: burst %q, loop %q, %v; want %q for both", o.burstClients, o.loopClients, err, want)
	}
}

// suiteShapes is a suite's name, backend and shapes, for comparing suites.
type suiteShapes struct {
	name, backend string
	shapes        []Shape
}

func TestSuites(t *testing.T) {
	standard := []Shape{{1000, 2, 2, 3}, {5000, 4, 4, 3}, {6000, 6, 4, 3}}
	extreme := []Shape{{20000, 6, 16, 3}}
	for _, c := range []struct {
		args []string
		want []suiteShapes
	}{
		{args: nil, want: []suiteShapes{
			{"standard", backendData, standard}, {"extreme", backendData, extreme},
			{"fast-standard", backendFast, standard}, {"fast-extreme", backendFast, extreme},
		}},
		{args: []string{"-suite", "fast"}, want: []suiteShapes{{"fast-standard", backendFast, standard}, {"fast-extreme", backendFast, extreme}}},
		{args: []string{"-suite", "extreme", "-trials", "5"}, want: []suiteShapes{{"extreme", backendData, []Shape{{20000, 6, 16, 5}}}}},
		{args: []string{"-suite", "fast-extreme,standard", "-trials", "2"}, want: []suiteShapes{
			{"standard", backendData, []Shape{{1000, 2, 2, 2}, {5000, 4, 4, 2}, {6000, 6, 4, 2}}},
			{"fast-extreme", backendFast, []Shape{{20000, 6, 16, 2}}},
		}},
		// -calls: one shape per backend the suites named use.
		{args: []string{"-calls", "100"}, want: []suiteShapes{
			{customSuite, backendData, []Shape{{100, 2, 4, 3}}}, {fastCustomSuite, backendFast, []Shape{{100, 2, 4, 3}}},
		}},
		{args: []string{"-suite", "fast-standard,fast-extreme", "-calls", "100", "-workers", "3"}, want: []suiteShapes{
			{fastCustomSuite, backendFast, []Shape{{100, 3, 4, 3}}},
		}},
		{args: []string{"-suite", "standard,extreme", "-calls", "100", "-trials", "1"}, want: []suiteShapes{
			{customSuite, backendData, []Shape{{100, 2, 4, 1}}},
		}},
		{args: []string{"-suite", "loop"}, want: nil},
		{args: []string{"-suite", "policies"}, want: nil},
	} {
		o, err := parseFlags(c.args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		var got []suiteShapes
		for _, s := range o.suites() {
			got = append(got, suiteShapes{s.Name, s.Backend, s.Shapes})
		}
		if !slices.EqualFunc(got, c.want, func(a, b suiteShapes) bool {
			return a.name == b.name && a.backend == b.backend && slices.Equal(a.shapes, b.shapes)
		}) {
			t.Errorf("%q: suites %+v, want %+v", c.args, got, c.want)
		}
	}
	if standardSuite.Shapes[0].Trials != 3 || fastStandardSuite.Shapes[0].Trials != 3 {
		t.Error("-trials changed the suite's own table")
	}
}

func TestPlayersNeeded(t *testing.T) {
	fast := Suite{Name: "fast-standard", Backend: backendFast, Shapes: []Shape{{Calls: 1000}, {Calls: 6000}}}
	data := Suite{Name: "standard", Backend: backendData, Shapes: []Shape{{Calls: 5000}}}
	for _, c := range []struct {
		name   string
		suites []Suite
		loop   []Shape
		warmup int
		want   map[string]int
	}{
		{"fast alone: nothing to seed", []Suite{fast}, nil, 1000, map[string]int{backendFast: 6000}},
		{"data alone: no fast backend", []Suite{data}, nil, 1000, map[string]int{backendData: 5000}},
		{"both", []Suite{data, fast}, nil, 100, map[string]int{backendData: 5000, backendFast: 6000}},
		{"the loop suite uses the data service", []Suite{fast}, []Shape{{Calls: 20000}}, 100, map[string]int{backendData: 20000, backendFast: 6000}},
		{"warm-ups longer than the bursts", []Suite{data}, nil, 8000, map[string]int{backendData: 8000}},
	} {
		if got := playersNeeded(c.suites, c.loop, c.warmup); !maps.Equal(got, c.want) {
			t.Errorf("%s: playersNeeded = %v, want %v", c.name, got, c.want)
		}
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
		{list: "all", want: []string{"standard", "extreme", "fast-standard", "fast-extreme"}},
		{list: "fast", want: []string{"fast-standard", "fast-extreme"}},
		{list: "loop", want: []string{"loop"}},
		{list: "all,loop", want: []string{"standard", "extreme", "fast-standard", "fast-extreme", "loop"}},
		{list: "loop,extreme,standard", want: []string{"standard", "extreme", "loop"}},
		{list: "fast-extreme,loop,fast-standard", want: []string{"fast-standard", "fast-extreme", "loop"}},
		{list: "fast,extreme,fast-extreme", want: []string{"extreme", "fast-standard", "fast-extreme"}},
		{list: "extreme,all,extreme", want: []string{"standard", "extreme", "fast-standard", "fast-extreme"}},
		{list: "policies", want: []string{"policies"}},
		{list: "policies,loop,all", want: []string{"standard", "extreme", "fast-standard", "fast-extreme", "loop", "policies"}},
		{list: "all,huge", wantErr: `-suite "all,huge": unknown suite "huge"; want standard, extreme, fast-standard, fast-extreme, fast, all, loop or policies, or a comma-separated list of them`},
		{list: "fast-", wantErr: `-suite "fast-": unknown suite "fast-"`},
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
		be, err := startBackend(context.Background(), true, -1, 0, io.Discard)
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
	be, err := startBackend(context.Background(), true, -1, 0, io.Discard)
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
			suites := []SuiteResult{{Name: "custom"}}
			tt.report.Suites = suites
			if err := tt.report.WriteMarkdown(&with); err != nil {
				t.Fatal(err)
			}
			if err := (&Report{Suites: suites}).WriteMarkdown(&without); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(with.String(), tt.flag) || strings.Contains(without.String(), tt.flag) {
				t.Errorf("the Markdown report must mention %s exactly when it was set:\nset:\n%s\nunset:\n%s", tt.flag, with.String(), without.String())
			}
		})
	}
}
