// Command burst reproduces pRPC's published burst benchmarks against prpc, with plain grpc-go
// side by side in the same run, and measures what a burst costs a game loop in each of prpc's
// forms of submission.
//
// Each shape submits Calls GetPlayer calls at once from the loop goroutine, to a client with
// Workers × Batch calls in flight at most, and waits until every outcome has reached the loop
// goroutine. The clients (-clients) run the same calls against the same backend, in
// interleaved trials:
//
//   - prpc-go: reactor.Go for every call, with one func(resp, err) callback and no promise;
//   - prpc-onsettled: reactor.Call for every call, then the promise's OnSettled, one callback;
//   - prpc-then: reactor.Call for every call, then the promise's Then and OnError;
//   - prpc-go-metrics: prpc-go with both metrics adapters registered over its reactor (and,
//     in the loop suite, its loop): a promprpc Collector on a prometheus.Registry of its own
//     and an otelprpc Producer on an OpenTelemetry SDK ManualReader, which a goroutine
//     gathers and collects once as each of its trials starts and then every 100 ms until it
//     ends, far more often than a metrics system scrapes, to bound the adapters' cost from
//     above;
//   - grpc-go: what a Go developer writes without prpc — the generated stub, a pool of
//     Workers × Batch goroutines pulling calls from a job channel, and every result handed to
//     the loop goroutine over a channel.
//
// Every prpc client then runs `for done < n { <-r.Ready(); r.Tick(budget) }`, and each form's
// callbacks do what the grpc-go client does with an outcome, capturing the same state. The
// burst suites compare every prpc client they run with grpc-go, each against the grpc-go
// row of the same trial: by default prpc-go, the cheapest form, and prpc-then, the form
// earlier reports measured, so that their figures compare; -clients may name other forms.
// Every suite that runs prpc-go-metrics beside prpc-go also compares the two, trial by trial:
// what the metrics adapters cost a game (calls/s and client CPU per call in the burst suites,
// where the two swap places every other trial; the loop thread's CPU time over the submission
// and its time in Tick in the loop suite). By default prpc-go-metrics runs in the standard
// suite and the loop suite only.
//
// Each call's latency runs from just before it is submitted to its outcome being handled on
// the loop goroutine, where every response is checked against the player the backend holds.
// The report gives total time, calls per second, average, p50, p95 and p99 (nearest rank),
// errors, the client process's CPU time per call (getrusage), its heap allocations and minor
// page faults (first touches of fresh pages) per call and its peak resident set, and the
// ratios of each prpc client ÷ grpc-go.
//
// There are two backends. The standard and extreme suites, and the loop suite, run against
// the data-service example (examples/dataservice/server) with an in-memory store, seeded
// with every player before the first burst. The fast suites run the same shapes against the
// fast backend: a grpc-go server of GetPlayer whose handler does no work, answering from a
// table of responses built before serving, a map lookup and nothing else, so that the
// backend's part of each call is gRPC's serving alone. Both run by default in one separate
// process, on two loopback ports: this binary re-executed, stopping when its stdin closes;
// the suites run against one backend at a time, so the process's CPU time over a trial is
// the backend's that served it. With -pin (Linux) the client runs on CPU 0 and the backends
// on CPU 1, so the client's CPU time is its own; -placements unpinned,pinned runs everything
// unpinned first, then pinned, each against backends of their own, and reports both. With
// -inprocess the backends run in the client's process and the CPU time includes them. No
// client captures a response's header and trailer unless -metadata makes them all do it:
// prpc with GetPlayer's MethodPolicy.ResponseMetadata, the grpc-go clients with grpc.Header
// and grpc.Trailer.
//
// Usage:
//
//	go run ./benchmarks/burst [flags]
//
// The suites (-suite, default all):
//
//	standard       1,000 calls with 2 workers × batch 2; 5,000 with 4 × 4; 6,000 with 6 × 4
//	extreme        20,000 calls with 6 × 16
//	fast-standard  standard's shapes against the fast backend
//	fast-extreme   extreme's shape against the fast backend
//	fast           fast-standard, then fast-extreme
//	all            standard, extreme, fast-standard, then fast-extreme
//	loop           2,000, 5,000 and 20,000 calls inside a game loop (runs only when asked)
//	policies       prpc's call policies, and a stream, scenario by scenario (runs only when asked)
//
// or a comma-separated list of them, such as all,loop; each shape of the burst suites runs
// three trials per client, each trial every client once, back to back, in the order
// -clients names them. -calls (with -workers, -batch, -trials) runs one shape of your own
// instead, against each backend a burst suite named uses: custom against the data service,
// fast-custom against the fast backend.
//
// The loop suite measures what a burst costs a 20 TPS game loop doing 10 ms of game work per
// tick, through each of prpc's three forms and through what a Go developer writes by hand: a
// pool of goroutines fed by a buffered channel of {request, callback}, calling the generated
// stub, whose replies go to a buffered channel that the loop drains
// (benchmarks/internal/handpool). By default it runs those four clients and prpc-go-metrics,
// whose adapters are scraped from just before its loop runs to just after it stops; -clients
// selects some, as in -clients prpc-go,grpc-go. Each trial warms up a fresh client (prpc: a reactor with
// Workers 6, BatchSize 16; the pool: 96 goroutines) and hands it to loop.Run at 20 TPS, which
// delivers replies with Tick(-budget) in every tick and, woken by Ready, between ticks.
// OnTick burns 10 ms of CPU every tick and, on tick 5, also submits the burst as game logic
// does: a new request per call and callbacks that capture the call's own state. The loop
// stops 5 ticks after the first tick that starts once every call has its outcome. Trials are
// interleaved, trial 1 of every client, then trial 2, and so on, 7 per client and burst size
// by default (-trials); the order of the clients within a trial rotates by a Williams design,
// so that neither its position in a trial nor the client that ran just before favours one.
// -calls runs one burst size (and -workers, -batch resize every client). For each trial it
// reports the intervals between tick starts over the burst and the late ones (over 52 ms),
// the loop's skipped and overrun ticks, tick durations, delivery time, the time, CPU time of
// the loop's thread and minor page faults of submitting, and the time from the submitting
// tick to the last delivery; per burst size and prpc client, the ratios to the pool with
// their median and spread, and whether the client meets its targets against the pool.
//
// The loop suite's targets bound the median over the trials of the per-trial ratio prpc
// client ÷ pool, with the bounds in targets.json (read by targets.go): the judged figure, the
// CPU time of the loop's thread over the submission, a bound per form (for prpc-then, the
// ratio the report had measured before requests were encoded on the lanes, at each burst
// size); for every client, the time from the submitting tick to the last delivery; and late
// ticks, summed over the trials, no more than the pool's. The submission's wall time and the
// longest tick interval are reported beside them. It runs unpinned unless -pin or -placements says otherwise; the targets are
// judged unpinned. The report in benchmarks/README.md comes from
//
//	go run ./benchmarks/burst -suite all,loop,policies -placements unpinned,pinned -trials 15 -markdown benchmarks/README.md
//
// The policies suite measures prpc's call policies with the scenarios of
// benchmarks/internal/policybench, which the Go benchmarks BenchmarkCoalescedBurst,
// BenchmarkCoalescedSpread, BenchmarkOverload, BenchmarkHedgedReads and
// BenchmarkHedgedFailover run too: coalesced reads (bursts of identical calls with
// MethodPolicy.Coalesce off, on, and on with a cap of one burst), coalesced reads under
// spread arrivals (identical reads of a slow leaderboard from players' goroutines a fraction
// of a millisecond apart, and a few at each tick of the host loop, with Coalesce off and
// on), overload (a backend offered twice what it serves, then a quarter of it once the load
// drops, with the default Config, Config.AdaptiveLimit and fixed lanes tuned by hand, for a
// backend that serves cancelled calls and one that drops them: the goodput, by second too,
// the recovery and the backend's wasted work),
// hedged reads (three backends, one of which delays a share of its calls, unhedged and with
// MethodPolicy.Hedge after a fixed Delay and after DelayQuantile's) and failover (three
// backends, one of which is killed mid-run, unhedged and hedged, with and without
// NonFatalCodes set). Each case runs 3 trials by default
// (-policy-trials; -trials does not apply to it, so that a full report's trials do not
// multiply its minutes), interleaved with the other cases of its scenario, each against
// loopback servers it starts in this process; the report gives per case the median of each
// figure and its spread. No group names it, all included; -calls, -workers and -batch do not
// shape it, and the data service and the fast backend do not run for it. Its servers share
// the client's process, so pinning cannot separate them: with both placements it runs in the
// unpinned one only, but for the stream scenario, which runs in both: in a pinned placement
// its server is a process of its own (the burst binary re-executed with -serve-stream),
// pinned to CPU 1 as the backends are, and the client, the host's ticking thread included,
// runs on CPU 0.
//
// The report goes to stdout as Markdown, or as JSON with -json; progress goes to stderr. With
// -markdown FILE the complete report (a title, a notice naming the command, the machine, the
// summary of the ratios and their spread, the loop suite's targets and verdicts per prpc
// client, every table, and how to reproduce it) also replaces FILE once the run has finished,
// and its charts, SVG files in the directory charts beside FILE, which FILE links: per
// placement, each prpc form's calls/s and client CPU per call ÷ the pool's in the burst
// suites, their latencies, and the loop thread's CPU time per call in the loop suite.
// benchmarks/README.md and benchmarks/charts are generated so. The exit status is 1 if any
// call failed or any response was wrong.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

