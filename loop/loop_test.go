package loop_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// onTick returns an OnTick that logs each tick.
func (h *harness) onTick() func(uint64) {
	return func(n uint64) { h.rec.add("OnTick %d", n) }
}

func TestTicksAtFixedRate(t *testing.T) {
	h := newHarness(t)
	r0, r1 := newFake("r0", h.rec, h.clk), newFake("r1", h.rec, h.clk)
	h.start(loop.Config{Reactors: []loop.Reactor{r0, r1}, Budget: 3 * time.Millisecond, OnTick: h.onTick()})
	require.Equal(t, []string{"OnTick 0", "r0.Tick", "r1.Tick"}, h.rec.take(), "tick 0 runs at once, OnTick first")

	const ticks = 30
	for k := 1; k <= ticks; k++ {
		h.clk.Advance(period - time.Nanosecond)
		require.Equal(t, 1, h.clk.Timers(), "tick %d: timer fired before its due time", k)
		h.clk.Advance(time.Nanosecond)
		h.waitBlocked()
		require.Equal(t, []string{fmt.Sprintf("OnTick %d", k), "r0.Tick", "r1.Tick"}, h.rec.take(), "tick %d", k)
	}

	st := h.loop.Stats()
	require.Equal(t, uint64(ticks+1), st.Ticks)
	require.Zero(t, st.Skipped)
	require.Zero(t, st.Overruns)
	require.Zero(t, st.Wakeups)
	require.Equal(t, 20.0, st.TPS, "ticks on schedule at the default 20 TPS")
	for _, r := range []*fakeReactor{r0, r1} {
		budgets := r.tickBudgets()
		require.Len(t, budgets, ticks+1)
		for _, b := range budgets {
			require.Equal(t, 3*time.Millisecond, b)
		}
	}
	require.NoError(t, h.stop())
	require.Equal(t, []uint64{h.runG}, h.rec.callers(), "everything runs on the Run goroutine")
}

func TestDefaultBudget(t *testing.T) {
	h := newHarness(t)
	r := newFake("r", h.rec, h.clk)
	h.start(loop.Config{Reactors: []loop.Reactor{r}})
	require.Equal(t, []time.Duration{loop.DefaultBudget}, r.tickBudgets())
}

func TestReadyDrainsBetweenTicks(t *testing.T) {
	for _, n := range []int{1, 3} { // one reactor: direct; several: fan-in
		t.Run(fmt.Sprintf("%d reactors", n), func(t *testing.T) {
			h := newHarness(t)
			var rs []loop.Reactor
			var fakes []*fakeReactor
			for i := range n {
				f := newFake(fmt.Sprintf("r%d", i), h.rec, h.clk)
				rs, fakes = append(rs, f), append(fakes, f)
			}
			h.start(loop.Config{Reactors: rs, OnTick: h.onTick()})
			h.rec.take()

			last := fakes[n-1]
			last.next(3, time.Millisecond)
			last.signal(t)
			h.rec.wait(t, 1) // no clock movement: the drain is immediate
			h.waitBlocked()
			require.Equal(t, []string{last.name + ".Tick"}, h.rec.take(), "only the signalled reactor, and no tick")
			require.Equal(t, last.tickBudgets()[1], loop.DefaultBudget)

			h.clk.Advance(period - time.Millisecond - time.Nanosecond)
			require.Equal(t, 1, h.clk.Timers(), "the wake-up moved the schedule")
			h.clk.Advance(time.Nanosecond)
			h.waitBlocked()
			want := []string{"OnTick 1"}
			for _, f := range fakes {
				want = append(want, f.name+".Tick")
			}
			require.Equal(t, want, h.rec.take())

			st := h.loop.Stats()
			require.Equal(t, uint64(2), st.Ticks, "a wake-up is not a tick")
			require.Equal(t, uint64(1), st.Wakeups)
			require.Equal(t, uint64(3), st.Delivered)
			require.Equal(t, time.Millisecond, st.Delivery)
			require.Zero(t, st.DeliveryLastTick, "the wake-up is not part of the tick")
			require.Zero(t, st.TickMax, "nor of tick durations")
			require.NoError(t, h.stop())
		})
	}
}

func TestTickOnlyIgnoresReady(t *testing.T) {
	h := newHarness(t)
	r := newFake("r", h.rec, h.clk)
	h.start(loop.Config{Reactors: []loop.Reactor{r}, TickOnly: true, OnTick: h.onTick()})
	h.rec.take()

	r.signal(t)
	h.clk.Advance(period)
	h.waitBlocked()
	require.Equal(t, []string{"OnTick 1", "r.Tick"}, h.rec.take())
	require.Len(t, r.ready, 1, "the loop never received from Ready")
	require.Zero(t, h.loop.Stats().Wakeups)
}

