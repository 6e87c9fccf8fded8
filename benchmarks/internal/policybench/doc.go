// Package policybench holds the scenarios that measure prpc's call policies, which the Go
// benchmarks of package benchmarks and the burst command's policies suite both run: each
// scenario takes its configuration, runs once against loopback gRPC servers of its own in
// this process (Server), and returns a result of plain figures.
//
// The scenarios:
//
//   - coalesced reads (RunCoalesce, CoalesceCases): bursts of identical calls to a server
//     that takes a fixed time per call, with MethodPolicy.Coalesce off and on, the calls the
//     server received, the time to the last delivery and the host's time per call;
//   - coalesced reads under spread arrivals (RunSpread, SpreadCases): identical reads of a
//     slow leaderboard spread over milliseconds, each from a player's goroutine, or over
//     ticks, a few at each tick of the host loop, with MethodPolicy.Coalesce off and on: the
//     calls the server received, the reads that succeeded and those that timed out, and
//     MethodStats.Coalesced;
//   - overload (RunOverload, OverloadCases): a backend of fixed workers behind a queue,
//     offered open-loop twice what it serves, then a quarter of it once the load drops, with
//     the default Config, Config.AdaptiveLimit and fixed lanes tuned by hand (Mode), against a
//     backend that serves cancelled calls and one that drops them: the goodput, by second
//     too, the calls that succeed after the load drops, the backend's executions for calls
//     already given up, the calls shed and timed out, p50 and p99;
//   - hedged reads (RunHedge, HedgeCases): reads spread over three backends, one of which
//     delays a share of its calls, submitted open-loop a few every tick, unhedged and with
//     MethodPolicy.Hedge (a fixed Delay, and DelayQuantile): p50 and p99, the extra load on
//     the backends, the hedges sent and those that won (MethodStats.Hedges and HedgesWon);
//   - failover (RunFailover, FailoverCases): reads spread over three backends, one of which
//     is killed mid-run, unhedged (gRPC's retry) and hedged (MethodPolicy.Hedge as the
//     documentation shows it, and with NonFatalCodes [Unavailable]): the reads that
//     succeeded, those that failed by code, and the hedges sent and won;
//   - a server stream delivered to a ticking host (RunStream, StreamCases): a stream sent as
//     fast as flow control lets it, taken each tick through reactor.Watch and Tick, and through
//     the hand-written channel drained whole or under the tick's budget: messages per second and
//     the host's thread CPU per message.
//
// Each configuration has a Short form, small enough for the tests.
package policybench