func main() {
	if len(os.Args) > 1 && children[os.Args[1]] != nil {
		if err := children[os.Args[1]](os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "burst backend:", err)
			os.Exit(1)
		}
		return
	}
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "burst:", err)
		os.Exit(1)
	}
}

// errCallsFailed is returned, wrapped, when the run completed but some calls failed or some
// responses were wrong.
var errCallsFailed = errors.New("calls failed or were answered wrongly")

// options are the parsed flags.
type options struct {
	suite                         string
	names                         []string // the suites -suite names, "all" expanded, in running order
	calls, workers, batch, trials int
	policyTrials                  int // trials per case of the policies suite
	timeout, budget               time.Duration
	warmup                        int
	inprocess, pin, json          bool
	placements                    []bool // pinned or not, per placement, in running order
	metadata                      bool
	clients                       string
	burstClients, loopClients     []string // the clients each kind of suite runs, parsed from clients
	cpuprofile, memprofile        string
	markdown                      string
	// policies are the policies suite's scenarios, if -suite names it; tests shorten them.
	policies []policyScenario
}

// parseFlags parses the command line into options: it defines the flags on a flag set that
// writes its messages and help to stderr, parses args, and completes the options from the
// flags' values.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("burst", flag.ContinueOnError)
	fs.SetOutput(stderr)
	placements := o.defineFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	err := o.complete(*placements)
	return o, err
}