// A tick delivers what a signal sent before it announced, so the signal does not cause a
// second, empty delivery after the tick.
func TestTickConsumesWaitingSignal(t *testing.T) {
	h := newHarness(t)
	r := newFake("r", h.rec, h.clk)
	h.start(loop.Config{Reactors: []loop.Reactor{r}, OnTick: func(n uint64) {
		h.rec.add("OnTick %d", n)
		if n == 1 {
			r.signal(t) // a completion arrives during the tick, before r.Tick
		}
	}})
	h.clk.Advance(period)
	h.waitBlocked()
	h.clk.Advance(period)
	h.waitBlocked()
	require.Equal(t, []string{"OnTick 0", "r.Tick", "OnTick 1", "r.Tick", "OnTick 2", "r.Tick"}, h.rec.take())
	require.Zero(t, h.loop.Stats().Wakeups)
	require.Empty(t, r.ready)
}

func TestOverrunSkipsWithoutCatchUp(t *testing.T) {
	cases := []struct {
		tick0    time.Duration // how long tick 0 takes
		atOnce   int           // ticks run before the loop first waits
		skipped  uint64
		overruns uint64
		wait     time.Duration // from the end of those ticks to the next due time
	}{
		{tick0: period / 2, atOnce: 1, wait: period / 2},
		{tick0: period, atOnce: 2, wait: period},                              // ends exactly at the next due time: not late
		{tick0: period + period/2, atOnce: 2, overruns: 1, wait: period / 2},  // late, but no due time passed over
		{tick0: 2 * period, atOnce: 2, skipped: 1, overruns: 1, wait: period}, // tick 1 takes slot 2
		{tick0: 3*period + period/2, atOnce: 2, skipped: 2, overruns: 1, wait: period / 2},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.tick0), func(t *testing.T) {
			h := newHarness(t)
			r := newFake("r", h.rec, h.clk)
			h.start(loop.Config{Reactors: []loop.Reactor{r}, OnTick: func(n uint64) {
				h.rec.add("OnTick %d", n)
				if n == 0 {
					h.clk.Advance(c.tick0)
				}
			}})
			var want []string
			for k := range c.atOnce {
				want = append(want, fmt.Sprintf("OnTick %d", k), "r.Tick")
			}
			require.Equal(t, want, h.rec.take(), "no burst of catch-up ticks")
			st := h.loop.Stats()
			require.Equal(t, uint64(c.atOnce), st.Ticks)
			require.Equal(t, c.skipped, st.Skipped)
			require.Equal(t, c.overruns, st.Overruns)
			require.Equal(t, c.tick0, st.TickMax)

			h.clk.Advance(c.wait - time.Nanosecond)
			require.Equal(t, 1, h.clk.Timers(), "the next tick ran early")
			h.clk.Advance(time.Nanosecond)
			h.waitBlocked()
			require.Equal(t, []string{fmt.Sprintf("OnTick %d", c.atOnce), "r.Tick"}, h.rec.take(), "back on schedule")
			h.clk.Advance(period)
			h.waitBlocked()
			require.Equal(t, []string{fmt.Sprintf("OnTick %d", c.atOnce+1), "r.Tick"}, h.rec.take())
			st = h.loop.Stats()
			require.Equal(t, uint64(c.atOnce+2), st.Ticks)
			require.Equal(t, c.skipped, st.Skipped)
			require.Equal(t, c.overruns, st.Overruns)
		})
	}
}

func TestOverrunLowersTPS(t *testing.T) {
	h := newHarness(t)
	h.start(loop.Config{OnTick: func(n uint64) {
		if n == 0 {
			h.clk.Advance(3*period + period/2)
		}
	}})
	h.clk.Advance(period / 2)
	h.waitBlocked()
	h.clk.Advance(period)
	h.waitBlocked()
	// Ticks started at 0, 175, 200 and 250 ms: 3 ticks after the first in 250 ms.
	require.Equal(t, 12.0, h.loop.Stats().TPS)
}

