// Package benchmarks holds prpc's Go micro-benchmarks; run them with
//
//	go test -run '^$' -bench . -benchmem ./benchmarks/
//
// They are:
//
//   - BenchmarkHostCostBurst: what a burst of 20,000 calls costs the host goroutine per call,
//     prpc against the hand-written pool, with the data-service example on loopback: ns/op is
//     the submission, host-ns/call the submission and the delivery in Tick;
//   - BenchmarkHostCostForms: prpc's cost to the host goroutine per call in each form of
//     submission (reactor.Go, OnSettled, Then and OnError), submit-ns and deliver-ns, in bursts
//     of 2,000 over an in-memory transport that answers at once: the steadiest comparison of
//     one commit with another;
//   - BenchmarkHostCostStub: prpc's own work on the host goroutine per call (submit, and
//     delivery in Tick) over an in-memory transport that answers at once, in small batches
//     with warm memory, with custom metric host-ns/call; it does not predict a real burst;
//   - BenchmarkIdleTick: a Tick with nothing to deliver;
//   - BenchmarkTickBudget: Tick(2ms) against a backlog of 20,000 completions, with how far each
//     Tick overran its budget (overrun-p99-µs, overrun-max-µs);
//   - BenchmarkRoundTrip: one call at a time on loopback against the data-service example,
//     prpc (submit to callback, Ready-woken) against a plain generated-stub call;
//   - BenchmarkCallPath: the two grpc-go call paths prpc could use;
//   - BenchmarkHedgeDue: how late a hedge (MethodPolicy.Hedge) starts after it is due, on the
//     system clock, against a loopback backend that holds every first attempt: one call at a
//     time, and open-loop (run it with -benchtime 1x);
//   - BenchmarkCoalescedBurst: bursts of identical calls in one tick against a loopback server
//     that takes a fixed time per call, with MethodPolicy.Coalesce off and on: the calls the
//     server received per burst, the time to the last delivery, the host's time per call;
//   - BenchmarkCoalescedSpread: identical reads of a slow leaderboard spread over
//     milliseconds, each from a player's goroutine, or over ticks of the host loop, with
//     MethodPolicy.Coalesce off and on: the calls the server received, the reads that
//     succeeded and timed out, MethodStats.Coalesced (run it with -benchtime 1x);
//   - BenchmarkOverload: a backend of fixed workers behind a queue, offered open-loop twice
//     what it serves, then a quarter of it once the load drops, with the default Config,
//     Config.AdaptiveLimit and fixed lanes tuned by hand, against a backend that serves
//     cancelled calls and one that drops them: the goodput, the calls that succeed after the
//     load drops, the backend's wasted executions, the calls shed and timed out, p50 and p99
//     (run it with -benchtime 1x);
//   - BenchmarkHedgedReads: reads spread over three loopback backends, one of which delays a
//     share of its calls, unhedged and with MethodPolicy.Hedge (a fixed Delay, and
//     DelayQuantile): p50, p99, the extra load on the backends and the hedges that won (run it
//     with -benchtime 1x);
//   - BenchmarkHedgedFailover: reads spread over three loopback backends, one of which is
//     killed mid-run, unhedged (gRPC's retry) and with MethodPolicy.Hedge: the reads that
//     succeeded, those that failed by code, the hedges sent and won (run it with -benchtime
//     1x);
//   - BenchmarkStreamTickCost: a server stream's messages delivered to a host ticking every
//     millisecond, through reactor.Watch and through a goroutine calling Recv into a channel
//     the host drains, with and without a budget: the host's thread CPU inside its ticks per
//     message;
//   - BenchmarkStreamDelivery: the same stream received by a host that waits between batches
//     (Ready, or the channel) rather than ticking: its thread CPU and wake-ups per message.
//
// BenchmarkCoalescedBurst to BenchmarkStreamTickCost run the scenarios of
// ./internal/policybench, which the burst command's policies suite runs too.
//
// The burst suite, which reproduces pRPC's published tables with plain grpc-go side by side,
// is the command in ./burst:
//
//	go run ./benchmarks/burst -pin
//
// benchmarks/README.md is the performance report the burst suite generates with -markdown; its
// first lines name the command that generated it, which runs the policies suite too (-suite
// policies: prpc's call policies, scenario by scenario, in no group, all included). Figures
// belong in that report, produced by a command, never in comments or timed unit tests.
package benchmarks