// defineFlags defines the flags on fs, each writing its field of o, and fs's help; it returns
// where -placements goes, which complete parses.
func (o *options) defineFlags(fs *flag.FlagSet) (placements *string) {
	fs.StringVar(&o.suite, "suite", "all", "comma-separated suites to run: standard, extreme (against the data service), "+
		"fast-standard, fast-extreme (the same shapes against the fast backend, a handler that does no work), fast (both fast suites), "+
		"all (the four burst suites), "+
		"loop (bursts of 2,000, 5,000 and 20,000 calls inside a 20 TPS loop.Run doing 10 ms of game work per tick, prpc against a hand-written pool), "+
		"policies (prpc's call policies, each against loopback servers in this process: coalesced reads, in one tick and spread over time, overload, hedged reads, failover with a backend killed, and a server stream delivered to a ticking host beside the hand-written channel, whose server runs pinned too, in a process of its own on CPU 1)")
	fs.IntVar(&o.calls, "calls", 0, "run one shape of `n` calls instead of the suites (with -suite loop: the loop's one burst size)")
	fs.IntVar(&o.workers, "workers", 0, "workers of the -calls shape (default 2)")
	fs.IntVar(&o.batch, "batch", 0, "batch size (calls in flight per worker) of the -calls shape (default 4)")
	fs.IntVar(&o.trials, "trials", 0, "trials per client and shape (default 3; loop suite 7)")
	fs.IntVar(&o.policyTrials, "policy-trials", policyTrials, "trials per case of the policies suite")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of every call, from its submission")
	fs.DurationVar(&o.budget, "budget", 2*time.Millisecond, "budget of each prpc Tick")
	fs.IntVar(&o.warmup, "warmup", 1000, "warm-up calls per client per shape, not measured")
	fs.BoolVar(&o.inprocess, "inprocess", false, "run the backends in this process (CPU/call then includes the backend)")
	fs.BoolVar(&o.metadata, "metadata", false, "every client captures every response's header and trailer: prpc with MethodPolicy.ResponseMetadata, the grpc-go pool with grpc.Header and grpc.Trailer")
	fs.BoolVar(&o.pin, "pin", false, "Linux: pin the client to CPU 0 and the backends to CPU 1 (-placements pinned)")
	placements = fs.String("placements", "", "comma-separated placements to run everything in, one after the other: unpinned "+
		"(client and backends share the CPUs; the default), pinned (Linux: the client on CPU 0, the backends on CPU 1)")
	fs.BoolVar(&o.json, "json", false, "write the report as JSON instead of Markdown")
	fs.StringVar(&o.clients, "clients", "", "comma-separated clients to run, of "+strings.Join(prpcForms, ", ")+" (prpc, one per form of submission), "+
		clientGoMetrics+" ("+clientGo+" with both metrics adapters registered and scraped every "+scrapeEvery.String()+") and "+clientBaseline+
		", each trial in the order given (the loop suite rotates it; the burst suites swap "+clientGo+" and "+clientGoMetrics+" every other trial)"+
		"; by default the burst suites run "+strings.Join(burstClients, ",")+", "+clientGoMetrics+" in the "+strings.Join(metricsSuites, ", ")+" suite alone, and the loop suite "+strings.Join(loopClients, ",")+
		"; every suite compares each prpc form with "+clientBaseline+" in the same trial, and "+clientGoMetrics+" with "+clientGo)
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the warm-ups and trials to `file`; each client's goroutines carry the label client=<name> (go tool pprof -tagfocus client=prpc-go)")
	fs.StringVar(&o.memprofile, "memprofile", "", "write an allocation profile of the whole run to `file`")
	fs.StringVar(&o.markdown, "markdown", "", "also write the complete report, with its title, the command and how to reproduce it, to `file`, "+
		"replacing it once the run has finished (e.g. benchmarks/README.md), and its charts, SVG files it links, to the directory charts beside it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./benchmarks/burst [flags]\n\n"+
			"Runs pRPC's burst suites through prpc and through plain grpc-go, against the data-service\n"+
			"backend and a fast backend whose handler does no work, on loopback, and prints the tables;\n"+
			"with -suite policies, measures prpc's call policies against loopback servers of its own.\n"+
			"Flags:\n\n")
		fs.PrintDefaults()
	}
	return placements
}

