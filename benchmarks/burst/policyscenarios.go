package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// The policies suite's scenarios, each made of policybench's cases. A scenario is added here,
// as a function that turns its cases into a policyScenario, and in policyScenarios.

// policyScenarios returns the suite's scenarios, in running order: the full shapes, or, if
// short, the short ones the tests run.
func policyScenarios(short bool) []policyScenario {
	co, ov, he, fo := policybench.DefaultCoalesce(), policybench.DefaultOverload(), policybench.DefaultHedge(), policybench.DefaultFailover()
	player, tick := policybench.DefaultSpread(policybench.PerPlayer), policybench.DefaultSpread(policybench.PerTick)
	st := policybench.DefaultStream()
	if short {
		co, ov, he, fo = co.Short(), ov.Short(), he.Short(), fo.Short()
		player, tick, st = player.Short(), tick.Short(), st.Short()
	}
	return []policyScenario{coalesceScenario(co), spreadScenario(player, tick), overloadScenario(ov), hedgeScenario(he), failoverScenario(fo), streamScenario(st)}
}

// coalesceScenario is the coalesced-reads scenario over base: policybench.CoalesceCases.
func coalesceScenario(base policybench.CoalesceConfig) policyScenario {
	s := policyScenario{
		Name: "coalesce", Title: "Coalesced reads",
		About: fmt.Sprintf("Bursts of %s identical calls, all submitted in one tick as when a crowd of players asks for the leaderboard at once, "+
			"to a server that answers each call it receives after %s, with MethodPolicy.Coalesce off, on with its default CoalesceMax, and on with a CoalesceMax of one burst; "+
			"each trial starts a server and a fresh reactor with the default lanes, runs one burst to warm up, then %d measured bursts, each ticked, woken by Ready, until its last call is delivered: "+
			"the transport calls the server received per burst, the time from a burst's first submission to its last delivery, "+
			"and the host goroutine's time in reactor.Call, Then, OnError and Tick per call, each the mean over the trial's bursts.",
			thousands(base.Burst), durationText(base.Service), base.Bursts),
		Labels: []string{"Coalesce", "CoalesceMax"},
		Figures: []policyFigure{
			{Key: "backend_calls_per_burst", Head: "backend calls per burst", Digits: 1},
			{Key: "to_last_delivery_ms", Head: "to last delivery (ms)", Digits: 2},
			{Key: "host_ns_per_call", Head: "host time per call (ns)", Digits: 0},
		},
	}
	for _, c := range policybench.CoalesceCases(base) {
		on, most := "off", "–"
		if c.Config.Coalesce {
			on, most = "on", "64 (default)"
			if c.Config.CoalesceMax > 0 {
				most = thousands(c.Config.CoalesceMax)
			}
		}
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: []string{on, most}, trial: func() (PolicyTrial, error) {
			res, err := policybench.RunCoalesce(c.Config)
			return PolicyTrial{Figures: []float64{res.BackendCallsPerBurst(), ms(res.LastDeliveryPerBurst()), res.HostNsPerCall()}, Errors: res.Failed}, err
		}})
	}
	return s
}

