package loop_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// tickDurations returns the durations tick n takes in TestStatsPercentiles: ten distinct ones,
// then 150 ms until the window is full, then a permutation of 1…StatsWindow µs that replaces
// the whole window.
func tickDurations(n uint64) time.Duration {
	small := []time.Duration{7, 3, 10, 1, 9, 2, 8, 4, 6, 5}
	switch {
	case n < uint64(len(small)):
		return small[n] * time.Millisecond
	case n < loop.StatsWindow:
		return 150 * time.Millisecond
	default:
		i := n - loop.StatsWindow + 1 // 1…StatsWindow
		return time.Duration(i*37%(loop.StatsWindow+1)) * time.Microsecond
	}
}

func TestStatsPercentiles(t *testing.T) {
	const tps = 5
	const p = time.Second / tps // longer than every tick: no overruns
	h := newHarness(t)
	h.start(loop.Config{TPS: tps, OnTick: func(n uint64) { h.clk.Advance(tickDurations(n)) }})

	// Stats is safe from any goroutine while the loop runs (checked under -race).
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = h.loop.Stats()
				runtime.Gosched()
			}
		}
	})
	defer func() { close(stop); reader.Wait() }()

	runTo := func(ticks int) {
		for k := int(h.loop.Stats().Ticks); k < ticks; k++ {
			h.clk.Advance(epoch.Add(time.Duration(k) * p).Sub(h.clk.Now()))
			h.waitBlocked()
		}
	}
	check := func(p50, p99, max time.Duration) {
		t.Helper()
		st := h.loop.Stats()
		require.Equal(t, p50, st.TickP50, "p50 after %d ticks", st.Ticks)
		require.Equal(t, p99, st.TickP99, "p99 after %d ticks", st.Ticks)
		require.Equal(t, max, st.TickMax, "max after %d ticks", st.Ticks)
	}

	check(7*time.Millisecond, 7*time.Millisecond, 7*time.Millisecond)
	runTo(3) // 7, 3, 10: ranks ⌈1.5⌉ = 2 and ⌈2.97⌉ = 3
	check(7*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond)
	runTo(10) // 1…10 ms: ranks 5 and ⌈9.9⌉ = 10
	check(5*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond)
	runTo(loop.StatsWindow) // 10 small, 1190 × 150 ms
	check(150*time.Millisecond, 150*time.Millisecond, 150*time.Millisecond)
	runTo(2 * loop.StatsWindow) // 1…1200 µs: ranks 600 and 1188; the old ticks are gone
	check(600*time.Microsecond, 1188*time.Microsecond, 1200*time.Microsecond)

	st := h.loop.Stats()
	require.Equal(t, uint64(2*loop.StatsWindow), st.Ticks)
	require.Zero(t, st.Overruns)
	require.Zero(t, st.Skipped)
	require.Equal(t, float64(tps), st.TPS)
}

func TestStatsTPS(t *testing.T) {
	h := newHarness(t)
	h.start(loop.Config{})
	require.Zero(t, h.loop.Stats().TPS, "undefined before the second tick")
	h.clk.Advance(period)
	h.waitBlocked()
	require.Equal(t, 20.0, h.loop.Stats().TPS, "two ticks one period apart")
	for range 28 {
		h.clk.Advance(period)
		h.waitBlocked()
	}
	require.Equal(t, 20.0, h.loop.Stats().TPS, "on schedule")

	// Ticks 0…29 ran at 0…1.45 s. A stall of 5 s: tick 30 runs at 6.45 s for the slot at 6.45 s, 99 slots passed over.
	h.clk.Advance(5 * time.Second)
	h.waitBlocked()
	st := h.loop.Stats()
	require.Equal(t, uint64(31), st.Ticks)
	require.Equal(t, uint64(99), st.Skipped)
	require.Zero(t, st.Overruns, "the stall was between ticks")
	require.InDelta(t, 0.2, st.TPS, 1e-9, "one tick in the 5 s since the one before")

	for range 20 {
		h.clk.Advance(period)
		h.waitBlocked()
	}
	require.Equal(t, 20.0, h.loop.Stats().TPS, "a second of ticks later")
}

func TestStatsBeforeRun(t *testing.T) {
	l, err := loop.New(loop.Config{})
	require.NoError(t, err)
	require.Equal(t, loop.Stats{}, l.Stats())
}

// BenchmarkStats measures Stats with a full window.
func BenchmarkStats(b *testing.B) {
	clk := reactortest.NewManualClock(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	l, err := loop.New(loop.Config{Clock: clk, OnTick: func(n uint64) {
		clk.Advance(period) // the next tick is due at once: the loop never waits
		if n == loop.StatsWindow {
			cancel()
		}
	}})
	require.NoError(b, err)
	require.NoError(b, l.Run(ctx))
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Stats()
	}
}

// BenchmarkTick measures the loop's own cost per tick with one idle reactor: every OnTick
// moves the manual clock to the next due time, so the loop never waits.
func BenchmarkTick(b *testing.B) {
	clk := reactortest.NewManualClock(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	n := uint64(b.N)
	l, err := loop.New(loop.Config{
		Clock:    clk,
		Reactors: []loop.Reactor{idleReactor{}},
		OnTick: func(tick uint64) {
			clk.Advance(period)
			if tick+1 == n {
				cancel()
			}
		},
	})
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	require.NoError(b, l.Run(ctx))
}

type idleReactor struct{}

func (idleReactor) Tick(time.Duration) (r reactor.TickReport) { return r }
func (idleReactor) Ready() <-chan struct{}                    { return nil }

// TestTickDurations checks the histogram of tick durations: every tick since Run began, each
// in the first bucket whose bound is at or above its duration, with their count and sum; the
// reactor's latency buckets.
func TestTickDurations(t *testing.T) {
	const tps = 5
	const p = time.Second / tps
	h := newHarness(t)
	h.start(loop.Config{TPS: tps, OnTick: func(n uint64) { h.clk.Advance(tickDurations(n)) }})
	empty := h.loop.TickDurations()
	require.Len(t, empty.Counts, len(empty.Bounds)+1)
	for k := int(h.loop.Stats().Ticks); k < 10; k++ {
		h.clk.Advance(epoch.Add(time.Duration(k) * p).Sub(h.clk.Now()))
		h.waitBlocked()
	}
	got := h.loop.TickDurations()
	require.Equal(t, reactortest.NewReactor(t, reactortest.NewBackend(), reactor.Config{}).Stats().Histograms.Latency.Bounds, got.Bounds, "the reactor's buckets")
	want := make([]uint64, len(got.Bounds)+1)
	var sum time.Duration
	for n := range uint64(10) {
		d := tickDurations(n)
		i := 0
		for i < len(got.Bounds) && d.Seconds() > got.Bounds[i] {
			i++
		}
		want[i]++
		sum += d
	}
	require.Equal(t, want, got.Counts)
	require.Equal(t, uint64(10), got.Count)
	require.Equal(t, sum, got.Sum)
	require.Equal(t, h.loop.Stats().Ticks, got.Count, "one per tick")
}

// TestTickDurationsBoundsNotShared checks that each TickDurations has bounds of its own.
func TestTickDurationsBoundsNotShared(t *testing.T) {
	h := newHarness(t)
	h.start(loop.Config{TPS: 5})
	first := h.loop.TickDurations().Bounds
	want := slices.Clone(first)
	first[0] = -1
	require.Equal(t, want, h.loop.TickDurations().Bounds)
}