// complete derives what the flags' values imply, given the value of -placements: the suites
// and placements to run, and the clients of each kind of suite; it rejects the flags that
// contradict each other.
func (o *options) complete(placements string) error {
	names, err := suiteNames(o.suite)
	if err != nil {
		return err
	}
	if o.placements, err = placementList(placements, o.pin); err != nil {
		return err
	}
	o.names = names
	if err := o.check(); err != nil {
		return err
	}
	if o.burstClients, o.loopClients, err = clientLists(o.clients); err != nil {
		return err
	}
	if slices.Contains(names, suitePolicies) {
		o.policies = policyScenarios(false)
	}
	return nil
}

// check rejects flags whose values are out of range or that contradict each other, given the
// suites and placements that complete has parsed.
func (o *options) check() error {
	names := o.names
	pinned := slices.Contains(o.placements, true)
	loopOn := slices.Contains(names, suiteLoop)
	switch {
	case loopOn && len(names) > 1 && o.calls > 0:
		return fmt.Errorf("-calls resizes the loop suite's burst with -suite loop alone, and replaces the burst suites otherwise; with -suite %q it is ambiguous: run the loop suite apart", o.suite)
	case slices.Equal(names, []string{suitePolicies}) && (o.calls > 0 || o.workers > 0 || o.batch > 0):
		return errors.New("-calls, -workers and -batch shape the burst suites and the loop suite; the policies suite's scenarios have shapes of their own")
	case o.calls < 0 || o.workers < 0 || o.batch < 0 || o.trials < 0 || o.warmup < 0:
		return errors.New("-calls, -workers, -batch, -trials and -warmup must not be negative")
	case o.policyTrials < 1:
		return errors.New("-policy-trials must be at least 1")
	case o.calls == 0 && (o.workers > 0 || o.batch > 0):
		return errors.New("-workers and -batch shape a -calls run; give -calls too")
	case o.timeout <= 0:
		return errors.New("-timeout must be positive")
	case pinned && o.inprocess:
		return errors.New("pinning puts the backend on its own CPU, which needs it in a separate process: drop -inprocess")
	case pinned && !pinSupported:
		return errors.New("pinning works only on Linux")
	}
	return nil
}

