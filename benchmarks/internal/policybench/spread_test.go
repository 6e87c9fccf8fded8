package policybench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSpreadCases(t *testing.T) {
	var names []string
	for _, c := range SpreadCases(DefaultSpread(PerPlayer), DefaultSpread(PerTick)) {
		names = append(names, c.Name)
		require.Equal(t, c.Name[len(c.Name)-2:] == "on", c.Config.Coalesce, c.Name)
	}
	require.Equal(t, []string{"per-player/off", "per-player/on", "per-tick/off", "per-tick/on"}, names,
		"the names of BenchmarkCoalescedSpread's sub-benchmarks")
	require.Equal(t, "Arrival(7)", Arrival(7).String())
}

// TestSpreadShapes checks the shapes' spans, and that the short ones keep a read in flight
// for as many ticks as the full ones.
func TestSpreadShapes(t *testing.T) {
	player, tick := DefaultSpread(PerPlayer), DefaultSpread(PerTick)
	require.Equal(t, 199*250*time.Microsecond, player.Span(), "one read every 250 µs")
	require.Equal(t, 19*50*time.Millisecond, tick.Span(), "10 reads at each of 20 ticks")
	for _, c := range []SpreadConfig{player, tick} {
		short := c.Short()
		require.Less(t, short.Calls, c.Calls)
		require.Equal(t, c.Service/c.TickEvery, short.Service/short.TickEvery, "%v: ticks a read is in flight", c.Arrival)
		require.Zero(t, short.Service%time.Millisecond, "the server's time is whole milliseconds")
	}
}

// TestRunSpread runs every case in short, where the timeout leaves every read time to
// succeed, and checks the figures against what the case implies: every read succeeds;
// without coalescing, every read is a transport call of its own; with it, every read either
// joined another's transport call or sent one, and at least one was sent; the last delivery
// comes no sooner than the server's time after the last transport call could have been sent:
// after the last submission without coalescing, after the first with it (a read joins the
// transport call in progress, and gets its answer with the first).
func TestRunSpread(t *testing.T) {
	for _, c := range SpreadCases(DefaultSpread(PerPlayer).Short(), DefaultSpread(PerTick).Short()) {
		t.Run(c.Name, func(t *testing.T) {
			cfg := c.Config
			res, err := RunSpread(cfg)
			require.NoError(t, err)
			require.Equal(t, cfg.Calls, res.Calls)
			require.Equal(t, cfg.Calls, res.OK)
			require.Zero(t, res.DeadlineExceeded)
			require.Zero(t, res.Failed)
			if !cfg.Coalesce {
				require.EqualValues(t, cfg.Calls, res.BackendCalls, "without coalescing, every read is a transport call")
				require.Zero(t, res.Coalesced)
			} else {
				require.Positive(t, res.BackendCalls)
				require.Less(t, res.Coalesced, uint64(cfg.Calls), "the first read joins none")
				require.GreaterOrEqual(t, uint64(res.BackendCalls)+res.Coalesced, uint64(cfg.Calls), "a read that joined none sent its own")
			}
			earliest := cfg.Span() + cfg.Service
			if cfg.Coalesce {
				earliest = cfg.Service
			}
			require.GreaterOrEqual(t, res.LastDelivery, earliest)
		})
	}
}
