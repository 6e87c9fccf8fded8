package reactor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// simSeeds is how many seeds TestSimulation runs unless PRPC_SIM_SEEDS says otherwise: the
// README's test command runs these, under -race in CI; a CI step of its own runs 100,000
// without -race.
const simSeeds = 2000

// TestSimulation runs the deterministic simulation (sim_world_internal_test.go) for many seeds,
// in parallel, and fails with the seed and the shortest prefix of its events that breaks an
// invariant. PRPC_SIM_SEED=n reruns seed n alone, printing its events; PRPC_SIM_SEEDS=n runs n
// seeds from PRPC_SIM_FIRST (default 1); PRPC_SIM_BUDGET=d fails a run that takes longer than
// d. Environment variables, not flags, so that go test ./... works in every package.
func TestSimulation(t *testing.T) {
	if s := os.Getenv("PRPC_SIM_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PRPC_SIM_SEED=%q: %v", s, err)
		}
		w, err := runSeed(t, seed, simMaxEvents, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: %v; %d calls, %d steps\n%s", seed, w, len(w.calls), w.steps, w.log(0))
		if w.err != nil {
			t.Fatal(describeFailure(t, seed, w))
		}
		return
	}
	n, first := envUint(t, "PRPC_SIM_SEEDS", simSeeds), envUint(t, "PRPC_SIM_FIRST", 1)
	start := time.Now()
	sum := runSeeds(t, first, n, func(seed uint64, w *simWorld, err error) {
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			return
		}
		t.Error(describeFailure(t, seed, w))
	})
	if sum.failed == 0 {
		t.Logf("%d seeds from %d in %v: every invariant held; per seed at least %d calls and %d steps, %d calls and %d steps on average; Close gave up on stuck lanes in %d seeds; %d calls joined a flight; %d resends; %d calls shed; %d hedges sent, %d won",
			n, first, time.Since(start).Round(time.Millisecond), sum.minCalls, sum.minSteps, sum.calls/n, sum.steps/n, sum.abandoned, sum.coalesced, sum.resends, sum.shed, sum.hedges, sum.hedgesWon)
	}
	if b := os.Getenv("PRPC_SIM_BUDGET"); b != "" {
		budget, err := time.ParseDuration(b)
		if err != nil {
			t.Fatalf("PRPC_SIM_BUDGET=%q: %v", b, err)
		}
		if took := time.Since(start); took > budget {
			t.Errorf("%d seeds took %v, over PRPC_SIM_BUDGET %v", n, took.Round(time.Millisecond), budget)
		}
	}
	if n >= simSeeds && sum.abandoned == 0 {
		t.Errorf("in none of %d seeds did Close give up on lanes stuck in a hook", n)
	}
	if n >= simSeeds && sum.coalesced == 0 {
		t.Errorf("in none of %d seeds did a call join a flight", n)
	}
	if n >= simSeeds && sum.shed == 0 {
		t.Errorf("in none of %d seeds was a call shed", n)
	}
	if n >= simSeeds && sum.resends == 0 {
		t.Errorf("in none of %d seeds was a flight sent again for calls whose deadlines are later", n)
	}
	if n >= simSeeds && sum.hedgesWon == 0 {
		t.Errorf("in none of %d seeds did a hedge win", n)
	}
	if n >= simSeeds {
		sum.bidi.check(t, n)
		if sum.longRuns == 0 {
			t.Errorf("in none of %d seeds did OnMessages get a run of several messages", n)
		}
		t.Logf("OnMessages got runs of several messages in %d of %d seeds", sum.longRuns, n)
	}
	if sum.minCalls < simMinCalls || sum.minSteps < simMinEvents {
		t.Errorf("a seed ran %d calls and %d steps, fewer than the %d and %d every seed must", sum.minCalls, sum.minSteps, simMinCalls, simMinEvents)
	}
}

// seedsSummary sums up the seeds runSeeds ran.
type seedsSummary struct {
	failed             int
	abandoned          uint64   // seeds in which Close gave up on lanes stuck in a hook
	coalesced          uint64   // calls that joined a flight, in all
	resends            uint64   // flights sent again for members whose deadlines are later, in all
	shed               uint64   // calls shed, in all
	hedges, hedgesWon  uint64   // hedges sent and won, in all
	calls, steps       uint64   // in all
	minCalls, minSteps int      // of a seed
	bidi               bidiSeen // seeds that reached each path of Bidi's sending
	longRuns           uint64   // seeds in which OnMessages got a run of several messages
}

