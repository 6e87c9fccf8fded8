package main

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestPoliciesSuite runs the policies suite alone, shortened, through runPlacement: it starts
// no backend, runs each case the trials asked for, and its report has every figure of every
// case, no errors, and renders as a document of the policies suite alone.
func TestPoliciesSuite(t *testing.T) {
	o, err := parseFlags([]string{"-suite", "policies", "-policy-trials", "2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.suites()) > 0 || len(o.loopShapes()) > 0 || len(o.policies) != 6 {
		t.Fatalf("-suite policies: %d burst suites, %d loop shapes, %d scenarios; want the six scenarios alone",
			len(o.suites()), len(o.loopShapes()), len(o.policies))
	}
	o.policies = policyScenarios(true)
	var stderr bytes.Buffer
	rep, err := runPlacement(context.Background(), o, "go run ./benchmarks/burst -suite policies -policy-trials 2", false, &stderr)
	if err != nil {
		t.Fatalf("runPlacement: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "data service at") {
		t.Errorf("the policies suite alone started the burst suites' backends:\n%s", stderr.String())
	}
	if len(rep.Suites) > 0 || rep.Loop != nil || len(rep.Policies) != len(o.policies) || rep.Errors() != 0 {
		t.Fatalf("report: %d burst suites, loop %v, %d scenarios, %d errors; want the %d scenarios alone, without errors",
			len(rep.Suites), rep.Loop != nil, len(rep.Policies), rep.Errors(), len(o.policies))
	}
	for i, p := range rep.Policies {
		s := o.policies[i]
		if p.Name != s.Name || p.Trials != 2 || len(p.Cases) != len(s.Cases) {
			t.Fatalf("scenario %d: %s, %d trials, %d cases; want %s, 2 trials, %d cases", i, p.Name, p.Trials, len(p.Cases), s.Name, len(s.Cases))
		}
		for _, c := range p.Cases {
			if len(c.Trials) != 2 {
				t.Errorf("%s %s: %d trials, want 2", p.Name, c.Name, len(c.Trials))
			}
			for _, tr := range c.Trials {
				if len(tr.Figures) != len(p.Figures) {
					t.Errorf("%s %s: %d figures, want %d", p.Name, c.Name, len(tr.Figures), len(p.Figures))
				}
			}
			got := 0
			for line := range strings.Lines(stderr.String()) {
				if f := strings.Fields(line); len(f) > 3 && f[1] == suitePolicies && f[2] == p.Name && f[3] == c.Name {
					got++
				}
			}
			if got != 2 {
				t.Errorf("%s %s: %d progress lines, want one per trial:\n%s", p.Name, c.Name, got, stderr.String())
			}
		}
	}
	scenario := map[string]PolicyResult{}
	for _, p := range rep.Policies {
		scenario[p.Name] = p
	}
	// Without coalescing, every call of a burst reaches the server.
	if off := scenario["coalesce"].Cases[0]; off.Name != "off" || off.figure(0).min != float64(50) || off.figure(0).max != float64(50) {
		t.Errorf("coalesce off: backend calls per burst %+v, want 50, the short burst, in every trial", off.figure(0))
	}
	// Spread arrivals, in short: every read succeeds; without coalescing each is a transport
	// call, with it none joins another's in no trial.
	for _, c := range scenario["coalesce-spread"].Cases {
		backend, ok, coalesced := c.figure(0), c.figure(1), c.figure(2)
		if ok.min != 40 || ok.max != 40 {
			t.Errorf("coalesce-spread %s: calls OK %+v, want the 40 short reads in every trial", c.Name, ok)
		}
		if off := strings.HasSuffix(c.Name, "/off"); off != (backend.min == 40 && coalesced.max == 0) {
			t.Errorf("coalesce-spread %s: backend calls %+v, Coalesced %+v; want 40 and 0 in every trial without coalescing alone", c.Name, backend, coalesced)
		}
	}
	// Unhedged, no call is hedged and none is sent twice; hedged, the slow calls are.
	for _, c := range scenario["hedge"].Cases {
		sent, extra := c.figure(3), c.figure(2)
		if unhedged := c.Name == "unhedged"; unhedged != (sent.max == 0) || unhedged != (extra.max == 0) {
			t.Errorf("hedge %s: hedges sent %+v, extra load %+v; want both 0 in every trial unhedged alone", c.Name, sent, extra)
		}
	}
	// Failover: the kill breaks calls in every trial; unhedged, gRPC's retry fails them over.
	for _, c := range scenario["failover"].Cases {
		ok, unavailable, broken := c.figure(0), c.figure(1), c.figure(3)
		if broken.min == 0 {
			t.Errorf("failover %s: serving when killed %+v, want a call at least in every trial", c.Name, broken)
		}
		// gRPC's retry throttle may refuse to retry some of the broken calls on a loaded
		// machine: at most those fail.
		if c.Name == "unhedged" && (ok.min < 60-broken.max || unavailable.max > broken.max) {
			t.Errorf("failover unhedged: calls OK %+v, Unavailable %+v, broken %+v; want every read OK but for some the kill broke", ok, unavailable, broken)
		}
	}
	// Overload, in short: the calls after the load drops are 20; the adaptive limit is
	// reported under AdaptiveLimit{} and never with fixed lanes.
	for _, c := range scenario["overload"].Cases {
		after, limit := c.figure(1), c.figure(9)
		if after.max > 20 {
			t.Errorf("overload %s: OK after the load drops %+v, more than the 20 short calls", c.Name, after)
		}
		if strings.HasSuffix(c.Name, "/adaptive") && limit.min <= 0 || strings.Contains(c.Name, "/fixed-") && limit.max != 0 {
			t.Errorf("overload %s: InFlightLimit %+v, want one under AdaptiveLimit{} and none with fixed lanes", c.Name, limit)
		}
	}
	var doc bytes.Buffer
	if err := (Run{rep}).WriteDocument(&doc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Performance report: call policies\n", "## Call policies\n", "### Coalesced reads\n", "### Overload\n", "### Hedged reads\n",
		"### Coalesced reads under spread arrivals\n", "### Hedged reads with a backend killed\n",
		"| drops-cancelled/adaptive | drops-cancelled | AdaptiveLimit{} | 4×8 | 2 |", "| serves-cancelled/fixed-4 | serves-cancelled | Workers 1, BatchSize 4, AdaptiveLimit{Disabled: true} | 1×4 | 2 |",
		"\nGoodput by 100 ms: ", "| case | backend | Config | lanes | 0–100 ms | 100–200 ms | 200–300 ms | 300–400 ms | 400–500 ms |\n", "| p95 | on | 0 ms (floor) | 0.95 | 2 |",
		"| per-player/on | per player, one every 0.25 ms | 40 | on | 2 |", "| per-tick/off | per tick, 10 every 5 ms | 40 | off | 2 |",
		"| p95-nonfatal-unavailable | on | 0.95 | Unavailable | 2 |", "| p95 | on | 0.95 | default | 2 |"} {
		if !strings.Contains(doc.String(), want) {
			t.Errorf("the document lacks %q:\n%s", want, doc.String())
		}
	}
	for _, unwanted := range []string{"## Summary", "- Backend:", "## Burst suites"} {
		if strings.Contains(doc.String(), unwanted) {
			t.Errorf("the document of the policies suite alone has %q:\n%s", unwanted, doc.String())
		}
	}
}

// TestRunPoliciesInterleaves checks that runPolicies runs trial 1 of every case of a scenario,
// then trial 2, and stops at the first trial that fails, naming it.
func TestRunPoliciesInterleaves(t *testing.T) {
	var ran []string
	errBroken := errors.New("broken")
	caseOf := func(name string, failOn int) policyCase {
		n := 0
		return policyCase{Name: name, Labels: []string{name}, trial: func() (PolicyTrial, error) {
			n++
			ran = append(ran, name+string(rune('0'+n)))
			if n == failOn {
				return PolicyTrial{}, errBroken
			}
			return PolicyTrial{Figures: []float64{float64(n)}, Series: [][]float64{{float64(n), 10 * float64(n)}}, Errors: n - 1}, nil
		}}
	}
	scenario := func(failOn int) []policyScenario {
		return []policyScenario{{Name: "s", Labels: []string{"label"}, Figures: []policyFigure{{Key: "k", Head: "k"}},
			Series: []policySeries{{Key: "by", Head: "By point.", Points: []string{"p1", "p2"}}},
			Cases:  []policyCase{caseOf("a", 0), caseOf("b", failOn)}}}
	}
	res, err := runPolicies(scenario(0), 3, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b1", "a2", "b2", "a3", "b3"}; !slices.Equal(ran, want) {
		t.Errorf("trials ran in the order %q, want %q", ran, want)
	}
	if got := res[0].Errors(); got != 6 {
		t.Errorf("errors %d, want 0+1+2 per case, 6", got)
	}
	if s := res[0].Cases[1].figure(0); s != (spread{median: 2, min: 1, max: 3}) {
		t.Errorf("case b: spread %+v, want median 2 of 1…3", s)
	}
	if m := res[0].Cases[1].seriesMedian(0); !slices.Equal(m, []float64{2, 20}) {
		t.Errorf("case b: series medians %v, want [2 20]", m)
	}
	ran = nil
	if _, err := runPolicies(scenario(2), 3, &bytes.Buffer{}); !errors.Is(err, errBroken) || !strings.Contains(err.Error(), "s b trial 2") {
		t.Errorf("runPolicies with a failing trial: %v, want an error naming s b trial 2", err)
	}
	if want := []string{"a1", "b1", "a2", "b2"}; !slices.Equal(ran, want) {
		t.Errorf("trials ran in the order %q, want %q, stopping at the failure", ran, want)
	}
}

// TestRunPoliciesChecksTrials checks that runPolicies stops at a trial whose figures or
// series do not match its scenario's, naming it.
func TestRunPoliciesChecksTrials(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   PolicyTrial
		want string
	}{
		{"a figure short", PolicyTrial{Series: [][]float64{{1, 2}}}, "0 figures and 1 series, want 1 and 1"},
		{"no series", PolicyTrial{Figures: []float64{1}}, "1 figures and 0 series, want 1 and 1"},
		{"a point short", PolicyTrial{Figures: []float64{1}, Series: [][]float64{{1}}}, "series by: 1 values, want one per point, 2"},
	} {
		s := []policyScenario{{Name: "s", Labels: []string{"label"}, Figures: []policyFigure{{Key: "k", Head: "k"}},
			Series: []policySeries{{Key: "by", Head: "By point.", Points: []string{"p1", "p2"}}},
			Cases:  []policyCase{{Name: "a", Labels: []string{"a"}, trial: func() (PolicyTrial, error) { return tc.tr, nil }}}}}
		if _, err := runPolicies(s, 1, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "s a trial 1: "+tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, "s a trial 1: "+tc.want)
		}
	}
}

