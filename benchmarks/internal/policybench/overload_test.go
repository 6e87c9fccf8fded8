package policybench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOverloadCases(t *testing.T) {
	var names []string
	for _, c := range OverloadCases(DefaultOverload()) {
		names = append(names, c.Name())
	}
	require.Equal(t, []string{
		"drops-cancelled/fixed-128", "drops-cancelled/adaptive-128", "drops-cancelled/fixed-32",
		"serves-cancelled/fixed-128", "serves-cancelled/adaptive-128", "serves-cancelled/fixed-32",
	}, names, "the names of BenchmarkOverload's sub-benchmarks")
}

// TestRunOverload runs every case in short and checks that its figures add up: every call
// submitted was refused or settled once, as a success or a timeout; the limit is reported
// only under AdaptiveLimit.
func TestRunOverload(t *testing.T) {
	for _, cfg := range OverloadCases(DefaultOverload().Short()) {
		t.Run(cfg.Name(), func(t *testing.T) {
			res, err := RunOverload(cfg)
			require.NoError(t, err)
			require.Equal(t, cfg.Run, res.Run)
			require.Positive(t, res.Submitted)
			require.Zero(t, res.Submitted%int64(cfg.PerTick), "the host submits whole ticks")
			require.Zero(t, res.Failed, "calls fail only by timing out")
			require.Equal(t, res.Submitted-res.Rejected, res.OK+res.Timeouts, "every call admitted settles once")
			require.LessOrEqual(t, res.NeverSent, res.Timeouts)
			require.GreaterOrEqual(t, res.Wasted, int64(0))
			if cfg.Adaptive {
				require.Positive(t, res.Limit)
			} else {
				require.Zero(t, res.Limit)
			}
			if res.OK > 0 {
				require.Positive(t, res.P50)
				require.LessOrEqual(t, res.P50, res.P99)
			}
			require.InDelta(t, float64(res.OK)/cfg.Run.Seconds(), res.Goodput(), 1e-9)
		})
	}
}
