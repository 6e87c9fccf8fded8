package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// The loop suite: the extreme burst submitted from inside a loop.Run game loop that does real
// CPU work every tick, to check its target: a 20 TPS loop doing 10 ms of game work per tick
// during the extreme burst (unpinned) keeps its tick interval p99 ≤ 52 ms and skips no tick.
const (
	suiteLoop       = "loop"
	loopTPS         = 20
	loopGameWork    = 10 * time.Millisecond // CPU burnt by OnTick every tick
	loopSubmitTick  = 5                     // the tick that submits the burst, once the loop is warm
	loopTailTicks   = 5                     // ticks run after the tick that follows the last outcome
	loopTargetP99   = 52 * time.Millisecond
	loopTargetSkips = 0
)

// loopShape is the loop suite's burst: the extreme suite's shape.
var loopShape = Shape{Calls: 20000, Workers: 6, Batch: 16, Trials: 3}

// LoopResult holds every trial of the loop suite.
type LoopResult struct {
	// Shape is the burst submitted in each trial and the reactor's Workers and BatchSize.
	Shape Shape
	// TPS is the loop's rate and GameWork the CPU time its OnTick burns every tick.
	TPS      int
	GameWork time.Duration
	// SubmitTick is the tick whose OnTick submits the whole burst; TailTicks is the number of
	// ticks run after the burst window before the loop is stopped.
	SubmitTick, TailTicks int
	Trials                []LoopTrial
}

// LoopTrial is the outcome of one trial of the loop suite: one loop.Run from its first tick
// to its stop.
type LoopTrial struct {
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
	Delivery         time.Duration // loop.Stats: time in the reactor's Tick, in ticks and wake-ups
	Submit, Burst    time.Duration // submitting every call; first submission to last outcome
	// SubmitFaults is the minor page faults of the process while the submitting tick submitted
	// every call (getrusage ru_minflt over submitAll; 0 if unknown): the fresh pages the
	// submissions touched, together with those touched meanwhile by the reactor's goroutines
	// (and the backend's, in process).
	SubmitFaults int64
	// SubmitThread is what submitting every call cost the loop's own OS thread, the goroutine
	// locked to it over submitAll; zero if unknown.
	SubmitThread SubmitThread
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

// MeetsTarget reports whether the trial meets the loop suite's target: tick interval p99 at
// most loopTargetP99 over the burst window and no more than loopTargetSkips skipped ticks in
// the whole run.
func (t LoopTrial) MeetsTarget() bool {
	return t.Interval.N > 0 && t.Interval.P99 <= loopTargetP99 && t.Skipped <= loopTargetSkips
}

// Intervals summarises the intervals between successive tick starts: N intervals, their
// nearest-rank p50 and p99, and the longest. With fewer than 100 intervals p99 is the longest.
type Intervals struct {
	N             int
	P50, P99, Max time.Duration
}

// intervalsOf returns the summary of the intervals between the successive times of starts,
// which must be in order.
func intervalsOf(starts []time.Time) Intervals {
	if len(starts) < 2 {
		return Intervals{}
	}
	d := make([]time.Duration, len(starts)-1)
	for i := range d {
		d[i] = starts[i+1].Sub(starts[i])
	}
	slices.Sort(d)
	return Intervals{N: len(d), P50: percentile(d, 50), P99: percentile(d, 99), Max: d[len(d)-1]}
}

// runLoop runs the loop suite's trials of s, one after the other, and returns them.
func (rn *runner) runLoop(s Shape) (*LoopResult, error) {
	res := &LoopResult{Shape: s, TPS: loopTPS, GameWork: loopGameWork, SubmitTick: loopSubmitTick, TailTicks: loopTailTicks}
	for t := 1; t <= s.Trials; t++ {
		tr, err := rn.loopTrial(s)
		tr.Trial = t
		if err != nil {
			return res, fmt.Errorf("trial %d: %w", t, err)
		}
		res.Trials = append(res.Trials, tr)
		fmt.Fprintf(rn.progress, "burst: %-8s %-22s trial %d/%d %-7s interval p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  skipped %d  overruns %d  submit %6.2f ms (%s faults; thread CPU %5.2f ms, sys %5.2f ms, %s faults, preempted %d)  burst %6.3f s  errors %d\n",
			suiteLoop, s, t, s.Trials, clientPRPC, ms(tr.Interval.P50), ms(tr.Interval.P99), ms(tr.Interval.Max),
			tr.Skipped, tr.Overruns, ms(tr.Submit), thousands(int(tr.SubmitFaults)),
			ms(tr.SubmitThread.CPU), ms(tr.SubmitThread.Sys), thousands(int(tr.SubmitThread.Faults)), tr.SubmitThread.Preempted, tr.Burst.Seconds(), tr.Errors())
	}
	return res, nil
}

// loopTrial warms up a fresh prpc reactor of shape s, then hands it to a loop.Run at loopTPS
// whose OnTick submits the burst on tick loopSubmitTick and burns loopGameWork of CPU every
// tick, and stops the loop loopTailTicks ticks after the tick that follows the last outcome.
// The loop closes the reactor.
func (rn *runner) loopTrial(s Shape) (LoopTrial, error) {
	tr := LoopTrial{Calls: s.Calls}
	c, err := newPRPCClient(rn.addr, s, rn.timeout, rn.budget, max(s.Calls, rn.warmup), rn.metadata)
	if err != nil {
		return tr, fmt.Errorf("prpc client: %w", err)
	}
	if err := rn.warmUp(c); err != nil {
		return tr, errors.Join(err, c.Close())
	}
	debug.FreeOSMemory()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &loopBurst{
		r: c.r, xuids: rn.xuids[:s.Calls], rec: newRecorder(rn.players[:s.Calls]),
		stuckAfter: rn.timeout + 30*time.Second, stop: cancel, doneTick: -1,
	}
	l, err := loop.New(loop.Config{
		TPS:      loopTPS,
		Budget:   rn.budget,
		Reactors: []loop.Reactor{c.r},
		OnTick:   b.onTick,
	})
	if err != nil {
		return tr, errors.Join(err, c.Close())
	}
	runErr := l.Run(ctx)
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
	r          *reactor.Reactor
	xuids      []string
	rec        *recorder
	stuckAfter time.Duration
	stop       context.CancelFunc

	starts       []time.Time // starts[n] is when tick n's OnTick began
	submitAt     time.Time   // just before the first call was submitted
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
		b.submitAll()
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
		b.err = fmt.Errorf("stuck: %d of %d outcomes delivered; stats %+v", b.rec.done, b.rec.n, b.r.Stats())
		b.stop()
	}
	if b.doneTick >= 0 && tick >= b.doneTick+loopTailTicks {
		b.stop()
	}
	burnCPU(loopGameWork)
}

// submitAll submits one GetPlayer call per xuid; the callbacks record and check each outcome.
func (b *loopBurst) submitAll() {
	for i, xuid := range b.xuids {
		req := &networkpb.GetPlayerRequest{Xuid: xuid}
		start := time.Now()
		reactor.Call(b.r, getPlayer, req, nil).
			Then(func(resp *networkpb.GetPlayerResponse) {
				b.rec.success(i, start, resp)
				b.noteOutcome()
			}).
			OnError(func(err error) {
				b.rec.failure(i, start, err)
				b.noteOutcome()
			})
	}
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
