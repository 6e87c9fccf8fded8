package loop_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/logline"
	"github.com/trixnew/prpc/loop"
)

// TestStatsLogValue checks the exact record a logger writes for a Stats, through the text and
// the JSON handler.
func TestStatsLogValue(t *testing.T) {
	tests := []struct {
		name       string
		stats      loop.Stats
		text, json string
	}{
		{
			name: "every figure",
			stats: loop.Stats{
				Ticks: 1200, Skipped: 3, Overruns: 1, TPS: 19.97654,
				TickP50: 310 * time.Microsecond, TickP99: 2100 * time.Microsecond, TickMax: 7 * time.Millisecond,
				Delivery: time.Second, DeliveryLastTick: time.Millisecond,
				Wakeups: 35, Delivered: 4810,
			},
			text: "level=INFO msg=loop stats.ticks=1200 stats.skipped=3 stats.overruns=1 stats.tps=19.98 " +
				"stats.tick.p50=310µs stats.tick.p99=2.1ms stats.tick.max=7ms stats.wakeups=35 stats.delivered=4810\n",
			json: `{"level":"INFO","msg":"loop","stats":{"ticks":1200,"skipped":3,"overruns":1,"tps":19.98,` +
				`"tick":{"p50":310000,"p99":2100000,"max":7000000},"wakeups":35,"delivered":4810}}` + "\n",
		},
		{
			name:  "after a drain",
			stats: loop.Stats{Ticks: 3, Delivered: 5, Drained: 2},
			text: "level=INFO msg=loop stats.ticks=3 stats.skipped=0 stats.overruns=0 stats.tps=0 " +
				"stats.tick.p50=0s stats.tick.p99=0s stats.tick.max=0s stats.wakeups=0 stats.delivered=5 stats.drained=2\n",
			json: `{"level":"INFO","msg":"loop","stats":{"ticks":3,"skipped":0,"overruns":0,"tps":0,` +
				`"tick":{"p50":0,"p99":0,"max":0},"wakeups":0,"delivered":5,"drained":2}}` + "\n",
		},
		{
			name:  "zero",
			stats: loop.Stats{},
			text: "level=INFO msg=loop stats.ticks=0 stats.skipped=0 stats.overruns=0 stats.tps=0 " +
				"stats.tick.p50=0s stats.tick.p99=0s stats.tick.max=0s stats.wakeups=0 stats.delivered=0\n",
			json: `{"level":"INFO","msg":"loop","stats":{"ticks":0,"skipped":0,"overruns":0,"tps":0,` +
				`"tick":{"p50":0,"p99":0,"max":0},"wakeups":0,"delivered":0}}` + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.text, logline.Text("loop", "stats", tc.stats))
			require.Equal(t, tc.json, logline.JSON("loop", "stats", &tc.stats))
		})
	}
}
