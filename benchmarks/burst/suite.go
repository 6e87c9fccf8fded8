package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// Shape is one burst configuration: Calls calls submitted at once to a client with Workers ×
// Batch calls in flight at most, measured Trials times per client.
type Shape struct {
	Calls   int `json:"calls"`
	Workers int `json:"workers"`
	Batch   int `json:"batch"`
	Trials  int `json:"trials"`
}

func (s Shape) String() string {
	return fmt.Sprintf("%s calls, %d×%d", thousands(s.Calls), s.Workers, s.Batch)
}

// Suite is a named list of shapes, run against one backend: backendData or backendFast.
type Suite struct {
	Name    string
	Backend string
	Shapes  []Shape
}

// The suites of pRPC's published tables (tests/benchmark_prpc.php and
// tests/test_extreme_rps.php), against the data service. pRPC ran each standard shape once;
// here every shape runs three trials per client so that the ratios do not rest on one
// sample. The fast suites run the same shapes against the fast backend.
var (
	standardSuite = Suite{Name: "standard", Backend: backendData, Shapes: []Shape{
		{Calls: 1000, Workers: 2, Batch: 2, Trials: 3},
		{Calls: 5000, Workers: 4, Batch: 4, Trials: 3},
		{Calls: 6000, Workers: 6, Batch: 4, Trials: 3},
	}}
	extremeSuite = Suite{Name: "extreme", Backend: backendData, Shapes: []Shape{
		{Calls: 20000, Workers: 6, Batch: 16, Trials: 3},
	}}
	fastStandardSuite = Suite{Name: "fast-standard", Backend: backendFast, Shapes: slices.Clone(standardSuite.Shapes)}
	fastExtremeSuite  = Suite{Name: "fast-extreme", Backend: backendFast, Shapes: slices.Clone(extremeSuite.Shapes)}
	// burstSuites are the burst suites, in running order.
	burstSuites = []Suite{standardSuite, extremeSuite, fastStandardSuite, fastExtremeSuite}
)

// client is one way of running the burst: prpc in one form of submission, or the plain
// grpc-go baseline.
type client interface {
	// Name names the client in the report.
	Name() string
	// burst submits one GetPlayer call per xuid, in order, from the calling goroutine (the
	// loop goroutine), then delivers every outcome to rec on the same goroutine. It returns
	// once rec has an outcome for every call, or an error if outcomes stop arriving.
	burst(xuids []string, rec *recorder) error
	// Close releases the client.
	Close() error
}

// Client names: prpc's, one per form of submission (prpcclient.go), prpc-go with the metrics
// adapters (metricsclient.go), and the grpc-go baseline's.
const (
	clientGo        = "prpc-go"
	clientOnSettled = "prpc-onsettled"
	clientThen      = "prpc-then"
	clientGoMetrics = "prpc-go-metrics"
	clientBaseline  = "grpc-go"
)

// prpcForms are prpc's clients, one per form of submission, in the order the reports list
// them: those the reports compare with the baseline.
var prpcForms = []string{clientGo, clientOnSettled, clientThen}

// isPRPC reports whether the client named name is one of prpc's: a form of submission, or
// clientGoMetrics.
func isPRPC(name string) bool { return slices.Contains(prpcForms, name) || name == clientGoMetrics }

// TrialResult is the outcome of one trial of one client.
type TrialResult struct {
	Client string
	Trial  int
	Calls  int
	OK     int // right responses
	Failed int // failed calls
	Wrong  int // wrong responses and duplicate outcomes
	Total  time.Duration
	Lat    Latency
	// CPU is the user+system CPU time of the client process over the trial; with the backend
	// in-process it includes the backend's.
	CPU time.Duration
	// BackendCPU is the backend process's CPU time over the trial, or -1 if unknown.
	BackendCPU time.Duration
	// PeakRSS is the client process's peak resident set in bytes: since the start of the
	// trial if PeakReset, else since the process started. 0 if unknown.
	PeakRSS   int64
	PeakReset bool
	GCs       uint32
	// Allocs and AllocBytes count the client process's heap allocations over the trial.
	Allocs, AllocBytes uint64
	// MinorFaults is the client process's minor page faults over the trial (getrusage
	// ru_minflt; 0 if unknown): mostly first touches of fresh pages, as when the heap grows.
	// With the backend in-process it includes the backend's.
	MinorFaults int64
	// Scrapes is how many times the metrics client's scraper read both adapters over the
	// trial; 0 for the other clients.
	Scrapes  int
	FirstErr string
}

// Errors is the number of calls that failed or were answered wrongly.
func (t TrialResult) Errors() int { return t.Failed + t.Wrong }

// Throughput is calls per second over the trial's total time.
func (t TrialResult) Throughput() float64 {
	return float64(t.Calls) / max(t.Total.Seconds(), 1e-9)
}

// CPUPerCall is the client process's CPU time per call.
func (t TrialResult) CPUPerCall() time.Duration { return t.CPU / time.Duration(max(t.Calls, 1)) }