// spreadScenario is the coalesced-reads scenario under spread arrivals over player, whose
// reads come from players' goroutines, and tick, whose reads come a few at each tick:
// policybench.SpreadCases.
func spreadScenario(player, tick policybench.SpreadConfig) policyScenario {
	s := policyScenario{
		Name: "coalesce-spread", Title: "Coalesced reads under spread arrivals",
		About: fmt.Sprintf("Identical reads of a leaderboard spread over milliseconds or ticks rather than submitted in one tick, to a server that answers each call it receives after a fixed time. "+
			"Per player: %s reads, one every %s, each from a goroutine of its own, as a game whose players each run their own goroutine submits them "+
			"(a pacer gives each goroutine its turn, yielding rather than sleeping, so that the reads keep their spacing), to a server that takes %s. "+
			"Per tick: %d reads on the host goroutine at each tick of a %s tick loop, %s reads in all, to a server that takes %s, so that each read is in flight for %d ticks. "+
			"Every read has a timeout of %s, and the host loop calls Tick(2 ms) every %s until every read is delivered; "+
			"MethodPolicy.Coalesce off, and on with its default CoalesceMax (64). "+
			"Each trial starts a server and a fresh reactor with the default lanes and connects with one read of another key: "+
			"the transport calls the server received for the reads, the reads that succeeded, MethodStats.Coalesced (the reads that joined another's transport call), "+
			"the reads that failed with DeadlineExceeded, those shed (calls.ErrShed: never sent, as they could no longer finish in time), and the time from the first submission to the last delivery. Errors: reads that failed with any other code.",
			thousands(player.Calls), durationText(player.Every), durationText(player.Service),
			tick.PerTick, durationText(tick.TickEvery), thousands(tick.Calls), durationText(tick.Service), int(tick.Service/tick.TickEvery),
			spreadTimeouts(player, tick), spreadTicks(player, tick)),
		Labels: []string{"arrivals", "reads", "Coalesce"},
		Figures: []policyFigure{
			{Key: "backend_calls", Head: "backend calls"},
			{Key: "calls_ok", Head: "calls OK"},
			{Key: "coalesced", Head: "Coalesced"},
			{Key: "deadline_exceeded", Head: "DeadlineExceeded (calls)"},
			{Key: "shed", Head: "shed (calls)"},
			{Key: "to_last_delivery_ms", Head: "to last delivery (ms)"},
		},
	}
	for _, c := range policybench.SpreadCases(player, tick) {
		arrivals := fmt.Sprintf("per player, one every %s", durationText(c.Config.Every))
		if c.Config.Arrival == policybench.PerTick {
			arrivals = fmt.Sprintf("per tick, %d every %s", c.Config.PerTick, durationText(c.Config.TickEvery))
		}
		on := "off"
		if c.Config.Coalesce {
			on = "on"
		}
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: []string{arrivals, thousands(c.Config.Calls), on}, trial: func() (PolicyTrial, error) {
			res, err := policybench.RunSpread(c.Config)
			return PolicyTrial{Figures: []float64{float64(res.BackendCalls), float64(res.OK), float64(res.Coalesced), float64(res.DeadlineExceeded), float64(res.Shed), ms(res.LastDelivery)},
				Errors: res.Failed}, err
		}})
	}
	return s
}

// spreadTimeouts says the reads' timeout: one, or each arrival's.
func spreadTimeouts(player, tick policybench.SpreadConfig) string {
	if player.Timeout == tick.Timeout {
		return durationText(player.Timeout)
	}
	return fmt.Sprintf("%s per player and %s per tick", durationText(player.Timeout), durationText(tick.Timeout))
}

// spreadTicks says the host loop's interval: one, or each arrival's.
func spreadTicks(player, tick policybench.SpreadConfig) string {
	if player.TickEvery == tick.TickEvery {
		return durationText(player.TickEvery)
	}
	return fmt.Sprintf("%s per player and %s per tick", durationText(player.TickEvery), durationText(tick.TickEvery))
}

