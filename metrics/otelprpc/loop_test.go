package otelprpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// newLoop returns a Loop with no reactor, never run.
func newLoop(t *testing.T) *loop.Loop {
	t.Helper()
	l, err := loop.New(loop.Config{})
	require.NoError(t, err)
	return l
}

// TestLoopMetrics runs a loop on a manual clock whose ticks take known times, and checks its
// metrics: the tick-duration histogram equal to TickDurations, the counters equal to Stats,
// with the loop's name.
func TestLoopMetrics(t *testing.T) {
	const tps, ticks = 5, 6
	const period = time.Second / tps
	clk := reactortest.NewManualClock(epoch)
	tickTime := func(n uint64) time.Duration { return time.Duration(n+1) * 7 * time.Millisecond }
	l, err := loop.New(loop.Config{TPS: tps, Clock: clk, OnTick: func(n uint64) { clk.Advance(tickTime(n)) }})
	require.NoError(t, err)
	p := otelprpc.NewProducer()
	p.AddLoop(l, "main")
	reader := newReader(t, p)

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	waitCtx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, clk.WaitTimers(waitCtx, 1), "the first tick ran; the loop waits for the second")
	for k := 1; k < ticks; k++ {
		clk.Advance(epoch.Add(time.Duration(k) * period).Sub(clk.Now()))
		require.NoError(t, clk.WaitTimers(waitCtx, 1), "tick %d ran", k)
	}
	got := collect(t, reader) // the loop waits for its timer: its counts do not move
	st, h := l.Stats(), l.TickDurations()
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatalf("Run did not return within %v", patience)
	}

	requireSpec(t, got, loopSpec, "prpc.loop")
	name := attrs(attribute.String("prpc.loop", "main"))
	require.Equal(t, uint64(ticks), st.Ticks)
	requireHistogramOf(t, h, histogram(t, got["prpc.loop.tick.duration"], name), "tick duration")
	var sum time.Duration
	for n := range uint64(ticks) {
		sum += tickTime(n)
	}
	require.Equal(t, sum.Seconds(), histogram(t, got["prpc.loop.tick.duration"], name).Sum)
	for metric, v := range map[string]uint64{
		"prpc.loop.ticks": st.Ticks, "prpc.loop.overruns": st.Overruns, "prpc.loop.skipped": st.Skipped, "prpc.loop.delivered": st.Delivered,
	} {
		require.Equal(t, int64(v), counterValue(t, got[metric], name), metric)
	}
}