// The clients each kind of suite runs when -clients does not say: the burst suites prpc in
// its cheapest form, that form with the metrics adapters, and the form earlier reports
// measured, so that their figures compare, and the pool; the loop suite every form, the
// metrics client and the pool. By default the metrics client runs only in the burst suites of
// metricsSuites (and in the loop suite), since running it in every suite would lengthen the
// full report's run by about a quarter.
var (
	burstClients  = []string{clientGo, clientGoMetrics, clientThen, clientBaseline}
	loopClients   = []string{clientGo, clientOnSettled, clientThen, clientGoMetrics, clientBaseline}
	metricsSuites = []string{standardSuite.Name}
)

// clientLists parses the value of -clients: the clients the burst suites run and those the
// loop suite runs, each in the order given, or their defaults for an empty list.
func clientLists(list string) (burstList, loopList []string, err error) {
	if list == "" {
		return slices.Clone(burstClients), slices.Clone(loopClients), nil
	}
	var names []string
	for name := range strings.SplitSeq(list, ",") {
		switch {
		case name != clientBaseline && !isPRPC(name):
			return nil, nil, fmt.Errorf("-clients %q: unknown client %q; want %s, %s or %s, or a comma-separated list of them",
				list, name, strings.Join(prpcForms, ", "), clientGoMetrics, clientBaseline)
		case slices.Contains(names, name):
			return nil, nil, fmt.Errorf("-clients %q: %s is named twice", list, name)
		}
		names = append(names, name)
	}
	return names, slices.Clone(names), nil
}

// placementList parses the value of -placements, given -pin: the placements to run, each as
// whether it is pinned, unpinned first, since pinning the process cannot be undone.
func placementList(list string, pin bool) ([]bool, error) {
	switch {
	case list == "" && pin:
		return []bool{true}, nil
	case list == "":
		return []bool{false}, nil
	}
	named := map[bool]bool{}
	for name := range strings.SplitSeq(list, ",") {
		switch name {
		case "unpinned":
			named[false] = true
		case "pinned":
			named[true] = true
		default:
			return nil, fmt.Errorf("-placements %q: unknown placement %q; want unpinned, pinned or both, comma-separated", list, name)
		}
	}
	if pin && (named[false] || !named[true]) {
		return nil, fmt.Errorf("-pin asks for the pinned placement alone, and -placements %q for others: give one of the two", list)
	}
	var out []bool
	for _, pinned := range []bool{false, true} {
		if named[pinned] {
			out = append(out, pinned)
		}
	}
	return out, nil
}

