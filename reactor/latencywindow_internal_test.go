package reactor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLatencyWindowGrowsThenWraps checks that a window holds only the samples it was given
// until it is full, then keeps the latest latencyWindowSize of them.
func TestLatencyWindowGrowsThenWraps(t *testing.T) {
	var w latencyWindow
	_, ok := w.last()
	require.False(t, ok)
	sample := func(i int) phases { return phases{queue: time.Duration(i)} }
	for i := range 3 {
		w.add(sample(i))
	}
	require.Len(t, w.ring, 3)
	last, ok := w.last()
	require.True(t, ok)
	require.Equal(t, sample(2), last)
	const total = latencyWindowSize + 5
	for i := 3; i < total; i++ {
		w.add(sample(i))
	}
	require.Len(t, w.ring, latencyWindowSize)
	last, _ = w.last()
	require.Equal(t, sample(total-1), last)
	seen := map[phases]bool{}
	for _, p := range w.ring {
		seen[p] = true
	}
	require.False(t, seen[sample(4)], "an old sample survived the wrap")
	require.True(t, seen[sample(5)], "the oldest sample kept is missing")
}
