package policybench

import (
	"cmp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCoalesceCases(t *testing.T) {
	var names []string
	for _, c := range CoalesceCases(DefaultCoalesce()) {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"off", "on", "on-max1000"}, names, "the names of BenchmarkCoalescedBurst's sub-benchmarks")
}

// TestRunCoalesce runs every case in short and checks the figures against what the case
// implies: every call of a burst reaches the server without coalescing, and with it no fewer
// than the cap allows; no call fails; a burst lasts at least the server's time.
func TestRunCoalesce(t *testing.T) {
	for _, c := range CoalesceCases(DefaultCoalesce().Short()) {
		t.Run(c.Name, func(t *testing.T) {
			cfg := c.Config
			res, err := RunCoalesce(cfg)
			require.NoError(t, err)
			require.Zero(t, res.Failed)
			require.Equal(t, cfg.Bursts, res.Bursts)
			require.Equal(t, cfg.Bursts*cfg.Burst, res.Calls)
			if !cfg.Coalesce {
				require.EqualValues(t, res.Calls, res.BackendCalls, "without coalescing, every call is a transport call")
			} else {
				most := cmp.Or(cfg.CoalesceMax, 64) // 0: MethodPolicy.CoalesceMax's default
				least := (cfg.Burst + most - 1) / most
				require.GreaterOrEqual(t, res.BackendCallsPerBurst(), float64(least), "a transport call serves at most CoalesceMax calls")
				require.LessOrEqual(t, res.BackendCallsPerBurst(), float64(cfg.Burst))
			}
			require.GreaterOrEqual(t, res.LastDeliveryPerBurst(), cfg.Service, "a burst waits for the server")
			require.Positive(t, res.HostNsPerCall())
		})
	}
}

// TestCoalesceRunMeasuresEachBurst checks that a started run counts only the bursts after
// the warm-up, one at a time.
func TestCoalesceRunMeasuresEachBurst(t *testing.T) {
	cfg := DefaultCoalesce().Short()
	c, err := StartCoalesce(cfg)
	require.NoError(t, err)
	require.Equal(t, CoalesceResult{}, c.Result(), "the warm-up burst is not measured")
	c.Burst()
	res := c.Result()
	require.Equal(t, 1, res.Bursts)
	require.EqualValues(t, cfg.Burst, res.BackendCalls)
	require.GreaterOrEqual(t, res.LastDelivery, cfg.Service)
	require.LessOrEqual(t, res.Host, res.LastDelivery, "the host's time lies within the burst")
	require.NoError(t, c.Close())
}