// runSeeds runs seeds first to first+n-1 on GOMAXPROCS goroutines, calls report (from one
// goroutine at a time) for each seed that fails, and sums them up. It stops reporting after
// the first few failures.
func runSeeds(t *testing.T, first, n uint64, report func(seed uint64, w *simWorld, err error)) seedsSummary {
	// The worlds are small and short-lived: collect garbage less often than by default.
	defer debug.SetGCPercent(debug.SetGCPercent(2000))
	var next atomic.Uint64
	next.Store(first)
	var mu sync.Mutex
	sum := seedsSummary{minCalls: math.MaxInt, minSteps: math.MaxInt}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				seed := next.Add(1) - 1
				if seed >= first+n {
					return
				}
				w, err := runSeed(t, seed, simMaxEvents, false)
				mu.Lock()
				if err == nil {
					sum.calls += uint64(len(w.calls))
					sum.resends += uint64(w.resends)
					w.r.mu.Lock()
					sum.shed += w.r.counts.shed
					w.r.mu.Unlock()
					if w.r.stuckLanes > 0 {
						sum.abandoned++
					}
					if m := w.r.byPath[simRead.Path()]; m != nil {
						sum.coalesced += m.counters.coalesced.Load()
						sum.hedges += m.counters.hedges.Load()
						sum.hedgesWon += m.counters.hedgesWon.Load()
					}
					sum.steps += uint64(w.steps)
					sum.bidi.add(w.bidiSeen)
					if w.longRuns > 0 {
						sum.longRuns++
					}
					sum.minCalls, sum.minSteps = min(sum.minCalls, len(w.calls)), min(sum.minSteps, w.steps)
				}
				if err != nil || w.err != nil {
					sum.failed++
					if sum.failed <= 3 {
						report(seed, w, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sum
}

func envUint(t *testing.T, name string, def uint64) uint64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// describeFailure says which invariant seed broke, then finds and prints the shortest prefix
// of its events that still breaks one: the run's first events, up to a point after which the
// host stops at once and closes.
func describeFailure(t *testing.T, seed uint64, w *simWorld) string {
	shortest := shortestFailingPrefix(t, seed, w.steps)
	return fmt.Sprintf("seed %d (%v): %v\n\nthe shortest failing prefix: the first %d steps of the seed, then the host stops and closes (PRPC_SIM_SEED=%d reruns the whole seed):\n%s",
		seed, w, w.err, shortest.played, seed, shortest.log(80))
}

// shortestFailingPrefix returns the run of seed that breaks an invariant when the host stops
// playing after the fewest steps, at most max.
func shortestFailingPrefix(t *testing.T, seed uint64, max int) *simWorld {
	lo, hi := 0, max
	best, _ := runSeed(t, seed, hi, true)
	for lo < hi {
		mid := (lo + hi) / 2
		if w, err := runSeed(t, seed, mid, true); err == nil && w.err != nil {
			hi, best = mid, w
		} else {
			lo = mid + 1
		}
	}
	return best
}

// runSeed runs seed: the host plays for stopAfter steps at most (fewer once it has submitted
// simMinCalls calls over simMinEvents steps and decides to stop), then stops, drains or
// closes, and the run goes on until Close has returned. It stops at the first broken
// invariant.
//
// A seed whose game opens streams runs in a testing/synctest bubble of t's, so that the
// simulator can wait for the streams' goroutines between its steps
// (sim_stream_internal_test.go); the others run directly.
func runSeed(t *testing.T, seed uint64, stopAfter int, logging bool) (w *simWorld, err error) {
	run := func(wait func()) {
		w, err = newSimWorld(seed)
		if err != nil {
			return
		}
		w.withStreams, w.wait = seedHasStreams(seed), wait
		w.logging = logging
		func() {
			defer func() {
				if p := recover(); p != nil {
					w.fail("panic at step %d: %v\n%s", w.steps, p, debug.Stack())
				}
			}()
			w.play(stopAfter)
		}()
		// After a broken invariant the run stops wherever it was: no stream goroutine may
		// outlive the bubble.
		w.releaseStreams()
	}
	if !seedHasStreams(seed) {
		run(func() {})
		return w, err
	}
	synctest.Test(t, func(*testing.T) { run(synctest.Wait) })
	return w, err
}

// play runs the world's steps until Close has returned or an invariant breaks.
func (w *simWorld) play(stopAfter int) {
	for w.err == nil {
		if w.host == hostPlaying && (w.steps >= stopAfter ||
			len(w.calls) >= simMinCalls && w.steps >= simMinEvents && w.pct(5)) {
			w.stop()
			w.settleStreams() // before the next step: stopping the streams woke their goroutines
		}
		if w.host == hostClosed {
			return
		}
		if w.host != hostPlaying && w.steps > w.played+simFinishSteps {
			w.fail("the host stopped %d steps ago and Close has not returned", simFinishSteps)
			return
		}
		w.step()
		w.settleStreams()
		w.steps++
		w.readOutbox()
		w.check()
	}
}

// settleStreams lets every stream goroutine that the last step (or stop) may have woken run
// to its next wait, then reads what each waits for.
func (w *simWorld) settleStreams() {
	if w.streamsWoken && len(w.liveStreams) > 0 {
		w.wait()
		w.pollStreams()
	}
	w.streamsWoken = false
}

// stop ends play: the host either drains, as Shutdown does, or closes at once.
func (w *simWorld) stop() {
	w.played = w.steps
	if w.pct(60) {
		w.host = hostDraining
		w.closeStreams(false) // Shutdown stops every stream as it begins
		w.note("the host stops playing and drains")
		return
	}
	w.beginClose()
}

// beginClose is the host's Close beginning.
func (w *simWorld) beginClose() {
	w.host = hostClosing
	w.closeStreams(true) // Close stops the streams before the reactor goroutine
	w.r.beginClose()
	w.note("the host closes the reactor")
}

// step runs one event, chosen at random among those that can happen now.
func (w *simWorld) step() {
	type choice struct {
		weight int
		run    func()
	}
	var choices [24]choice
	k := 0
	add := func(weight int, run func()) {
		if weight > 0 {
			choices[k] = choice{weight, run}
			k++
		}
	}
	if w.host == hostPlaying {
		// While the backend is slow, the same calls are an overload: the lanes fall behind.
		add(10, func() { w.submit(false) })
		add(2, w.readBurst)
	}
	if !w.engineDone {
		weight := 3
		if w.turnWanted() {
			weight = 30
		}
		add(weight, w.turnStep)
	}
	// The lanes' queue may hold dropped calls, which the Queued gauge no longer counts: a
	// stopping reactor waits for the lanes to take them.
	if w.busyLanes() > 0 || w.r.queued.Load() > 0 || w.turn.phase == turnStopping && w.workQueued() || w.hedgesQueued() {
		add(25, func() { w.laneStep(w.lanes[w.rng.IntN(len(w.lanes))]) })
	}
	add(8, func() {
		d := time.Duration(w.rng.IntN(2000)) * time.Microsecond
		if w.pct(5) {
			d = time.Duration(w.rng.IntN(500)) * time.Millisecond
		}
		w.clock.now += d
		w.note("time passes: %v", d)
	})
	if w.host != hostClosed && w.steps >= w.pausedUntil && (w.host != hostClosing || w.pct(50)) {
		add(15, w.tick)
		if w.host == hostPlaying {
			add(1, func() {
				w.pausedUntil = w.steps + 10 + w.rng.IntN(200)
				w.note("the host stops ticking until step %d", w.pausedUntil)
			})
		}
	}
	add(3, w.cancelOne)
	if w.withStreams && w.host == hostPlaying && len(w.streams)-len(w.bidis) < simMaxStreams {
		add(1, w.openStream)
	}
	if w.withStreams && w.host == hostPlaying && len(w.bidis) < simMaxBidis {
		add(1, w.openBidi)
	}
	if st := w.pendingStream(); st != nil && !(w.stuckStreams && w.host == hostClosing) {
		add(20, func() { w.streamStep(st) })
	}
	if len(w.bidis) > 0 && w.host != hostClosed {
		add(4, w.bidiSendSome)
		add(1, w.bidiCloseSend)
	}
	if len(w.streams) > 0 {
		add(1, w.cancelStream)
		if w.host == hostPlaying && w.pct(20) {
			add(1, func() {
				w.closeStreams(false)
				w.note("game calls CloseStreams")
			})
		}
	}
	add(1, func() {
		w.backendDown = !w.backendDown
		w.note("the backend goes %s", map[bool]string{true: "down", false: "up"}[w.backendDown])
	})
	add(1, func() {
		w.backendSlow = !w.backendSlow
		w.note("the backend goes %s", map[bool]string{true: "slow: the lanes fall behind the calls", false: "back to its pace"}[w.backendSlow])
	})
	switch w.host {
	case hostDraining:
		if w.r.Idle() {
			add(10, w.beginClose)
		} else if w.steps > w.played+simFinishSteps/2 {
			add(5, w.beginClose) // the drain's timeout passed
		}
	case hostClosing:
		if !w.aborted {
			add(2, func() {
				w.aborted = true
				w.r.in.PushAbort(context.DeadlineExceeded)
				w.note("Close's context runs out: the reactor cuts off what is left")
			})
		}
		if !w.stuckStreams && w.heldStream() {
			// Close's grace passed with stream goroutines held by a hook in the transport:
			// it decides their ends itself.
			add(10, func() {
				w.stuckStreams = true
				w.r.stuckStreams = w.r.streams.abandon()
				w.streamsWoken = true
				w.note("Close gives up on %d stream goroutines held in a hook", w.r.stuckStreams)
			})
		}
		if w.engineDone && (len(w.liveStreams) == 0 || w.stuckStreams) {
			add(50, w.closeReturns)
		}
	}
	total := 0
	for _, c := range choices[:k] {
		total += c.weight
	}
	n := w.rng.IntN(total)
	for _, c := range choices[:k] {
		if n < c.weight {
			c.run()
			return
		}
		n -= c.weight
	}
}

// busyLanes returns how many lanes run a call.
func (w *simWorld) busyLanes() int {
	busy := 0
	for _, sl := range w.lanes {
		if sl.busy {
			busy++
		}
	}
	return busy
}

// workQueued reports whether calls, dropped ones included, wait in the lanes' queue.
func (w *simWorld) workQueued() bool {
	return w.r.work.Len() > 0
}

// cancelOne cancels a random call that has a promise.
func (w *simWorld) cancelOne() {
	if len(w.calls) == 0 {
		return
	}
	c := w.calls[w.rng.IntN(len(w.calls))]
	if c.promise == nil {
		return
	}
	c.promise.Cancel()
	w.note("game cancels call %d", c.id)
}

// closeReturns is the end of Close: the reactor goroutine has exited; Close delivers what is
// left and returns.
func (w *simWorld) closeReturns() {
	r := w.r
	w.inTick = true
	r.drainAll()
	w.inTick = false
	w.closeErr = r.closeResult(context.DeadlineExceeded, false, r.stuckLanes)
	w.host = hostClosed
	w.note("Close returns %v", w.closeErr)
	w.readOutbox()
	w.checkClosed()
	if r.stuckLanes > 0 && !errors.Is(w.closeErr, ErrHookBlocked) {
		w.fail("Close left %d lanes behind and returned %v, which is not ErrHookBlocked", r.stuckLanes, w.closeErr)
	}
	// The hooks that held the lanes Close gave up on return: each lane finishes with its
	// call, delivered already, and nothing happens.
	for _, sl := range w.lanes {
		if sl.busy {
			w.laneStep(sl)
		}
	}
	w.readOutbox()
	if r.out.Len() != 0 {
		w.fail("after Close, a lane that Close had given up on queued its call for Tick")
	}
	// So do the transport streams of the stream goroutines it gave up on: each returns
	// without queueing anything, its end delivered already.
	w.releaseStreams()
	if r.out.Len() != 0 {
		w.fail("after Close, a stream goroutine that Close had given up on queued a message or an end for Tick")
	}
	w.checkClosed()
	w.checkStreamsClosed()
}