// overloadScenario is the overload scenario over base: policybench.OverloadCases, with the
// targets of targets.json.
func overloadScenario(base policybench.OverloadConfig) policyScenario {
	capacity := float64(base.Workers) / base.Service.Seconds()
	total := base.Overload.For + base.Recovery.For
	recovery := base.Recovery.Rate * int(base.Recovery.For/time.Millisecond) / 1000
	perTick := func(p policybench.Phase) int { return int(time.Duration(p.Rate) * base.TickEvery / time.Second) }
	var points []string
	for b := time.Duration(0); b < total; b += base.Bucket {
		points = append(points, spanText(b, b+base.Bucket))
	}
	s := policyScenario{
		Name: "overload", Title: "Overload",
		About: fmt.Sprintf("A guild game's GetGuild read against a backend of %d workers behind a queue, each call waiting for a free worker in order and then holding it for %s (%.0f calls/s at most). "+
			"The host, a loop that ticks every %s, submits open-loop %s calls/s (%d at each tick, %.3g× the backend's capacity) for %s, then %s calls/s (%d at each tick) for %s once the load drops, each with a timeout of %s, "+
			"calls Tick(2 ms) at each tick and, as loop.Run does, whenever the reactor signals Ready between ticks, until every call's callback has run. "+
			"Two backends: serves-cancelled serves every call it received, as a thread pool in front of a database runs its queued queries even after their client has gone; "+
			"drops-cancelled drops a call cancelled while it waits for a worker, as a Go handler that selects on its context does; once a call has a worker, both finish it. "+
			"Three reactors: the default Config; AdaptiveLimit{} over the default lanes; and a limit tuned by hand, %s. "+
			"Each trial starts a backend and a fresh reactor and connects with one call, then: the goodput during the overload (the calls submitted during it that succeeded, per second of it), "+
			"the calls submitted after the load drops that succeeded (of %s), the backend's executions for calls whose client had given up by the time the worker finished (wasted), as a count and as a share of its executions, "+
			"the calls prpc shed (failed at once, never sent, as unable to finish in time), those that timed out, and those that failed without being sent (shed, timed out in prpc's queue, or refused at submission), "+
			"p50 and p99 of the latency from submission to callback of the calls submitted during the overload that succeeded, and Stats.InFlightLimit at the end of the overload. Errors: calls that failed otherwise. %s",
			base.Workers, durationText(base.Service), capacity, durationText(base.TickEvery),
			thousands(base.Overload.Rate), perTick(base.Overload), float64(base.Overload.Rate)/capacity, durationText(base.Overload.For),
			thousands(base.Recovery.Rate), perTick(base.Recovery), durationText(base.Recovery.For), durationText(base.Timeout),
			fixedText(base), thousands(recovery), overloadGoals.text(recovery)),
		Labels: []string{"backend", "Config", "lanes"},
		Figures: []policyFigure{
			{Key: "goodput_per_s", Head: "goodput during the overload (calls/s)"},
			{Key: "ok_after", Head: fmt.Sprintf("OK after the load drops (of %s)", thousands(recovery))},
			{Key: "wasted", Head: "wasted (executions)"},
			{Key: "wasted_pct", Head: "wasted (% of executions)", Digits: 1},
			{Key: "shed", Head: "shed (calls)"},
			{Key: "timeouts", Head: "timeouts (calls)"},
			{Key: "never_sent", Head: "never sent (calls)"},
			{Key: "p50_ms", Head: "p50 (ms)", Digits: 1},
			{Key: "p99_ms", Head: "p99 (ms)", Digits: 1},
			{Key: "in_flight_limit", Head: "InFlightLimit at the end of the overload (calls)", noneIfZero: true},
		},
		Series: []policySeries{{Key: "goodput_by_" + bucketKey(base.Bucket),
			Head: fmt.Sprintf("Goodput by %s: the calls submitted in each %s of the run that succeeded, per second; the load drops after %s.",
				bucketText(base.Bucket), bucketText(base.Bucket), durationText(base.Overload.For)),
			Points: points}},
	}
	for _, c := range policybench.OverloadCases(base) {
		s.Cases = append(s.Cases, policyCase{Name: c.Name(), Labels: []string{c.Backend(), c.ConfigText(), c.Lanes()}, trial: func() (PolicyTrial, error) {
			res, err := policybench.RunOverload(c)
			return PolicyTrial{
				Figures: []float64{res.Goodput(), float64(res.RecoveryOK), float64(res.Wasted), 100 * res.WastedShare(),
					float64(res.Shed), float64(res.Timeouts), float64(res.NeverSent), ms(res.P50), ms(res.P99), float64(res.Limit)},
				Series: [][]float64{res.GoodputBy()},
				Errors: int(res.Failed),
			}, err
		}})
	}
	return s
}

// fixedText says the fixed lanes of base's ModeFixed case, as its Config sets them.
func fixedText(base policybench.OverloadConfig) string {
	base.Mode = policybench.ModeFixed
	return base.ConfigText()
}

// bucketText names a stretch of the goodput series: "second" for one, else its length.
func bucketText(d time.Duration) string {
	if d == time.Second {
		return "second"
	}
	return durationText(d)
}

// spanText names the stretch of time from..to: "5–6 s" in whole seconds, else in
// milliseconds, as "100–200 ms".
func spanText(from, to time.Duration) string {
	if from%time.Second == 0 && to%time.Second == 0 {
		return fmt.Sprintf("%d–%d s", from/time.Second, to/time.Second)
	}
	return fmt.Sprintf("%g–%g ms", ms(from), ms(to))
}

// bucketKey is bucketText as a JSON key: "second" or, as in "100ms", its length.
func bucketKey(d time.Duration) string {
	if d == time.Second {
		return "second"
	}
	return d.String()
}