// Lateness from a long wake-up is handled like an overrun, without counting one.
func TestLongWakeupSkips(t *testing.T) {
	h := newHarness(t)
	r := newFake("r", h.rec, h.clk)
	h.start(loop.Config{Reactors: []loop.Reactor{r}, OnTick: h.onTick()})
	h.rec.take()

	r.next(1, 2*period+period/2) // the drain ends at 125 ms: slot 50 ms passed over
	r.signal(t)
	h.rec.wait(t, 3)
	h.waitBlocked()
	require.Equal(t, []string{"r.Tick", "OnTick 1", "r.Tick"}, h.rec.take())
	st := h.loop.Stats()
	require.Equal(t, uint64(2), st.Ticks)
	require.Equal(t, uint64(1), st.Skipped)
	require.Zero(t, st.Overruns)
	require.Equal(t, uint64(1), st.Wakeups)

	h.clk.Advance(period/2 - time.Nanosecond) // tick 1 took slot 100 ms; next is 150 ms
	require.Equal(t, 1, h.clk.Timers())
	h.clk.Advance(time.Nanosecond)
	h.waitBlocked()
	require.Equal(t, []string{"OnTick 2", "r.Tick"}, h.rec.take())
}

func TestStopRunsOnStopThenClose(t *testing.T) {
	h := newHarness(t)
	r0 := &closableFake{fakeReactor: newFake("r0", h.rec, h.clk)}
	r1 := newFake("r1", h.rec, h.clk) // no Close
	r2 := &closableFake{fakeReactor: newFake("r2", h.rec, h.clk)}
	h.start(loop.Config{
		Reactors:        []loop.Reactor{r0, r1, r2},
		ShutdownTimeout: 3 * time.Second,
		OnTick:          h.onTick(),
		OnStop:          func() { h.rec.add("OnStop") },
	})
	h.rec.take()

	before := time.Now()
	require.NoError(t, h.stop())
	after := time.Now()
	require.Equal(t, []string{"OnStop", "r0.Close", "r2.Close"}, h.rec.take())
	require.Equal(t, []uint64{h.runG}, h.rec.callers(), "OnStop and Close run on the Run goroutine")

	require.NoError(t, r0.ctxErr, "Close gets a live context although Run's is done")
	dl, ok := r0.closeCtx.Deadline()
	require.True(t, ok, "Close's context has a deadline")
	require.False(t, dl.Before(before.Add(3*time.Second)))
	require.False(t, dl.After(after.Add(3*time.Second)))
	require.True(t, r0.closeCtx == r2.closeCtx, "one shutdown deadline for all reactors")
	require.Error(t, r0.closeCtx.Err(), "released when Run returns")
}

func TestStopJoinsCloseErrors(t *testing.T) {
	h := newHarness(t)
	errA, errB := errors.New("a failed"), errors.New("b failed")
	ra := &closableFake{fakeReactor: newFake("a", h.rec, h.clk), err: errA}
	rb := &closableFake{fakeReactor: newFake("b", h.rec, h.clk), err: errB}
	h.start(loop.Config{Reactors: []loop.Reactor{ra, rb}})
	err := h.stop()
	require.ErrorIs(t, err, errA)
	require.ErrorIs(t, err, errB)
	require.ErrorContains(t, err, "Reactors[0]")
	require.ErrorContains(t, err, "Reactors[1]")
}

