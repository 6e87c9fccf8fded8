package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/rank"
	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/loop"
)

// The loop suite: a burst submitted from inside a loop.Run game loop that does real CPU work
// every tick, through prpc in each form of submission and through the hand-written grpc-go
// pool (handpool), in interleaved trials, to measure what the burst costs the loop with each.
const (
	suiteLoop      = "loop"
	loopTPS        = 20
	loopGameWork   = 10 * time.Millisecond // CPU burnt by OnTick every tick
	loopSubmitTick = 5                     // the tick that submits the burst, once the loop is warm
	loopTailTicks  = 5                     // ticks run after the tick that follows the last outcome
	loopTrials     = 7                     // trials per client and burst size by default
	// loopLate is the longest tick interval that is not late: the period and 2 ms.
	loopLate = 52 * time.Millisecond
)

// loopSizes are the loop suite's burst sizes, run in this order; loopWorkers × loopBatch is
// prpc's reactor shape and the pool's number of goroutines.
var (
	loopSizes              = []int{2000, 5000, 20000}
	loopWorkers, loopBatch = 6, 16
)

// LoopResult holds every trial of the loop suite.
type LoopResult struct {
	// TPS is the loop's rate and GameWork the CPU time its OnTick burns every tick.
	TPS      int
	GameWork time.Duration
	// SubmitTick is the tick whose OnTick submits the whole burst; TailTicks is the number of
	// ticks run after the burst window before the loop is stopped.
	SubmitTick, TailTicks int
	// Sizes holds the trials of each burst size, in the order they ran.
	Sizes []LoopSize
	// Targets are the bounds its verdicts judge by: targets.json's for a run.
	Targets loopTargets
}

// LoopSize holds the trials of one burst size: Shape.Calls calls per burst, prpc's reactors
// with Shape.Workers × Shape.Batch and the pool with as many goroutines, Shape.Trials trials
// per client. Trials are in running order: trial 1 of every client, then trial 2, and so on,
// the clients of each trial in the order trialOrder gives.
type LoopSize struct {
	Shape  Shape
	Trials []LoopTrial
}

// LoopTrial is the outcome of one trial of the loop suite: one loop.Run from its first tick
// to its stop, with a fresh client.
type LoopTrial struct {
	Client            string
	Trial             int
	Calls, OK         int
	Failed, Wrong     int // failed calls; wrong responses and duplicate outcomes
	FirstErr          string
	Ticks, Skipped    uint64 // loop.Stats over the whole run
	Overruns, Wakeups uint64 // loop.Stats over the whole run
	// Interval covers the burst window: the intervals between the starts of the tick that
	// submits the burst and of each tick after it, up to the first tick to start after the
	// last outcome.
	Interval Intervals
	// AfterSubmit is the longest of those intervals but the first, which holds the
	// submitting tick, so as to tell the cost of submitting from that of delivering.
	AfterSubmit      time.Duration
	TickP99, TickMax time.Duration // loop.Stats tick durations over the whole run
	Delivery         time.Duration // loop.Stats: time in the client's Tick, in ticks and wake-ups
	// Submit is the time submitting every call took; Burst runs from the start of the
	// submitting tick to the last outcome.
	Submit, Burst time.Duration
	// SubmitFaults is the minor page faults of the process while the submitting tick submitted
	// every call (getrusage ru_minflt over submitAll; 0 if unknown): the fresh pages the
	// submissions touched, together with those touched meanwhile by the client's goroutines
	// (and the backend's, in process).
	SubmitFaults int64
	// SubmitThread is what submitting every call cost the loop's own OS thread, the goroutine
	// locked to it over submitAll; zero if unknown.
	SubmitThread SubmitThread
	// Scrapes is how many times the metrics client's scraper read both adapters while the
	// loop ran; 0 for the other clients.
	Scrapes int
}

// SubmitThread is the loop thread's share of submitting the burst: its CPU time (exact,
// CLOCK_THREAD_CPUTIME_ID), and from getrusage(RUSAGE_THREAD) the part of it in the kernel
// (as of the thread's last scheduler tick, so to a few milliseconds), the minor page faults
// it took itself, and how often the kernel gave its CPU to another thread. Submit minus CPU
// is time the thread waited for a CPU.
type SubmitThread struct {
	CPU, Sys          time.Duration
	Faults, Preempted int64
}

// Errors is the number of calls that failed or were answered wrongly.
func (t LoopTrial) Errors() int { return t.Failed + t.Wrong }

// Intervals summarises the intervals between successive tick starts: N intervals, their
// nearest-rank p50 and p99, the longest, and the number of late ones (longer than loopLate).
// With fewer than 100 intervals p99 is the longest.
type Intervals struct {
	N             int
	P50, P99, Max time.Duration
	Late          int
}

// intervalsOf returns the summary of the intervals between the successive times of starts,
// which must be in order.
func intervalsOf(starts []time.Time) Intervals {
	if len(starts) < 2 {
		return Intervals{}
	}
	d := make([]time.Duration, len(starts)-1)
	late := 0
	for i := range d {
		d[i] = starts[i+1].Sub(starts[i])
		if d[i] > loopLate {
			late++
		}
	}
	slices.Sort(d)
	return Intervals{N: len(d), P50: rank.Percentile(d, 50), P99: rank.Percentile(d, 99), Max: d[len(d)-1], Late: late}
}