// hedgeScenario is the hedged-reads scenario over base: policybench.HedgeCases.
func hedgeScenario(base policybench.HedgeConfig) policyScenario {
	cases := policybench.HedgeCases(base)
	var fixed time.Duration // the fixed Delay of the case that has one
	var quantile string     // the DelayQuantile of the case that has one
	for _, c := range cases {
		switch h := c.Config.Hedge; {
		case h == nil:
		case h.DelayQuantile > 0:
			quantile = strconv.FormatFloat(h.DelayQuantile, 'g', -1, 64)
		default:
			fixed = h.Delay
		}
	}
	s := policyScenario{
		Name: "hedge", Title: "Hedged reads",
		About: fmt.Sprintf("Reads spread by round_robin over %d backends (Config.Targets), of which the first delays one call in %d of those it receives by %s and the others answer at once; "+
			"the host submits %s calls open-loop, %d every %s, each with a timeout of %s, and ticks the reactor every %s in between, so that a call's latency includes its wait for the tick that delivers it; "+
			"unhedged, with MethodPolicy.Hedge's fixed Delay of %s (half the tick interval: a hedge's answer still makes the tick that delivers the fast calls), "+
			"and with DelayQuantile %s and no floor (no hedge until 32 attempts have succeeded, the warm-up's included), HedgePolicy's defaults otherwise (two attempts, Budget 0.1); "+
			"each trial starts the backends and a fresh reactor with the default lanes and warms up until every backend has served a call: "+
			"p50 and p99 of the measured calls' latency from submission to callback, the transport calls the backends received beyond one per call as a percentage of the calls (the extra load), "+
			"and the hedges sent and those that won, MethodStats.Hedges and HedgesWon over the measured calls.",
			base.Backends, base.SlowEvery, durationText(base.SlowDelay), thousands(base.Calls), base.PerTick, durationText(base.TickEvery),
			durationText(base.Timeout), durationText(base.TickEvery), durationText(fixed), quantile),
		Labels: []string{"Hedge", "Delay", "DelayQuantile"},
		Figures: []policyFigure{
			{Key: "p50_ms", Head: "p50 (ms)", Digits: 2},
			{Key: "p99_ms", Head: "p99 (ms)", Digits: 2},
			{Key: "extra_load_pct", Head: "extra load (%)", Digits: 2},
			{Key: "hedges", Head: "hedges sent"},
			{Key: "hedges_won", Head: "hedges won"},
		},
	}
	for _, c := range cases {
		labels := []string{"off", "–", "–"}
		if h := c.Config.Hedge; h != nil {
			labels = []string{"on", durationText(h.Delay), "–"}
			if h.DelayQuantile > 0 {
				labels[1], labels[2] = durationText(h.Delay)+" (floor)", strconv.FormatFloat(h.DelayQuantile, 'g', -1, 64)
			}
		}
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: labels, trial: func() (PolicyTrial, error) {
			res, err := policybench.RunHedge(c.Config)
			return PolicyTrial{Figures: []float64{ms(res.P50), ms(res.P99), 100 * res.ExtraLoad(), float64(res.Hedges), float64(res.HedgesWon)}, Errors: res.Failed}, err
		}})
	}
	return s
}

// failoverScenario is the failover scenario over base: policybench.FailoverCases.
func failoverScenario(base policybench.FailoverConfig) policyScenario {
	s := policyScenario{
		Name: "failover", Title: "Hedged reads with a backend killed",
		About: fmt.Sprintf("Reads spread by round_robin over %d backends (Config.Targets) that each answer every call after %s; "+
			"the host submits %s reads open-loop, %d every %s, each with a timeout of %s, and calls Tick(2 ms) every %s in between. "+
			"Once %s reads have been submitted, the first backend is killed at the first tick at which it is serving a call: "+
			"its gRPC server stopped at once (grpc.Server.Stop), its listener and connections closed, so that the calls it serves fail on the client with Unavailable. "+
			"The method is idempotent: unhedged, gRPC retries a call that failed with Unavailable as Config.Retry's defaults say; "+
			"hedged with HedgePolicy{DelayQuantile: 0.95} as the documentation shows it, its other fields, NonFatalCodes among them, left to their defaults; "+
			"and the same with NonFatalCodes [Unavailable]. "+
			"Each trial starts the backends and a fresh reactor with the default lanes and warms up until every backend has served a call: "+
			"the reads that succeeded, those that failed with Unavailable and with DeadlineExceeded, the calls the killed backend was serving just before it was killed, "+
			"and the hedges sent and those that won, MethodStats.Hedges and HedgesWon over the reads. Errors: reads that failed with any other code.",
			base.Backends, durationText(base.Service), thousands(base.Calls), base.PerTick, durationText(base.TickEvery),
			durationText(base.Timeout), durationText(base.TickEvery), thousands(base.KillAfter)),
		Labels: []string{"Hedge", "DelayQuantile", "NonFatalCodes"},
		Figures: []policyFigure{
			{Key: "calls_ok", Head: fmt.Sprintf("calls OK (of %s)", thousands(base.Calls))},
			{Key: "unavailable", Head: "Unavailable (calls)"},
			{Key: "deadline_exceeded", Head: "DeadlineExceeded (calls)"},
			{Key: "broken", Head: "serving when killed (calls)"},
			{Key: "hedges", Head: "hedges sent"},
			{Key: "hedges_won", Head: "hedges won"},
		},
	}
	for _, c := range policybench.FailoverCases(base) {
		labels := []string{"off (gRPC's retry)", "–", "–"}
		if h := c.Config.Hedge; h != nil {
			labels = []string{"on", strconv.FormatFloat(h.DelayQuantile, 'g', -1, 64), "default"}
			if len(h.NonFatalCodes) > 0 {
				var names []string
				for _, code := range h.NonFatalCodes {
					names = append(names, code.String())
				}
				labels[2] = strings.Join(names, ", ")
			}
		}
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: labels, trial: func() (PolicyTrial, error) {
			res, err := policybench.RunFailover(c.Config)
			return PolicyTrial{Figures: []float64{float64(res.OK), float64(res.Unavailable), float64(res.DeadlineExceeded), float64(res.Broken),
				float64(res.Hedges), float64(res.HedgesWon)}, Errors: res.Failed}, err
		}})
	}
	return s
}

