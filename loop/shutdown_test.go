package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/loop"
)

// After OnStop the loop goes on ticking the reactors on the same schedule, without OnTick and
// with wake-ups, until every reactor is idle; only then does it close them, with a live
// context.
func TestShutdownDrainsUntilIdle(t *testing.T) {
	h := newHarness(t)
	r0 := newDrainable("r0", h.rec, h.clk, 1) // idle after the first tick
	r1 := newDrainable("r1", h.rec, h.clk, 4) // after three ticks of the drain and a wake-up
	h.start(loop.Config{
		Reactors: []loop.Reactor{r0, r1},
		OnTick:   h.onTick(),
		OnStop:   func() { h.rec.add("OnStop") },
	})
	require.Equal(t, []string{"OnTick 0", "r0.Tick", "r1.Tick"}, h.rec.take())
	h.cancelAndWait()

	h.clk.Advance(period)
	h.waitBlocked()
	require.Equal(t, []string{"r0.Tick", "r1.Tick"}, h.rec.take(), "a tick of the drain: every reactor, no OnTick")

	r1.next(2, 0)
	r1.signal(t)
	h.rec.wait(t, 1)
	h.waitBlocked()
	require.Equal(t, []string{"r1.Tick"}, h.rec.take(), "a wake-up while draining")

	r0.next(1, 0)
	h.clk.Advance(period)
	require.NoError(t, h.wait())
	require.Equal(t, []string{"r0.Tick", "r1.Tick", "r0.Close", "r1.Close"}, h.rec.take(), "closed once every reactor is idle")
	require.NoError(t, r0.ctxErr, "closed before the shutdown deadline")
	require.NoError(t, r1.ctxErr)

	st := h.loop.Stats()
	require.Equal(t, uint64(3), st.Ticks, "ticks of the drain count as ticks")
	require.Equal(t, uint64(3), st.Delivered)
	require.Equal(t, uint64(3), st.Drained)
}

// Reactors already idle when OnStop returns are closed at once, with no tick of the drain.
func TestShutdownIdleClosesAtOnce(t *testing.T) {
	h := newHarness(t)
	r := newDrainable("r", h.rec, h.clk, 1)
	h.start(loop.Config{Reactors: []loop.Reactor{r}, OnStop: func() { h.rec.add("OnStop") }})
	h.rec.take()
	require.NoError(t, h.stop())
	require.Equal(t, []string{"OnStop", "r.Close"}, h.rec.take())
	require.Zero(t, h.loop.Stats().Drained)
}

// A reactor that never goes idle cannot hold shutdown past ShutdownTimeout: the drain ends
// and Close gets a context that is done, so it cuts off at once.
func TestShutdownDrainEndsAtShutdownTimeout(t *testing.T) {
	const timeout = 50 * time.Millisecond
	h := newHarness(t)
	r := newDrainable("r", h.rec, h.clk, 1<<30)
	h.start(loop.Config{
		Reactors:        []loop.Reactor{r},
		ShutdownTimeout: timeout,
		OnTick:          h.onTick(),
		OnStop:          func() { h.rec.add("OnStop") },
	})
	h.rec.take()
	start := time.Now()
	h.cancelAndWait()
	require.NoError(t, h.wait())
	require.GreaterOrEqual(t, time.Since(start), timeout)
	require.Equal(t, []string{"r.Close"}, h.rec.take(), "no tick: the manual clock did not move")
	require.ErrorIs(t, r.ctxErr, context.DeadlineExceeded, "Close cuts off at once")
}