// TestPolicySeriesView checks a series' table: a row per case, its labels, then the median
// of each point over the trials, "–" for a case without trials.
func TestPolicySeriesView(t *testing.T) {
	p := PolicyResult{Name: "s", Labels: []string{"label"}, Figures: []policyFigure{{Key: "k", Head: "k"}},
		Series: []policySeries{{Key: "by", Head: "By point.", Points: []string{"p1", "p2"}, Digits: 1}},
		Cases: []PolicyCaseResult{
			{Name: "a", Labels: []string{"x"}, Trials: []PolicyTrial{
				{Figures: []float64{1}, Series: [][]float64{{1, 1500}}},
				{Figures: []float64{1}, Series: [][]float64{{3, 1000}}},
				{Figures: []float64{1}, Series: [][]float64{{2, 2000}}},
			}},
			{Name: "b", Labels: []string{"y"}},
		}}
	v := p.view()
	if len(v.Series) != 1 {
		t.Fatalf("%d series views, want 1", len(v.Series))
	}
	sv := v.Series[0]
	if sv.Head != "By point. Each cell: the median over the case's trials." {
		t.Errorf("head %q", sv.Head)
	}
	want := [][]string{{"a", "x", "2.0", "1500.0"}, {"b", "y", "–", "–"}}
	if !slices.Equal(sv.Table.Head, []string{"case", "label", "p1", "p2"}) || len(sv.Table.Rows) != 2 ||
		!slices.Equal(sv.Table.Rows[0], want[0]) || !slices.Equal(sv.Table.Rows[1], want[1]) {
		t.Errorf("table %v %v, want rows %v", sv.Table.Head, sv.Table.Rows, want)
	}
}