// loopClient is a client as the loop suite drives it.
type loopClient interface {
	// client's burst runs the warm-up; its Close releases a client whose loop never ran.
	client
	// driven returns what loop.Run ticks, wakes on Ready and, when it stops, closes, which
	// releases the client.
	driven() loop.Reactor
	// submitAll submits one GetPlayer call per b.xuids as game logic does: a new request per
	// call and a callback that captures the call's own state and hands its outcome to
	// b.rec, then b.noteOutcome.
	submitAll(b *loopBurst)
	// state describes the client's outstanding work, for the error of a trial whose outcomes
	// stopped arriving.
	state() string
	// metricsOf returns the metrics client's adapters, which loopTrial registers the loop
	// with and scrapes while the loop runs; nil for the other clients.
	metricsOf() *metricsAdapters
}

// newLoopClient returns a fresh client of the given name with room for maxCalls calls.
func (rn *runner) newLoopClient(name string, s Shape, maxCalls int) (loopClient, error) {
	if name == clientBaseline {
		return newPoolClient(rn.addr, s, rn.timeout, rn.budget, maxCalls, rn.metadata)
	}
	return newPRPCClient(name, rn.addr, s, rn.timeout, rn.budget, maxCalls, rn.metadata)
}

// trialOrder returns the order in which n clients, as indices into the list of clients, run
// trial t (from 1) of the loop suite: row t−1 (modulo n) of a Williams design, a Latin square
// whose first row is 0, 1, n−1, 2, n−2, … and whose row r adds r to each entry, modulo n.
// Over n trials each client runs once in each position of a trial and, for an even n, right
// after each other client once, so that neither the position a client runs in nor the client
// that ran just before it favours one client; over a number of trials that n does not divide,
// the positions are as even as they can be.
func trialOrder(n, t int) []int {
	first := make([]int, n)
	lo, hi := 1, n-1
	for j := 1; j < n; j++ {
		if j%2 == 1 {
			first[j], lo = lo, lo+1
		} else {
			first[j], hi = hi, hi-1
		}
	}
	order := make([]int, n)
	for j, c := range first {
		order[j] = (c + t - 1) % n
	}
	return order
}

// runLoop runs the loop suite: for each shape, its trials interleaved, trial 1 of every
// client, then trial 2, and so on, the clients of each trial in the order trialOrder gives.
// It returns the trials run so far with any error.
func (rn *runner) runLoop(shapes []Shape) (*LoopResult, error) {
	res := &LoopResult{TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks, Targets: targets}
	for _, s := range shapes {
		res.Sizes = append(res.Sizes, LoopSize{Shape: s})
		size := &res.Sizes[len(res.Sizes)-1]
		for t := 1; t <= s.Trials; t++ {
			for _, c := range trialOrder(len(rn.loopClients), t) {
				name := rn.loopClients[c]
				var (
					tr  LoopTrial
					err error
				)
				asClient(name, func() { tr, err = rn.loopTrial(name, s) })
				tr.Client, tr.Trial = name, t
				if err != nil {
					return res, fmt.Errorf("%s: %s trial %d: %w", s, name, t, err)
				}
				size.Trials = append(size.Trials, tr)
				fmt.Fprintf(rn.progress, "burst: %-8s %-22s trial %d/%d %-14s interval p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  late %d  skipped %d  overruns %d  submit %6.2f ms (%s faults; thread CPU %5.2f ms, sys %5.2f ms, %s faults, preempted %d)  to last delivery %7.1f ms  errors %d\n",
					suiteLoop, s, t, s.Trials, name, ms(tr.Interval.P50), ms(tr.Interval.P99), ms(tr.Interval.Max), tr.Interval.Late,
					tr.Skipped, tr.Overruns, ms(tr.Submit), thousands(int(tr.SubmitFaults)),
					ms(tr.SubmitThread.CPU), ms(tr.SubmitThread.Sys), thousands(int(tr.SubmitThread.Faults)), tr.SubmitThread.Preempted, ms(tr.Burst), tr.Errors())
			}
		}
	}
	return res, nil
}