func TestStopBeforeFirstTick(t *testing.T) {
	rec := newRecorder()
	clk := reactortest.NewManualClock(epoch)
	r := &closableFake{fakeReactor: newFake("r", rec, clk)}
	l, err := loop.New(loop.Config{
		Clock:    clk,
		Reactors: []loop.Reactor{r},
		OnTick:   func(n uint64) { rec.add("OnTick %d", n) },
		OnStop:   func() { rec.add("OnStop") },
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, l.Run(ctx))
	require.Equal(t, []string{"OnStop", "r.Close"}, rec.take())
	require.Zero(t, l.Stats().Ticks)
}

// A cancelled context stops the loop even while ticks overrun and never wait.
func TestStopWhileOverrunning(t *testing.T) {
	clk := reactortest.NewManualClock(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	l, err := loop.New(loop.Config{Clock: clk, OnTick: func(n uint64) {
		clk.Advance(3 * period)
		if n == 4 {
			cancel()
		}
	}})
	require.NoError(t, err)
	require.NoError(t, l.Run(ctx))
	st := l.Stats()
	require.Equal(t, uint64(5), st.Ticks)
	require.Equal(t, uint64(5), st.Overruns)
	require.Equal(t, uint64(8), st.Skipped, "2 per late tick after the first")
	require.Zero(t, clk.Timers(), "it never waited")
}

func TestRunTwice(t *testing.T) {
	h := newHarness(t)
	h.start(loop.Config{})
	err := h.loop.Run(context.Background())
	require.ErrorContains(t, err, "more than once", "while the first Run runs")
	require.NoError(t, h.stop())
	err = h.loop.Run(context.Background())
	require.ErrorContains(t, err, "more than once", "after the first Run returned")
}

// TestRunNilContextPanics checks that Run given a nil context panics with a "prpc:" message
// before it does anything: the Loop still runs afterwards.
func TestRunNilContextPanics(t *testing.T) {
	l, err := loop.New(loop.Config{Clock: reactortest.NewManualClock(epoch)})
	require.NoError(t, err)
	var noCtx context.Context // nil, in a variable: staticcheck rejects a nil literal
	require.PanicsWithValue(t, "prpc: loop.Run called with a nil context.Context, and refused: "+
		"pass one that is done when the loop must stop", func() { _ = l.Run(noCtx) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, l.Run(ctx), "Run after the refused one")
}

func TestFanInNoLeak(t *testing.T) {
	h := newHarness(t)
	var rs []loop.Reactor
	var fakes []*fakeReactor
	for i := range 3 {
		f := &closableFake{fakeReactor: newFake(fmt.Sprintf("r%d", i), h.rec, h.clk)}
		rs, fakes = append(rs, f), append(fakes, f.fakeReactor)
	}
	h.start(loop.Config{Reactors: rs, OnTick: h.onTick()})
	h.rec.take()

	for _, i := range []int{1, 0, 2, 1} {
		fakes[i].next(1, 0)
		fakes[i].signal(t)
		h.rec.wait(t, 1)
		h.waitBlocked()
		require.Equal(t, []string{fakes[i].name + ".Tick"}, h.rec.take())
	}
	fakes[0].signal(t)
	fakes[2].signal(t)
	h.rec.wait(t, 2)
	h.waitBlocked()
	require.ElementsMatch(t, []string{"r0.Tick", "r2.Tick"}, h.rec.take(), "one or two wake-ups")

	h.clk.Advance(period)
	h.waitBlocked()
	require.Equal(t, []string{"OnTick 1", "r0.Tick", "r1.Tick", "r2.Tick"}, h.rec.take())
	st := h.loop.Stats()
	require.Equal(t, uint64(4), st.Delivered)
	require.GreaterOrEqual(t, st.Wakeups, uint64(5))
	require.LessOrEqual(t, st.Wakeups, uint64(6))

	require.NoError(t, h.stop())
	require.Equal(t, []string{"r0.Close", "r1.Close", "r2.Close"}, h.rec.take())
	goleak.VerifyNone(t)
}

func TestPanicStopsHelpers(t *testing.T) {
	rec := newRecorder()
	clk := reactortest.NewManualClock(epoch)
	var rs []loop.Reactor
	for i := range 3 {
		rs = append(rs, &closableFake{fakeReactor: newFake(fmt.Sprintf("r%d", i), rec, clk)})
	}
	l, err := loop.New(loop.Config{Clock: clk, Reactors: rs, OnTick: func(uint64) { panic("game bug") }})
	require.NoError(t, err)
	require.PanicsWithValue(t, "game bug", func() { _ = l.Run(context.Background()) })
	require.Empty(t, rec.take(), "no reactor ticked or closed")
	goleak.VerifyNone(t)
}

// A wake-up close to the next tick gets only the time left before it, so that delivering
// between ticks never makes a tick late.
func TestWakeupNeverDelaysTick(t *testing.T) {
	tests := []struct {
		name       string
		sinceTick  time.Duration // when the wake-up comes, after the last tick
		wantBudget time.Duration
	}{
		{"early: the whole budget", 10 * time.Millisecond, loop.DefaultBudget},
		{"the budget just fits", period - loop.DefaultBudget, loop.DefaultBudget},
		{"late: the time left", period - 500*time.Microsecond, 500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			r := newFake("r", h.rec, h.clk)
			h.start(loop.Config{Reactors: []loop.Reactor{r}, OnTick: h.onTick()})
			h.rec.take()

			h.clk.Advance(tt.sinceTick)
			r.signal(t)
			h.rec.wait(t, 1)
			h.waitBlocked()
			require.Equal(t, []string{"r.Tick"}, h.rec.take())
			require.Equal(t, []time.Duration{loop.DefaultBudget, tt.wantBudget}, r.tickBudgets())
			require.NoError(t, h.stop())
		})
	}
}