// AllocsPerCall is the client process's heap allocations per call.
func (t TrialResult) AllocsPerCall() float64 { return float64(t.Allocs) / float64(max(t.Calls, 1)) }

// AllocBytesPerCall is the client process's heap bytes allocated per call.
func (t TrialResult) AllocBytesPerCall() float64 {
	return float64(t.AllocBytes) / float64(max(t.Calls, 1))
}

// FaultsPerCall is the client process's minor page faults per call.
func (t TrialResult) FaultsPerCall() float64 {
	return float64(t.MinorFaults) / float64(max(t.Calls, 1))
}

// BackendCPUPerCall is the backend process's CPU time per call, or -1 if unknown.
func (t TrialResult) BackendCPUPerCall() time.Duration {
	if t.BackendCPU < 0 {
		return -1
	}
	return t.BackendCPU / time.Duration(max(t.Calls, 1))
}

// ShapeResult holds every trial of one shape, in the order they ran.
type ShapeResult struct {
	Shape  Shape
	Trials []TrialResult
}

// runner runs shapes against the backends of one placement.
type runner struct {
	// addr is the data service's address, which the loop suite uses.
	addr    string
	backend *backend
	// burstClients are the clients the burst suites run, loopClients those the loop suite
	// runs, each in the order of -clients; defaultClients is true when -clients did not
	// name them (see clientsOf).
	burstClients, loopClients []string
	defaultClients            bool
	timeout                   time.Duration
	budget                    time.Duration
	warmup                    int
	metadata                  bool                // every client captures each response's header and trailer
	xuids                     []string            // xuids[i] is what call i asks for
	players                   []*networkpb.Player // players[i] is the answer call i must get
	progress                  io.Writer
}