// loopTrial warms up a fresh client of the given name for shape s, then hands it to a
// loop.Run at loopTPS whose OnTick submits the burst on tick loopSubmitTick and burns
// loopGameWork of CPU every tick, and stops the loop loopTailTicks ticks after the tick that
// follows the last outcome. The loop closes the client. The metrics client's adapters take
// the loop too, and are scraped from just before the loop runs to just after it stops.
func (rn *runner) loopTrial(name string, s Shape) (LoopTrial, error) {
	tr := LoopTrial{Calls: s.Calls}
	c, err := rn.newLoopClient(name, s, max(s.Calls, rn.warmup))
	if err != nil {
		return tr, fmt.Errorf("%s client: %w", name, err)
	}
	if err := rn.warmUp(c); err != nil {
		return tr, errors.Join(err, c.Close())
	}
	debug.FreeOSMemory()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &loopBurst{
		c: c, xuids: rn.xuids[:s.Calls], rec: newRecorder(rn.players[:s.Calls]),
		stuckAfter: rn.timeout + 30*time.Second, stop: cancel, doneTick: -1,
	}
	l, err := loop.New(loop.Config{
		TPS:      loopTPS,
		Budget:   rn.budget,
		Reactors: []loop.Reactor{c.driven()},
		OnTick:   b.onTick,
	})
	if err != nil {
		return tr, errors.Join(err, c.Close())
	}
	m := c.metricsOf()
	if m != nil {
		if err := m.addLoop(l); err != nil {
			return tr, errors.Join(err, c.Close())
		}
		m.startScraping()
	}
	runErr := l.Run(ctx)
	if m != nil {
		var scrapeErr error
		tr.Scrapes, scrapeErr = m.stopScraping()
		runErr = errors.Join(runErr, scrapeErr, m.close())
	}
	st := l.Stats()
	if b.err != nil || runErr != nil {
		return tr, errors.Join(b.err, runErr)
	}
	if b.doneTick < 0 {
		return tr, fmt.Errorf("the loop stopped with %d of %d outcomes delivered", b.rec.done, b.rec.n)
	}
	tr.OK, tr.Failed, tr.Wrong, tr.FirstErr = b.rec.ok, b.rec.failed, b.rec.wrong, b.rec.firstErr
	tr.Ticks, tr.Skipped, tr.Overruns, tr.Wakeups = st.Ticks, st.Skipped, st.Overruns, st.Wakeups
	tr.TickP99, tr.TickMax, tr.Delivery = st.TickP99, st.TickMax, st.Delivery
	tr.Interval = intervalsOf(b.starts[loopSubmitTick : b.doneTick+1])
	tr.AfterSubmit = intervalsOf(b.starts[loopSubmitTick+1 : b.doneTick+1]).Max
	tr.Submit, tr.Burst = b.submit, b.lastAt.Sub(b.submitAt)
	tr.SubmitFaults = b.submitFaults
	tr.SubmitThread = b.submitThread
	return tr, nil
}

// loopBurst is the game of one loop trial. Everything in it runs on the loop goroutine.
type loopBurst struct {
	c          loopClient
	xuids      []string
	rec        *recorder
	stuckAfter time.Duration
	stop       context.CancelFunc

	starts       []time.Time // starts[n] is when tick n's OnTick began
	submitAt     time.Time   // when the submitting tick's OnTick began
	submit       time.Duration
	submitFaults int64 // the process's minor page faults over submitAll
	submitThread SubmitThread
	lastAt       time.Time // when the last outcome was recorded
	doneTick     int       // the first tick to start after the last outcome; −1 until then
	err          error
}

// onTick is the loop's OnTick: it submits the burst on tick loopSubmitTick, notes when the
// burst is over, stops the loop loopTailTicks ticks later (or if outcomes stop arriving),
// and burns loopGameWork of CPU, every tick.
func (b *loopBurst) onTick(n uint64) {
	now := time.Now()
	b.starts = append(b.starts, now)
	tick := int(n)
	switch {
	case tick == loopSubmitTick:
		b.submitAt = now
		u0 := getUsage()
		runtime.LockOSThread() // so that the thread's usage is the submission's
		t0 := getThreadUsage()
		c0, _ := threadcpu.Now() // 0 where unknown, as is c1
		b.c.submitAll(b)
		c1, _ := threadcpu.Now()
		t1 := getThreadUsage()
		runtime.UnlockOSThread()
		b.submit = time.Since(now)
		b.submitFaults = getUsage().minFlt - u0.minFlt
		b.submitThread = SubmitThread{
			CPU: c1 - c0, Sys: t1.sys - t0.sys,
			Faults: t1.minFlt - t0.minFlt, Preempted: t1.nivcsw - t0.nivcsw,
		}
	case tick > loopSubmitTick && b.doneTick < 0 && b.rec.complete():
		b.doneTick = tick
	case tick > loopSubmitTick && b.doneTick < 0 && now.Sub(b.submitAt) > b.stuckAfter:
		b.err = fmt.Errorf("stuck: %d of %d outcomes delivered; %s", b.rec.done, b.rec.n, b.c.state())
		b.stop()
	}
	if b.doneTick >= 0 && tick >= b.doneTick+loopTailTicks {
		b.stop()
	}
	burnCPU(loopGameWork)
}

// noteOutcome notes the time of the last outcome, once every call has one.
func (b *loopBurst) noteOutcome() {
	if b.lastAt.IsZero() && b.rec.complete() {
		b.lastAt = time.Now()
	}
}

// burnSink keeps burnCPU's arithmetic from being optimised away.
var burnSink uint64

// burnCPU is the game work: it keeps the calling goroutine's CPU busy for d, computing, not
// sleeping, so that it competes with the burst for the CPUs.
func burnCPU(d time.Duration) {
	start := time.Now()
	x := burnSink | 1
	for time.Since(start) < d {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	burnSink = x
}