// suiteGroups are the names of -suite that stand for several suites.
var suiteGroups = map[string][]string{
	"all":  {standardSuite.Name, extremeSuite.Name, fastStandardSuite.Name, fastExtremeSuite.Name},
	"fast": {fastStandardSuite.Name, fastExtremeSuite.Name},
}

// suiteNames parses the value of -suite: a comma-separated list of the burst suites
// (standard, extreme, fast-standard, fast-extreme), the groups all (the four) and fast (the
// two fast ones), loop and policies. It returns the suites named, each once, in running
// order: the burst suites in burstSuites order, then loop, then policies.
func suiteNames(list string) ([]string, error) {
	order := []string{}
	for _, s := range burstSuites {
		order = append(order, s.Name)
	}
	order = append(order, suiteLoop, suitePolicies)
	named := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		switch {
		case slices.Contains(order, name):
			named[name] = true
		case suiteGroups[name] != nil:
			for _, n := range suiteGroups[name] {
				named[n] = true
			}
		default:
			return nil, fmt.Errorf("-suite %q: unknown suite %q; want standard, extreme, fast-standard, fast-extreme, fast, all, loop or policies, or a comma-separated list of them", list, name)
		}
	}
	var names []string
	for _, name := range order {
		if named[name] {
			names = append(names, name)
		}
	}
	return names, nil
}

// Names of the suites -calls runs instead of the burst suites, one per backend.
const (
	customSuite     = "custom"
	fastCustomSuite = "fast-custom"
)

// suites returns the burst suites o asks to run, in running order: none with -suite loop
// alone. With -calls, one shape of o's own replaces them, once per backend they use: custom
// against the data service, fast-custom against the fast backend.
func (o options) suites() []Suite {
	var out []Suite
	for _, s := range burstSuites {
		if !slices.Contains(o.names, s.Name) {
			continue
		}
		if o.calls > 0 {
			name := customSuite
			if s.Backend == backendFast {
				name = fastCustomSuite
			}
			if slices.ContainsFunc(out, func(c Suite) bool { return c.Name == name }) {
				continue
			}
			sh := Shape{Calls: o.calls, Workers: cmpOr(o.workers, 2), Batch: cmpOr(o.batch, 4), Trials: cmpOr(o.trials, 3)}
			out = append(out, Suite{Name: name, Backend: s.Backend, Shapes: []Shape{sh}})
			continue
		}
		s.Shapes = slices.Clone(s.Shapes)
		for i := range s.Shapes {
			s.Shapes[i].Trials = cmpOr(o.trials, s.Shapes[i].Trials)
		}
		out = append(out, s)
	}
	return out
}

// loopShapes returns the loop suite's bursts, one per size, if o asks for the loop suite:
// every size of loopSizes, or the one -calls gives.
func (o options) loopShapes() []Shape {
	if !slices.Contains(o.names, suiteLoop) {
		return nil
	}
	sizes := loopSizes
	if o.calls > 0 {
		sizes = []int{o.calls}
	}
	var shapes []Shape
	for _, n := range sizes {
		shapes = append(shapes, Shape{
			Calls: n, Workers: cmpOr(o.workers, loopWorkers), Batch: cmpOr(o.batch, loopBatch), Trials: cmpOr(o.trials, loopTrials),
		})
	}
	return shapes
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// run runs the burst as args ask, writes the report to stdout and progress to stderr, and
// returns an error wrapping errCallsFailed if any call failed or was answered wrongly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	// Progress and the backend process's own stderr meet here.
	stderr = &syncWriter{w: stderr}
	command := strings.Join(append([]string{"go run ./benchmarks/burst"}, args...), " ")
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var reports Run
	for _, pinned := range o.placements {
		rep, err := runPlacement(ctx, o, command, pinned, stderr)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
	}
	if o.memprofile != "" {
		if err := writeHeapProfile(o.memprofile); err != nil {
			return err
		}
	}
	if o.markdown != "" {
		if err := writeDocument(o.markdown, reports); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "burst: wrote the report to %s\n", o.markdown)
	}
	if o.json {
		err = reports.WriteJSON(stdout)
	} else {
		err = reports.WriteMarkdown(stdout)
	}
	if err != nil {
		return err
	}
	if n := reports.Errors(); n > 0 {
		return fmt.Errorf("%d %w", n, errCallsFailed)
	}
	return nil
}