// runShape creates the clients for shape s of suite, against the suite's backend, warms each
// up, then runs the trials interleaved: trial 1 of every client, then trial 2, and so on,
// each in the order trialClients gives.
func (rn *runner) runShape(suite Suite, s Shape) (res ShapeResult, err error) {
	addr := rn.backend.addrOf(suite.Backend)
	res = ShapeResult{Shape: s}
	var cs []client
	defer func() {
		for _, c := range cs {
			if cerr := c.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("closing the %s client: %w", c.Name(), cerr))
			}
		}
	}()
	for _, name := range rn.clientsOf(suite) {
		var (
			c   client
			err error
		)
		asClient(name, func() {
			if name == clientBaseline {
				c, err = newBaselineClient(addr, s, rn.timeout, max(s.Calls, rn.warmup), rn.metadata)
			} else {
				c, err = newPRPCClient(name, addr, s, rn.timeout, rn.budget, max(s.Calls, rn.warmup), rn.metadata)
			}
		})
		if err != nil {
			return res, fmt.Errorf("%s client: %w", name, err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		var err error
		asClient(c.Name(), func() { err = rn.warmUp(c) })
		if err != nil {
			return res, err
		}
	}
	for t := 1; t <= s.Trials; t++ {
		for _, c := range trialClients(cs, t) {
			tr, err := rn.trial(c, s.Calls)
			tr.Trial = t
			if err != nil {
				return res, fmt.Errorf("%s trial %d: %w", c.Name(), t, err)
			}
			res.Trials = append(res.Trials, tr)
			fmt.Fprintf(rn.progress, "burst: %-13s %-22s trial %d/%d %-14s %7.3f s %9s calls/s  p99 %8.2f ms  CPU/call %6.1f µs  allocs/call %5.1f (%4.0f B)  faults/call %5.1f  errors %d\n",
				suite.Name, s, t, s.Trials, c.Name(), tr.Total.Seconds(), thousands(int(tr.Throughput()+0.5)),
				ms(tr.Lat.P99), us(tr.CPUPerCall()), tr.AllocsPerCall(), tr.AllocBytesPerCall(), tr.FaultsPerCall(), tr.Errors())
		}
	}
	return res, nil
}

// clientsOf returns the clients the burst suite s runs: those -clients names, or by default
// burstClients, with clientGoMetrics only in the suites of metricsSuites.
func (rn *runner) clientsOf(s Suite) []string {
	if !rn.defaultClients || slices.Contains(metricsSuites, s.Name) {
		return rn.burstClients
	}
	return slices.DeleteFunc(slices.Clone(rn.burstClients), func(c string) bool { return c == clientGoMetrics })
}

// trialClients returns the order in which the clients cs run trial t (from 1) of a burst
// suite: the order of cs, but that in every even trial prpc-go and prpc-go-metrics, if both
// run, swap places, so that neither's place in a trial favours it over the other, which it
// is compared with.
func trialClients(cs []client, t int) []client {
	i := slices.IndexFunc(cs, func(c client) bool { return c.Name() == clientGo })
	j := slices.IndexFunc(cs, func(c client) bool { return c.Name() == clientGoMetrics })
	if t%2 == 1 || i < 0 || j < 0 {
		return cs
	}
	cs = slices.Clone(cs)
	cs[i], cs[j] = cs[j], cs[i]
	return cs
}

// warmUp runs a burst of rn.warmup calls through c, not measured, and checks every answer.
func (rn *runner) warmUp(c client) error {
	if rn.warmup == 0 {
		return nil
	}
	rec := newRecorder(rn.players[:rn.warmup])
	if err := c.burst(rn.xuids[:rn.warmup], rec); err != nil {
		return fmt.Errorf("%s warm-up: %w", c.Name(), err)
	}
	if rec.failed+rec.wrong > 0 {
		return fmt.Errorf("%s warm-up: %d of %d calls failed or were wrong; first: %s",
			c.Name(), rec.failed+rec.wrong, rec.n, rec.firstErr)
	}
	return nil
}

// trial runs one measured burst of n calls through c.
func (rn *runner) trial(c client, n int) (TrialResult, error) {
	tr := TrialResult{Client: c.Name(), Calls: n, BackendCPU: -1}
	// Start each trial from a collected heap, so that one client's garbage is not collected
	// on the other's time, and measure the peak resident set from here if the OS allows it.
	debug.FreeOSMemory()
	tr.PeakReset = resetPeakRSS() == nil
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	rec := newRecorder(rn.players[:n])
	b0, bOK0 := rn.backend.cpu()
	u0 := getUsage()
	start := time.Now()
	var err error
	asClient(c.Name(), func() { err = c.burst(rn.xuids[:n], rec) })
	tr.Total = time.Since(start)
	u1 := getUsage()
	b1, bOK1 := rn.backend.cpu()
	runtime.ReadMemStats(&m1)
	if err != nil {
		return tr, err
	}
	tr.CPU = u1.cpu - u0.cpu
	tr.MinorFaults = u1.minFlt - u0.minFlt
	if bOK0 && bOK1 {
		tr.BackendCPU = b1 - b0
	}
	tr.PeakRSS = u1.maxRSS
	tr.GCs = m1.NumGC - m0.NumGC
	tr.Allocs, tr.AllocBytes = m1.Mallocs-m0.Mallocs, m1.TotalAlloc-m0.TotalAlloc
	tr.OK, tr.Failed, tr.Wrong, tr.FirstErr = rec.ok, rec.failed, rec.wrong, rec.firstErr
	tr.Scrapes = rec.scrapes
	tr.Lat = summarise(rec.lat)
	return tr, nil
}

// The players the calls ask for: call i asks for xuidOf(i), which the data service is seeded
// with before the first burst, and the fast backend built its table with, as playerOf(i).
const xuidBase = 1_000_000_000 // as in pRPC's scripts

var lastSeen = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func xuidOf(i int) string { return strconv.Itoa(xuidBase + i) }

func playerOf(i int) *networkpb.Player {
	return &networkpb.Player{
		Xuid:            xuidOf(i),
		Name:            "player-" + strconv.Itoa(i),
		Level:           int32(i % 100),
		Coins:           int64(i) * 7,
		LastSeen:        timestamppb.New(lastSeen),
		PlaytimeSeconds: int64(i) * 60,
	}
}

// checkResponse reports what is wrong with resp as the answer to call i, which asked for
// the player want, if anything.
func checkResponse(i int, want *networkpb.Player, resp *networkpb.GetPlayerResponse) error {
	p := resp.GetPlayer()
	switch {
	case resp == nil:
		return fmt.Errorf("call %d: nil response", i)
	case !resp.GetFound() || p == nil:
		return fmt.Errorf("call %d: player %s not found", i, want.Xuid)
	case p.GetXuid() != want.Xuid:
		return fmt.Errorf("call %d: asked for xuid %s, got %q", i, want.Xuid, p.GetXuid())
	case p.GetName() != want.Name || p.GetLevel() != want.Level || p.GetCoins() != want.Coins ||
		p.GetPlaytimeSeconds() != want.PlaytimeSeconds || !p.GetLastSeen().AsTime().Equal(lastSeen):
		return fmt.Errorf("call %d: player %s has the wrong fields: %v", i, want.Xuid, p)
	case p.GetVersion() < 1:
		return fmt.Errorf("call %d: player %s has version %d", i, want.Xuid, p.GetVersion())
	}
	return nil
}

// seed saves players 0…n−1 in the backend at addr, 16 at a time, and checks that the last one
// reads back. The first save that fails cancels the others, and seed returns its error.
func seed(ctx context.Context, addr string, n int) error {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	stub := networkpb.NewDataServiceClient(cc)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		if gctx.Err() != nil {
			break // a save failed or ctx is done: Wait reports why
		}
		g.Go(func() error {
			if _, err := stub.SavePlayer(gctx, &networkpb.SavePlayerRequest{Player: playerOf(i)}); err != nil {
				return fmt.Errorf("saving player %d: %w", i, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	resp, err := stub.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: xuidOf(n - 1)})
	if err != nil {
		return err
	}
	return checkResponse(n-1, playerOf(n-1), resp)
}