func TestSpanText(t *testing.T) {
	for _, c := range []struct {
		from, to time.Duration
		want     string
	}{
		{0, time.Second, "0–1 s"},
		{5 * time.Second, 6 * time.Second, "5–6 s"},
		{100 * time.Millisecond, 200 * time.Millisecond, "100–200 ms"},
		{500 * time.Millisecond, time.Second, "500–1000 ms"},
	} {
		if got := spanText(c.from, c.to); got != c.want {
			t.Errorf("spanText(%v, %v) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
}

func TestPolicyFigureCell(t *testing.T) {
	for _, c := range []struct {
		f    policyFigure
		s    spread
		n    int
		want string
	}{
		{policyFigure{Digits: 2}, spread{21.456, 20, 23.5}, 3, "21.46 (20.00–23.50)"},
		{policyFigure{Digits: 1}, spread{16.4, 16.4, 16.4}, 1, "16.4"},
		{policyFigure{}, spread{1234.5, 999.4, 20000}, 3, "1,235 (999–20,000)"},
		{policyFigure{}, spread{0, 0, 0}, 3, "0 (0–0)"},
		{policyFigure{noneIfZero: true}, spread{0, 0, 0}, 3, "–"},
		{policyFigure{noneIfZero: true}, spread{4, 0, 5}, 3, "4 (0–5)"},
		{policyFigure{}, spread{}, 0, "–"},
	} {
		if got := c.f.cell(c.s, c.n); got != c.want {
			t.Errorf("cell(%+v, %+v, %d) = %q, want %q", c.f, c.s, c.n, got, c.want)
		}
	}
}

func TestDurationText(t *testing.T) {
	for d, want := range map[string]string{"3s": "3 s", "20ms": "20 ms", "1500ms": "1500 ms", "500us": "0.5 ms"} {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := durationText(dur); got != want {
			t.Errorf("durationText(%v) = %q, want %q", dur, got, want)
		}
	}
}

// TestPoliciesPerPlacement checks which scenarios each placement runs: the unpinned one every
// scenario; with both placements, the pinned one only those that can run their server apart
// from the client, the stream scenario, whatever its cases; the pinned one alone every scenario.
func TestPoliciesPerPlacement(t *testing.T) {
	all := []string{"coalesce", "coalesce-spread", "overload", "hedge", "failover", "streams"}
	for _, tc := range []struct {
		placements string
		pinned     bool
		want       []string
	}{
		{"unpinned", false, all},
		{"pinned", true, all},
		{"unpinned,pinned", false, all},
		{"unpinned,pinned", true, []string{"streams"}},
	} {
		o, err := parseFlags([]string{"-suite", "policies", "-placements", tc.placements}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range o.policiesIn(tc.pinned) {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("-placements %s, pinned %v: runs %q, want %q", tc.placements, tc.pinned, got, tc.want)
		}
	}
	if o, err := parseFlags([]string{"-suite", "standard", "-placements", "unpinned,pinned"}, &bytes.Buffer{}); err != nil || len(o.policiesIn(false)) > 0 || len(o.policiesIn(true)) > 0 {
		t.Errorf("-suite standard runs the policies suite (%v)", err)
	}
}

// TestStreamScenarioApart checks the stream scenario run apart: its server named as a process
// of its own, every case of policybench.StreamCases in order, and each trial receiving from
// the address given rather than from a server of its own, so that it fails once that server
// has stopped.
func TestStreamScenarioApart(t *testing.T) {
	base := policybench.DefaultStream().Short()
	local := streamScenario(base)
	if local.apart == nil || !strings.HasPrefix(local.About, "A server in this process sends") {
		t.Fatalf("the scenario in process: apart %v, about %q", local.apart != nil, local.About)
	}
	srv, err := policybench.StartServer(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := local.apart(srv.Addr())
	if s.apart != nil || s.Name != local.Name || !strings.HasPrefix(s.About, "A server in a process of its own") ||
		!strings.Contains(s.About, "The server serves every trial of the placement; each trial starts the client and receives") {
		t.Errorf("the scenario apart: apart %v, name %q, about %q", s.apart != nil, s.Name, s.About)
	}
	var want, got []string
	for _, c := range policybench.StreamCases(base) {
		want = append(want, c.Name)
	}
	for _, c := range s.Cases {
		got = append(got, c.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("cases %q, want StreamCases' %q", got, want)
	}
	for _, c := range s.Cases {
		if tr, err := c.trial(); err != nil || tr.Figures[0] <= 0 {
			t.Errorf("%s against the server apart: %v, figures %v", c.Name, err, tr.Figures)
		}
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cases {
		if _, err := c.trial(); err == nil {
			t.Errorf("%s: no error once the server apart has stopped; the trial did not receive from it", c.Name)
		}
	}
}

// TestRunPolicySuitePinned runs the stream scenario, shortened, as a pinned placement does,
// without pinning this process: against a server in a child process (this test binary,
// re-executed) pinned to CPU 1, whose affinity the report records, every case and trial
// without errors.
func TestRunPolicySuitePinned(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	if !pinSupported || runtime.NumCPU() < 2 {
		t.Skip("pins a process to CPU 1")
	}
	rep := &Report{Pinned: true}
	// The child's stderr is copied to stderr as it is in run, through a syncWriter: a
	// bytes.Buffer itself would be read into (ReadFrom) by the copying goroutine, which loses
	// what others write meanwhile.
	var stderr bytes.Buffer
	scenarios := []policyScenario{streamScenario(policybench.DefaultStream().Short())}
	if err := runPolicySuite(rep, scenarios, 2, "pinned", &syncWriter{w: &stderr}); err != nil {
		t.Fatalf("runPolicySuite: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "policies suite, the stream's server in process ") {
		t.Errorf("progress does not name the stream server's process:\n%s", stderr.String())
	}
	if len(rep.Policies) != 1 || rep.Errors() != 0 || !strings.HasPrefix(rep.Policies[0].About, "A server in a process of its own") {
		t.Fatalf("report: %d scenarios, %d errors; want the stream scenario apart, without errors", len(rep.Policies), rep.Errors())
	}
	for _, c := range rep.Policies[0].Cases {
		if len(c.Trials) != 2 {
			t.Errorf("%s: %d trials, want 2", c.Name, len(c.Trials))
		}
	}
	if !strings.HasPrefix(rep.PolicyServerAffinity, "1 (all ") {
		t.Errorf("the stream server's affinity %q, want every thread on CPU 1", rep.PolicyServerAffinity)
	}
}

// TestPoliciesSectionPerPlacement checks the policies section's opening per placement: in
// process alone when unpinned; the server apart named, with its CPUs and the client's, when
// pinned alone; and, when the other scenarios ran in the unpinned placement, why they are
// missing.
func TestPoliciesSectionPerPlacement(t *testing.T) {
	inProcess := "each trial starts loopback servers of its own, in the client's process, and a fresh reactor. "
	apart := "each trial starts loopback servers of its own, in the client's process, and a fresh reactor, but for the scenarios whose server can run apart from the client, " +
		"which receive from a server in a process of its own, the burst binary re-executed, with its threads on CPU 1 and the client's, the host's thread among them, on CPU 0. "
	elsewhere := "The policies suite's scenarios whose server can run apart from the client (benchmarks/internal/policybench): each receives from a server in a process of its own, " +
		"the burst binary re-executed, with its threads on CPU 1 and the client's, the host's thread among them, on CPU 0. "
	missing := "The other scenarios start their servers in the client's process, where pinning cannot separate them, so they run in the unpinned placement only."
	var placed []policyScenario
	for _, s := range policyScenarios(false) {
		if s.apart != nil {
			s = s.apart("127.0.0.1:1")
		}
		placed = append(placed, s)
	}
	for _, tc := range []struct {
		name      string
		rep       Report
		want      string
		unwanted  []string
		scenarios int
	}{
		{"unpinned", Report{Policies: madeUpPolicies(policyScenarios(false))}, inProcess, []string{apart, elsewhere, missing}, 6},
		{"pinned alone", Report{Pinned: true, ClientAffinity: "0", PolicyServerAffinity: "1", Policies: madeUpPolicies(placed)}, apart, []string{inProcess, elsewhere, missing}, 6},
		{"pinned beside unpinned", Report{Pinned: true, ClientAffinity: "0", PolicyServerAffinity: "1", PoliciesElsewhere: true, Policies: madeUpPolicies(pinnedApart())},
			elsewhere, []string{inProcess, apart}, 1},
	} {
		var md bytes.Buffer
		if err := (&tc.rep).WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		doc := md.String()
		if !strings.Contains(doc, tc.want) || tc.rep.PoliciesElsewhere != strings.Contains(doc, missing) {
			t.Errorf("%s: the policies section lacks %q (or says wrongly whether scenarios are missing):\n%s", tc.name, tc.want, doc)
		}
		for _, u := range tc.unwanted {
			if strings.Contains(doc, u) {
				t.Errorf("%s: the policies section has %q", tc.name, u)
			}
		}
		if n := strings.Count(doc, "\n### "); n != tc.scenarios {
			t.Errorf("%s: %d scenarios rendered, want %d", tc.name, n, tc.scenarios)
		}
	}
}