// runPlacement runs every suite o asks for in one placement, pinned or not, and returns its
// report: the burst suites and the loop suite against backends of their own, then the
// policies suite against the loopback servers its scenarios start. Pinning applies to the rest
// of the process's life.
func runPlacement(ctx context.Context, o options, command string, pinned bool, stderr io.Writer) (*Report, error) {
	rep := &Report{
		Command:   command,
		Machine:   machine(),
		Started:   time.Now(),
		InProcess: o.inprocess,
		Metadata:  o.metadata,
		Pinned:    pinned,
		Timeout:   o.timeout,
		Budget:    o.budget,
		Warmup:    o.warmup,

		MetricsBounds: metricsGoals,
	}
	if pinned {
		runtime.GOMAXPROCS(1)
		if err := pinProcess(0); err != nil {
			return nil, err
		}
	}
	rep.Machine.GOMAXPROCS = runtime.GOMAXPROCS(0)
	placement := "unpinned"
	if pinned {
		placement = "pinned"
	}
	if suites, loopShapes := o.suites(), o.loopShapes(); len(suites) > 0 || len(loopShapes) > 0 {
		if err := runBackendSuites(ctx, o, rep, suites, loopShapes, placement, stderr); err != nil {
			return nil, err
		}
	}
	if scenarios := o.policiesIn(pinned); len(scenarios) > 0 {
		rep.PoliciesElsewhere = len(scenarios) < len(o.policies)
		if err := runPolicySuite(rep, scenarios, o.policyTrials, placement, stderr); err != nil {
			return nil, fmt.Errorf("%s suite: %w", suitePolicies, err)
		}
	}
	if pinned {
		// Threads started since pinning inherit it, the policies suite's too; check that they
		// all did.
		rep.ClientAffinity = affinity(0)
	}
	rep.Machine.LoadEnd = loadAverage()
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// policiesIn returns the policies suite's scenarios that the placement pinned (or not) runs,
// in order. The unpinned placement runs every scenario. A pinned one runs those that can run
// their server apart from the client (policyScenario.apart), which runPolicySuite does, and
// the others, whose servers share the client's process where pinning cannot separate them,
// only if o runs no unpinned placement.
func (o options) policiesIn(pinned bool) []policyScenario {
	var out []policyScenario
	for _, s := range o.policies {
		if !pinned || s.apart != nil || !slices.Contains(o.placements, false) {
			out = append(out, s)
		}
	}
	return out
}

// runPolicySuite runs the policies suite's scenarios in rep's placement (placement names it)
// and adds their results to rep. In a pinned placement, the scenarios that can run their
// server apart run against one in a process of its own pinned to CPU 1, which it starts
// before them and stops after, and whose affinity it records.
func runPolicySuite(rep *Report, scenarios []policyScenario, trials int, placement string, stderr io.Writer) (err error) {
	scenarios = slices.Clone(scenarios)
	where := "its servers in this process"
	if rep.Pinned && slices.ContainsFunc(scenarios, func(s policyScenario) bool { return s.apart != nil }) {
		srv, startErr := startStreamServer(1, stderr)
		if startErr != nil {
			return startErr
		}
		defer func() {
			rep.PolicyServerAffinity = affinity(srv.pid())
			if stopErr := srv.stop(); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("stopping the stream server: %w", stopErr))
			}
		}()
		where = fmt.Sprintf("the stream's server in process %d at %s", srv.pid(), srv.addr)
		for i, s := range scenarios {
			if s.apart == nil {
				where = fmt.Sprintf("the stream's server in process %d at %s, the others' in this process", srv.pid(), srv.addr)
				continue
			}
			scenarios[i] = s.apart(srv.addr)
		}
	}
	fmt.Fprintf(stderr, "burst: %s; %s suite, %s\n", placement, suitePolicies, where)
	pr, err := runPolicies(scenarios, trials, stderr)
	if err != nil {
		return err
	}
	rep.Policies = pr
	return nil
}