// durationText formats d for prose: whole seconds as "3 s", anything else in milliseconds, as
// "20 ms".
func durationText(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return fmt.Sprintf("%g ms", ms(d))
}

// streamScenario is the stream scenario over base: policybench.StreamCases, a server stream
// delivered to a ticking host through prpc and through the hand-written channel. Its server
// runs in this process unless base.Addr names one elsewhere; without it, the scenario can run
// apart, against a server at an address of another process.
func streamScenario(base policybench.StreamConfig) policyScenario {
	server, starts := "A server in this process", "Each trial starts the server and the client"
	if base.Addr != "" {
		server = "A server in a process of its own (the burst binary re-executed, pinned as the backends are: its threads on CPU 1, the client's, the host's thread among them, on CPU 0)"
		starts = "The server serves every trial of the placement; each trial starts the client"
	}
	s := policyScenario{
		Name: "streams", Title: "A server stream delivered to a ticking host",
		About: fmt.Sprintf("%s sends %s messages on one stream (TestService.Watch) as fast as HTTP/2's flow control lets it; "+
			"the host, locked to its OS thread, ticks every %s, each tick taking the messages that have arrived, with room for %s messages waiting: "+
			"through reactor.Watch, its messages delivered by Tick(%s) (prpc-watch, MaxWaiting %s), one OnMessage each, "+
			"or each run of messages that arrived together to one OnMessages (prpc-watch-batch), which spares Tick a reading of its clock per message; "+
			"through what a Go developer writes without prpc, the generated stub's Watch and a goroutine calling Recv into a channel of %s messages, which each tick drains (handwritten); "+
			"and the same drain reading the clock after each message and stopping once the tick's %s are spent, as Tick does to keep its budget (handwritten-budget). "+
			"%s and receives a stream of 1,000 messages to warm up: "+
			"the messages per second from opening the measured stream to its end, and the host's thread CPU time inside its ticks per message, what delivering a message costs the game loop.",
			server, thousands(base.Messages), durationText(base.TickEvery), thousands(base.Window), durationText(base.Budget), thousands(base.Window),
			thousands(base.Window), durationText(base.Budget), starts),
		Labels: []string{"delivered by"},
		Figures: []policyFigure{
			{Key: "messages_per_s", Head: "messages/s"},
			{Key: "host_ns_per_message", Head: "loop-thread CPU per message (ns)", Digits: 1},
		},
	}
	if base.Addr == "" {
		s.apart = func(addr string) policyScenario {
			b := base
			b.Addr = addr
			return streamScenario(b)
		}
	}
	for _, c := range policybench.StreamCases(base) {
		by := map[policybench.StreamClient]string{
			policybench.StreamPRPC: "Tick", policybench.StreamPRPCBatch: "Tick, in runs", policybench.StreamHand: "the channel, drained", policybench.StreamHandBudget: "the channel, drained under the budget",
		}[c.Config.Client]
		s.Cases = append(s.Cases, policyCase{Name: c.Name, Labels: []string{by}, trial: func() (PolicyTrial, error) {
			res, err := policybench.RunStream(c.Config)
			return PolicyTrial{Figures: []float64{res.MessagesPerSecond(), res.HostNsPerMessage()}}, err
		}})
	}
	return s
}