// runBackendSuites runs the burst suites and the loop suite's loopShapes in rep's placement
// (placement names it), against backends it starts, seeds and stops, and adds their results
// to rep.
func runBackendSuites(ctx context.Context, o options, rep *Report, suites []Suite, loopShapes []Shape, placement string, stderr io.Writer) (err error) {
	backendCPU := -1
	if rep.Pinned {
		backendCPU = 1
	}
	need := playersNeeded(suites, loopShapes, o.warmup)
	be, err := startBackend(ctx, o.inprocess, backendCPU, need[backendFast], stderr)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := be.stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the backend: %w", stopErr))
		}
	}()

	where := "in this process"
	if !o.inprocess {
		where = fmt.Sprintf("in process %d", be.pid())
	}
	fmt.Fprintf(stderr, "burst: %s; backends %s: data service at %s", placement, where, be.addr)
	if be.fastAddr != "" {
		fmt.Fprintf(stderr, ", fast backend at %s holding %s players", be.fastAddr, thousands(need[backendFast]))
	}
	if need[backendData] > 0 {
		fmt.Fprintf(stderr, "; seeding %s players", thousands(need[backendData]))
	}
	fmt.Fprintln(stderr)
	if need[backendData] > 0 {
		if err := seed(ctx, be.addr, need[backendData]); err != nil {
			return fmt.Errorf("seeding the backend: %w", err)
		}
	}
	n := max(need[backendData], need[backendFast])
	xuids := make([]string, n)
	players := make([]*networkpb.Player, n)
	for i := range xuids {
		xuids[i] = xuidOf(i)
		players[i] = playerOf(i)
	}
	rn := &runner{
		addr: be.addr, backend: be, burstClients: o.burstClients, loopClients: o.loopClients, defaultClients: o.clients == "",
		timeout: o.timeout, budget: o.budget, warmup: o.warmup, metadata: o.metadata,
		xuids: xuids, players: players, progress: stderr,
	}
	for _, s := range suites {
		sr := SuiteResult{Name: s.Name, Backend: s.Backend}
		for _, sh := range s.Shapes {
			res, err := rn.runShape(s, sh)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.Name, sh, err)
			}
			sr.Shapes = append(sr.Shapes, res)
		}
		rep.Suites = append(rep.Suites, sr)
	}
	if len(loopShapes) > 0 {
		lr, err := rn.runLoop(loopShapes)
		if err != nil {
			return fmt.Errorf("%s suite: %w", suiteLoop, err)
		}
		rep.Loop = lr
	}
	if rep.Pinned {
		rep.BackendAffinity = affinity(be.pid())
	}
	return nil
}

// playersNeeded returns how many players each backend must hold for suites and the loop
// suite's loopShapes, with warm-ups of warmup calls: for each backend some suite uses, the
// most calls of any of its shapes or warm-up; none for the others.
func playersNeeded(suites []Suite, loopShapes []Shape, warmup int) map[string]int {
	need := map[string]int{}
	use := func(kind string, calls int) { need[kind] = max(need[kind], warmup, calls) }
	for _, sh := range loopShapes {
		use(backendData, sh.Calls)
	}
	for _, s := range suites {
		for _, sh := range s.Shapes {
			use(s.Backend, sh.Calls)
		}
	}
	return need
}

// syncWriter serialises writes to w, which is written by this process and by the goroutine
// that copies the backend process's stderr.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// writeHeapProfile writes the allocation profile (all allocations since the start) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
